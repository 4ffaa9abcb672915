"""The sealed saga (`on_unknown=sealed_compensate`) and the human approval gate
(`on_unknown=human_approval`): their record transitions are spec edges through RECONCILING,
the seal keeps a delayed request from landing after them where the provider fences (and
only there), the gate's new attempt goes out after the old request is fenced off, a stale
read fools the human as it fools a worker, and every action of theirs fires."""

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.model.environment import configure, instance_in
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.spec import protocol

SAGA = {"on_unknown": "sealed_compensate"}
GATE = {"on_unknown": "human_approval"}


def recommended(**knobs):
    return preset("recommended").with_knobs(knobs)


def transitions(config, inst):
    """Every reachable transition: (state, action, next state), states as {name: label}."""
    c, ex = run_instance(config, inst, Limits())
    assert ex.complete
    system = c.system
    show = {v.name: v.show for v in system.variables}
    for s in ex.states:
        values = c.unpack(s)
        for a in system.actions:
            if not a.cut and evaluate(a.guard, values):
                after = system.step(a, values)
                yield (
                    {n: show[n](x) for n, x in values.items()},
                    a,
                    {n: show[n](x) for n, x in after.items()},
                )


def record_edges(config, inst, key="k0"):
    return {
        (s[f"rec.{key}"], t[f"rec.{key}"])
        for s, _, t in transitions(config, inst)
        if s[f"rec.{key}"] != t[f"rec.{key}"]
    }


def late_landings(config, inst, after_state):
    """Deliveries that apply key k0's request while its record is already `after_state`."""
    return [
        a
        for s, a, t in transitions(config, inst)
        if a.name == "deliver"
        and a.params.get("outcome") == "applied"
        and s["rec.k0"] == after_state
        and int(t["applied.k0"]) > int(s["applied.k0"])
    ]


# ----- the sealed saga -------------------------------------------------------------------------
def test_the_sealed_saga_goes_unknown_reconciling_compensated_never_straight():
    edges = record_edges(recommended(**SAGA), instance("give_up_retry"))
    assert {("UNKNOWN", "RECONCILING"), ("RECONCILING", "COMPENSATED")} <= edges
    assert ("UNKNOWN", "COMPENSATED") not in edges
    assert edges <= protocol().record.edge_set
    assert ("UNKNOWN", "COMPENSATED") in record_edges(
        recommended(on_unknown="compensate"), instance("give_up_retry")
    )


def test_a_delayed_request_cannot_land_after_a_sealed_compensation_where_the_provider_fences():
    assert late_landings(recommended(**SAGA), instance("give_up_retry"), "COMPENSATED") == []


def test_a_delayed_request_lands_after_a_sealed_compensation_where_the_provider_has_no_fences():
    config = recommended(**SAGA, provider_fences="no")
    assert late_landings(config, instance("give_up_retry"), "COMPENSATED")
    r = check_instance(config, instance("give_up_retry"), ["I1net"])
    assert r.verdicts[0].status is Status.VIOLATED


def test_the_unsealed_saga_lets_the_delayed_request_land_after_its_reversal_even_with_fences():
    assert late_landings(
        recommended(on_unknown="compensate"), instance("give_up_retry"), "COMPENSATED"
    )


def test_a_provider_that_cannot_reverse_leaves_the_effect_and_the_record_parked():
    config = recommended(**SAGA, compensable="no")
    refused = [
        (s, t)
        for s, a, t in transitions(config, instance("ack_loss"))
        if a.name == "compensate_after_seal" and a.params["status"] == "applied"
    ]
    assert refused and all(
        t["rec.k0"] == "DEAD_LETTER" and t["applied.k0"] == "1" for _, t in refused
    )


def test_the_sealed_saga_keeps_net_uniqueness_and_fulfilment_on_the_suite_where_it_can_reverse():
    for name in ("default", "zombie", "give_up_retry", "ack_loss"):
        r = check_instance(
            recommended(**SAGA), instance(name), ["I1net", "FULFIL", "P2", "LEGAL", "FENCE"]
        )
        assert {v.status for v in r.verdicts} == {Status.HOLDS}, name


# ----- the human approval gate -----------------------------------------------------------------
def test_the_gate_waits_for_the_human_and_uses_spec_edges_only():
    edges = record_edges(recommended(**GATE), instance("give_up_retry"))
    assert ("UNKNOWN", "RECONCILING") in edges and edges <= protocol().record.edge_set
    assert {("RECONCILING", "ACKED"), ("RECONCILING", "DEAD_LETTER")} & edges
    assert (
        record_edges(recommended(**GATE), instance("give_up_retry"), "k1")
        <= protocol().record.edge_set
    )


def test_the_humans_new_attempt_goes_out_only_after_the_old_request_is_fenced_off():
    """The new attempt is the next epoch's key (a fresh record, dispatched under its own
    first fence); when it is approved the old key's fence is already bumped past its
    delayed request's and the provider sealed at it, so that request cannot land."""
    approvals = [
        (s, t)
        for s, a, t in transitions(recommended(**GATE), instance("give_up_retry"))
        if a.name == "approve" and "new attempt" in a.params["decision"]
    ]
    assert approvals
    for s, t in approvals:
        assert int(s["fence.k0"]) >= 2 and s["pfence.k0"] == s["fence.k0"]
        assert (t["rec.k0"], t["rec.k1"], t["fence.k1"]) == ("DEAD_LETTER", "RECORDED", "0")
    assert late_landings(recommended(**GATE), instance("give_up_retry"), "DEAD_LETTER") == []
    r = check_instance(recommended(**GATE), instance("give_up_retry"), ["I1", "FULFIL"])
    assert {v.status for v in r.verdicts} == {Status.HOLDS}


def test_without_provider_fences_the_old_request_lands_beside_the_humans_new_attempt():
    r = check_instance(recommended(**GATE, provider_fences="no"), instance("give_up_retry"), ["I1"])
    steps = r.verdicts[0].counterexample.steps
    assert r.verdicts[0].status is Status.VIOLATED
    assert "approve" in [s.action for s in steps] and "delay" in [s.action for s in steps]


def test_a_stale_dashboard_read_fools_the_human_under_stripe():
    """The human looks where the design reads: Stripe's lagging search here (the consistent
    list would not fool them)."""
    config = configure(recommended(**GATE, status_via="search"), "stripe")
    r = check_instance(config, instance_in(instance("ack_loss"), "stripe"), ["I1"])
    v = r.verdicts[0]
    assert v.status is Status.VIOLATED
    fooled = [s for s in v.counterexample.steps if s.action == "approve"]
    assert (
        fooled
        and fooled[0].params["status"].startswith("absent, from a stale view")
        and fooled[0].fault
    )
    assert (
        check_instance(recommended(**GATE), instance("ack_loss"), ["I1"]).verdicts[0].status
        is Status.HOLDS
    )


# ----- coverage --------------------------------------------------------------------------------
FIRES = [  # (knobs, environment, instance, action, parameter that must show, its value)
    (SAGA, "ideal", "ack_loss", "compensate_after_seal", "status", "applied"),
    (SAGA, "ideal", "give_up_retry", "compensate_after_seal", "status", "absent"),
    (
        {**SAGA, "status_read": "no"},
        "ideal",
        "ack_loss",
        "compensate_after_seal",
        "status",
        "no status read",
    ),
    ({**SAGA, "status_via": "search"}, "stripe", "ack_loss", "stale_read", None, None),
    (SAGA, "fenced-store", "ack_loss", "reseal", None, None),
    (GATE, "ideal", "ack_loss", "review", None, None),
    (GATE, "ideal", "ack_loss", "approve", "status", "applied"),
    (GATE, "ideal", "give_up_retry", "approve", "status", "absent"),
    ({**GATE, "status_read": "no"}, "ideal", "ack_loss", "approve", "status", "no status read"),
    (
        {**GATE, "status_via": "search"},
        "stripe",
        "ack_loss",
        "approve",
        "status",
        "absent, from a stale view (it was applied)",
    ),
    (GATE, "fenced-store", "ack_loss", "reseal", None, None),
    (GATE, "fenced-store", "ack_loss", "deliver_seal", None, None),
]


@pytest.mark.parametrize(
    "knobs,env,name,action,param,value", FIRES, ids=[f"{f[3]}-{f[5] or f[1]}" for f in FIRES]
)
def test_every_action_of_the_saga_and_the_gate_fires(knobs, env, name, action, param, value):
    config = configure(preset("recommended"), env).with_knobs(knobs)
    fired = [
        a
        for _, a, _ in transitions(config, instance_in(instance(name), env))
        if a.name == action and (param is None or a.params.get(param) == value)
    ]
    assert fired, (action, value)


def test_the_gate_parks_and_tells_the_user_when_the_key_scheme_has_no_next_epoch():
    config = recommended(**GATE, epoch="none")
    decisions = {
        a.params["decision"]
        for _, a, _ in transitions(config, instance("give_up_retry"))
        if a.name == "approve"
    }
    assert "parks it in DEAD_LETTER and tells the user" in decisions
    assert not [d for d in decisions if "new attempt" in d]
