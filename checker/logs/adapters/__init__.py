"""Adapters: real traces in, the log contract out, checked by the same conformance core.

``validate --from SOURCE`` runs `check_trace`: the source's reader turns trace files (or a
system database) into `calls.Call`s (``otel.py``, ``langgraph.py``, ``openai_agents.py``,
``dbos.py``, ``temporal.py``), `rules.Rules` set each call's
scope and idempotency key and keep the effectful tools, `calls.to_log` writes the log
contract, `ledger.join` adds the provider's effects, and `Conformance` judges the result.
The report says, property by property, what the source let it judge
(`capability.judged`, data in ``spec/sources.json``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

from toolcommit.model.errors import InputError, UsageError

from toolcommit.checker.logs.adapters import calls as _calls
from toolcommit.checker.logs.adapters import (capability, dbos, langgraph, ledger,
                                              openai_agents, otel, temporal)
from toolcommit.checker.logs.adapters.rules import Rules
from toolcommit.checker.logs.conformance import Conformance, EventError
from toolcommit.checker.logs.findings import Citation, Finding
from toolcommit.checker.logs.report import verdict_of
from toolcommit.checker.logs.typed import from_dict

READERS = {"otel": otel.read, "langgraph": langgraph.read, "openai-agents": openai_agents.read,
           "dbos": dbos.read, "temporal": temporal.read}


@dataclass
class TraceReport:
    """The conformance `report` of a trace, what the source let it judge, and notes."""

    source: str
    report: object
    judged: list
    notes: list = field(default_factory=list)
    events: list = field(default_factory=list)    # the log contract, as `calls.Placed`
    stats: dict = field(default_factory=dict)


def _apply(rules: Rules, found: list[_calls.Call]) -> tuple[list[_calls.Call], list[str]]:
    scope_of = rules.scope_of()
    kept, other = [], {}
    for c in found:
        if not rules.is_effectful(c.tool):
            other[c.tool] = other.get(c.tool, 0) + 1
            continue
        kept.append(replace(c, scope=scope_of(c.view, c.scope),
                            idempotency_key=rules.idempotency_key_of(c.view)))
    notes = []
    if rules.effectful is None:
        notes.append("every tool was read as effectful (--effectful not given)")
    elif other:
        notes.append("left out as not effectful: " + ", ".join(
            f"{t} ({n} call{'s' if n > 1 else ''})" for t, n in sorted(other.items())))
    missing = sorted(set(rules.effectful or ()) - {c.tool for c in found})
    if missing:
        notes.append(f"--effectful names tools with no call in the trace: {', '.join(missing)}")
    return kept, notes


def check_trace(source: str, paths: Sequence[str], rules: Rules = Rules(),
                ledgers: Sequence[str] = (), checkpoints: Sequence[str] = (),
                run_items: Sequence[str] = ()) -> TraceReport:
    """Adapt and check trace files `paths` of `source` (a key of `READERS`).

    Raises
    ------
    UsageError
        An unknown source, or options the source does not take.
    InputError
        An unusable trace or ledger file (file:line).
    """
    if source not in READERS:
        raise UsageError(f"--from {source}: unknown source; known: {', '.join(READERS)}")
    if checkpoints and source != "langgraph":
        raise UsageError("--checkpoints is for --from langgraph")
    if run_items and source != "openai-agents":
        raise UsageError("--run-items is for --from openai-agents")
    names = [dbos.display_name(p) for p in paths] + list(checkpoints) + list(run_items) \
        + list(ledgers)
    if source == "langgraph":
        found, notes = langgraph.read(paths, 0, checkpoints)
    elif source == "openai-agents":
        found, notes = openai_agents.read(paths, 0, run_items)
    else:
        found, notes = READERS[source](paths, 0)
    kept, rule_notes = _apply(rules, found)
    notes = rule_notes + [n for c in kept for n in c.notes] + notes
    placed = _calls.to_log(kept)
    if ledgers:
        first = len(paths) + len(checkpoints) + len(run_items)
        joined = ledger.join(ledger.read(ledgers, first), kept, names)
        placed += joined.effects
        notes += joined.notes
    report = _conformance(placed, names)
    if not ledgers:
        report = _suspected(report, kept, names)
    args_recorded = all(c.args is not None for c in kept)
    call_ids = source != "openai-agents" or bool(run_items)
    stats = {"tool_calls": len(found), "effectful_calls": len(kept),
             "call_ids": len({c.key for c in kept}),
             "effects_joined": sum(p.event["type"] == "effect" for p in placed)}
    return TraceReport(source, report,
                       capability.judged(source, bool(ledgers), args_recorded, call_ids),
                       notes, placed, stats)


def _suspected(report, kept: list[_calls.Call], names) -> object:
    """`report` with a possible I1 for each call its source says may have run more often
    than it shows (`Call.suspect`): without a ledger, nothing says how often it took
    effect. A ledger decides instead (its effects are counted by the core)."""
    extra = []
    for c in kept:
        if not c.suspect:
            continue
        where = (names[c.loc[0]], c.loc[1])
        extra.append(Finding("I1", c.key, "possible", (c.writer,), (where,),
                             (Citation("transition", c.writer, "dispatched", *where),),
                             f"{c.suspect}; no effect records say how many took effect: "
                             "possibly more than one"))
    if not extra:
        return report
    findings = tuple(sorted(report.findings + tuple(extra),
                            key=lambda f: (f.certainty != "certain", f.property, f.key)))
    totals = dict(report.totals)
    totals["possible"] = totals.get("possible", 0) + len(extra)
    return replace(report, findings=findings, totals=totals, verdict=verdict_of(totals))


def _conformance(placed, names):
    checker = Conformance(names)
    for p in placed:
        try:
            checker.feed(from_dict(p.event), p.file_index, p.line)
        except EventError as e:
            raise InputError(str(e), names[p.file_index], p.line) from None
    return checker.finish()
