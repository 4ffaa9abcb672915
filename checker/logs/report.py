"""The end of the pipeline: a `Report` of findings and its three-way `LogVerdict`.

Examples
--------
>>> verdict_of([])
<LogVerdict.CONFORMS: 'CONFORMS'>
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Sequence

from toolcommit.checker.logs.findings import Citation, Finding


class LogVerdict(str, Enum):
    """CONFORMS (no finding), VIOLATES (a certain finding), INCONCLUSIVE (only possible
    findings: lost lines, unknown outcomes, unsettled keys)."""

    CONFORMS = "CONFORMS"
    VIOLATES = "VIOLATES"
    INCONCLUSIVE = "INCONCLUSIVE"


def verdict_of(findings: Sequence[Finding]) -> LogVerdict:
    if any(f.certainty == "certain" for f in findings):
        return LogVerdict.VIOLATES
    return LogVerdict.INCONCLUSIVE if findings else LogVerdict.CONFORMS


@dataclass(frozen=True)
class Report:
    """The verdict, its findings (certain first), the reader's warnings and counts."""

    verdict: LogVerdict
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...] = ()
    stats: dict = field(default_factory=dict)
    dropped: int = 0  # findings not stored beyond MAX_PER_PROPERTY
    history: dict[str, tuple[Citation, ...]] = field(default_factory=dict)  # focus key -> story
