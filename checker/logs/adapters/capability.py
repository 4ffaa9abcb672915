"""What a trace source let the checker judge, property by property (`spec/sources.json`).

Examples
--------
>>> rows = judged("otel", ledger=False, args_recorded=True)
>>> [r for r in rows if r.property == "FENCE"][0].line()
'FENCE: not judgeable: no fence in this source'
>>> [r.status for r in judged("otel", ledger=True, args_recorded=True) if r.property == "I1"]
['judged']
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def table() -> dict:
    """The capability table as data."""
    return json.loads(resources.files("toolcommit.spec").joinpath("sources.json")
                      .read_text("utf-8"))


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


def judged(source: str, ledger: bool, args_recorded: bool,
           call_ids: bool = True) -> list[Judged]:
    """The rows for `source` when a ledger was (not) joined, arguments were (not)
    recorded on every effectful call, and the calls' ids were (not) known (an OpenAI
    Agents trace without its run items)."""
    t = table()
    rows = []
    for prop in t["properties"]:
        entry = t["sources"][source][prop]
        pick = entry
        if ledger and "with_ledger" in entry:
            pick = entry["with_ledger"]
        if not args_recorded and "no_args" in entry:
            pick = entry["no_args"]
        if not call_ids and "no_call_ids" in entry:
            pick = entry["no_call_ids"]
        rows.append(Judged(prop, pick["status"], pick["why"]))
    return rows
