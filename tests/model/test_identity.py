"""One intent, known not guessed: which arguments make two calls one intent (knob
`identity`), whose an intent is (knob `principal`, property OWN), and who heard an outcome
(knob `told`, fault `caller_deadlines`)."""

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import instance
from toolcommit.model.knobs import bearing, preset
from toolcommit.model.semantics import build
from toolcommit.model.values import RV


def verdicts(settings, inst, props=("I1", "OWN", "FULFIL")):
    cfg = preset("recommended").with_knobs(settings)
    return {v.property: v for v in check_instance(cfg, instance(inst), list(props)).verdicts}


def test_the_recommended_identity_is_the_runtime_contract():
    knobs = preset("recommended").knobs
    assert (knobs["identity"], knobs["principal"], knobs["told"]) == ("schema", "part", "caller")
    for p in ("naive", "seed"):  # today's defaults: raw arguments, the principal left out
        k = preset(p).knobs
        assert (k["identity"], k["principal"], k["told"]) == ("args", "left_out", "on_ack")


def test_by_arguments_alone_a_coerced_or_annotated_re_ask_refunds_twice():
    v = verdicts({"identity": "args"}, "reask_reworded")["I1"]
    assert v.status is Status.VIOLATED and v.counterexample.length == 8
    asked = [s.params.get("proposal") for s in v.counterexample.steps if s.action == "propose"]
    assert asked[0] == "t1" and asked[1] in ("r2c", "r2a")


def test_by_the_schema_the_re_asks_are_siblings_and_one_refund_holds():
    system = build(preset("recommended"), instance("reask_reworded"))
    assert system.meta["key_of"] == {"t1": 0, "r2c": 1, "r2a": 1}
    by = verdicts({}, "reask_reworded")
    assert all(v.status is Status.HOLDS for v in by.values())


def test_with_the_principal_left_out_one_user_is_answered_with_anothers_refund():
    by = verdicts({"principal": "left_out"}, "two_principals")
    assert by["I1"].status is Status.HOLDS  # nobody refunded twice: I1 cannot see it
    v = by["OWN"]
    assert v.status is Status.VIOLATED and v.counterexample.length == 8
    last = v.counterexample.steps[-1]
    assert last.params["proposal"] == "v1" and last.params["decision"].startswith("answered")
    assert last.state["applied.k0"] == 1 and last.state["applied.k1"] == 0


def test_a_conversation_scope_without_the_principal_refuses_the_other_user_as_a_duplicate():
    by = verdicts({"principal": "left_out", "intent_id": "conversation"}, "two_principals")
    v = by["OWN"]
    assert v.status is Status.VIOLATED
    assert v.counterexample.steps[-1].params["decision"] == "duplicate"


def test_with_the_principal_part_of_the_identity_each_user_is_refunded_once():
    system = build(preset("recommended"), instance("two_principals"))
    assert [k["ident"] for k in system.meta["keys"]] == [
        "refund/orig/e1/v1/i1/u1",
        "refund/orig/e1/v1/o1/u2",
    ]
    by = verdicts({}, "two_principals", ("I1", "OWN", "FULFIL", "P1"))
    assert all(v.status is Status.HOLDS for v in by.values())


def test_own_holds_on_answers_within_one_principal_and_its_witness_is_reached():
    result = check_instance(preset("recommended"), instance("two_intents"), ["OWN"])
    assert result.verdicts[0].status is Status.HOLDS
    _, ex = run_instance(preset("recommended"), instance("two_intents"), Limits())
    assert "OWN" in ex.first_witness


def test_a_caller_that_gave_up_did_not_hear_even_when_the_worker_did():
    system = build(preset("recommended"), instance("caller_gives_up"))
    r2 = [a for a in system.actions if a.name == "propose" and a.params["proposal"] == "r2"]
    s = {**system.init, "doubt.i1": 1, "gone.k0": 1, "rec.k0": RV["ACKED"]}
    assert [a.params["decision"] for a in r2 if evaluate(a.guard, s)] == [
        "answered: done (key k0 ACKED)"
    ]


@pytest.mark.parametrize(
    ("told", "status"), [("on_ack", Status.VIOLATED), ("caller", Status.HOLDS)]
)
def test_told_from_the_workers_side_lets_the_re_ask_refund_again(told, status):
    v = verdicts({"told": told}, "caller_gives_up")["I1"]
    assert v.status is status
    if status is Status.VIOLATED:
        actions = [s.action for s in v.counterexample.steps[1:]]
        assert actions.index("stop_waiting") < actions.index("receive_ack")


def test_the_identity_knobs_bear_only_where_an_instance_reads_them():
    knobs = preset("recommended").knobs
    assert not {"identity", "principal", "told"} & set(bearing(knobs, [instance("ack_loss")]))
    assert "identity" in bearing(knobs, [instance("reask_reworded")])
    assert "principal" in bearing(knobs, [instance("two_principals")])
    assert "told" in bearing(knobs, [instance("caller_gives_up")])
