"""One place decides which engine answers: for `check`, `ask` and `prove` alike.

A `Portfolio` is an ordered list of engines. Each property goes to the first engine that
judges it; a property that engine leaves UNKNOWN because a limit stopped it goes to the
next engine that judges it, if `fallback` allows, within the same limits. The result
says in `note` when a later engine answered for an earlier one, so no fallback is silent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from toolcommit.model.errors import UsageError
from toolcommit.model.system import System

from .base import Engine, Limits, Progress, Result
from .explicit.engine import Explicit
from .verdict import Status


@dataclass(frozen=True)
class Portfolio:
    """Engines in order of preference; `fallback`: let later engines take UNKNOWNs."""

    engines: tuple
    fallback: bool = False

    @property
    def name(self) -> str:
        return self.engines[0].name

    def judges(self, name: str) -> bool:
        return any(e.judges(name) for e in self.engines)

    def run(self, system: System, props: Sequence[str], limits: Limits = Limits(),
            progress: Optional[Progress] = None) -> Result:
        first: Optional[Result] = None
        verdicts: dict = {}
        notes = []
        open_props = list(props)
        for engine in self.engines:
            mine = [p for p in open_props if engine.judges(p)]
            if not mine:
                continue
            r = engine.run(system, mine, limits, progress)
            first = first or r
            for v in r.verdicts:
                if v.status is not Status.UNKNOWN or v.property not in verdicts:
                    verdicts[v.property] = v
            if r is not first:
                notes.append(f"{engine.name} judged {', '.join(mine)} after {first.engine} "
                             "stopped at a limit")
            open_props = [p for p in open_props
                          if p not in verdicts or verdicts[p].status is Status.UNKNOWN]
            if not self.fallback or not open_props:
                break
        if first is None:
            raise UsageError(f"no engine of {self.name} judges {', '.join(props)}")
        return Result(first.engine, [verdicts[p] for p in props if p in verdicts], first.scope,
                      first.stats, first.coverage, first.witnesses, "; ".join(notes))


def for_check(engine: str = "explicit", depth: int = 15, runs: int = 1000, seed: int = 0,
              max_steps: int = 60) -> Engine:
    """The engine `check --engine NAME` uses (no fallback: the user chose it)."""
    if engine == "explicit":
        return Explicit()
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


def for_ask(bmc_depth: int = 30, fallback: bool = True) -> Portfolio:
    """Explicit first; with `fallback`, bounded SMT for what a limit left open."""
    from .smt.bmc import Bmc
    return Portfolio((Explicit(), Bmc(bmc_depth)), fallback)
