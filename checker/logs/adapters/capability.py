"""What a trace source let the checker judge, property by property (`spec/sources.json`).

Examples
--------
>>> rows = judged("otel", ledger=False, args_recorded=True)
>>> [r for r in rows if r.property == "FENCE"][0].line()
'FENCE: not judgeable: no fence in this source'
>>> [r.status for r in judged("otel", ledger=True, args_recorded=True) if r.property == "I1"]
['judged']
>>> judged("otel", ledger=True, args_recorded=True, calls=0)[0].line()
'I1: not judged: no effectful tool call in this trace'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def table() -> dict:
    """The capability table as data."""
    return json.loads(
        resources.files("toolcommit.spec").joinpath("sources.json").read_text("utf-8")
    )


def sources() -> list[str]:
    return sorted(table()["sources"])


@dataclass(frozen=True)
class Judged:
    """One property: judged | partly | not judgeable, and why."""

    property: str
    status: str
    why: str

    def line(self) -> str:
        return f"{self.property}: {self.status}: {self.why}"

    def to_json(self) -> dict:
        return {"property": self.property, "status": self.status, "why": self.why}


def judged(
    source: str,
    ledger: bool,
    args_recorded: bool,
    call_ids: bool = True,
    calls: int = 1,
    partial_ledger: bool = False,
    by_log: str = "",
) -> list[Judged]:
    """The rows for `source` when a ledger's effects were (not) joined to calls, arguments
    were (not) recorded on every effectful call, the calls' ids were (not) known (an OpenAI
    Agents trace without its run items), and `calls` effectful calls were read: none judges
    nothing. What a ledger makes judgeable is only partly judged when the ledger is
    `partial_ledger` (some of its pages are missing). `by_log` names the guard's log that
    judged every effectful call (`intentlog.Beside.name`): then each property is judged as
    a log's is."""
    t = table()
    rows = []
    for prop in t["properties"]:
        entry = t["sources"][source][prop]
        pick = entry
        if ledger and "with_ledger" in entry:
            pick = entry["with_ledger"]
            if partial_ledger:
                pick = {
                    "status": "partly",
                    "why": pick["why"] + "; but only the pages of the ledger that were given",
                }
        if not args_recorded and "no_args" in entry:
            pick = entry["no_args"]
        if not call_ids and "no_call_ids" in entry:
            pick = entry["no_call_ids"]
        if by_log:
            pick = {"status": "judged", "why": f"by {by_log}"}
        if not calls:
            pick = {"status": "not judged", "why": "no effectful tool call in this trace"}
        rows.append(Judged(prop, pick["status"], pick["why"]))
    return rows
