"""One way into every engine and one result shape out (Stateright's `Checker`, TLC's config).

Every engine takes the same inputs - a `System`, the names of the properties to judge,
`Limits`, and a progress callback of one shape (`Tick`) - and returns a `Result`: one
`Verdict` per property, the scope of the search, the statistics, and (for the explicit
engine) which actions fired. Engines differ only in what they can judge (`judges`) and in
their own bounds, given when the engine is made (`Bmc(depth=20)`, `Simulate(runs=1000)`).

Every counterexample an engine returns has been replayed through the model's interpreter
by `toolcommit.checker.engines.trace.verified`: the one place replay-and-verify is written.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Protocol, Sequence

from toolcommit.model.errors import UsageError
from toolcommit.model.properties import prop
from toolcommit.model.system import System

from .verdict import Verdict


@dataclass(frozen=True)
class Tick:
    """A progress report: what the engine is doing and how far it got."""

    phase: str
    states: int = 0
    depth: int = 0
    seconds: float = 0.0


Progress = Callable[[Tick], None]


@dataclass(frozen=True)
class Limits:
    """Limits the user sets; 0 means none. A search stopped by one answers UNKNOWN.

    `first`: the explicit search may stop once every property asked for is violated (their
    shortest counterexamples are found by then; the state counts are of the part searched,
    and the scope says it stopped early). Off by default: `check` records full counts.
    """

    max_states: int = 0
    timeout: float = 0.0
    first: bool = False

    def __post_init__(self):
        if not isinstance(self.max_states, int) or self.max_states < 0:
            raise UsageError(
                f"--max-states must be a whole number >= 0 (0: no limit), not {self.max_states}"
            )
        if not (
            isinstance(self.timeout, (int, float))
            and math.isfinite(self.timeout)
            and self.timeout >= 0
        ):
            raise UsageError(
                f"--timeout must be a number of seconds >= 0 (0: no limit), not {self.timeout}"
            )


def within(limits: Limits, deadline: float) -> Limits:
    """`limits` with its timeout cut to the seconds left before `deadline` (a
    `time.monotonic()` instant; 0: none), the whole command's wall-clock limit; at least a
    microsecond, so a search begun past it stops at once (UNKNOWN)."""
    if not deadline:
        return limits
    left = max(deadline - time.monotonic(), 1e-6)
    return replace(limits, timeout=min(limits.timeout, left) if limits.timeout else left)


@dataclass(frozen=True)
class Scope:
    """How far a HOLDS reaches: `kind` is exhaustive, depth, runs or proved."""

    kind: str
    text: str


@dataclass
class Result:
    """What one engine said about one system."""

    engine: str
    verdicts: list[Verdict]
    scope: Optional[Scope] = None
    stats: dict = field(default_factory=dict)
    coverage: dict = field(default_factory=dict)  # action name -> times fired
    witnesses: dict = field(default_factory=dict)  # witness name -> depth first reached
    note: str = ""  # e.g. why a faster engine did not answer

    def verdict(self, name: str) -> Optional[Verdict]:
        return next((v for v in self.verdicts if v.property == name), None)


class Engine(Protocol):
    """The engine interface: a name, what it can judge, and `run`."""

    name: str

    def judges(self, name: str) -> bool:
        """Whether this engine can judge property `name`."""

    def run(
        self,
        system: System,
        props: Sequence[str],
        limits: Limits = Limits(),
        progress: Optional[Progress] = None,
    ) -> Result:
        """Judge `props` on `system` within `limits`."""


def state_predicates_only(engine_name: str, props: Sequence[str]) -> list[str]:
    """`props`, checked to be judgeable state by state; UsageError naming `engine_name` else."""
    bad = [p for p in props if not prop(p).state_predicate]
    if bad:
        from toolcommit.model.properties import state_predicates

        raise UsageError(
            f"the {engine_name} engine judges invariants only "
            f"({', '.join(state_predicates())}); {bad[0]!r} is not one; "
            "use --engine explicit for the others"
        )
    return list(props)


def without_state_limit(engine_name: str, limits: Limits) -> None:
    """Refuse `--max-states` for an engine that keeps no set of states to count (bounded
    SMT, random runs, induction): a limit it cannot honour is a usage error, never ignored."""
    if limits.max_states:
        raise UsageError(
            f"--max-states {limits.max_states}: the {engine_name} engine keeps no "
            "set of states to count; bound it with --timeout (and its own --depth "
            "or --runs), or use --engine explicit"
        )
