"""The log contract as the library writes it: event lines, sinks and the export.

Every decision of the intent log writes the lines of `spec/log.schema.json` that describe
it, in the same transaction as the decision (table ``tc_events``), so the stored log is
complete whatever crashes: `export` writes it as JSON Lines for ``toolcommit validate``.
After the commit the same lines go to the optional sinks (a `JsonlSink`, or any callable
taking one dict); a sink sees what was committed, but a crash between the commit and the
sink loses lines there, never in the store.

Field order follows the checker's own (`type, writer, seq, ts`, then the event's fields).
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from importlib import resources
from typing import IO, Any, Callable, Iterable, Optional, Sequence

#: one line of the log contract, as a JSON object
Line = dict[str, Any]
Sink = Callable[[Line], None]

#: the ``reason`` of each step the design tells apart (``spec/log-design.json``, which
#: ``toolcommit validate --design`` reads): a replay, a sealed read, a read's answer, a give-up
REASON: dict[str, str] = json.loads(
    resources.files("toolcommit.spec").joinpath("log-design.json").read_text("utf-8")
)["reasons"]


def now_rfc3339() -> str:
    """The wall clock as RFC 3339 UTC (``ts``: written, never read by the checker)."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def dumps(line: Line) -> str:
    """One compact JSON line (no newline)."""
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def proposal(
    call_id: str,
    tool: str,
    args: dict[str, Any],
    scope: str,
    key: str,
    decision: str,
    epoch: int,
    principal: Optional[str] = None,
    identity: Optional[Sequence[str]] = None,
) -> Line:
    """A ``proposal`` line: `args` as normalized (all of them), `principal` when the call
    names one, `identity` (the argument names that make two requests one intent) when not
    every argument does."""
    line: Line = {
        "type": "proposal",
        "call_id": call_id,
        "key": key,
        "decision": decision,
        "tool": tool,
        "args": args,
        "scope": scope,
        "epoch": epoch,
    }
    if principal is not None:
        line["principal"] = principal
    if identity is not None:
        line["identity"] = list(identity)
    return line


def transition(
    key: str,
    frm: str,
    to: str,
    fence: int = 0,
    reason: Optional[str] = None,
    call_id: Optional[str] = None,
    epoch: Optional[int] = None,
) -> Line:
    ev: Line = {"type": "transition", "key": key, "from": frm, "to": to}
    if fence:
        ev["fence"] = fence
    if epoch is not None:
        ev["epoch"] = epoch
    if call_id is not None:
        ev["call_id"] = call_id
    if reason:
        ev["reason"] = reason
    return ev


def lifecycle(kind: str) -> Line:
    """A ``crash`` or ``restart`` line."""
    return {"type": kind}


def stamp(body: Line, writer: str, seq: int, ts: str) -> Line:
    """`body` as a full line: ``type, writer, seq, ts`` first."""
    line: Line = {"type": body["type"], "writer": writer, "seq": seq, "ts": ts}
    line.update((k, v) for k, v in body.items() if k != "type")
    return line


class JsonlSink:
    """Append each line to a JSON Lines file with one ``write`` per line (``O_APPEND``), so
    lines of several processes never interleave within a line.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "log.jsonl")
    >>> sink = JsonlSink(path); sink({"type": "crash", "writer": "w1", "seq": 1}); sink.close()
    >>> open(path).read()
    '{"type":"crash","writer":"w1","seq":1}\\n'
    """

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, line: Line) -> None:
        os.write(self._fd, (dumps(line) + "\n").encode("utf-8"))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def write_jsonl(lines: Iterable[str], out: IO[str]) -> int:
    """Write stored lines (already JSON text) to `out`, one per line; return the count."""
    n = 0
    for text in lines:
        out.write(text)
        out.write("\n")
        n += 1
    return n
