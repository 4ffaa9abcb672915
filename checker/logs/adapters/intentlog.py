"""An intent log (``toolcommit.runtime``'s, or any writer of the log contract) against the
provider's ledger: ``validate LOG --ledger FILE`` without ``--from``.

`calls` reads the log's proposals the ledger could join (their key, or their tool when
the ledger joins by canonical intent), as `calls.Call`s whose key and idempotency key are
the log's key (the key the runtime sends: ``log.dispatch(key).idempotency_key``);
`ledger.join` turns the ledger's effects into effect events for them, which the driver
feeds after the log's own lines. Memory grows with the ledger, not with the log.
"""
from __future__ import annotations

from typing import Sequence

from toolcommit.checker.logs.adapters import ledger
from toolcommit.checker.logs.adapters.calls import OK, Call
from toolcommit.checker.logs.read import read_lines


def calls(paths: Sequence[str], entries: list, max_line_bytes: int) -> list[Call]:
    """The accepted proposals of logs `paths` that `entries` may join, first per key (and
    the log's first few, so a note on an effect that joins nothing can name some keys)."""
    keys = {e.idempotency_key for e in entries if e.idempotency_key}
    tools = {e.tool for e in entries if e.tool and e.args is not None}
    out: dict[str, Call] = {}
    for fi, path in enumerate(paths):
        for line, ev in read_lines(path, max_line_bytes):
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
    the logs first, then the ledgers), with notes on what joined nothing."""
    got = ledger.read(ledgers, len(paths))
    found = calls(paths, got.entries, max_line_bytes)
    joined = ledger.join(got.entries, found, list(paths) + list(ledgers), source="log")
    return ledger.Joined(joined.effects, joined.notes + list(got.partial))
