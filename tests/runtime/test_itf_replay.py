"""Model to implementation: a stored counterexample's schedule, replayed through the
harness, fails the chat-style runtime and passes on the library."""

from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.torture.itf import plan_from_itf, replay

ROOT = Path(__file__).resolve().parents[2]
NAIVE = ROOT / "counterexamples" / "naive"


def test_the_ack_loss_schedule_is_the_models_calls_and_its_lost_ack():
    plan = plan_from_itf(str(NAIVE / "ack_loss" / "I1.itf.json"))
    assert plan.workers == ("w0",)
    assert [c[0] for c in plan.sessions[0].calls] == ["t1", "t2"]
    assert plan.net == ((("apply", "*", 1), "drop"),)
    assert not plan.kills and not plan.pauses


def test_ack_loss_counterexample_fails_the_chat_runtime_and_passes_on_the_library():
    path = str(NAIVE / "ack_loss" / "I1.itf.json")
    chat, lib = replay(path, "chat").results[0], replay(path, "library").results[0]
    assert chat.verdict == "VIOLATES" and "I1" in chat.properties
    assert chat.counts["effects"] == 2 and chat.counts["drops"] == 1
    assert lib.verdict == "CONFORMS" and lib.counts["effects"] == 1
    assert lib.counts["drops"] == 1


# provider_non_idempotent's shortest I1 is an SDK retry after a lost ack (the SDK never
# re-sends a received answer); replayed on the library it meets the harness's fences-only
# provider, which once checked no fence of a request sent without an idempotency key (the
# FENCE finding this case was marked for was the fake's, fixed there)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "crash_before_dispatch/I1",
        "transport_retry/I1",
        "default/P1",
        "cancel/P3",
        "reorder/I1",
        "give_up_retry/I1",
        "provider_non_idempotent/I1",
    ],
)
def test_naive_counterexample_schedules_fail_chat_and_pass_library(case):
    path = str(NAIVE / f"{case}.itf.json")
    assert replay(path, "chat").results[0].verdict == "VIOLATES"
    assert replay(path, "library").results[0].verdict == "CONFORMS"


def test_a_trace_with_a_prompt_revision_is_refused_with_one_line(capsys):
    path = str(NAIVE / "prompt_revision" / "I1.itf.json")
    assert main(["torture", "--itf", path]) == 2
    err = capsys.readouterr().err
    assert "revise_prompt" in err and "cannot be replayed: the user's revised prompt" in err


def test_a_file_that_is_not_a_trace_is_one_line(tmp_path, capsys):
    bad = tmp_path / "x.itf.json"
    bad.write_text("{}")
    assert main(["torture", "--itf", str(bad)]) == 2
    assert "not an ITF counterexample" in capsys.readouterr().err


def test_every_action_of_the_spec_is_scheduled_ignored_or_refused_by_name():
    """A new action in spec/protocol.json forces a decision here: the harness schedules it,
    leaves it to the runtime, or refuses traces with it, by name."""
    from toolcommit.checker.torture import itf
    from toolcommit.spec import protocol

    known = (
        *itf._EMIT,
        *itf._SENDS,
        *itf._ANSWERS,
        *itf._NET,
        *itf._FAULTS,
        *itf._IGNORED,
        *itf._PROVIDER,
        *itf._NEXT,
        *itf._READS,
        *itf.UNREPLAYABLE,
    )
    assert set(protocol().actions) == set(known)
    assert not set(itf.UNREPLAYABLE) & set(itf._IGNORED)
    assert all(protocol().actions[a]["fault"] for a in itf.UNREPLAYABLE)


@pytest.mark.parametrize(
    "edit,says",
    [
        (
            lambda d: next(
                s for s in d["states"][1:] if s.get("mbt::nondetPicks", {}).get("worker")
            )["mbt::nondetPicks"].update(worker="w7"),
            "step 1: not a trace toolcommit wrote",
        ),
        (lambda d: d.update(states="x"), "states must be a list"),
        (lambda d: d["#meta"].update(instance="nope"), "#meta.instance"),
        (
            lambda d: d.update(states=d["states"][:1] + [{"mbt::actionTaken": "insert"}]),
            "no call of the model to replay",
        ),
    ],
)
def test_a_hand_edited_itf_file_is_refused_in_one_line_naming_what_is_wrong(
    edit, says, tmp_path, capsys
):
    import json

    doc = json.loads((ROOT / "counterexamples" / "naive" / "ack_loss" / "I1.itf.json").read_text())
    edit(doc)
    p = tmp_path / "edited.itf.json"
    p.write_text(json.dumps(doc))
    assert main(["torture", "--itf", str(p), "-q"]) == 2
    err = capsys.readouterr().err
    assert says in err and str(p) in err and err.count("\n") == 1, err


QUESTIONS = ROOT / "counterexamples" / "questions"


@pytest.mark.parametrize(
    "case",
    [
        "failure-classes@email/Late_request_after_give-up__required_behaviour",
        "failure-classes@email/Zombie_after_lease_expiry__required_behaviour",
        "tradeoffs@email/Client-side_canonical_intent_log__where_it_is_strong",
    ],
)
def test_a_provider_fault_counterexample_breaks_its_weak_design_on_the_fake_not_the_library(case):
    """recommended@email: the provider executes the request and answers 500; the
    recommended design reads a status, finds none, parks it and lets the user ask again: a
    second email. The email design gives up visibly and refuses the re-ask."""
    from toolcommit.checker.torture.itf import _load, weak_runtime

    path = str(QUESTIONS / f"{case}.itf.json")
    plan = plan_from_itf(path)
    assert ((("apply", "*", 1), "error_after")) in plan.net
    weak, why = weak_runtime(_load(path)["#meta"])
    assert (weak, why) == ("park", "")
    bad, lib = replay(path, weak).results[0], replay(path, "library").results[0]
    assert bad.verdict == "VIOLATES" and "I1" in bad.properties and bad.counts["effects"] == 2
    assert bad.counts["errors_after"] == 1
    assert lib.verdict == "CONFORMS" and lib.counts["effects"] == 1


def test_a_trace_found_on_a_design_the_harness_has_no_runtime_for_is_named_with_why():
    from toolcommit.checker.torture.itf import _load, weak_runtime

    meta = _load(str(QUESTIONS / "failure-classes@stripe" / "Ack_loss__common_bug.itf.json"))
    weak, why = weak_runtime(meta["#meta"])
    assert weak == "" and "recommended+dedupe_by=call_id has no harness runtime" in why


def test_a_question_trace_on_its_own_instance_is_refused_saying_so(capsys):
    path = QUESTIONS / "late-replay" / "reject__fences-yes_read-yes_exp-no_stale-yes.itf.json"
    assert main(["torture", "--itf", str(path)]) == 2
    err = capsys.readouterr().err
    assert "late_replay" in err and "a question's own instance" in err
