"""Two intents that touch one resource: the user genuinely asks twice for the same refund.

A key built from (tool, args, scope) cannot tell the second request from a model retry;
an intent id minted by the runtime per user request (and inherited by retries) can.
"""

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.trace import find_action, from_actions
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.logs.conformance import check
from toolcommit.checker.logs.write import counterexample_to_events
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.model.expr import Var, evaluate, sum_
from toolcommit.model.instance import instance, instance_names
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build

CONVERSATION = {"intent_id": "conversation"}
# a design that lets a model retry through to the provider: blind retry, no provider key
RETRYING = {"on_unknown": "blind_retry", "idempotency_key": "none"}


def verdicts(settings, props=("I1", "FULFIL"), preset_name="recommended"):
    cfg = preset(preset_name).with_knobs(settings)
    return {
        v.property: v for v in check_instance(cfg, instance("two_intents"), list(props)).verdicts
    }


def test_a_second_genuine_refund_is_refused_as_a_duplicate_under_conversation_scope():
    by = verdicts(CONVERSATION)
    assert by["I1"].status is Status.HOLDS
    v = by["FULFIL"]
    assert v.status is Status.VIOLATED and v.counterexample.length == 6
    last = v.counterexample.steps[-1]
    assert (last.action, last.params["proposal"], last.params["decision"]) == (
        "propose",
        "u2",
        "duplicate",
    )
    assert last.state["asked.i2"] == 1 and last.state["applied.k0"] == 1
    assert "new_intent" in [s.action for s in v.counterexample.steps]


def test_the_articles_fixture_scope_refuses_the_second_refund_too():
    assert verdicts({}, preset_name="seed")["FULFIL"].status is Status.VIOLATED


def test_a_minted_intent_id_keeps_retries_deduplicated_and_intents_apart():
    system = build(preset("recommended"), instance("two_intents"))
    key_of = system.meta["key_of"]
    assert key_of["t1"] == key_of["t2"] != key_of["u2"]  # the retry shares, u2 does not
    r = check_instance(preset("recommended"), instance("two_intents"), None)
    assert {v.status for v in r.verdicts} == {Status.HOLDS}
    # both refunds really happen somewhere: one effect on each intent's key
    _, ex = run_instance(preset("recommended"), instance("two_intents"), Limits())
    both = [
        s
        for s in ex.states
        if ex.compiled.unpack(s)["applied.k0"] == 1 and ex.compiled.unpack(s)["applied.k1"] == 1
    ]
    assert both and ex.fired["new_intent"] > 0


def test_conversation_scope_folds_the_second_intent_into_the_first_key():
    system = build(preset("recommended").with_knobs(CONVERSATION), instance("two_intents"))
    assert len(set(system.meta["key_of"].values())) == 1
    assert system.meta["keys"][0]["callers"] == ["t1", "t2", "u2"]


def test_I1_still_catches_a_retry_duplicate_before_the_second_intent():
    for scope in ("conversation", "minted"):
        v = verdicts({**RETRYING, "intent_id": scope}, ("I1",))["I1"]
        assert v.status is Status.VIOLATED, scope
        last = v.counterexample.steps[-1].state
        assert last["asked.i2"] == 0 and last["applied.k0"] == 2, scope


def test_a_minted_id_also_catches_a_retry_duplicate_after_the_second_intent_is_asked():
    """Per intent, not per world: two effects of the first request while the second is
    asked and not applied break I1 with minted ids. With a shared key the two effects are
    counted against the two intents asked (effects on a shared key belong to no single
    intent), so that state passes I1 there; FULFIL is what fails such runs."""
    state = {"applied.k0": 2, "applied.k1": 0, "asked.i2": 1}
    minted = build(preset("recommended").with_knobs(RETRYING), instance("two_intents"))
    assert not evaluate(minted.invariants["I1"], {**minted.init, **state})
    shared = build(
        preset("recommended").with_knobs({**RETRYING, **CONVERSATION}), instance("two_intents")
    )
    s = {**shared.init, "applied.k0": 2, "asked.i2": 1}
    assert evaluate(shared.invariants["I1"], s)
    assert not evaluate(shared.invariants["I1"], {**s, "asked.i2": 0})


@pytest.mark.parametrize("name", [n for n in instance_names() if len(instance(n).requests()) == 1])
def test_an_instance_with_one_intent_builds_the_same_system_under_either_intent_id(name):
    a = build(preset("recommended"), instance(name))
    b = build(preset("recommended").with_knobs(CONVERSATION), instance(name))
    assert repr((a.variables, a.init, a.actions, a.invariants, a.witnesses, a.ends)) == repr(
        (b.variables, b.init, b.actions, b.invariants, b.witnesses, b.ends)
    )
    total = sum_([Var(v.name) for v in a.variables if v.family == "applied"])
    assert repr(a.invariants["I1"]) == repr(total <= 1)


def test_the_second_intent_is_emitted_only_after_the_user_asks():
    system = build(preset("recommended"), instance("two_intents"))
    u2 = [a for a in system.actions if a.name == "propose" and a.params["proposal"] == "u2"]
    assert u2 and all(not evaluate(a.guard, system.init) for a in u2)
    asks = [a for a in system.actions if a.name == "new_intent"]
    assert len(asks) == 1 and asks[0].fault


def test_a_minted_run_is_logged_with_each_intent_in_its_own_scope_and_conforms():
    system = build(preset("recommended"), instance("two_intents"))
    steps = [
        (
            "propose",
            {"call": "t1", "proposal": "t1", "worker": "w0", "key": "k0", "decision": "accepted"},
        ),
        ("dispatch", {"key": "k0", "worker": "w0", "fence": "1"}),
        ("deliver", {"key": "k0", "fence": "1", "outcome": "applied"}),
        ("receive_ack", {"key": "k0", "worker": "w0", "fence": "1"}),
        ("new_intent", {"intent": "i2"}),
        (
            "propose",
            {"call": "u2", "proposal": "u2", "worker": "w0", "key": "k1", "decision": "accepted"},
        ),
        ("dispatch", {"key": "k1", "worker": "w0", "fence": "1"}),
        ("deliver", {"key": "k1", "fence": "1", "outcome": "applied"}),
        ("receive_ack", {"key": "k1", "worker": "w0", "fence": "1"}),
    ]
    cx = from_actions(system, [find_action(system, n, p) for n, p in steps], "HAPPY", "test")
    events = counterexample_to_events(cx, system)
    scopes = [e["scope"] for e in events if e["type"] == "effect"]
    assert scopes == ["user:42:checkout:7#i1", "user:42:checkout:7#i2"]
    assert check(events).verdict.value == "CONFORMS"
