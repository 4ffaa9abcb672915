"""Scenario restriction (`toolcommit.model.scenario`): the restricted system's traces are
exactly the original's traces that follow the scenario."""

import pytest

from toolcommit.model.errors import UsageError
from toolcommit.model.instance import Instance, instance, proposal
from toolcommit.model.knobs import preset
from toolcommit.model.scenario import SCENARIO, Pattern, follows, restrict
from toolcommit.model.semantics import build

PATTERNS = [
    Pattern("dispatch"),
    Pattern("timeout"),
    Pattern("crash"),
    Pattern("propose", {"proposal": "t2"}, {"rec(t1)": ("UNKNOWN", "RECONCILING")}),
]


def _system():
    inst = Instance(
        "late",
        "t1, retry t2",
        (proposal("t1"), proposal("t2")),
        1,
        2,
        {"crashes": 1, "ack_losses": 1, "delays": 1},
        {},
    )
    return build(preset("recommended"), inst)


def _traces(system, depth):
    """Every trace of `system` up to `depth` steps: (events, states before each event)."""
    out = []

    def go(state, events, states):
        out.append((list(events), list(states)))
        if len(events) == depth:
            return
        for a in system.actions:
            if system.enabled(a, state):
                go(system.step(a, state), events + [(a.name, dict(a.params))], states + [state])

    go(dict(system.init), [], [])
    return out


def _key(events):
    return tuple(
        (n, tuple(sorted((k, v) for k, v in p.items() if k != SCENARIO))) for n, p in events
    )


def test_restricted_traces_all_follow_the_scenario():
    base = _system()
    restricted = restrict(base, PATTERNS)
    for events, states in _traces(restricted, 8):
        assert follows(events, PATTERNS, states, base) is not None, events


def test_every_original_trace_that_follows_the_scenario_is_kept():
    base = _system()
    restricted = restrict(base, PATTERNS)
    kept = {_key(e) for e, _ in _traces(restricted, 7)}
    following = {_key(e) for e, s in _traces(base, 7) if follows(e, PATTERNS, s, base) is not None}
    assert kept == following


def test_scenario_variable_counts_the_patterns_seen():
    base = _system()
    restricted = restrict(base, PATTERNS)
    for events, states in _traces(restricted, 8):
        if not events:
            continue
        state = restricted.init
        for a_name, params in events:
            a = next(x for x in restricted.actions if x.name == a_name and dict(x.params) == params)
            state = restricted.step(a, state)
        assert state[SCENARIO] == follows(events, PATTERNS, states, base)


def test_invariants_are_judged_only_on_completed_scenarios():
    naive = build(preset("naive"), instance("ack_loss"))
    r = restrict(naive, [Pattern("lose_ack"), Pattern("timeout")])
    broken = {n: 2 if n.startswith("applied.") else v for n, v in r.init.items()}
    assert "I1" not in r.violated(broken)
    assert "I1" in r.violated({**broken, SCENARIO: 2})


def test_empty_scenario_is_the_identity():
    s = _system()
    assert restrict(s, []) is s


def test_unknown_names_are_rejected_with_the_field():
    s = _system()
    with pytest.raises(UsageError, match=r"scenario\[0\]\.params\.worker"):
        restrict(s, [Pattern("dispatch", {"worker": "w7"})])
    with pytest.raises(UsageError, match=r"scenario\[0\]\.when\.rec\(t9\)"):
        restrict(s, [Pattern("dispatch", {}, {"rec(t9)": ("UNKNOWN",)})])


def test_naming_a_worker_drops_worker_symmetry():
    inst = instance("reorder")
    s = build(preset("recommended"), inst)
    assert s.symmetries
    assert restrict(s, [Pattern("dispatch")]).symmetries == s.symmetries
    assert restrict(s, [Pattern("dispatch", {"worker": "w1"})]).symmetries == ()
