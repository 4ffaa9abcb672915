"""Typed verdicts: a property HOLDS (with its scope), is VIOLATED (with a counterexample) or
is UNKNOWN (with the reason). Never a bare bool."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Optional

from toolcommit.checker.engines.trace import Counterexample


class Status(str, Enum):
    HOLDS = "HOLDS"
    VIOLATED = "VIOLATED"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class Verdict:
    """One property's verdict on one instance.

    `scope` says how far a HOLDS reaches: "exhaustively" (every reachable state of the
    instance), "up to depth k" (bounded), or "proved" (all depths). `reason` says why a
    verdict is UNKNOWN, or which property a P4/P5 violation came through.
    """

    property: str
    status: Status
    scope: str = ""
    reason: str = ""
    counterexample: Optional[Counterexample] = None
    witness_depth: Optional[int] = None
    extra: dict = field(default_factory=dict)

    def line(self) -> str:
        if self.status is Status.HOLDS:
            return f"{self.property}: HOLDS {self.scope}".rstrip()
        if self.status is Status.VIOLATED:
            n = len(self.counterexample.steps) - 1 if self.counterexample else "?"
            why = f" ({self.reason})" if self.reason else ""
            return f"{self.property}: VIOLATED in {n} steps{why}"
        return f"{self.property}: UNKNOWN ({self.reason})"


def overall(verdicts) -> Status:
    """VIOLATED if any is violated, else UNKNOWN if any is unknown, else HOLDS."""
    statuses = {v.status for v in verdicts}
    for s in (Status.VIOLATED, Status.UNKNOWN):
        if s in statuses:
            return s
    return Status.HOLDS
