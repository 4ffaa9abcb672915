"""Time (PROTOCOL.md, Time): the order the key lifetime L, the delay bound D and the replay
window W impose, the design teams ship on Stripe (replay under the same key within W, then
a consistent list), and the counterexamples once W or D outlives L."""

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.checker.verify.suite import suite_names
from toolcommit.model.environment import configure, instance_in
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import instance
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.timing import Relations, seconds
from toolcommit.spec import protocol

OUTCOMES = ["I1", "I1net", "P1", "P3", "FULFIL"]
STRIPE_DESIGN = {"on_unknown": "replay_then_reconcile"}


def stripe(**knobs):
    return configure(preset("recommended"), "stripe").with_knobs({**STRIPE_DESIGN, **knobs})


def statuses(config, name, props):
    r = check_instance(config, instance_in(instance(name), config.env), props)
    return {v.property: v for v in r.verdicts}


@pytest.mark.parametrize(
    "name", [n for n in suite_names() if n not in ("default", "provider_non_idempotent")]
)
def test_replaying_under_the_same_key_then_listing_keeps_every_outcome_on_stripe(name):
    """provider_non_idempotent is no Stripe world (Stripe honours keys); `default` is judged
    by the design test (it is the large one)."""
    got = statuses(stripe(), name, OUTCOMES)
    assert {p: v.status for p, v in got.items()} == {p: Status.HOLDS for p in OUTCOMES}


def test_recommended_as_it_was_refunds_twice_on_stripe_after_a_read_that_beat_a_late_request():
    v = statuses(configure(preset("recommended"), "stripe"), "give_up_retry", ["I1"])["I1"]
    steps = [s.action for s in v.counterexample.steps]
    assert v.status is Status.VIOLATED and "delay" in steps and "read_status" in steps


@pytest.mark.parametrize("setting,late", [("replay_window", "48h"), ("delay_bound", "48h")])
def test_a_window_or_a_delay_that_outlives_the_key_lets_stripe_apply_twice(setting, late):
    v = statuses(
        stripe(**{setting: late}),
        "ack_loss" if setting == "replay_window" else "give_up_retry",
        ["I1"],
    )["I1"]
    assert v.status is Status.VIOLATED
    steps = [s.action for s in v.counterexample.steps]
    assert "expire_key" in steps
    prune = steps.index("expire_key")
    applied = [
        i
        for i, s in enumerate(v.counterexample.steps)
        if s.action == "deliver" and s.params.get("outcome") == "applied"
    ]
    assert applied and applied[-1] > prune, "the second effect comes after the key was pruned"


def test_no_key_is_pruned_before_its_window_closed_and_its_requests_arrived():
    c, ex = run_instance(stripe(), instance_in(instance("zombie"), "stripe"), Limits())
    system = c.system
    prunes = 0
    for packed in ex.states:
        s = c.unpack(packed)
        for a in system.actions:
            if a.name == "expire_key" and system.enabled(a, s):
                prunes += 1
                key = a.params["token"]
                assert s[f"win.{key}"] == 1
                assert not any(
                    system.var(n).show(v) in ("INFLIGHT", "DELAYED")
                    for n, v in s.items()
                    if n.startswith(f"msg.{key}.")
                )
    assert prunes, "the key is pruned somewhere: the order is not vacuous"


def test_a_request_meeting_another_under_its_key_gets_a_409_and_the_record_stays_in_doubt():
    c, ex = run_instance(stripe(), instance_in(instance("zombie"), "stripe"), Limits())
    refused = [
        a
        for a in c.system.actions
        if a.name == "deliver"
        and a.params.get("outcome", "").startswith("refused: its key is in use")
    ]
    assert refused
    assert any(evaluate(a.guard, c.unpack(s)) for s in ex.states for a in refused)


def test_the_saved_500_replayed_forever_is_unknown_not_holds():
    cfg = configure(preset("recommended"), "stripe").with_knobs(
        {
            "on_unknown": "blind_retry",
            "on_absent": "rerecord",
            "fencing": "off",
            "late_replay": "replay_same_key",
        }
    )
    inst = instance_in(instance("ack_loss"), "stripe").with_bounds(
        {"key_expiries": 0, "max_fence": 6}
    )
    r = check_instance(cfg, inst, ["FULFIL", "DEADLOCK", "PROGRESS"])
    assert r.stats["truncated"] > 0
    assert {v.status for v in r.verdicts} == {Status.UNKNOWN}
    assert all("fence bound" in v.reason for v in r.verdicts)


def test_a_cancel_survives_a_prompt_revision():
    """The user cancels k0; the revised prompt's t4 (another key) must not carry the refund
    out: recommended rejects it as a conflict with the cancelled record. Searched state by
    state, then P3 (per intent) breaks where the revision is a new key."""
    inst = instance("prompt_revision").with_bounds({"cancels": 1})
    c, ex = run_instance(preset("recommended"), inst, Limits())
    states = [c.unpack(s) for s in ex.states]
    cancelled = [s for s in states if any(v for n, v in s.items() if n.startswith("cancelled."))]
    assert cancelled
    assert all(sum(v for n, v in s.items() if n.startswith("applied.")) == 0 for s in cancelled)
    v = check_instance(
        preset("recommended").with_knobs({"revision": "new_key"}), inst, ["P3"]
    ).verdicts[0]
    assert v.status is Status.VIOLATED
    assert [s.params.get("key") for s in v.counterexample.steps if s.action == "cancel"] != [
        s.params.get("key")
        for s in v.counterexample.steps
        if s.action == "deliver" and s.params.get("outcome") == "applied"
    ]


def test_a_provider_that_ignores_keys_meets_the_sdk_retry_so_recommended_turns_it_off():
    inst = instance("provider_non_idempotent")
    assert inst.faults["duplicates"] == 1
    assert check_instance(preset("recommended"), inst, ["I1"]).verdicts[0].status is Status.HOLDS
    v = check_instance(
        preset("recommended").with_knobs({"sdk_retries": "on"}), inst, ["I1"]
    ).verdicts[0]
    assert v.status is Status.VIOLATED and "redeliver" in [s.action for s in v.counterexample.steps]


def _designs():
    for p in PRESETS:
        yield preset(p)
    base = preset("recommended")
    for k, knob in protocol().knobs.items():
        for o in knob.options:
            if o != base.knobs[k]:
                yield base.with_knobs({k: o})


@pytest.mark.parametrize("name", ["ack_loss", "crash_before_dispatch", "reorder", "give_up_retry"])
def test_a_design_the_model_calls_single_send_never_sends_a_key_twice(name):
    """`resends()` decides who gets a window; it must never call a re-sending design
    single-send (that would let a key be pruned under a retry unordered)."""
    for cfg in _designs():
        cfg = configure(cfg, "stripe")
        c, ex = run_instance(cfg, instance_in(instance(name), "stripe"), Limits(max_states=200000))
        if c.system.meta["resends"]:
            continue
        for packed in ex.states:
            s = c.unpack(packed)
            later = [
                n
                for n, v in s.items()
                if n.startswith("msg.")
                and not n.endswith(".1")
                and c.system.var(n).show(v) != "NONE"
            ]
            assert not later, (cfg.label(), later)


def test_relations_read_infinity_as_no_order():
    assert Relations(3600, 900, 86400).expiry_after_arrivals
    assert not Relations(None, 900, 86400).expiry_after_window
    assert Relations(0, None, 86400).expiry_after_window
    assert not Relations(0, None, 86400).expiry_after_arrivals
    assert Relations(3600, 900, None).expiry_after_arrivals  # keys kept forever
    assert seconds("2d") == 172800
