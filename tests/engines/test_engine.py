"""The explicit engine against the model's own interpreter."""

import random
from dataclasses import replace

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.explore import explore
from toolcommit.checker.engines.trace import replay
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.model.errors import InternalError
from toolcommit.model.instance import instance
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.semantics import build


@pytest.mark.parametrize("p", ["naive", "seed", "recommended"])
def test_compiled_successors_equal_the_interpreters_on_a_random_walk(p):
    system = build(preset(p), instance("default"))
    c = compile_system(system)
    rng = random.Random(7)
    for _ in range(20):
        state = dict(system.init)
        for _ in range(30):
            expected = sorted(
                (i, c.pack(system.step(a, state)))
                for i, a in enumerate(system.actions)
                if system.enabled(a, state)
            )
            assert sorted(c.successors(c.pack(state))[0]) == expected
            violated = {n for n in system.invariants if n in system.violated(state)}
            mask = c.violations(c.pack(state))
            assert {n for b, n in enumerate(c.invariant_names) if mask >> b & 1} == violated
            if not expected:
                break
            state = c.unpack(rng.choice(expected)[1])


@pytest.mark.slow  # a deeper or repeated check of what a default test shows
@pytest.mark.parametrize("name", ["zombie", "reorder", "duplicate_call_id", "default"])
def test_worker_symmetry_shrinks_the_state_space_without_changing_verdicts(name):
    for p in ("naive", "recommended"):
        if p == "naive" and name == "default":
            continue
        system = build(preset(p), instance(name))
        plain = replace(system, symmetries=())
        a, b = explore(compile_system(system)), explore(compile_system(plain))
        assert a.state_count < b.state_count
        assert {k: a.depth_of(v) for k, v in a.first_violation.items()} == {
            k: b.depth_of(v) for k, v in b.first_violation.items()
        }
        assert (a.deadlock is None) == (b.deadlock is None) and (a.stuck is None) == (
            b.stuck is None
        )


@pytest.mark.parametrize("p", PRESETS)
@pytest.mark.parametrize("name", ["reorder", "duplicate_call_id", "zombie", "cancel"])
def test_symmetry_reduced_search_stores_exactly_one_state_per_orbit(p, name):
    """Canonical under the product of the groups (calls and workers): the reduced search
    stores as many states as the unreduced one has orbits (naive reorder: 36, not 42)."""
    system = build(preset(p), instance(name))
    c = compile_system(system)
    plain = explore(compile_system(replace(system, symmetries=())), graph=False)
    assert explore(c).state_count == len({c.canon(s) for s in plain.states})


def test_canonical_form_is_the_same_for_every_image_under_the_product_group():
    system = build(preset("naive"), instance("reorder"))
    c = compile_system(system)
    assert len(system.symmetries) == 2
    for s in explore(compile_system(replace(system, symmetries=())), graph=False).states:
        images = [s]
        for group in c.groups:
            images += [g(t) for t in images for g in group]
        assert {c.canon(t) for t in images} == {min(images)}


def test_bfs_counterexample_is_shortest_no_shorter_prefix_violates():
    r = check_instance(preset("naive"), instance("ack_loss"), ["I1"])
    cx = r.verdicts[0].counterexample
    system = build(preset("naive"), instance("ack_loss"))
    assert [s.state for s in cx.steps[:-1] if "I1" in system.violated(s.state)] == []
    assert "I1" in system.violated(cx.steps[-1].state)


def test_replay_refuses_a_tampered_counterexample():
    r = check_instance(preset("naive"), instance("ack_loss"), ["I1"])
    cx = r.verdicts[0].counterexample
    system = build(preset("naive"), instance("ack_loss"))
    assert replay(system, cx) is None
    swapped = replace(cx, steps=(cx.steps[0], cx.steps[2], cx.steps[1]) + cx.steps[3:])
    assert "not enabled" in replay(system, swapped)


def test_time_and_state_limits_end_in_an_incomplete_exploration():
    c = compile_system(build(preset("naive"), instance("default")))
    ex = explore(c, max_states=2000)
    assert not ex.complete and "state limit" in ex.stop_reason


def test_counterexample_that_breaks_nothing_is_an_internal_error():
    from toolcommit.checker.engines.explicit.engine import concretize

    c, ex = run_instance(preset("recommended"), instance("ack_loss"), Limits())
    with pytest.raises(InternalError):
        concretize(c, ex, ex.state_count - 1, "I1")


def _graph_runs():
    from toolcommit.checker.verify.suite import suite_names

    for p in ("naive", "seed", "recommended"):
        for name in suite_names():
            if name != "default" or p == "recommended":
                yield p, name


@pytest.mark.parametrize("p,name", list(_graph_runs()))
def test_networkx_and_array_progress_checks_agree(p, name):
    from toolcommit.checker.engines.explicit.graph import first_stuck_arrays, first_stuck_networkx

    c, ex = run_instance(preset(p), instance(name), Limits())
    eoff, edst = ex.edges
    goals = ex.settled_ids + ex.truncated_ids
    assert (
        first_stuck_networkx(ex.state_count, eoff, edst, goals)
        == first_stuck_arrays(ex.state_count, eoff, edst, goals)
        == ex.stuck
    )


def test_a_move_cut_by_the_fence_bound_is_truncation_not_deadlock():
    small = instance("ack_loss").with_bounds({"max_fence": 1})
    c, ex = run_instance(preset("naive"), small, Limits())
    assert ex.truncated > 0  # the blind retry needs a second fence
    assert ex.deadlock is None or ex.deadlock not in ex.truncated_ids


def test_no_truncation_where_no_move_needs_another_fence():
    parked = preset("recommended").with_knobs({"on_unknown": "dead_letter", "fencing": "off"})
    c, ex = run_instance(parked, instance("ack_loss").with_bounds({"max_fence": 1}), Limits())
    assert ex.truncated == 0


def test_depths_are_shortest_paths_also_on_the_frontier_of_a_search_a_limit_stopped():
    c = compile_system(build(preset("recommended"), instance("default")))  # 14k states
    full = explore(c, graph=False)
    cut = explore(c, max_states=3000, graph=False)
    assert not cut.complete and cut.level_ends[-1] < cut.state_count  # a frontier is left
    by_level = {}
    for d, end in enumerate(full.level_ends):
        for sid in range(full.level_ends[d - 1] if d else 0, end):
            by_level[full.states[sid]] = d
    for sid in range(cut.state_count):  # every state, the unexpanded ones included
        assert cut.depth_of(sid) == len(cut.path(sid)) - 1 == by_level[cut.states[sid]]
    assert max(map(cut.depth_of, range(cut.state_count))) == cut.depth + 1
