"""The end of the pipeline: a `Report` of findings and its three-way `LogVerdict`.

Examples
--------
>>> verdict_of({"certain": 0, "possible": 2})
<LogVerdict.INCONCLUSIVE: 'INCONCLUSIVE'>
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Mapping, Optional, Sequence

from toolcommit.checker.logs.findings import Citation, Finding


class LogVerdict(str, Enum):
    """CONFORMS (no finding), VIOLATES (a certain finding), INCONCLUSIVE (only possible
    findings: lost lines, unknown outcomes, unsettled keys)."""

    CONFORMS = "CONFORMS"
    VIOLATES = "VIOLATES"
    INCONCLUSIVE = "INCONCLUSIVE"


def verdict_of(totals: Mapping[str, int]) -> LogVerdict:
    """The verdict of findings counted by certainty (listed or not)."""
    if totals.get("certain"):
        return LogVerdict.VIOLATES
    return LogVerdict.INCONCLUSIVE if totals.get("possible") else LogVerdict.CONFORMS


def count(findings: Sequence[Finding]) -> dict[str, int]:
    """Certain and possible findings among `findings`."""
    certain = sum(f.certainty == "certain" for f in findings)
    return {"certain": certain, "possible": len(findings) - certain}


@dataclass(frozen=True)
class Report:
    """The verdict, its findings (certain first), the reader's warnings and counts.

    `totals` counts findings by certainty, listed or not: `dropped` of them are not listed
    (at most `MAX_PER_PROPERTY` per property are)."""

    verdict: LogVerdict
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...] = ()
    stats: dict = field(default_factory=dict)
    dropped: int = 0  # findings not stored beyond MAX_PER_PROPERTY
    history: dict[str, tuple[Citation, ...]] = field(default_factory=dict)  # focus key -> story
    totals: dict[str, int] = field(default_factory=dict)
    design: Optional[object] = None  # a `refinement.DesignCheck` (validate --design)


def with_findings(report: Report, extra: Sequence[Finding], dropped: int = 0) -> Report:
    """`report` with `extra` findings added (certain first, then by property and key) and
    `dropped` more counted but not listed (possible ones); its verdict follows. Pure."""
    if not extra and not dropped:
        return report
    findings = tuple(
        sorted(
            report.findings + tuple(extra),
            key=lambda f: (f.certainty != "certain", f.property, f.key),
        )
    )
    totals = dict(report.totals)
    for k, n in count(extra).items():
        totals[k] = totals.get(k, 0) + n
    totals["possible"] = totals.get("possible", 0) + dropped
    return replace(
        report,
        findings=findings,
        totals=totals,
        verdict=verdict_of(totals),
        dropped=report.dropped + dropped,
    )
