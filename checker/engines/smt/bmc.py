"""Incremental bounded model checking with z3: shortest counterexamples, bounded passes.

One solver holds the initial state and the transitions unrolled so far; each depth adds
one step, and each open property's negation at the new step is checked under an
assumption literal (so nothing is ever retracted). Depths are checked in order, so the
first satisfiable depth is the length of a shortest violation, the same length the
explicit BFS reports. A model's `act@i` values decode to the ground actions; the
counterexample is rebuilt through the interpreter (`trace.from_actions`) and replayed
before it is returned. A counterexample that does not replay, or whose last state does not
break the property, is an `InternalError`, never a report.

A property with no violation up to depth k HOLDS with scope "up to depth k": a bounded
pass, never a proof (`toolcommit.checker.engines.smt.induction` proves).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

import z3

from toolcommit.checker.engines.base import (
    Limits,
    Result,
    Scope,
    Tick,
    state_predicates_only,
    without_state_limit,
)
from toolcommit.checker.engines.base import Progress as Tick_
from toolcommit.checker.engines.smt.encode import Encoding
from toolcommit.checker.engines.trace import Counterexample, from_actions, verified
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.model.errors import InternalError, UsageError
from toolcommit.model.properties import prop
from toolcommit.model.system import System

Progress = Callable[[int, float], None]


def counterexample(
    enc: Encoding, model: z3.ModelRef, k: int, prop: str, engine: str = "smt", note: str = ""
) -> Counterexample:
    """The replayed counterexample a z3 model of a k-step path describes.

    Raises
    ------
    InternalError
        if the decoded steps are not enabled, the states differ from the model's, or the
        last state does not break `prop`: the encoding and the interpreter disagree.
    """
    system = enc.system
    actions = enc.decode_actions(model, k)
    cx = verified(system, from_actions(system, actions, prop, engine, note))
    for i, step in enumerate(cx.steps):
        if dict(step.state) != enc.decode_state(model, i):
            raise InternalError(
                f"SMT counterexample for {prop} does not replay: step {i}: "
                "the interpreter's state differs from the solver's"
            )
    return cx


def _any_violated(solver, enc, props, k, timeout, t0) -> bool:
    """Whether some property of `props` may break at depth k (True when unsure)."""
    left = timeout - (time.perf_counter() - t0) if timeout else 0.0
    if timeout and left <= 0:
        return True
    solver.set("timeout", int(left * 1000) if timeout else 4294967295)
    q = z3.Bool(f"violates.some@{k}")
    solver.add(z3.Implies(q, z3.Or([z3.Not(enc.invariant(p, k)) for p in props])))
    return solver.check(q) != z3.unsat


def solver(sort: str) -> z3.Solver:
    """A fresh solver for the encoding's sort (bit-vectors or integers)."""
    return z3.SolverFor("QF_BV") if sort == "bv" else z3.Solver()


def check(
    system: System,
    props=None,
    depth: int = 20,
    timeout: float = 0.0,
    progress: Optional[Progress] = None,
    sort: str = "bv",
) -> list[Verdict]:
    """Bounded model checking of invariants `props` (default: all) up to `depth` steps.

    Parameters
    ----------
    system : the transition system.
    props : invariant names; default every invariant of `system`.
    depth : the largest number of steps checked.
    timeout : seconds for the whole run (0: none); when it runs out the open properties
        are UNKNOWN, naming the time limit and the depth reached.
    progress : called as `progress(depth, seconds)` after each completed depth.
    sort : the encoding's sort ("bv" or "int"), see `toolcommit.checker.engines.smt.encode`.

    Returns
    -------
    One `Verdict` per property: VIOLATED with a shortest, replayed counterexample; HOLDS
    with scope "up to depth k"; or UNKNOWN with the solver's reason.

    Examples
    --------
    >>> from toolcommit.model.knobs import preset
    >>> from toolcommit.model.instance import instance
    >>> from toolcommit.model.semantics import build
    >>> [v.line() for v in check(build(preset("naive"), instance("ack_loss")), ["I1"], 10)]
    ['I1: VIOLATED in 8 steps']
    >>> [v.line() for v in check(build(preset("recommended"), instance("ack_loss")), ["I1"], 10)]
    ['I1: HOLDS up to depth 10']
    """
    props = system.invariant_props(props, "the SMT engine")
    enc = Encoding(system, sort=sort)
    solver_ = solver(sort)
    solver_.add(enc.init(0))
    t0 = time.perf_counter()
    verdicts: dict[str, Verdict] = {}
    open_props = list(props)
    done_depth = -1
    for k in range(depth + 1):
        if k > 0:
            solver_.add(enc.trans(k - 1))
        if len(open_props) > 1 and not _any_violated(solver_, enc, open_props, k, timeout, t0):
            props_here = []  # none is violated at depth k: one check instead of one each
        else:
            props_here = list(open_props)
        for p in props_here:
            left = timeout - (time.perf_counter() - t0) if timeout else 0.0
            if timeout and left <= 0:
                break
            solver_.set("timeout", int(left * 1000) if timeout else 4294967295)
            q = z3.Bool(f"violates.{p}@{k}")
            solver_.add(z3.Implies(q, z3.Not(enc.invariant(p, k))))
            r = solver_.check(q)
            if r == z3.sat:
                cx = counterexample(enc, solver_.model(), k, p)
                verdicts[p] = Verdict(
                    p, Status.VIOLATED, counterexample=cx, extra={"engine": "bmc", "depth": k}
                )
                open_props.remove(p)
            elif r == z3.unknown:
                why = solver_.reason_unknown()
                if (
                    timeout
                    and time.perf_counter() - t0 >= timeout * 0.99
                    or why in ("timeout", "canceled")
                ):
                    break
                verdicts[p] = Verdict(
                    p,
                    Status.UNKNOWN,
                    reason=f"solver: {why} at depth {k}",
                    extra={"engine": "bmc", "depth": k},
                )
                open_props.remove(p)
        else:
            done_depth = k
            if progress is not None:
                progress(k, time.perf_counter() - t0)
            if not open_props:
                break
            continue
        break  # timed out inside depth k
    for p in open_props:
        if done_depth < depth:
            verdicts[p] = Verdict(
                p,
                Status.UNKNOWN,
                reason=f"time limit {timeout:g}s reached; "
                + (
                    f"no violation up to depth {done_depth}"
                    if done_depth >= 0
                    else "not even depth 0 was checked"
                ),
                extra={"engine": "bmc", "depth": done_depth},
            )
        else:
            verdicts[p] = Verdict(
                p, Status.HOLDS, f"up to depth {depth}", extra={"engine": "bmc", "depth": depth}
            )
    return [verdicts[p] for p in props]


@dataclass(frozen=True)
class Bmc:
    """The bounded engine: `depth` steps unrolled; a pass is "up to depth k", never a proof."""

    depth: int = 15
    sort: str = "bv"
    name: str = "smt"

    def __post_init__(self):
        if not isinstance(self.depth, int) or self.depth < 1:
            raise UsageError(f"--depth must be a whole number of steps >= 1, not {self.depth}")

    def judges(self, name: str) -> bool:
        return prop(name).state_predicate

    def run(
        self, system: System, props, limits: Limits = Limits(), progress: Optional[Tick_] = None
    ) -> Result:
        without_state_limit(self.name, limits)
        props = state_predicates_only(self.name, props)
        tick = (lambda d, sec: progress(Tick("bmc", 0, d, sec))) if progress else None
        verdicts = check(system, props, self.depth, limits.timeout, tick, self.sort)
        return Result(
            self.name,
            verdicts,
            Scope("depth", f"up to depth {self.depth}"),
            {"states": "-", "depth": self.depth},
        )
