"""A re-ask meets the intent in doubt (knob `reask`, instance `reask_in_doubt`).

The first request is delayed past the client's timeout, the user is told it may or may not
have happened and asks again in a new message: with a minted request id the re-ask has a
key of its own, so only `reask` stands between it and a second refund.
"""

import pytest

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance
from toolcommit.model.environment import configure, instance_in
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import instance
from toolcommit.model.knobs import bearing, preset
from toolcommit.model.semantics import build
from toolcommit.model.values import RV


def verdicts(settings, inst="reask_in_doubt", env="ideal", props=("I1", "P1", "FULFIL")):
    cfg = configure(preset("recommended").with_knobs(settings), env)
    result = check_instance(cfg, instance_in(instance(inst), env), list(props))
    return {v.property: v for v in result.verdicts}


def test_the_re_ask_is_the_first_intent_in_a_new_request_with_a_key_of_its_own():
    system = build(preset("recommended"), instance("reask_in_doubt"))
    assert system.meta["key_of"] == {"t1": 0, "r2": 1}
    assert system.meta["scope_tag"] == {"t1": "i1", "r2": "r2"}
    assert instance("reask_in_doubt").intents() == ("i1",)
    assert bearing(preset("recommended").knobs, [instance("reask_in_doubt")])["reask"] == "hold"


def test_proceed_lets_the_re_ask_and_the_delayed_first_both_refund():
    by = verdicts({"reask": "proceed"})
    assert by["P1"].status is Status.HOLDS  # one effect per key: P1 cannot see it
    v = by["I1"]
    assert v.status is Status.VIOLATED and v.counterexample.length == 8
    actions = [
        (s.action, s.params.get("proposal"), s.params.get("outcome"))
        for s in v.counterexample.steps[1:]
    ]
    assert ("timeout", None, None) in actions
    assert ("propose", "r2", None) in actions
    last = v.counterexample.steps[-1]
    assert last.state["applied.k0"] == 1 and last.state["applied.k1"] == 1


def test_refuse_only_delays_the_duplicate_until_the_first_settled_unseen():
    v = verdicts({"reask": "refuse"})["I1"]
    assert v.status is Status.VIOLATED and v.counterexample.length == 10
    steps = v.counterexample.steps
    settled = next(i for i, s in enumerate(steps) if s.state["rec.k0"] == RV["ACKED"])
    asked = next(i for i, s in enumerate(steps) if s.params.get("proposal") == "r2")
    assert steps[settled - 1].state["rec.k0"] == RV["RECONCILING"]  # settled unseen
    assert asked > settled  # the re-ask is accepted only once the first settled


@pytest.mark.parametrize("env", ["ideal", "stripe", "email", "fenced-store"])
def test_hold_keeps_one_refund_and_fulfils_the_intent(env):
    by = verdicts({}, env=env)
    assert by["I1"].status is Status.HOLDS and by["FULFIL"].status is Status.HOLDS


def test_hold_answers_with_done_and_refuses_only_where_a_give_up_may_hide_an_effect():
    def answers(env):
        system = build(
            configure(preset("recommended"), env), instance_in(instance("reask_in_doubt"), env)
        )
        return {
            a.params["decision"]
            for a in system.actions
            if a.name == "propose" and a.params["proposal"] == "r2"
        }

    # ideal: a give-up after the fence seal and a read means "did not happen": no refusal
    assert "answered: done (key k0 ACKED)" in answers("ideal")
    assert not any(d.startswith("refused:") for d in answers("ideal"))
    # email: no status read, so a give-up may hide a sent email: refused, told so
    assert "refused: may have happened (key k0 given up)" in answers("email")


def test_the_re_ask_comes_only_after_the_user_was_told_of_the_doubt():
    system = build(preset("recommended"), instance("reask_in_doubt"))
    r2 = [a for a in system.actions if a.name == "propose" and a.params["proposal"] == "r2"]
    s = dict(system.init)
    assert not any(evaluate(a.guard, s) for a in r2)  # not told of a doubt: no re-ask
    s.update({"doubt.i1": 1, "rec.k0": RV["UNKNOWN"]})  # told, still in doubt: held
    assert not any(evaluate(a.guard, s) for a in r2)
    s.update({"rec.k0": RV["ACKED"]})  # settled unseen: answered
    assert [a.params["decision"] for a in r2 if evaluate(a.guard, s)] == [
        "answered: done (key k0 ACKED)"
    ]
    s.update({"told.k0": 1})  # told its outcome: the user does not re-ask
    assert not any(evaluate(a.guard, s) for a in r2)


def test_a_genuine_second_request_after_the_first_was_told_is_accepted():
    system = build(preset("recommended"), instance("two_intents"))
    u2 = [a for a in system.actions if a.name == "propose" and a.params["proposal"] == "u2"]
    s = {**system.init, "asked.i2": 1, "rec.k0": RV["ACKED"], "told.k0": 1}
    assert [a.params["decision"] for a in u2 if evaluate(a.guard, s)] == ["accepted"]
    s["told.k0"] = 0  # settled unseen (after a doubt): answered
    assert [a.params["decision"] for a in u2 if evaluate(a.guard, s)] == [
        "answered: done (key k0 ACKED)"
    ]


def test_a_genuine_second_request_after_a_told_first_is_accepted_and_one_in_doubt_answered():
    by = verdicts({}, inst="two_intents", props=("I1", "FULFIL", "ALO"))
    assert by["I1"].status is Status.HOLDS and by["FULFIL"].status is Status.HOLDS
    # the answered second intent has no effect: at-least-once says so
    alo = by["ALO"]
    assert alo.status is Status.VIOLATED
    decisions = [s.params.get("decision", "") for s in alo.counterexample.steps]
    assert any(d.startswith("answered: done") for d in decisions)
