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
import time
from dataclasses import dataclass
from typing import Optional

from toolcommit.checker.engines.base import (
    Limits,
    Progress,
    Result,
    Scope,
    state_predicates_only,
    without_state_limit,
)
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.trace import from_actions, verified
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.model.errors import UsageError
from toolcommit.model.properties import prop
from toolcommit.model.system import Action, System


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
            trial = actions[:start] + actions[start + chunk :]
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


def simulate(
    system: System,
    runs: int = 1000,
    seed: int = 0,
    max_steps: int = 60,
    props=None,
    timeout: float = 0.0,
) -> dict:
    """Random runs of `system`; returns the denominator and the first failing run per property.

    Returns
    -------
    dict with `runs`, `steps` (total), `max_steps`, `seed`, `faults` (fault action name ->
    times fired), `deadends` (runs that stopped before `max_steps`) and `violations`:
    property -> {"run": index, "actions": [Action], "steps": length before shrinking};
    `timed_out` is True when `timeout` seconds (0: none) ended it before `runs` runs.
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
    t0, timed_out = time.perf_counter(), False
    for run in range(runs):
        if timeout and (run & 15) == 0 and time.perf_counter() - t0 >= timeout:
            runs, timed_out = run, True
            break
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
                        found[p] = {
                            "run": run,
                            "actions": [actions[i] for i in path],
                            "steps": len(path),
                        }
                want &= ~bad
                if not want:
                    break
        if not want:
            runs = run + 1
            break
    return {
        "runs": runs,
        "steps": total,
        "max_steps": max_steps,
        "seed": seed,
        "faults": faults,
        "deadends": deadends,
        "violations": found,
        "timed_out": timed_out,
    }


def check(
    system: System,
    props=None,
    runs: int = 1000,
    seed: int = 0,
    max_steps: int = 60,
    timeout: float = 0.0,
) -> tuple[list[Verdict], dict]:
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
    stats = simulate(system, runs, seed, max_steps, props, timeout)
    out = []
    for p in props:
        hit = stats["violations"].get(p)
        if hit is None and (stats["steps"] == 0 or stats["timed_out"]):
            why = (
                f"time limit {timeout:g}s reached after {stats['runs']} of {runs} runs; "
                "no violation in them"
                if stats["timed_out"]
                else "no step was taken, so nothing was checked"
            )
            out.append(
                Verdict(
                    p, Status.UNKNOWN, reason=why, extra={"engine": "random", **_denominator(stats)}
                )
            )
            continue
        if hit is None:
            out.append(
                Verdict(
                    p,
                    Status.HOLDS,
                    f"in {stats['runs']} random runs of up to {max_steps} steps "
                    f"(seed {seed}), not exhaustive",
                    extra={"engine": "random", **_denominator(stats)},
                )
            )
            continue
        small = shrink(system, hit["actions"], p)
        note = (
            f"found by random run {hit['run']} (seed {seed}) in {hit['steps']} steps, "
            f"shrunk to {len(small)}"
        )
        cx = verified(system, from_actions(system, small, p, "random", note))
        out.append(
            Verdict(
                p,
                Status.VIOLATED,
                counterexample=cx,
                extra={
                    "engine": "random",
                    "first_run": hit["run"],
                    "unshrunk_steps": hit["steps"],
                    **_denominator(stats),
                },
            )
        )
    public = {k: v for k, v in stats.items() if k != "violations"}
    public["violations"] = {
        p: {"run": h["run"], "steps": h["steps"]} for p, h in stats["violations"].items()
    }
    return out, public


def _denominator(stats: dict) -> dict:
    return {
        "runs": stats["runs"],
        "steps": stats["steps"],
        "seed": stats["seed"],
        "max_steps": stats["max_steps"],
    }


@dataclass(frozen=True)
class Simulate:
    """The random engine: `runs` seeded runs of up to `max_steps` steps each."""

    runs: int = 1000
    seed: int = 0
    max_steps: int = 60
    name: str = "random"

    def __post_init__(self):
        for flag, v in (("--runs", self.runs), ("--max-steps", self.max_steps)):
            if not isinstance(v, int) or v < 1:
                raise UsageError(f"{flag} must be a whole number >= 1, not {v}")

    def judges(self, name: str) -> bool:
        return prop(name).state_predicate

    def run(
        self, system: System, props, limits: Limits = Limits(), progress: Optional[Progress] = None
    ) -> Result:
        without_state_limit(self.name, limits)
        props = state_predicates_only(self.name, props)
        verdicts, sim = check(system, props, self.runs, self.seed, self.max_steps, limits.timeout)
        scope = Scope(
            "runs",
            f"in {sim['runs']} random runs of up to {self.max_steps} steps "
            f"(seed {self.seed}), not exhaustive",
        )
        stats = {
            "states": "-",
            "depth": self.max_steps,
            "runs": sim.get("runs"),
            "steps": sim.get("steps"),
            "faults": sim.get("faults"),
        }
        return Result(self.name, verdicts, scope, stats)
