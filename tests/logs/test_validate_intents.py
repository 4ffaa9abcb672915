"""validate sees intents, not only keys (issue 38): requests compared across scopes under the
identity rule the proposal lines carry, answers across principals, and effects whose
arguments are not their key's."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.incli import cli
from toolcommit.checker.cli.validate import validate
from toolcommit.checker.logs import asks
from toolcommit.checker.logs.conformance import check
from toolcommit.checker.logs.typed import from_dict
from toolcommit.runtime.log import IntentLog

from .logtools import interleave

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in (LOGS / name).read_text().splitlines()]


def summary(report):
    return report.verdict.value, sorted({(f.property, f.certainty) for f in report.findings})


# ----- the requests pass, on the pinned fixtures ----------------------------------------------
def test_a_reask_accepted_while_the_first_was_in_doubt_is_one_intent_applied_twice():
    r = validate([str(LOGS / "reask_i1-bad.jsonl")])
    (f,) = r.findings
    assert (f.property, f.certainty) == ("I1", "certain")
    assert "in 2 requests" in f.explanation and "identity charge,amount" in f.explanation
    assert [s.line for s in f.steps] == sorted(s.line for s in f.steps)  # in log order


def test_a_second_request_once_the_first_was_done_is_a_new_intent():
    assert summary(validate([str(LOGS / "reask_i1-ok.jsonl")])) == ("CONFORMS", [])


def test_a_given_up_refund_that_landed_and_its_reask_are_one_intent_applied_twice():
    assert summary(validate([str(LOGS / "given_up_reask-bad.jsonl")])) == (
        "VIOLATES",
        [("I1", "certain")],
    )
    assert summary(validate([str(LOGS / "given_up_reask-ok.jsonl")])) == ("CONFORMS", [])


def test_without_principals_a_reask_in_doubt_is_only_possible():
    (f,) = validate([str(LOGS / "reask_old-bad.jsonl")]).findings
    assert (f.property, f.certainty) == ("I1", "possible")
    assert "name no principal" in f.explanation


def test_an_answer_across_principals_is_certain_and_across_scopes_without_principals_possible():
    (f,) = validate([str(LOGS / "answer_across-bad.jsonl")]).findings
    assert (f.property, f.certainty) == ("ANSWER_ACROSS", "certain")
    assert "user:2 was told another's outcome" in f.explanation
    (g,) = validate([str(LOGS / "answer_across_old-bad.jsonl")]).findings
    assert (g.property, g.certainty) == ("ANSWER_ACROSS", "possible")
    for ok in ("answer_across-ok.jsonl", "answer_across_old-ok.jsonl"):
        assert summary(validate([str(LOGS / ok)])) == ("CONFORMS", []), ok


def test_an_effect_joined_by_key_with_another_amount_is_a_finding():
    (f,) = validate([str(LOGS / "effect_args-bad.jsonl")]).findings
    assert (f.property, f.certainty) == ("EFFECT_ARGS", "certain")
    assert "amount=30 where 20 was asked" in f.explanation
    # 20.0 is 20, and what the provider records beyond the call's arguments is not compared
    assert summary(validate([str(LOGS / "effect_args-ok.jsonl")])) == ("CONFORMS", [])


@pytest.mark.parametrize(
    "name",
    [
        "reask_i1-bad.jsonl",
        "reask_old-bad.jsonl",
        "answer_across-bad.jsonl",
        "answer_across_old-bad.jsonl",
        "given_up_reask-bad.jsonl",
        "effect_args-bad.jsonl",
    ],
)
def test_the_requests_pass_does_not_depend_on_how_writers_interleave(name):
    evs = events(name)
    base = summary(check(evs))
    rng = random.Random(name)
    for _ in range(20):
        assert summary(check(interleave(evs, rng))) == base


def test_a_log_read_from_stdin_gets_its_requests_compared_too(monkeypatch):
    import io
    import sys

    data = (LOGS / "answer_across-bad.jsonl").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = cli("validate", "-")
    assert code == 1 and "ANSWER_ACROSS [certain]" in out and "<stdin>:8" in out


def test_the_identity_rule_keeps_only_its_fields_and_the_principal_splits_asks():
    a = {"charge": "ch_1", "amount": 10, "reason": "x"}
    base = {"tool": "refund", "scope": "s1", "identity": ["charge", "amount"]}
    one = asks.Asks(["f"])
    for i, (p, s, args) in enumerate(
        [("u1", "s1", a), ("u1", "s2", {**a, "reason": "y"}), ("u2", "s3", a)], 1
    ):
        ev = {**base, "type": "proposal", "writer": "w", "seq": i, "call_id": f"t{i}"}
        ev.update(key=f"k{i}", decision="accepted", args=args, scope=s, principal=p)
        one.feed(from_dict(ev), 0, i)
    got = {k: one._ask(r) for k, r in one.reqs.items()}
    assert got["k1"] == got["k2"] != got["k3"]


# ----- the library, identity turned back to arguments only --------------------------------
def test_two_users_equal_refunds_merged_by_one_principal_never_conform(tmp_path):
    """Identity turned back to arguments only: one principal (``app``) named for every user,
    as the previous release had none. User 1's refund times out and a replay settles it
    unheard; user 2's equal refund in its own request is then answered with user 1's
    (reask=hold): user 2 is never refunded. Exported as the previous release wrote its lines
    (no principal, no identity), the log cannot say whether the two scopes are two users:
    INCONCLUSIVE, naming the answer across scopes, never CONFORMS."""
    log = IntentLog.sqlite(str(tmp_path / "log.db"), writer="w1", provider="stripe", settler=False)
    try:
        d1 = log.propose("t1", "refund", {"amount": 10}, "user:1:request:1", principal="app")
        log.timeout(log.dispatch(d1.key))
        replay = log.reconcile(d1.key)
        assert replay is not None
        log.ack(replay, {"id": "re_1"}, heard=False)
        d2 = log.propose("t2", "refund", {"amount": 10}, "user:2:request:9", principal="app")
        assert (d2.decision, d2.key) == ("answered", d1.key)
        lines = [json.loads(x) for x in log.lines()]
    finally:
        log.close()
    path = tmp_path / "log.jsonl"
    with open(path, "w") as f:
        for line in lines:
            line.pop("principal", None)
            line.pop("identity", None)
            f.write(json.dumps(line) + "\n")
    code, out, _ = cli("validate", str(path))
    assert code == 3 and "ANSWER_ACROSS [possible]" in out


@pytest.mark.parametrize(
    "respelled",
    [{"amount": "10"}, {"note": ""}, {"amount": "10", "note": None}],
    ids=["string-amount", "empty-note", "both"],
)
def test_a_log_without_identity_rule_shows_a_respelled_reask_as_possible_i1(tmp_path, respelled):
    """A previous release's log (no principal, no identity rule) of a re-ask in doubt that
    the library split in two by spelling ("10" for 10, an empty argument added): two intents
    to the per-key pass, one possible intent here, so INCONCLUSIVE, never CONFORMS."""
    evs = events("reask_old-bad.jsonl")
    second = evs[5]["key"]
    for ev in evs:
        if ev.get("key") == second and "args" in ev:
            ev["args"] = {**ev["args"], **respelled}
    path = tmp_path / "respelled.jsonl"
    path.write_text("".join(json.dumps(ev) + "\n" for ev in evs))
    report = validate([str(path)])
    assert summary(report) == ("INCONCLUSIVE", [("I1", "possible")])
    (f,) = report.findings
    assert "differ only in spelling" in f.explanation
    # "10" for 10 with an identity rule the lines carry is not "spelling": another ask
    for ev in evs:
        if ev["type"] == "proposal":
            ev["identity"] = ["charge", "amount"]
    path.write_text("".join(json.dumps(ev) + "\n" for ev in evs))
    expected = ("CONFORMS", []) if "amount" in respelled else ("INCONCLUSIVE", [("I1", "possible")])
    assert summary(validate([str(path)])) == expected
