"""An `IntentLog`'s leases: taking over the records of dead holders (`recover`, `take`),
when the design lets this writer settle something (`due`), and the two background threads
that keep leases and settle (the heartbeat, `driving`; the settler, `settle_with`). Leases
run on the store's clock; their SQL is in `toolcommit.runtime.store.records`."""

from __future__ import annotations

import logging
import threading
import weakref
from contextlib import contextmanager
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Optional, Sequence

from toolcommit.model.states import IN_DOUBT
from toolcommit.runtime import lines as L
from toolcommit.runtime import otel
from toolcommit.runtime.exceptions import Superseded
from toolcommit.runtime.logcore import LogCore
from toolcommit.runtime.records import Record
from toolcommit.runtime.store import records as SR
from toolcommit.runtime.store.base import Tx

if TYPE_CHECKING:
    from toolcommit.runtime.log import IntentLog

_LOGGER = logging.getLogger("toolcommit.runtime")


def _background(
    ref: Callable[[], Optional["IntentLog"]],
    name: str,
    step: Callable[["IntentLog"], float],
    event: threading.Event,
    first: float = 0.0,
) -> None:
    """The loop of a log's background thread (`IntentLog._start`): its first step after
    `first` seconds (or `event`)."""
    if first > 0:
        event.wait(first)
    while True:
        log = ref()
        if log is None or log._stop.is_set():
            return
        try:
            pause = step(log)
        except Superseded:
            return
        except Exception as e:  # the store or provider down: try again later
            _LOGGER.warning("%s: %s", name, e)
            pause = log.settle_every
        pause, stop = min(max(pause, 0.001), log.settle_every), log._stop
        del log  # the wait holds no reference: a dropped log ends the loop
        event.wait(pause)
        if event is not stop:
            event.clear()


class Leases(LogCore):
    """Takeovers, the heartbeat and the settler (a base of `IntentLog`)."""

    def _take(self, tx: Tx, r: Record, why: str, expired: bool = False) -> Optional[L.Line]:
        """Compare-and-set the lease of `r` to this incarnation (DISPATCHED -> UNKNOWN),
        only while its lease is still expired if `expired`; the transition line, or None if
        there is nothing to write or the write lost."""
        to = "UNKNOWN" if r.state == "DISPATCHED" else r.state
        if not SR.take(tx, self.store, self.lease, r, to, self._mine(), expired):
            return None
        self.taken_over.append(
            Record(
                **{**r.__dict__, "state": to, "owner": self.writer, "owner_inc": self.incarnation}
            )
        )
        if to == r.state:
            return None
        return L.transition(r.key, r.state, to, r.fence, L.REASON["takeover"] + why)

    def renew(self, key: str) -> bool:
        """Extend this writer's lease on `key` (the heartbeat does it for a call `driving`
        it)."""
        return self._renew("key = ?", [key]) == 1

    def recover(self, limit: int = 100, tools: Optional[Iterable[str]] = None) -> list[Record]:
        """Take over up to `limit` open records whose holder is gone (an expired lease, a
        dead incarnation of any writer name, this one's included); a DISPATCHED one becomes
        UNKNOWN. Returns every open record this incarnation took over (now or when it
        opened) and holds, and no call of this process is driving: the records it must
        settle (`dispatch` a RECORDED one, `reconcile` the others; or let `recover_settle`
        in `toolcommit.runtime.shims` do it through the registered tools). With `tools`,
        only records of those tools are taken."""
        only = None if tools is None else sorted(tools)
        with otel.recover_span(self._log(), "recover") as counts:
            with self._lock, self.store.read() as tx:
                keys = SR.takeable(tx, self.store, self._mine(), limit, only)
            counts["taken"] = sum(self.take(key) is not None for key in keys)
            taken = {r.key for r in self.taken_over}
            return [r for r in self._idle() if r.key in taken]

    def in_doubt(self) -> list[Record]:
        """The open records this incarnation must settle and no call of this process is
        driving: those it took over, and its UNKNOWN and RECONCILING ones (a call that gave
        up waiting, `InDoubt`). What the settler settles."""
        taken = {r.key for r in self.taken_over}
        return [r for r in self._idle() if r.key in taken or r.state in IN_DOUBT]

    def _idle(self) -> list[Record]:
        with self._lock, self.store.read() as tx:
            rows = SR.held(tx, self._mine())
        with self._bg_lock:
            return [r for r in rows if r.key not in self._busy]

    def take(self, key: str) -> Optional[Record]:
        """Take over `key` if its holder is gone (an expired lease, a dead incarnation: see
        `recover`); a DISPATCHED record becomes UNKNOWN. Where the holder may have been
        sending (a DISPATCHED record, or a replay whose end is not written: ``in_flight``)
        its last send counts as now; else the delay bound runs on from the last send
        recorded, so taking a record again (a rerun of `recover`) never postpones settling
        it. The record now held, or None (not takeable, or lost the race)."""

        def fn(tx: Tx) -> tuple[Optional[Record], list[L.Line], Optional[str]]:
            cur = self._get(tx, key, lock=True)
            dead = None if cur is None else SR.may_take(tx, self.store, key, self._mine())
            if cur is None or dead is None:
                return None, [], None
            why = (
                f"{cur.owner}#{cur.owner_inc} is dead"
                if dead
                else f"lease of {cur.owner}#{cur.owner_inc} expired"
            )
            body = self._take(tx, cur, why, expired=not dead)
            return self._get(tx, key), [] if body is None else [body], cur.intent

        got = self._decide(fn)
        return got if got is not None and (got.owner, got.owner_inc) == self._mine() else None

    def due(self) -> Optional[float]:
        """Seconds until the design lets this writer settle something open (store clock):
        0 for a record it must settle (`in_doubt`) that is not RECONCILING, a RECONCILING
        one's `read_wait`, another holder's lease left (0 for a dead incarnation's). None:
        no open record this writer could ever settle (only its own live calls')."""
        doubt = {r.key for r in self.in_doubt()}
        with self._lock, self.store.read() as tx:
            now = self._now(tx)
            rows = SR.open_with_dead(tx)
        waits = []
        for r, dead in rows:
            if (r.owner, r.owner_inc) != self._mine():
                waits.append(0.0 if dead else max(0.0, r.lease_until - now))
            elif r.key in doubt:
                waits.append(self._read_wait(r, now) if r.state == "RECONCILING" else 0.0)
        return min(waits, default=None)

    def lease_left(self, key: str) -> float:
        """Seconds until `key`'s lease expires (store clock; 0 if it has)."""
        with self._lock, self.store.read() as tx:
            return SR.lease_left(tx, self.store, key)

    def expire_leases(self, writer: Optional[str] = None) -> int:
        """See `expire_leases` (the module function)."""
        with self._lock:
            return SR.expire_leases(self.store, writer)

    # ----- background: the heartbeat and the settler ---------------------------------------
    @contextmanager
    def driving(self, key: str) -> Iterator[None]:
        """While a call of this process drives `key`: the heartbeat renews its lease (see
        the class docstring) and the settler leaves it alone. Bounded by the call."""
        with self._bg_lock:
            self._busy[key] = self._busy.get(key, 0) + 1
            # its first beat a third of the lease on: the call's own write just renewed it
            self._start("heartbeat", Leases._beat, self._stop, first=self.lease / 3)
        try:
            yield
        finally:
            with self._bg_lock:
                n = self._busy.pop(key) - 1
                if n:
                    self._busy[key] = n
            self._wake.set()  # the settler looks again: the call may have left doubt

    def _beat(self) -> float:
        """Renew the leases this process keeps: those of the records its calls drive and,
        while the settler runs, of every open record of its tools it holds (so a live
        process's records are never taken over). A record taken over already is not this
        incarnation's any more: its lease is not touched. Outcomes the store refused
        (`unwritten`) are written first; a record whose outcome is still held is not
        renewed (`_renew`)."""
        self.unwritten.flush()
        with self._bg_lock:
            keys = sorted(self._busy)
        tools = None if self.tools is None else sorted(self.tools)
        which, params = [], list[str]()
        if "settler" in self._threads and tools is None:
            which = ["1 = 1"]
        else:
            for col, values in (
                ("key", keys),
                ("tool", tools if "settler" in self._threads else []),
            ):
                if values:
                    which.append(f"{col} IN ({', '.join('?' * len(values))})")
                    params += values
        if which:
            self._renew(" OR ".join(which), params)
        return self.lease / 3

    def renew_held(self) -> int:
        """Renew the lease of every open record this incarnation holds (a sweeper keeps
        what it took while it waits); how many."""
        return self._renew("1 = 1", [])

    def _renew(self, which: str, params: Sequence[str]) -> int:
        """Renew this incarnation's leases on the open records `which` selects, but never
        one whose outcome the store refused (`unwritten`): a lease does not outlive a
        store this process cannot write."""
        held = self.unwritten.keys()
        with self._lock, self.store.tx() as tx:
            return SR.renew(tx, self.store, self.lease, self._mine(), which, params, held)

    def settle_with(self, step: Callable[["IntentLog"], float]) -> bool:
        """Run ``step(log)`` (one settle pass; returns the seconds until the next is due) in
        the settler thread until `close`, if this log runs one (``settler=True``); whether
        it runs. `toolcommit.runtime.shims.effectful` gives it `settle_pass`."""
        if self.settler:
            with self._bg_lock:
                self._start("settler", step, self._wake)
                self._start("heartbeat", Leases._beat, self._stop)
            self._wake.set()
        return self.settler

    def _start(
        self,
        name: str,
        step: Callable[["IntentLog"], float],
        event: threading.Event,
        first: float = 0.0,
    ) -> None:
        """Start the daemon thread `name` (once) calling ``step(log)`` until close (or until
        the log is garbage: the thread holds it weakly), first after `first` seconds, then
        pausing what it returns (at most `settle_every`) or until `event` is set."""
        if name in self._threads or self._stop.is_set():
            return
        t = threading.Thread(
            target=_background,
            args=(weakref.ref(self._log()), name, step, event, first),
            name=f"toolcommit-{name}-{self.writer}",
            daemon=True,
        )
        self._threads[name] = t
        t.start()

    @property
    def closing(self) -> bool:
        """Whether `close` began: the settler starts no more settling."""
        return self._stop.is_set()

    def _stop_threads(self) -> None:
        self._stop.set()
        self._wake.set()
        for t in list(self._threads.values()):
            if t is not threading.current_thread():
                t.join(max(5.0, self.settle_every))
