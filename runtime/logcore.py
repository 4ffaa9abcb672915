"""The core of an `IntentLog` (`toolcommit.runtime.log`): the state a log keeps, and the
transaction of one decision (`LogCore._decide`: a decision's store changes and the lines it
writes commit together, then go to the sinks). The protocol's steps build on it, one seam a
module: `decisions` (dispatch and its outcomes), `leases` (takeovers, the heartbeat and the
settler), `export` (reading the log back)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Optional, Sequence, TypeVar

from toolcommit.runtime import design as D
from toolcommit.runtime import lines as L
from toolcommit.runtime import otel, telemetry
from toolcommit.runtime.exceptions import Superseded
from toolcommit.runtime.records import Purpose, Record, Ticket, record_of
from toolcommit.runtime.store import lines as SL
from toolcommit.runtime.store import records as SR
from toolcommit.runtime.store.base import Store, Tx, Write
from toolcommit.runtime.unwritten import Held

if TYPE_CHECKING:
    from toolcommit.runtime.log import IntentLog

_T = TypeVar("_T")


class LogCore:
    """What every part of an `IntentLog` shares: its store, writer, design and locks (set
    by `IntentLog.__init__`), and the transaction of one decision."""

    store: Store
    writer: str
    incarnation: int
    lease: float
    wait: float
    design: D.Design
    settle_every: float
    settler: bool
    tools: Optional[set[str]]
    taken_over: list[Record]
    unwritten: Held
    sinks: list[L.Sink]
    _seq: int
    _lock: threading.RLock
    _bg_lock: threading.Lock
    _busy: dict[str, int]
    _threads: dict[str, threading.Thread]
    _stop: threading.Event
    _wake: threading.Event

    def _log(self) -> "IntentLog":
        """This log, as the `IntentLog` it is (every part is one)."""
        return self  # type: ignore[return-value]  # each part is a base of IntentLog

    def _decide(self, fn: Callable[[Tx], tuple[_T, Sequence[L.Line], Optional[str]]]) -> _T:
        """Run ``fn(tx) -> (result, bodies, intent)`` and write its lines, in one
        transaction; then publish the lines to the sinks and the current span."""
        with self._lock:
            with self.store.tx() as tx:
                result, bodies, intent = fn(tx)
                out, seq = self._stamp(tx, bodies)
            self._seq = seq
        for line in out:
            self._publish(line, intent)
        return result

    def _once(
        self, first: Write, then: Sequence[Write], bodies: Sequence[L.Line]
    ) -> Optional[Record]:
        """Write a decision's expected case in one statement (where `Store.one_statement`):
        `first` (writing the record, ``RETURNING`` it), `then`, and the lines `bodies`;
        then publish them. The record written, or None: nothing was
        written, and the caller decides in a transaction (`_decide`), which covers every
        case (a superseded writer's `Superseded` included)."""
        if not self.store.one_statement:
            return None
        with self._lock:
            out, seq = self._stamped(bodies)
            row = self.store.once(
                self._mine(), first, then, seq, [(ln["seq"], L.dumps(ln)) for ln in out]
            )
            if row is None:
                return None
            self._seq = seq
        rec = record_of(row)
        for line in out:
            self._publish(line, rec.intent)
        return rec

    def _stamped(self, bodies: Sequence[L.Line]) -> tuple[list[L.Line], int]:
        """`bodies` stamped with this writer's next seqs; the last seq."""
        seq, out, ts = self._seq, list[L.Line](), L.now_rfc3339()
        for body in bodies:
            seq += 1
            out.append(L.stamp(body, self.writer, seq, ts))
        return out, seq

    def _stamp(self, tx: Tx, bodies: Sequence[L.Line]) -> tuple[list[L.Line], int]:
        out, seq = self._stamped(bodies)
        if out and not SL.append(tx, self._mine(), seq, [(ln["seq"], L.dumps(ln)) for ln in out]):
            raise Superseded(
                f"writer {self.writer!r} was opened by another process; "
                "this one must stop (one live process per writer name)"
            )
        return out, seq

    def _publish(self, line: L.Line, intent: Optional[str]) -> None:
        for sink in self.sinks:
            sink(line)
        telemetry.annotate(line, intent)
        otel.committed(self._log(), line)

    def _get(self, tx: Tx, key: str, lock: bool = False) -> Optional[Record]:
        """The record of `key` (`store.records.get`)."""
        return SR.get(tx, self.store, key, lock)

    def _now(self, tx: Tx) -> float:
        return SR.now(tx, self.store)

    def _mine(self) -> tuple[str, int]:
        return (self.writer, self.incarnation)

    @property
    def holds(self) -> bool:
        """Whether the design holds a re-ask while in doubt (``reask=hold``): then every
        call names its principal."""
        return self.design.knobs.get("reask") == "hold"

    def window_open(self, r: Record, now: float) -> bool:
        """Whether a re-send of `r` falls inside the design's replay window (store clock;
        a record whose first send is unknown: closed)."""
        return D.window_open(self.design, r.first_sent, now)

    def read_wait(self, key: str) -> float:
        """Seconds before the design lets a status read of `key` settle it (0: now): where
        the design replays, the delay bound D after the key's last send."""
        with self._lock, self.store.read() as tx:
            r, now = self._get(tx, key), self._now(tx)
        return 0.0 if r is None else self._read_wait(r, now)

    def _read_wait(self, r: Record, now: float) -> float:
        return D.read_wait(self.design, r.sent_at, now)

    def _ticket(self, r: Record, purpose: Purpose) -> Ticket:
        d = self.design
        return Ticket(
            r.key,
            r.key if d.sends_key else None,
            r.fence if d.sends_fence else None,
            purpose,
            r.tool,
            r.args,
            r.scope,
            r.epoch,
            generation=r.fence,
            via=d.knobs["status_via"],
            sdk_retries=d.knobs["sdk_retries"] == "on",
            key_header=d.key_header,
        )

    def ticket(self, key: str, purpose: Purpose = "status") -> Optional[Ticket]:
        """The current ticket of `key` for `purpose` (None: no such record)."""
        r = self.record(key)
        return None if r is None else self._ticket(r, purpose)

    def record(self, key: str) -> Optional[Record]:
        with self._lock, self.store.read() as tx:
            return self._get(tx, key)
