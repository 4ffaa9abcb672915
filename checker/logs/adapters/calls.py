"""Tool calls read from a trace, and the intent-log contract they amount to.

An adapter turns its source into `Call`s: one attempt at running one tool call, with what
the source shows of it. `to_log` writes the log contract of `spec/log.schema.json` for
them, as the runtime would have had to log it:

- the runtime's key is the model's call id (a chat-style runtime knows no other identity);
- a call id's first attempt is a ``proposal`` (accepted: the runtime ran it) and
  ``PROPOSED -> RECORDED -> DISPATCHED``;
- an attempt that succeeded ends ``DISPATCHED -> ACKED``; one that failed ends
  ``DISPATCHED -> UNKNOWN`` (a trace cannot tell a failure before the effect from one
  after it); one that never ended (its process stopped) stays ``DISPATCHED``;
- a later attempt under the same call id (a retry policy, a resume after a crash) moves
  the key on from where it is: ``UNKNOWN -> DISPATCHED`` is a blind retry (P2), and a key
  left ``DISPATCHED`` by a stopped process first becomes ``UNKNOWN`` (the resumed process
  cannot know the outcome);
- a process whose stream ends inside a call logs a ``crash``; a call still running when
  its source was exported (``pending``: a Temporal activity of an open workflow) stays
  ``DISPATCHED`` with no crash.

Only calls of effectful tools enter the log. Every event carries the location of the
trace line it came from, so findings cite the trace itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional

OK, ERROR, OPEN, PENDING = "ok", "error", "open", "pending"


@dataclass
class Call:
    """One attempt at one tool call, as its source recorded it.

    `args` is None when the source did not record the arguments (an opt-in attribute that
    was off); `order` sorts attempts in the source's own order; `loc` and `end_loc` are
    ``(file index, line)`` of the attempt's start and end; `view` is what rules read;
    `suspect` says why the attempt may have run more often than the source shows (a DBOS
    step a stopped dispatch may have been running), "" when nothing says so; `lines` are
    the intent-log lines ``toolcommit.runtime`` put on the attempt's record (a span's
    ``toolcommit.*`` events), as dicts.
    """

    tool: str
    call_id: Optional[str]
    args: Optional[dict]
    outcome: str  # ok | error | open | pending
    writer: str
    order: tuple
    loc: tuple
    end_loc: tuple = (0, 0)
    error: str = ""
    ident: str = ""  # the source's own id of the attempt (span, run)
    view: dict = field(default_factory=dict)
    scope: str = ""
    idempotency_key: Optional[str] = None
    notes: tuple = ()
    suspect: str = ""
    lines: tuple = ()  # intent-log lines the guard put on it (otel.py)

    @property
    def key(self) -> str:
        return self.call_id if self.call_id else f"{self.ident} (no call id)"


@dataclass(frozen=True)
class Placed:
    """One log event and the trace location it came from."""

    event: dict
    file_index: int
    line: int


def log_args(c: Call) -> dict:
    """The call's arguments, or a stand-in unique to the call when they were not recorded
    (then each call is its own intent: nothing can be merged by arguments)."""
    return c.args if c.args is not None else {"toolcommit.unrecorded_args_of": c.key}


class _Seq:
    def __init__(self):
        self.next: dict[str, int] = {}

    def __call__(self, writer: str) -> int:
        n = self.next.get(writer, 1)
        self.next[writer] = n + 1
        return n


def to_log(calls: Iterable[Call]) -> list[Placed]:
    """The log contract for `calls` (already filtered to effectful tools), in their order."""
    out: list[Placed] = []
    seq = _Seq()
    state: dict[str, str] = {}
    open_writers: dict[str, tuple] = {}

    def put(ev: dict, loc: tuple) -> None:
        ev["seq"] = seq(ev["writer"])
        out.append(Placed(ev, loc[0], loc[1]))

    def move(c: Call, frm: str, to: str, loc: tuple, reason: str = "") -> None:
        ev = {"type": "transition", "writer": c.writer, "key": c.key, "from": frm, "to": to}
        if c.call_id:
            ev["call_id"] = c.call_id
        if reason:
            ev["reason"] = reason
        put(ev, loc)
        state[c.key] = to

    for c in sorted(calls, key=lambda c: c.order):
        key, now = c.key, state.get(c.key)
        if now is None:
            put(
                {
                    "type": "proposal",
                    "writer": c.writer,
                    "call_id": c.call_id or "",
                    "tool": c.tool,
                    "args": log_args(c),
                    "scope": c.scope,
                    "key": key,
                    "decision": "accepted",
                },
                c.loc,
            )
            move(c, "PROPOSED", "RECORDED", c.loc)
            move(c, "RECORDED", "DISPATCHED", c.loc)
        else:
            if now == "DISPATCHED":
                move(
                    c,
                    "DISPATCHED",
                    "UNKNOWN",
                    c.loc,
                    "an earlier attempt never ended; this one cannot know its outcome",
                )
            move(c, state[key], "DISPATCHED", c.loc, "attempt under the same call id")
        end = c.end_loc if c.end_loc[1] else c.loc
        if c.outcome == OK:
            move(c, "DISPATCHED", "ACKED", end)
            open_writers.pop(c.writer, None)
        elif c.outcome == ERROR:
            move(c, "DISPATCHED", "UNKNOWN", end, c.error or "the call failed")
            open_writers.pop(c.writer, None)
        elif c.outcome == OPEN:
            open_writers[c.writer] = c.loc
    for writer, loc in open_writers.items():  # the stream ended inside a call
        put({"type": "crash", "writer": writer}, loc)
    return out
