"""One place decides which engine answers: for `check`, `ask` and `prove` alike.

`check --engine NAME` and `prove` get the one engine the user chose (`for_check`,
`for_prove`). `ask` gets a `Portfolio`: the explicit engine first; when a state or time
limit stops it and `fallback` is on, bounded SMT judges the state predicates it left open,
within `later` limits, and every such verdict says so in its scope or reason, so no
fallback is silent. A portfolio can also `require` a witness of the system (a design
question's scenario): verdicts on a system where it is unreachable are vacuous, so they
are UNKNOWN with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

from toolcommit.model.errors import UsageError
from toolcommit.model.expr import not_
from toolcommit.model.properties import prop
from toolcommit.model.system import System

from .base import Engine, Limits, Progress, Result
from .explicit.engine import Explicit, judge, needs_edges, scope_of, stats_of
from .verdict import Status, Verdict

PROBE = "scenario_unreached"  # the invariant that bounded SMT breaks iff `require` is reachable


@dataclass(frozen=True)
class Portfolio:
    """The explicit engine, then (with `fallback`) bounded SMT to `depth` within `later`."""

    depth: int = 30
    fallback: bool = True
    later: Limits = Limits()
    name: str = "explicit"

    def judges(self, name: str) -> bool:
        return Explicit().judges(name)

    def run(
        self,
        system: System,
        props: Sequence[str],
        limits: Limits = Limits(),
        progress: Optional[Progress] = None,
        require: str = "",
    ) -> Result:
        """Verdicts for `props`; `stats["reached"]` says whether `require` is reachable."""
        c, ex = Explicit(shared=True).explore(
            system, limits, needs_edges(props), progress, props, require
        )
        out = Result(
            "explicit",
            [],
            scope_of(ex),
            {**stats_of(ex), "reached": True},
            ex.fired,
            {w: ex.depth_of(s) for w, s in ex.first_witness.items()},
        )
        if ex.complete and require and require not in ex.first_witness:
            why = (
                "vacuous: the scenario cannot be completed under this configuration "
                f"(no reachable state completes it; {ex.state_count} states searched)"
            )
            out.verdicts = [Verdict(p, Status.UNKNOWN, reason=why) for p in props]
            out.stats["reached"] = False
            return out
        out.verdicts = judge(c, ex, props)
        if ex.complete or ex.early or not self.fallback:
            return out
        return self._bounded(system, props, out, ex.stop_reason, require)

    def _bounded(self, system: System, props, out: Result, stop: str, require: str) -> Result:
        """Bounded SMT for the state predicates the stopped explicit search left open."""
        from .smt.bmc import check as bmc_check

        found = {v.property: v for v in out.verdicts if v.status is Status.VIOLATED}
        open_props = [p for p in props if p not in found and prop(p).state_predicate]
        if not open_props:
            out.verdicts = [found.get(p) or Verdict(p, Status.UNKNOWN, reason=stop) for p in props]
            return out
        invariants = dict(system.invariants)
        if require:
            invariants[PROBE] = not_(system.witnesses[require])
        asked = open_props + ([PROBE] if require else [])
        got = {
            v.property: v
            for v in bmc_check(
                replace(system, invariants=invariants), asked, self.depth, self.later.timeout
            )
        }
        reached = not require or got[PROBE].status is Status.VIOLATED
        verdicts = []
        for p in props:
            v = found.get(p) or got.get(p)
            if v is None:
                v = Verdict(
                    p, Status.UNKNOWN, reason=f"{stop}; the SMT engine judges invariants only"
                )
            elif p in got and not reached and v.status is not Status.VIOLATED:
                v = Verdict(
                    p,
                    Status.UNKNOWN,
                    reason=f"the explicit search stopped ({stop}) and no "
                    f"run completing the scenario was found up to depth {self.depth}",
                )
            elif p in got and v.status is Status.HOLDS:
                v = replace(
                    v,
                    scope=f"up to depth {self.depth} (bounded, SMT; the explicit "
                    f"search stopped: {stop})",
                )
            verdicts.append(v)
        out.engine, out.verdicts = "explicit+smt", verdicts
        out.stats["reached"] = reached
        out.note = f"smt judged {', '.join(open_props)} after explicit stopped at a limit"
        return out


def for_check(
    engine: str = "explicit",
    depth: int = 15,
    runs: int = 1000,
    seed: int = 0,
    max_steps: int = 60,
    jobs: int = 1,
) -> Engine:
    """The engine `check --engine NAME` uses (no fallback: the user chose it); the explicit
    one searches on `jobs` threads."""
    if not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"--jobs {jobs}: use at least 1 (1 searches on one core)")
    if engine == "explicit":
        return Explicit(jobs=jobs)
    if engine == "smt":
        from .smt.bmc import Bmc

        return Bmc(depth)
    if engine == "random":
        from .simulate import Simulate

        return Simulate(runs, seed, max_steps)
    raise UsageError(f"unknown engine {engine!r}; valid engines: explicit, smt, random")


def for_prove(method: str = "kind", max_k: int = 12) -> Engine:
    """The engine `prove` uses."""
    from .smt.induction import Prove

    return Prove(method, max_k)


def for_ask(bmc_depth: int = 30, fallback: bool = True, later: Limits = Limits()) -> Portfolio:
    """Explicit first; with `fallback`, bounded SMT to `bmc_depth` for what a limit left open."""
    if not isinstance(bmc_depth, int) or bmc_depth < 1:
        raise UsageError(f"the SMT depth must be a whole number of steps >= 1, not {bmc_depth}")
    return Portfolio(bmc_depth, fallback, later)
