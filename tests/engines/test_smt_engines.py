"""Claims about the SMT engines (BMC, k-induction, PDR) and the random simulator, checked
against the explicit BFS engine on the same System."""

from __future__ import annotations

import random

import pytest
import z3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcommit.checker.engines import simulate
from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.smt import bmc, induction
from toolcommit.checker.engines.smt.encode import Encoding, to_z3
from toolcommit.checker.engines.trace import breaks, replay
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import run_instance
from toolcommit.model.errors import UsageError
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import failure_classes, instance
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.properties import state_predicates
from toolcommit.model.semantics import build
from toolcommit.spec import protocol

INVARIANTS = state_predicates()

# a larger instance than the explicit engine finishes in 60 s on the development machine
# (2 CPUs, shared): 327,944 states explored at its 60 s limit, depth 20, incomplete (its
# symmetry reduction tries 5! worker permutations per state); the lemma proof of all seven
# invariants took 1.2 s (benchmarks/RESULTS-engines.md)
BIG = {
    "workers": 5,
    "crashes": 4,
    "max_fence": 6,
    "delays": 4,
    "ack_losses": 4,
    "lease_expiries": 4,
    "cancels": 2,
}


def explicit(config, inst):
    c, ex = run_instance(config, inst, Limits(), graph=False)
    assert ex.complete
    return c, ex


def assert_agree(config, inst) -> None:
    """BMC to the BFS diameter and BFS agree on every invariant: same verdict, same
    shortest counterexample length; every BMC counterexample replays."""
    c, ex = explicit(config, inst)
    system = c.system
    verdicts = {v.property: v for v in bmc.check(system, INVARIANTS, ex.depth)}
    for p in INVARIANTS:
        v = verdicts[p]
        if p in ex.first_violation:
            assert v.status is Status.VIOLATED, (config.label(), inst.name, p, v.line())
            assert v.counterexample.length == ex.depth_of(ex.first_violation[p]), (
                config.label(),
                inst.name,
                p,
            )
            assert replay(system, v.counterexample) is None and breaks(system, v.counterexample)
            assert v.counterexample.engine == "smt"
        else:
            # BMC to the diameter covers every reachable state: it agrees with "exhaustively"
            assert v.status is Status.HOLDS and v.scope == f"up to depth {ex.depth}", (p, v.line())


@pytest.mark.slow
@pytest.mark.parametrize("name", failure_classes())
@pytest.mark.parametrize("preset_name", PRESETS)
def test_bmc_and_bfs_agree_on_verdicts_and_shortest_counterexample_length(preset_name, name):
    assert_agree(preset(preset_name), instance(name))


@pytest.mark.slow  # a deeper or repeated check of what a default test shows
@pytest.mark.parametrize(
    "knobs",
    [
        {"fencing": "off"},
        {"on_unknown": "blind_retry"},
        {"idempotency_key": "call_id", "late_replay": "replay_same_key"},
        {"on_unknown": "compensate", "late_replay": "compensate"},
        {"on_unknown": "sealed_compensate"},
        {"on_unknown": "sealed_compensate", "compensable": "no", "provider_fences": "no"},
        {"on_unknown": "human_approval"},
        {"on_unknown": "human_approval", "provider_fences": "no"},
    ],
)
@pytest.mark.parametrize(
    "name", ["ack_loss", "give_up_retry", pytest.param("zombie", marks=pytest.mark.slow)]
)
def test_bmc_and_bfs_agree_under_knob_changes(knobs, name):
    """zombie (60% of the cost) runs with -m slow."""
    assert_agree(preset("recommended").with_knobs(knobs), instance(name))


@pytest.mark.slow
@pytest.mark.parametrize("preset_name", PRESETS)
def test_bmc_and_bfs_agree_on_the_default_instance(preset_name):
    assert_agree(preset(preset_name), instance("default"))


def knob_configs():
    knobs = protocol().knobs
    return st.builds(
        lambda base, picks: preset(base).with_knobs(picks),
        st.sampled_from(PRESETS),
        st.fixed_dictionaries({n: st.sampled_from(list(k.options)) for n, k in knobs.items()}),
    )


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=knob_configs(), name=st.sampled_from(["ack_loss", "zombie", "give_up_retry", "cancel"])
)
def test_bmc_and_bfs_agree_on_generated_knob_combinations(config, name):
    assert_agree(config, instance(name))


@pytest.mark.deep  # the 12-example run above is in CI (-m slow)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=knob_configs(), name=st.sampled_from(failure_classes()))
def test_bmc_and_bfs_agree_on_many_generated_knob_combinations(config, name):
    assert_agree(config, instance(name))


@pytest.mark.slow  # a deeper or repeated check of what a default test shows
@pytest.mark.parametrize("sort", ["bv", "int"])
@pytest.mark.parametrize("preset_name", PRESETS)
def test_to_z3_agrees_with_evaluate_on_random_states(sort, preset_name):
    system = build(preset(preset_name), instance("default"))
    enc = Encoding(system, sort=sort)
    rng = random.Random(7)
    exprs = [e for a in system.actions for e in (a.guard, *a.updates.values())][:400]
    exprs += list(system.invariants.values()) + list(system.witnesses.values()) + [system.done]
    for _ in range(4):
        state = {v.name: rng.randrange(v.size) for v in system.variables}
        frame = enc.frame_at(0)
        subst = [
            (
                enc.vars_at(0)[n],
                z3.BitVecVal(x, enc.vars_at(0)[n].size()) if sort == "bv" else z3.IntVal(x),
            )
            for n, x in state.items()
        ]
        for e in exprs:
            t = to_z3(e, frame, sort, enc.width)
            got = z3.simplify(z3.substitute(t, *subst))
            want = evaluate(e, state)
            if z3.is_bool(got):
                assert z3.is_true(got) == bool(want), str(e)
            else:
                value = got.as_signed_long() if sort == "bv" else got.as_long()
                assert value == want, str(e)


def test_int_and_bitvector_encodings_find_the_same_shortest_violation():
    system = build(preset("naive"), instance("ack_loss"))
    a = bmc.check(system, ["I1"], 10, sort="bv")[0]
    b = bmc.check(system, ["I1"], 10, sort="int")[0]
    assert a.counterexample.length == b.counterexample.length == 8


def test_disjunctive_and_action_choice_transitions_are_the_same_relation():
    system = build(preset("seed"), instance("cancel"))
    x, y = Encoding(system, style="choice"), Encoding(system, style="disjunction")
    s = z3.Solver()
    s.add(x.domain(0), z3.Xor(x.trans(0), y.trans(0)))
    assert s.check() == z3.unsat


def test_bmc_pass_is_bounded_never_verified():
    v = bmc.check(build(preset("recommended"), instance("ack_loss")), ["I1"], 5)[0]
    assert v.status is Status.HOLDS and v.scope == "up to depth 5"


def test_bmc_reports_progress_per_depth():
    seen = []
    bmc.check(
        build(preset("recommended"), instance("cancel")),
        ["I1"],
        3,
        progress=lambda d, s: seen.append(d),
    )
    assert seen == [0, 1, 2, 3]


def test_bmc_timeout_is_unknown_with_the_reason():
    v = bmc.check(build(preset("naive"), instance("default")), ["I1"], 30, timeout=0.3)[0]
    assert v.status is Status.UNKNOWN and "time limit 0.3s reached" in v.reason


def test_smt_engines_reject_non_invariants():
    with pytest.raises(UsageError):
        bmc.check(build(preset("recommended"), instance("cancel")), ["DEADLOCK"], 3)


# ----- unbounded proofs -------------------------------------------------------------------
def test_prove_proves_i1_and_fence_for_recommended_on_the_default_instance():
    vs = induction.prove(build(preset("recommended"), instance("default")), ["I1", "FENCE"])
    assert [(v.property, v.status, v.scope) for v in vs] == [
        ("I1", Status.HOLDS, "proved"),
        ("FENCE", Status.HOLDS, "proved"),
    ]
    assert "stale_request_fenced_out" in vs[1].extra["lemma_families"]


# where no lemma of spec/lemmas.json closes the induction yet (the caller's `gone` flag is
# tied to `told` by none): UNKNOWN, never VIOLATED; the explicit engine holds it exhaustively
NOT_INDUCTIVE = {"caller_gives_up": ("I1", "I1net")}


@pytest.mark.parametrize("name", [n for n in failure_classes() if n not in NOT_INDUCTIVE])
def test_prove_proves_every_invariant_of_recommended_on_every_failure_class(name):
    vs = induction.prove(build(preset("recommended"), instance(name)))
    assert all(v.status is Status.HOLDS and v.scope == "proved" for v in vs), [v.line() for v in vs]


@pytest.mark.parametrize("name", sorted(NOT_INDUCTIVE))
def test_prove_says_unknown_where_no_lemma_closes_the_induction_and_proves_the_rest(name):
    vs = induction.prove(build(preset("recommended"), instance(name)))
    for v in vs:
        if v.property in NOT_INDUCTIVE[name]:
            assert v.status is Status.UNKNOWN and "not k-inductive" in v.line(), v.line()
        else:
            assert v.status is Status.HOLDS and v.scope == "proved", v.line()


def test_prove_proves_recommended_beyond_what_the_explicit_engine_finishes():
    vs = induction.prove(build(preset("recommended"), instance("default").with_bounds(BIG)))
    assert all(v.status is Status.HOLDS and v.scope == "proved" for v in vs), [v.line() for v in vs]


def test_lemmas_that_are_false_for_a_config_are_dropped_not_assumed():
    system = build(preset("naive"), instance("ack_loss"))
    from toolcommit.model.lemmas import candidates

    kept, dropped = induction.houdini(system, {**candidates(system), **system.invariants})
    assert "I1" in dropped and "I1" not in kept
    # every kept lemma holds on every reachable state (checked by BFS)
    c, ex = explicit(preset("naive"), instance("ack_loss"))
    for s in ex.states:
        state = c.unpack(s)
        assert all(evaluate(e, state) for e in kept.values())


def test_prove_finds_the_naive_violation_with_a_replayed_shortest_counterexample():
    system = build(preset("naive"), instance("ack_loss"))
    v = induction.prove(system, ["I1"])[0]
    assert v.status is Status.VIOLATED and v.counterexample.length == 8
    assert replay(system, v.counterexample) is None


def test_prove_says_unknown_when_induction_depth_runs_out():
    v = induction.prove(build(preset("seed"), instance("paraphrase")), ["FENCE"], max_k=3)[0]
    assert v.status is Status.UNKNOWN and "k <= 3" in v.reason


def test_pdr_proves_i1_with_a_certified_invariant():
    v = induction.prove(build(preset("recommended"), instance("ack_loss")), ["I1"], method="pdr")[0]
    assert v.status is Status.HOLDS and v.scope == "proved" and v.extra["engine"] == "pdr"


def test_pdr_refutes_naive_with_a_bmc_counterexample():
    system = build(preset("naive"), instance("cancel"))
    v = induction.prove(system, ["P3"], method="pdr")[0]
    assert v.status is Status.VIOLATED and v.counterexample.length == 5


@pytest.mark.slow
def test_pdr_proves_i1_and_fence_for_recommended_with_two_intents():
    # two intents, both invariants: seconds (the default instance takes PDR minutes, which
    # benchmarks/bench_engines.py measures; k-induction proves it in under a second)
    vs = induction.prove(
        build(preset("recommended"), instance("two_intents")),
        ["I1", "FENCE"],
        method="pdr",
        timeout=600,
    )
    assert all(v.status is Status.HOLDS for v in vs), [v.line() for v in vs]


# ----- random simulation ------------------------------------------------------------------
def test_random_simulation_is_replayable_from_its_seed():
    system = build(preset("seed"), instance("default"))
    a = simulate.check(system, None, 200, seed=42)
    b = simulate.check(system, None, 200, seed=42)
    assert a[1] == b[1]
    assert [(v.property, v.status, v.counterexample) for v in a[0]] == [
        (v.property, v.status, v.counterexample) for v in b[0]
    ]


@pytest.mark.parametrize("preset_name", ["naive", "seed"])
@pytest.mark.parametrize("name", failure_classes())
def test_random_simulation_finds_every_violation_bfs_finds_within_its_default_runs(
    preset_name, name
):
    c, ex = explicit(preset(preset_name), instance(name))
    vs, stats = simulate.check(c.system, None, seed=0)  # default: 1000 runs
    found = {v.property for v in vs if v.status is Status.VIOLATED}
    assert found == set(ex.first_violation)
    for v in vs:
        if v.status is Status.VIOLATED:
            assert replay(c.system, v.counterexample) is None and breaks(c.system, v.counterexample)
            assert v.counterexample.length >= ex.depth_of(ex.first_violation[v.property])


def test_a_clean_random_run_states_its_denominator_and_is_not_exhaustive():
    vs, stats = simulate.check(
        build(preset("recommended"), instance("default")), ["I1"], 300, seed=3
    )
    assert vs[0].status is Status.HOLDS
    assert vs[0].scope == "in 300 random runs of up to 60 steps (seed 3), not exhaustive"
    assert stats["runs"] == 300 and stats["steps"] > 0
    assert all(n > 0 for n in stats["faults"].values()), stats["faults"]
