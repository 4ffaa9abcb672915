"""Environment profiles: data with sources, resolved into assumptions and budgets; every
real-system fault fires in some instance of the profile that enables it, and `ideal`
changes nothing."""

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.model.environment import (
    ENV_FAULTS,
    configure,
    from_label,
    instance_in,
    names,
    profile,
)
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build
from toolcommit.spec import protocol

# fault action -> (profile, instance, knobs set on recommended) where it fires: the stale
# read needs the lagging search (recommended reads the consistent list)
FIRES = {
    "fail_before_apply": ("stripe", "ack_loss", {}),
    "fail_after_apply": ("stripe", "ack_loss", {}),
    "receive_error": ("stripe", "ack_loss", {}),
    "expire_key": ("stripe", "transport_retry", {}),
    "close_window": ("stripe", "ack_loss", {"on_unknown": "replay_then_reconcile"}),
    "stale_read": ("stripe", "ack_loss", {"status_via": "search"}),
    "expire_request": ("email", "provider_non_idempotent", {}),
    "lose_seal": ("fenced-store", "ack_loss", {}),
    "deliver_seal": ("fenced-store", "ack_loss", {}),
    "reseal": ("fenced-store", "ack_loss", {}),
    "failover": ("async-log", "ack_loss", {}),
}


def recommended_in(env):
    return configure(preset("recommended"), env)


@pytest.mark.parametrize("action", sorted(FIRES))
def test_every_real_system_fault_fires_in_the_profile_that_enables_it(action):
    env, name, knobs = FIRES[action]
    _, ex = run_instance(
        recommended_in(env).with_knobs(knobs), instance_in(instance(name), env), Limits()
    )
    assert ex.complete and ex.fired.get(action, 0) > 0, (action, env, name)


def test_every_environment_fault_budget_is_covered_and_names_a_fault_action():
    actions = protocol().actions
    for budget in ENV_FAULTS:
        assert actions[protocol().faults[budget]]["fault"], budget
        assert protocol().faults[budget] in FIRES, budget


def test_the_saved_error_is_replayed_for_the_same_key():
    _, ex = run_instance(
        recommended_in("stripe").with_knobs({"on_unknown": "blind_retry"}),
        instance_in(instance("ack_loss"), "stripe"),
        Limits(),
    )
    c = ex.compiled
    replays = [
        a
        for a in c.system.actions
        if a.name == "deliver" and a.params.get("outcome") == "replays the saved error"
    ]
    assert replays
    assert ex.fired["deliver"] > 0
    # the replay action's guard holds in some reachable state
    from toolcommit.model.expr import evaluate

    assert any(evaluate(a.guard, c.unpack(s)) for s in ex.states for a in replays)


def test_ideal_sets_nothing_and_keeps_every_system_identical():
    assert profile("ideal").assumptions == {} and profile("ideal").budgets == {}
    for name in ("default", "zombie"):
        a = build(preset("recommended"), instance(name))
        b = build(recommended_in("ideal"), instance_in(instance(name), "ideal"))
        assert a.variables == b.variables and a.actions == b.actions


@pytest.mark.parametrize("env", [n for n in names() if n != "ideal"])
def test_every_behaviour_of_a_real_profile_names_its_source_or_why_not(env):
    p = profile(env)
    assert p.behaviours
    for b in p.behaviours:
        assert b.rests_on and b.what
        assert b.url is None or b.url.startswith(("https://", "the design article"))


def test_a_profile_sets_assumptions_and_budgets_and_set_still_wins():
    c = recommended_in("stripe")
    assert c.env == "stripe" and c.assumptions["provider_fences"] == "no"
    assert c.label() == "recommended@stripe"
    d = c.with_knobs({"provider_fences": "yes"})
    assert (
        d.assumptions["provider_fences"] == "yes"
        and d.label() == "recommended+provider_fences=yes@stripe"
    )
    assert from_label(d.label()) == d
    inst = instance_in(instance("ack_loss"), "stripe")
    assert inst.faults["key_expiries"] == 1 and inst.faults["ack_losses"] == 1


def test_key_expiry_lets_an_sdk_retry_apply_twice_when_no_window_bounds_the_retries():
    """With SDK retries on and no replay window, the retry may come after Stripe pruned the
    key (W >= L): applied twice. Inside a window shorter than the key's lifetime it cannot."""
    cfg = recommended_in("stripe").with_knobs({"sdk_retries": "on", "replay_window": "unbounded"})
    inst = instance_in(instance("transport_retry"), "stripe")
    v = check_instance(cfg, inst, ["I1"]).verdicts[0]
    assert v.status is Status.VIOLATED
    assert "expire_key" in [s.action for s in v.counterexample.steps]
    windowed = cfg.with_knobs({"replay_window": "1h"})
    assert check_instance(windowed, inst, ["I1"]).verdicts[0].status is Status.HOLDS


def test_a_stale_absent_search_then_the_users_re_ask_duplicates_the_refund_under_stripe():
    """The search lags; the consistent list does not: the same design reading the list
    never sees a stale absent (the stale_read action does not exist for it)."""
    by_search = recommended_in("stripe").with_knobs({"status_via": "search"})
    r = check_instance(by_search, instance_in(instance("give_up_retry"), "stripe"), ["I1"])
    steps = [s.action for s in r.verdicts[0].counterexample.steps]
    assert r.verdicts[0].status is Status.VIOLATED and "stale_read" in steps
    listed = build(recommended_in("stripe"), instance_in(instance("give_up_retry"), "stripe"))
    assert not [a for a in listed.actions if a.name == "stale_read"]


def test_the_seal_as_a_message_keeps_i1_and_fence_on_a_fenced_store():
    r = check_instance(
        recommended_in("fenced-store"),
        instance_in(instance("zombie"), "fenced-store"),
        ["I1", "FENCE", "FULFIL"],
    )
    assert {v.status for v in r.verdicts} == {Status.HOLDS}


def test_reading_status_before_the_seal_lands_is_what_the_wait_prevents():
    """Without the wait (the seal atomic, as `ideal` assumes) the same store is safe too;
    with a lost seal and no wait the stale request could land after the read: the model
    makes the read wait, and the coverage above shows the seal really is lost and re-sent."""
    system = build(
        recommended_in("fenced-store"), instance_in(instance("ack_loss"), "fenced-store")
    )
    reads = [a for a in system.actions if a.name == "read_status"]
    assert reads and all("seal." in str(a.guard) for a in reads)


def test_failover_losing_an_accepted_record_leaves_the_intent_unfulfilled():
    r = check_instance(
        recommended_in("async-log"),
        instance_in(instance("ack_loss"), "async-log"),
        ["FULFIL", "I1"],
    )
    by = {v.property: v for v in r.verdicts}
    assert by["I1"].status is Status.HOLDS
    assert by["FULFIL"].status is Status.VIOLATED
    assert "failover" in [s.action for s in by["FULFIL"].counterexample.steps]
