"""Seeded random simulation: many random runs, an explicit denominator, shrunk counterexamples.

Each run starts in the initial state and takes uniformly random enabled moves (the compiled
successor function, `toolcommit.checker.engines.explicit.codegen`) until nothing can move or `max_steps`
steps were taken. Every state is checked against the invariants. The first run breaking a
property gives its counterexample, which is then shrunk (delta debugging over the action
list: drop chunks of steps while the rest still replays through the interpreter and still
breaks the property) and replayed before it is returned.

Everything is drawn from one `random.Random(seed)`: the same system, seed, runs and
max_steps give the same result. A clean result is *not* exhaustive: it HOLDS with scope
"in N random runs of up to M steps (seed S)", the denominator that backs it.
"""
from __future__ import annotations

import random

from toolcommit.model.errors import InternalError
from toolcommit.model.system import Action, System

from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.trace import breaks, from_actions, replay
from toolcommit.checker.engines.verdict import Status, Verdict


def _violates(system: System, actions: list[Action], prop: str) -> bool:
    """Whether `actions` are all enabled from the initial state and end breaking `prop`."""
    state = dict(system.init)
    for a in actions:
        if not system.enabled(a, state):
            return False
        state = system.step(a, state)
    return prop in system.violated(state)


def shrink(system: System, actions: list[Action], prop: str) -> list[Action]:
    """A shorter action list that still replays and still breaks `prop` (ddmin-style:
    remove chunks of halving size until no single step can go)."""
    # first cut at the first violation
    state = dict(system.init)
    for i, a in enumerate(actions):
        state = system.step(a, state)
        if prop in system.violated(state):
            actions = actions[: i + 1]
            break
    n = 2
    while len(actions) >= 2:
        chunk = max(1, len(actions) // n)
        removed = False
        for start in range(0, len(actions), chunk):
            trial = actions[:start] + actions[start + chunk:]
            if trial and _violates(system, trial, prop):
                actions = trial
                n = max(n - 1, 2)
                removed = True
                break
        if not removed:
            if chunk == 1:
                break
            n = min(len(actions), n * 2)
    return actions


def simulate(system: System, runs: int = 1000, seed: int = 0, max_steps: int = 60,
             props=None) -> dict:
    """Random runs of `system`; returns the denominator and the first failing run per property.

    Returns
    -------
    dict with `runs`, `steps` (total), `max_steps`, `seed`, `faults` (fault action name ->
    times fired), `deadends` (runs that stopped before `max_steps`) and `violations`:
    property -> {"run": index, "actions": [Action], "steps": length before shrinking}.
    """
    props = list(props or system.invariants)
    c = compile_system(system)
    names = c.invariant_names
    want = 0
    for p in props:
        want |= 1 << names.index(p)
    rng = random.Random(seed)
    actions = system.actions
    faults: dict[str, int] = {a.name: 0 for a in actions if a.fault}
    found: dict[str, dict] = {}
    total, deadends = 0, 0
    start = c.pack(system.init)
    for run in range(runs):
        s, path = start, []
        for _ in range(max_steps):
            moves, _trunc = c.successors(s)
            if not moves:
                deadends += 1
                break
            a, s = moves[rng.randrange(len(moves))]
            path.append(a)
            total += 1
            if actions[a].fault:
                faults[actions[a].name] += 1
            bad = c.violations(s) & want
            if bad:
                for b, p in enumerate(names):
                    if bad >> b & 1 and p not in found:
                        found[p] = {"run": run, "actions": [actions[i] for i in path],
                                    "steps": len(path)}
                want &= ~bad
                if not want:
                    break
        if not want:
            runs = run + 1
            break
    return {"runs": runs, "steps": total, "max_steps": max_steps, "seed": seed,
            "faults": faults, "deadends": deadends, "violations": found}


def check(system: System, props=None, runs: int = 1000, seed: int = 0,
          max_steps: int = 60) -> tuple[list[Verdict], dict]:
    """Verdicts from random simulation, and the statistics (the denominator).

    A violated property comes with a shrunk, replayed counterexample; the others HOLD with
    the scope "in N random runs of up to M steps (seed S)", which is not exhaustive.
    Simulation stops early once every property is violated; `stats["runs"]` is the number
    of runs actually made.

    Examples
    --------
    >>> from toolcommit.model.knobs import preset
    >>> from toolcommit.model.instance import instance
    >>> from toolcommit.model.semantics import build
    >>> vs, stats = check(build(preset("naive"), instance("ack_loss")), ["I1"], 1000, seed=1)
    >>> vs[0].status.value, vs[0].extra["first_run"] < 1000
    ('VIOLATED', True)
    >>> vs, stats = check(build(preset("recommended"), instance("ack_loss")), ["I1"], 50, seed=1)
    >>> vs[0].line()
    'I1: HOLDS in 50 random runs of up to 60 steps (seed 1), not exhaustive'
    """
    props = system.invariant_props(props, "random simulation")
    stats = simulate(system, runs, seed, max_steps, props)
    out = []
    for p in props:
        hit = stats["violations"].get(p)
        if hit is None:
            out.append(Verdict(p, Status.HOLDS,
                               f"in {stats['runs']} random runs of up to {max_steps} steps "
                               f"(seed {seed}), not exhaustive",
                               extra={"engine": "random", **_denominator(stats)}))
            continue
        small = shrink(system, hit["actions"], p)
        note = (f"found by random run {hit['run']} (seed {seed}) in {hit['steps']} steps, "
                f"shrunk to {len(small)}")
        cx = from_actions(system, small, p, "random", note)
        problem = replay(system, cx)
        if problem is not None or not breaks(system, cx):
            raise InternalError(f"random counterexample for {p} does not replay: {problem or 'no violation'}")
        out.append(Verdict(p, Status.VIOLATED, counterexample=cx,
                           extra={"engine": "random", "first_run": hit["run"],
                                  "unshrunk_steps": hit["steps"], **_denominator(stats)}))
    public = {k: v for k, v in stats.items() if k != "violations"}
    public["violations"] = {p: {"run": h["run"], "steps": h["steps"]} for p, h in stats["violations"].items()}
    return out, public


def _denominator(stats: dict) -> dict:
    return {"runs": stats["runs"], "steps": stats["steps"], "seed": stats["seed"],
            "max_steps": stats["max_steps"]}
