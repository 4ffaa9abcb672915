"""A trace judged: `check_trace` reads a source's trace files with its reader (`READERS`),
writes the log contract and runs the conformance core on it (the package docstring says how)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Optional, Sequence

from toolcommit.checker.logs import asks
from toolcommit.checker.logs.adapters import calls as _calls
from toolcommit.checker.logs.adapters import (
    capability,
    dbos,
    intentlog,
    langgraph,
    ledger,
    openai_agents,
    otel,
    temporal,
)
from toolcommit.checker.logs.adapters.docs import long_line
from toolcommit.checker.logs.adapters.docs import names as unique_names
from toolcommit.checker.logs.adapters.rules import Rules
from toolcommit.checker.logs.conformance import Conformance, EventError
from toolcommit.checker.logs.events import problem
from toolcommit.checker.logs.findings import Citation, Finding
from toolcommit.checker.logs.read import DEFAULT_MAX_LINE_BYTES
from toolcommit.checker.logs.report import LogVerdict, with_findings
from toolcommit.checker.logs.typed import from_dict
from toolcommit.checker.logs.validate import feed_files, raw_events
from toolcommit.model.errors import InputError, UsageError

READERS = {
    "otel": otel.read,
    "langgraph": langgraph.read,
    "openai-agents": openai_agents.read,
    "dbos": dbos.read,
    "temporal": temporal.read,
}


@dataclass
class TraceReport:
    """The conformance `report` of a trace, what the source let it judge, what it was
    missing to judge more (each reason a sentence; then a report without findings is
    INCONCLUSIVE), and notes."""

    source: str
    report: object
    judged: list
    notes: list = field(default_factory=list)
    events: list = field(default_factory=list)  # the log contract, as `calls.Placed`
    stats: dict = field(default_factory=dict)
    missing: list = field(default_factory=list)


def _left_out_tools(notes) -> set:
    """Tools a reader saw but left out, by its notes' convention ("left out: TOOL ..."): a
    call the approval flow rejected, say. They are in the trace, so naming one is no typo."""
    return {m.group(1) for n in notes for m in [re.match(r"left out: (\S+) ", n)] if m}


def _apply(
    rules: Rules, found: list[_calls.Call], seen=frozenset()
) -> tuple[list[_calls.Call], list[str]]:
    fell_back: list = []
    scope_of = rules.scope_of(fell_back)
    kept, other = [], {}
    for c in found:
        if not rules.is_effectful(c.tool):
            other[c.tool] = other.get(c.tool, 0) + 1
            continue
        kept.append(
            replace(
                c, scope=scope_of(c.view, c.scope), idempotency_key=rules.idempotency_key_of(c.view)
            )
        )
    notes = []
    if fell_back:
        notes.append(
            f"--scope {rules.scope} returned None for {len(fell_back)} call(s), which "
            "kept the source's default scope: " + ", ".join(map(str, fell_back[:5]))
        )
    if rules.effectful is None:
        notes.append("every tool was read as effectful (--effectful not given)")
    elif other:
        notes.append(
            "left out as not effectful: "
            + ", ".join(f"{t} ({n} call{'s' if n > 1 else ''})" for t, n in sorted(other.items()))
        )
    tools = {c.tool for c in found} | set(seen)
    missing = sorted(set(rules.effectful or ()) - tools)
    if missing and len(missing) == len(rules.effectful):
        raise UsageError(
            f"--effectful {','.join(sorted(rules.effectful))}: no call of "
            f"{'that tool' if len(missing) == 1 else 'those tools'} in the trace; "
            "its tools are: "
            + (
                ", ".join(
                    f"{t} ({n} call{'s' if n > 1 else ''})"
                    for t, n in sorted(_counts(found).items())
                )
                or "none (it holds no tool call)"
            )
        )
    if missing:
        notes.append(f"--effectful names tools with no call in the trace: {', '.join(missing)}")
    return kept, notes


def _counts(found) -> dict:
    out: dict = {}
    for c in found:
        out[c.tool] = out.get(c.tool, 0) + 1
    return out


def _once(paths: Sequence[str], notes: list) -> list[str]:
    """`paths` with a file given twice (under any name) kept once, said in `notes`: read
    twice, its calls or effects would count twice."""
    out, seen = [], {}
    for p in paths:
        try:
            st = os.stat(p)
            ident = (st.st_dev, st.st_ino)
        except OSError:
            ident = p  # the reader words the error
        if ident in seen:
            notes.append(f"{p} is given twice (also as {seen[ident]}) and was read once")
            continue
        seen[ident] = p
        out.append(p)
    return out


def check_trace(
    source: str,
    paths: Sequence[str],
    rules: Rules = Rules(),
    ledgers: Sequence[str] = (),
    checkpoints: Sequence[str] = (),
    run_items: Sequence[str] = (),
    max_line_bytes: Optional[int] = None,
    logs: Sequence[str] = (),
) -> TraceReport:
    """Adapt and check trace files `paths` of `source` (a key of `READERS`), with the
    intent logs `logs` of the run beside them (see the module docstring); with
    `max_line_bytes`, every line of every file given is at most that long.

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
    twice: list = []
    paths, checkpoints, run_items, ledgers, logs = (
        _once(x, twice) for x in (paths, checkpoints, run_items, ledgers, logs)
    )
    names = (
        [dbos.display_name(p) for p in paths]
        + list(checkpoints)
        + list(run_items)
        + list(ledgers)
        + list(logs)
    )
    if max_line_bytes is not None:
        for p in [*paths, *checkpoints, *run_items, *ledgers, *logs]:
            if os.path.isfile(p):  # a database URL (dbos) has no lines
                long_line(p, max_line_bytes)
    shown = unique_names(names)  # writers are named after their files
    if source == "langgraph":
        found, notes = langgraph.read(paths, 0, checkpoints, shown[: len(paths)])
    elif source == "openai-agents":
        found, notes = openai_agents.read(paths, 0, run_items)
    else:
        found, notes = READERS[source](paths, 0)
    kept, rule_notes = _apply(rules, found, _left_out_tools(notes))
    notes = twice + rule_notes + [n for c in kept for n in c.notes] + notes
    got = ledger.read(ledgers, len(paths) + len(checkpoints) + len(run_items))
    by_log, guarded, missing = None, [], []
    if logs:
        by_log = intentlog.beside(
            logs, len(names) - len(logs), got.entries, max_line_bytes or DEFAULT_MAX_LINE_BYTES
        )
    else:
        by_log = intentlog.in_trace(kept, got.entries, names)
    if by_log is not None:
        kept, guarded, missing, log_notes = intentlog.split(kept, by_log)
        notes += log_notes
    placed = (by_log.lines if by_log else []) + _calls.to_log(kept)
    missing += [] if kept or guarded else [_no_calls(found)]
    partial = got.partial
    orphans: tuple = ((), 0)
    mismatched: list = []
    if ledgers:
        judged_calls = kept + (by_log.calls if by_log else [])
        joined = ledger.join(got.entries, judged_calls, shown)
        placed += joined.effects
        notes += joined.notes
        orphans, mismatched = joined.orphans, joined.mismatched
        missing += _ledger_missing(judged_calls, joined, got)
    report = with_findings(_conformance(placed, names, by_log, max_line_bytes), *orphans)
    report = with_findings(report, mismatched + _asks(placed, names, by_log))
    if not ledgers:
        report = _suspected(report, kept, names)
    notes += per_attempt(report, kept, rules, source)
    if missing and report.verdict is LogVerdict.CONFORMS:  # a violation found stands
        report = replace(report, verdict=LogVerdict.INCONCLUSIVE)
    effects = sum(p.event["type"] == "effect" for p in placed)
    stats = {
        "tool_calls": len(found),
        "effectful_calls": len(kept) + len(guarded),
        "call_ids": len({c.key for c in kept + guarded}),
        "effects_joined": effects,
    }
    call_ids = source != "openai-agents" or bool(run_items)
    judged = capability.judged(
        source,
        effects > 0,
        all(c.args is not None for c in kept),
        call_ids=call_ids,
        calls=len(kept) + len(guarded),
        partial_ledger=bool(partial),
        by_log=by_log.name if guarded and not kept else "",
    )
    if guarded:
        stats["judged_by_log"] = len(guarded)
    return TraceReport(source, report, judged, notes, placed, stats, missing)


def per_attempt(report, kept: list[_calls.Call], rules: Rules, source: str) -> list[str]:
    """A note for each I1 under several keys of the trace's calls: their idempotency keys
    are derived from a per-attempt id (the source's call id, or the --idempotency-key
    path, named), so each attempt at one intent sent a new key, which no provider dedupes."""
    sent = {c.key for c in kept}
    if rules.idempotency_key is not None:
        field = f"{rules.idempotency_key} (--idempotency-key), which changed between them"
    else:
        field = capability.table()["sources"][source]["key_from"]
    out = []
    for f in report.findings:
        keys = [k for k in f.key.split(" + ") if k in sent]
        if f.property == "I1" and len(keys) >= 2:
            shown = ", ".join(keys[:4]) + (" ..." if len(keys) > 4 else "")
            out.append(
                f"one intent took effect under {len(keys)} keys ({shown}), per-attempt "
                f"ids: the idempotency keys come from {field}; each attempt sent a new key, "
                "so the provider could not dedupe them: send a key derived from the intent "
                "(toolcommit.runtime's key)"
            )
    return out


def _ledger_missing(kept, joined, got) -> list[str]:
    """What the ledger left unjudged: no effect joined a call, or pages not given."""
    out = []
    if kept and not joined.effects:
        out.append(
            f"no effect of the ledger joins a call of this trace ({len(got.entries)} "
            "read; by idempotency key or canonical intent): what the provider applied "
            "was not counted"
        )
    return out + got.partial


def _no_calls(found) -> str:
    if not found:
        return "the trace holds no tool call: nothing was judged"
    return (
        "no call of an effectful tool: nothing was judged (tools in the trace: "
        + ", ".join(sorted(_counts(found)))
        + ")"
    )


def _suspected(report, kept: list[_calls.Call], names) -> object:
    """`report` with a possible I1 for each call its source says may have run more often
    than it shows (`Call.suspect`): without a ledger, nothing says how often it took
    effect. A ledger decides instead (its effects are counted by the core)."""
    extra = []
    for c in kept:
        if not c.suspect:
            continue
        where = (names[c.loc[0]], c.loc[1])
        extra.append(
            Finding(
                "I1",
                c.key,
                "possible",
                (c.writer,),
                (where,),
                (Citation("transition", c.writer, "dispatched", *where),),
                f"{c.suspect}; no effect records say how many took effect: possibly more than one",
            )
        )
    return with_findings(report, extra)


def _asks(placed, names, by_log=None) -> list[Finding]:
    """The requests compared across scopes (`asks`), over the intent logs beside the trace
    and the derived events, as `validate` compares an intent log's."""
    derived = asks.listed([(from_dict(p.event), p.file_index, p.line) for p in placed])
    if by_log is None or not by_log.paths:
        return asks.judge(names, derived)
    paths, first = by_log.paths, by_log.first_index
    return asks.judge(
        names, lambda types: chain(raw_events(paths, first, types=types), derived(types))
    )


def _conformance(placed, names, by_log=None, max_line_bytes=None):
    """The core's report on the lines of the intent logs beside the trace (`by_log`, an
    `intentlog.Beside`), then the derived events; an event the log contract refuses (a
    trace value of the wrong type: a call id that is a number, say) is an `InputError` at
    the trace line it came from."""
    checker = Conformance(names)
    warnings: list = []
    if by_log is not None:
        feed_files(
            checker,
            by_log.paths,
            max_line_bytes or DEFAULT_MAX_LINE_BYTES,
            warnings,
            first_index=by_log.first_index,
        )
    for p in placed:
        why = problem(p.event)
        if why:
            raise InputError(
                f"this call does not fit the log contract ({why}); the trace "
                "holds a value of the wrong type here",
                names[p.file_index],
                p.line,
            )
        try:
            checker.feed(from_dict(p.event), p.file_index, p.line)
        except EventError as e:
            raise InputError(str(e), names[p.file_index], p.line) from None
    return checker.finish(warnings)
