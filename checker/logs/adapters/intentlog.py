"""An intent log (``toolcommit.runtime``'s, or any writer of the log contract) against the
provider's ledger: ``validate LOG --ledger FILE`` without ``--from``; and beside a trace,
``validate --from SOURCE TRACE --log LOG`` (`beside`, `split`).

`calls` reads the log's proposals the ledger could join (their key, or their tool when
the ledger joins by canonical intent), as `calls.Call`s whose key and idempotency key are
the log's key (the key the runtime sends: ``log.dispatch(key).idempotency_key``);
`ledger.join` turns the ledger's effects into effect events for them, which the driver
feeds after the log's own lines. Memory grows with the ledger, not with the log.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from toolcommit.checker.logs.adapters import ledger
from toolcommit.checker.logs.adapters.calls import OK, Call
from toolcommit.checker.logs.read import read_lines


def calls(paths: Sequence[str], entries: list, max_line_bytes: int, first_index: int = 0,
          proposals: Optional[dict] = None) -> list[Call]:
    """The accepted proposals of logs `paths` that `entries` may join, first per key (and
    the log's first few, so a note on an effect that joins nothing can name some keys);
    `proposals`, if given, gets the number of proposals (any decision) of each tool."""
    keys = {e.idempotency_key for e in entries if e.idempotency_key}
    tools = {e.tool for e in entries if e.tool and e.args is not None}
    out: dict[str, Call] = {}
    for fi, path in enumerate(paths, first_index):
        for line, ev in read_lines(path, max_line_bytes):
            if ev.type == "proposal" and proposals is not None:
                proposals[ev.tool] = proposals.get(ev.tool, 0) + 1
            if ev.type != "proposal" or ev.decision != "accepted" or ev.key in out:
                continue
            if ev.key in keys or ev.tool in tools or len(out) < 3:
                out[ev.key] = Call(tool=ev.tool, call_id=ev.key, args=ev.args, outcome=OK,
                                   writer=ev.writer, order=(fi, line), loc=(fi, line),
                                   scope=ev.scope, idempotency_key=ev.key,
                                   ident=f"key {ev.key}")
    return list(out.values())


def join(paths: Sequence[str], ledgers: Sequence[str], max_line_bytes: int) -> ledger.Joined:
    """The effect events of `ledgers` joined to the keys of logs `paths` (file indexes:
    the logs first, then the ledgers), with notes and findings (`ledger.orphans`) on what
    joined nothing."""
    got = ledger.read(ledgers, len(paths))
    found = calls(paths, got.entries, max_line_bytes)
    joined = ledger.join(got.entries, found, list(paths) + list(ledgers), source="log")
    return ledger.Joined(joined.effects, joined.notes + list(got.partial), joined.orphans)


@dataclass
class Beside:
    """Intent logs given beside a trace (``--log``): their files and first file index, the
    accepted proposals a ledger may join (`calls`), and the proposals of each tool."""

    paths: list
    first_index: int
    calls: list
    proposals: dict


def beside(paths: Sequence[str], first_index: int, entries: list,
           max_line_bytes: int) -> Beside:
    """Read intent logs `paths` given beside a trace (file indexes from `first_index`)."""
    proposals: dict = {}
    found = calls(paths, entries, max_line_bytes, first_index, proposals)
    return Beside(list(paths), first_index, found, proposals)


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
    where = ", ".join(b.paths)
    missing = [f"{n} attempt(s) of {t} in the trace, {b.proposals[t]} proposal(s) of it in "
               f"{where}: {n - b.proposals[t]} ran around the guard (or it is not this run's "
               "log), and what they did is not judged" for t, n in sorted(attempts.items())
               if n > b.proposals[t]]
    notes = [f"{len(guarded)} call(s) of {', '.join(sorted(attempts))} judged by the intent "
             f"log {where} (the guard's proposals, transitions and keys), not from the trace"
             ] if guarded else []
    if rest:
        notes.append(f"{len(rest)} call(s) of {', '.join(sorted({c.tool for c in rest}))} "
                     f"judged from the trace: {where} holds no proposal of "
                     f"{'that tool' if len({c.tool for c in rest}) == 1 else 'those tools'}")
    return rest, guarded, missing, notes
