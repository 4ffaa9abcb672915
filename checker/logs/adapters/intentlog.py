"""An intent log (``toolcommit.runtime``'s, or any writer of the log contract) against the
provider's ledger: ``validate LOG --ledger FILE`` without ``--from``; and the guard's log
of a traced run, beside the trace (``validate --from SOURCE TRACE --log LOG``: `beside`) or
in it (its lines on the spans: `in_trace`), which judges the calls it guarded (`split`).

`calls` reads the log's proposals the ledger could join (their key, or their tool when
the ledger joins by canonical intent), as `calls.Call`s whose key and idempotency key are
the log's key (the key the runtime sends: ``log.dispatch(key).idempotency_key``);
`ledger.join` turns the ledger's effects into effect events for them, which the driver
feeds after the log's own lines. Memory grows with the ledger, not with the log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from toolcommit.checker.logs.adapters import ledger
from toolcommit.checker.logs.adapters.calls import OK, Call, Placed
from toolcommit.checker.logs.events import problem
from toolcommit.checker.logs.read import read_lines
from toolcommit.checker.logs.typed import from_dict
from toolcommit.model.errors import InputError


def calls(
    paths: Sequence[str],
    entries: list,
    max_line_bytes: int,
    first_index: int = 0,
    proposals: Optional[dict] = None,
) -> list[Call]:
    """The accepted proposals of logs `paths` that `entries` may join, first per key (and
    the log's first few, so a note on an effect that joins nothing can name some keys);
    `proposals`, if given, gets the number of proposals (any decision) of each tool."""
    return _accepted(
        (
            (fi, line, ev)
            for fi, path in enumerate(paths, first_index)
            for line, ev in read_lines(path, max_line_bytes)
        ),
        entries,
        proposals,
    )


def _accepted(events: Iterable, entries: list, proposals: Optional[dict]) -> list[Call]:
    """`calls` over ``(file index, line, typed event)`` triples."""
    keys = {e.idempotency_key for e in entries if e.idempotency_key}
    tools = {e.tool for e in entries if e.tool and e.args is not None}
    out: dict[str, Call] = {}
    for fi, line, ev in events:
        if ev.type == "proposal" and proposals is not None:
            proposals[ev.tool] = proposals.get(ev.tool, 0) + 1
        if ev.type != "proposal" or ev.decision != "accepted" or ev.key in out:
            continue
        if ev.key in keys or ev.tool in tools or len(out) < 3:
            out[ev.key] = Call(
                tool=ev.tool,
                call_id=ev.key,
                args=ev.args,
                outcome=OK,
                writer=ev.writer,
                order=(fi, line),
                loc=(fi, line),
                scope=ev.scope,
                idempotency_key=ev.key,
                ident=f"key {ev.key}",
            )
    return list(out.values())


def join(paths: Sequence[str], ledgers: Sequence[str], max_line_bytes: int) -> ledger.Joined:
    """The effect events of `ledgers` joined to the keys of logs `paths` (file indexes:
    the logs first, then the ledgers), with notes and findings (`ledger.orphans`) on what
    joined nothing, and what keeps the run from conforming: a ledger given only in part,
    or one none of whose effects joins an accepted proposal of the log (an empty ledger
    included): what the provider applied was not counted."""
    got = ledger.read(ledgers, len(paths))
    found = calls(paths, got.entries, max_line_bytes)
    joined = ledger.join(got.entries, found, list(paths) + list(ledgers), source="log")
    missing = list(got.partial)
    if found and not joined.effects:
        missing.insert(
            0,
            f"no effect of the ledger joins a key of the log ({len(got.entries)} read; by "
            "idempotency key or canonical intent): what the provider applied was not counted",
        )
    return ledger.Joined(joined.effects, joined.notes, joined.orphans, missing)


@dataclass
class Beside:
    """The guard's own log of a traced run: intent log files given beside the trace
    (``--log``: `paths` from file index `first_index`) or its lines read from the trace
    (`lines`, as `calls.Placed`); the accepted proposals a ledger may join (`calls`), the
    proposals of each tool, and how reports name it."""

    paths: list
    first_index: int
    calls: list
    proposals: dict
    name: str
    lines: list = field(default_factory=list)


def beside(paths: Sequence[str], first_index: int, entries: list, max_line_bytes: int) -> Beside:
    """Read intent logs `paths` given beside a trace (file indexes from `first_index`)."""
    proposals: dict = {}
    found = calls(paths, entries, max_line_bytes, first_index, proposals)
    return Beside(
        list(paths),
        first_index,
        found,
        proposals,
        "the intent log " + ", ".join(map(os.path.basename, paths)),
    )


def in_trace(kept: list[Call], entries: list, names: list[str]) -> Optional[Beside]:
    """The guard's lines the trace carries on calls `kept` (`Call.lines`), placed at their
    call, or None when it carries none. `InputError` (the call's file:line) on a line the
    log contract refuses."""
    placed = [Placed(dict(line), *c.loc) for c in kept for line in c.lines]
    if not placed:
        return None
    for p in placed:
        why = problem(p.event)
        if why:
            raise InputError(
                f"a toolcommit.{p.event.get('type')} span event is not an intent log line ({why})",
                names[p.file_index],
                p.line,
            )
    proposals: dict = {}
    found = _accepted(
        ((p.file_index, p.line, from_dict(p.event)) for p in placed), entries, proposals
    )
    return Beside([], 0, found, proposals, "the guard's toolcommit.* span events", placed)


def split(kept: list[Call], b: Beside) -> tuple[list[Call], list[Call], list[str], list[str]]:
    """The trace's effectful calls the logs judge (those of a tool the logs hold proposals
    of: the guard proposes on every call it runs) and the rest, judged from the trace;
    then what is missing (a tool with more attempts in the trace than proposals in the
    logs: some ran around the guard) and notes. Pure."""
    guarded = [c for c in kept if c.tool in b.proposals]
    rest = [c for c in kept if c.tool not in b.proposals]
    attempts: dict = {}
    for c in guarded:
        attempts[c.tool] = attempts.get(c.tool, 0) + 1
    where = b.name
    missing = [
        f"{n} attempt(s) of {t} in the trace, {b.proposals[t]} proposal(s) of it in "
        f"{where}: {n - b.proposals[t]} ran around the guard (or it is not this run's "
        "log), and what they did is not judged"
        for t, n in sorted(attempts.items())
        if n > b.proposals[t]
    ]
    notes = (
        [
            f"{len(guarded)} call(s) of {', '.join(sorted(attempts))} judged by {where} "
            "(the guard's proposals, transitions and keys), not from the trace"
        ]
        if guarded
        else []
    )
    if rest:
        notes.append(
            f"{len(rest)} call(s) of {', '.join(sorted({c.tool for c in rest}))} "
            f"judged from the trace: {where} holds no proposal of "
            f"{'that tool' if len({c.tool for c in rest}) == 1 else 'those tools'}"
        )
    return rest, guarded, missing, notes
