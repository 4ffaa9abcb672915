"""The intent log: the model proposes, the log decides, one transaction per decision.

The log follows the design proven for its provider (`provider=`: a shipped profile or a
design file; `toolcommit.runtime.design`): semantic key from the checker's own canonicalizer
(`model/canon.py`, v1) plus an attempt epoch only the log advances; atomic insert under a
uniqueness constraint; compare-and-set dispatch under a lease with a fresh generation (sent
as the fence where the design fences); an unknown outcome resolved as the design says (a
replay under the same key within the replay window, a sealed status read, a give-up), never
by a blind re-send; recovery from the log after a restart.

A runtime's loop for one effectful tool call (`toolcommit.runtime.shims.guard` is this loop,
written once)::

    d = log.propose(call_id, "refund", {"amount": 20}, "request:7", principal="user:42",
                    dispatch=True)
    if d.decision == "accepted":
        t = d.ticket                         # RECORDED -> DISPATCHED, in the same commit
        try:
            result = provider.refund(..., idempotency_key=t.idempotency_key, fence=t.fence)
        except Timeout:
            log.timeout(t)                   # DISPATCHED -> UNKNOWN: never re-sent blindly
            r = log.reconcile(d.key)         # UNKNOWN -> RECONCILING: a replay or status ticket
            ...                              # replay: log.ack / log.timeout; status, once
            log.settle(r, found is not None, found)   # log.read_wait(d.key) == 0

Every decision writes its lines of `spec/log.schema.json` in the same transaction
(`toolcommit.runtime.lines`), so ``toolcommit validate`` can check any run from `export`.
The happy path is two durable commits: the record and its dispatch before the effect (the
proposal accepted and dispatched at once, ``dispatch=True``), the outcome after (`ack`).
On PostgreSQL each of them is one statement, one round trip (`Store.once`): the write its
expected case makes, or nothing, and then the transaction that decides every case.

Contracts
---------
- A writer name is one live process at a time. Opening a name whose last process did not
  `close` means that process crashed: the log writes ``crash`` and ``restart`` lines and the
  new incarnation takes over the records the dead one held (``DISPATCHED`` becomes
  ``UNKNOWN``: the new holder cannot know the outcome).
- Every write but `cancel` is a compare-and-set on the record's state, its lease holder
  (writer and incarnation) and, after dispatch, its generation: a zombie (a paused process
  whose lease was taken over) can never write, whatever it remembers. What it already sent
  is stopped by the provider's fence check where the design fences, and otherwise by the
  delay bound the design waits out before it trusts an "absent" read.
- Leases and send times run on the store's clock. A lease only says who may take a record
  over (`take`, `recover`); each write renews it, and so does the heartbeat while a call
  of this process drives the record (`driving`, which `guard` uses): a call longer than the
  lease keeps it.
- A log stores the design it was created under (`Design.digest`) and refuses another; one
  that stores none is adopted only while it holds no open record, or when told
  (``adopt_design``). It stores the provider account its tools name (`bind_account`) and
  refuses a tool naming another.

Examples
--------
>>> import tempfile, os
>>> log = IntentLog.sqlite(os.path.join(tempfile.mkdtemp(), "intents.db"), writer="w1",
...                        provider="stripe")
>>> d = log.propose("t1", "refund", {"amount": 20}, "request:7", principal="user:42")
>>> d.decision, log.propose("t2", "refund", {"amount": 20.0}, "request:7",
...                         principal="user:42").decision
('accepted', 'duplicate')
>>> log.propose("t3", "refund", {"amount": 20}, "request:7", principal="user:9").decision
'accepted'
>>> log.propose("t4", "refund", {"amount": 20}, "request:7")
Traceback (most recent call last):
...
toolcommit.runtime.log.IntentLogError: call t4 of refund: design stripe holds a re-ask while in doubt (reask=hold), so every call names who asked: pass principal= (the user, tenant or authenticated client; a function of the arguments on a wrapper)
>>> t = log.dispatch(d.key); t.fence, t.idempotency_key == d.key, t.via
(None, True, 'list')
>>> log.ack(t, {"id": "re_1"}), log.record(d.key).state
(True, 'ACKED')
>>> for e in log.events():
...     print(e["type"], e.get("to") or e.get("decision"))
proposal accepted
transition RECORDED
proposal duplicate
proposal accepted
transition RECORDED
transition DISPATCHED
transition ACKED
>>> log.close()
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import weakref
from contextlib import contextmanager
from typing import IO, Any, Callable, Iterable, Iterator, Optional, Sequence, TypeVar, Union

from toolcommit.model.canon import CanonError, canonical_intent, intent_scope
from toolcommit.model.errors import ToolcommitError
from toolcommit.runtime import claim, forked, otel, telemetry
from toolcommit.runtime import design as D
from toolcommit.runtime import guest as G
from toolcommit.runtime import lines as L
from toolcommit.runtime import reask as R
from toolcommit.runtime import refuse as F
from toolcommit.runtime.records import Decision, Record, Ticket, record_of, semantic_key
from toolcommit.runtime.store import (
    GATE,
    GAVE_UP,
    PostgresStore,
    SqliteStore,
    Store,
    StoreError,
    Tx,
    Write,
    expire_leases,
    gated,
    read_lines,
)
from toolcommit.runtime.unwritten import Held, Unwritten

__all__ = [
    "IntentLog",
    "IntentLogError",
    "Superseded",
    "Forked",
    "Decision",
    "Record",
    "Ticket",
    "semantic_key",
    "read_lines",
    "expire_leases",
]

_COLS = (
    "key, intent, epoch, tool, scope, args, call_id, state, fence, owner, owner_inc, "
    "lease_until, slot, result, first_sent, sent_at"
)
_OPEN = "('RECORDED', 'DISPATCHED', 'UNKNOWN', 'RECONCILING')"  # = store.OPEN_STATES
_LOGGER = logging.getLogger("toolcommit.runtime")
_T = TypeVar("_T")


def _background(
    ref: Callable[[], Optional[IntentLog]],
    name: str,
    step: Callable[[IntentLog], float],
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


class IntentLogError(ToolcommitError):
    """A call the log cannot decide (no canonical form, not a JSON object)."""


class Superseded(IntentLogError):
    """Another process opened this writer name: this one must stop writing."""


class Forked(IntentLogError, StoreError):
    """The log is used in a child forked after it was opened (`toolcommit.runtime.forked`):
    refused at every use; its `close` there writes nothing (the leases are the parent's)."""


class IntentLog:
    """The intent log of one writer (one process). See the module docstring.

    Parameters
    ----------
    store : Store
        `SqliteStore` or `PostgresStore` (or use `IntentLog.sqlite` / `IntentLog.postgres`).
    writer : str, optional
        This process's name in the log (``writer`` of every line it writes); one live process
        at a time. A restart under the same name takes over what the dead incarnation held,
        so give a name that survives a restart (a StatefulSet's pod name). None: the
        environment variable ``TOOLCOMMIT_WRITER``.
    provider : str, os.PathLike or Design
        The provider the log talks to, which decides the design it follows: a shipped
        profile (``ideal``, ``stripe``, ``email``, ``fenced-store``: ``spec/designs/NAME.json``)
        or a design file from ``toolcommit design -o FILE``. Required (see `design.load`).
    lease : float
        Seconds a record's lease lasts after each write; above 0 (refused otherwise, as
        are a negative `wait` and a `settle_every` not above 0: `toolcommit.runtime.refuse`).
    sinks : sequence of callables
        Each gets every committed line (a dict), e.g. a `JsonlSink`.
    exclusive_tools : iterable of str
        Tools of which a principal's scope may hold one live intent: a proposal with other
        arguments is then ``conflict`` (the article's "conflict instead of merge").
    wait : float, optional
        Seconds a call meeting a record another writer holds waits for it to settle or for
        its lease to expire (then takes it over), and waits for a status read the design
        defers; default: the lease.
    same : tuple or dict, optional
        The identity fields of a call that names none (``identity=`` of `propose`, a
        wrapper's): what makes two calls one intent, in one scope and, under a design with
        ``reask=hold``, across a principal's requests (`toolcommit.runtime.reask`): every
        argument (None), the named ones (``("charge",)``), or a dict of tool -> one of
        those.
    settler : bool
        Run the settler (default: on; opt out with False): a background thread, started
        when `effectful` first registers a tool with this log and stopped by `close`, that
        takes over the records of dead holders and settles every record in doubt of the
        registered tools as soon as the design allows it (`due`); while it runs, the
        heartbeat keeps the leases of those records (idle in doubt is not dead). A record
        is then in doubt at most its design's wait (the delay bound after its last send, a
        takeover of a request that may have been on its way counting as one; a dead
        holder's lease first) plus `settle_every`, while the provider answers.
    settle_every : float
        The settler's longest pause between passes (seconds): the margin above.
    adopt_design : bool
        A log that stores no design (written before logs stored theirs, or its design row is
        gone) is opened under `provider` only while it holds no open record, unless this says
        it was written under that design (``toolcommit recover --adopt-design NAME``).

    While a call of this process drives a record (`driving`), a heartbeat thread renews
    its lease every third of the lease, so `recover` never takes a live call, however
    long its effect runs.
    """

    def __init__(
        self,
        store: Store,
        writer: Optional[str] = None,
        lease: float = 30.0,
        sinks: Sequence[L.Sink] = (),
        exclusive_tools: Iterable[str] = (),
        *,
        provider: Union[str, os.PathLike[str], D.Design, None] = None,
        wait: Optional[float] = None,
        same: R.SameRule = None,
        settler: bool = True,
        settle_every: float = 1.0,
        adopt_design: bool = False,
    ) -> None:
        try:
            self.design = D.load(provider)
        except D.DesignError:
            store.close()
            raise
        writer = os.environ.get("TOOLCOMMIT_WRITER") if writer is None else writer
        if not writer or not isinstance(writer, str):
            store.close()
            raise IntentLogError(
                "writer must be a non-empty string (or set TOOLCOMMIT_WRITER "
                "to a name that survives a restart, such as the pod's name)"
            )
        guest = G.current()  # opened by a module `recover --tools` imports
        if guest is not None:
            writer, settler = f"{writer}+{guest.suffix}", False
        try:
            lease, settle_every = F.seconds("lease", lease), F.seconds("settle_every", settle_every)
            wait = lease if wait is None else F.seconds("wait", wait, zero=True)
        except F.Refused as e:
            store.close()
            raise IntentLogError(str(e)) from None
        self.store, self.writer, self.lease, self.wait = store, writer, lease, wait
        self.sinks = list(sinks)
        self.exclusive_tools = frozenset(exclusive_tools)
        try:
            self.same = R.check_same(same)
        except ValueError as e:
            store.close()
            raise IntentLogError(str(e)) from None
        # one live process per writer name, refused before anything is written
        # the file as named now: a later chdir does not move it (`_release_claim`)
        self._claim = os.path.abspath(store.path) if isinstance(store, SqliteStore) else None
        why = None if self._claim is None else claim.claim(self._claim, writer)
        if why is not None:
            store.close()
            raise IntentLogError(why)
        self._opened_in = os.getpid()
        self._rules: dict[str, str] = {}  # tool -> the identity rule declared (`declare`)
        self._lock = threading.RLock()
        self.incarnation, self._seq, self.crashed = 0, 0, False
        self.taken_over: list[Record] = []
        # the intents this process proposed lately: a re-proposal skips the fresh case's
        # statement (`propose`), which would only write nothing
        self._proposed: dict[str, None] = {}
        self.design_adopted: Optional[str] = None
        self._adopt_design = bool(adopt_design)
        #: the provider account this log's effects act on (`bind_account`); None: unnamed
        self.account: Optional[str] = None
        self.settler, self.settle_every = bool(settler), settle_every
        # the tools whose records the settler settles and keeps (`effectful` adds; None: all)
        self.tools: Optional[set[str]] = set()
        self._bg_lock, self._busy = threading.Lock(), dict[str, int]()
        self._threads: dict[str, threading.Thread] = {}
        self._stop, self._wake = threading.Event(), threading.Event()
        #: outcomes of sent requests the store would not take, made at the next use
        self.unwritten = Held()
        try:
            with otel.recover_span(self, "open") as counts:
                self._open_writer()
                counts.update(taken=len(self.taken_over), crashed=self.crashed)
        except D.DesignError:
            self._release_claim()
            store.close()
            raise
        otel.watch(self)
        if guest is not None:
            guest.opened.append(self)
        forked.watch(self, Forked)

    @classmethod
    def sqlite(
        cls,
        path: str,
        writer: Optional[str] = None,
        synchronous: str = "FULL",
        adopt: bool = False,
        create: bool = True,
        clock: Optional[Callable[[], float]] = None,
        **kw: Any,
    ) -> "IntentLog":
        """An intent log in the SQLite file `path` (WAL): a new file (not with `create`
        False), or one holding an intent log; a database holding other tables only with
        `adopt`; `clock`: this process's clock, which leases run on (default `time.time`;
        see `SqliteStore`)."""
        store = SqliteStore(path, synchronous, adopt=adopt, create=create, clock=clock or time.time)
        return cls(store, writer, **kw)

    @classmethod
    def postgres(
        cls,
        conninfo: str,
        writer: Optional[str] = None,
        schema: Optional[str] = None,
        adopt: bool = False,
        **kw: Any,
    ) -> "IntentLog":
        """An intent log in a PostgreSQL database (psycopg 3); a schema holding other
        tables only with `adopt` (see `PostgresStore`)."""
        return cls(PostgresStore(conninfo, schema, adopt=adopt), writer, **kw)

    # ----- the transaction of one decision -------------------------------------------------
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
        if not out:
            return out, seq
        if (
            tx.run(
                "UPDATE tc_writers SET seq = ? WHERE writer = ? AND incarnation = ?",
                (seq, self.writer, self.incarnation),
            )
            != 1
        ):
            raise Superseded(
                f"writer {self.writer!r} was opened by another process; "
                "this one must stop (one live process per writer name)"
            )
        for i in range(0, len(out), 300):  # a statement per 300 lines (SQLite's 999
            part = out[i : i + 300]  # parameters): one round trip per decision
            tx.run(
                "INSERT INTO tc_events (writer, seq, line) VALUES "
                + ", ".join(["(?, ?, ?)"] * len(part)),
                [x for ln in part for x in (self.writer, ln["seq"], L.dumps(ln))],
            )
        return out, seq

    def _publish(self, line: L.Line, intent: Optional[str]) -> None:
        for sink in self.sinks:
            sink(line)
        telemetry.annotate(line, intent)
        otel.committed(self, line)

    def _lease_sql(self) -> str:
        return f"{self.store.now_sql} + {self.lease!r}"

    def _get(self, tx: Tx, key: str, lock: bool = False) -> Optional[Record]:
        """The record of `key`; with `lock`, its row stays locked until the commit (so a
        transition line names the state the write really left)."""
        row = tx.one(
            f"SELECT {_COLS} FROM tc_records WHERE key = ?" + (self.store.lock_sql if lock else ""),
            (key,),
        )
        return None if row is None else record_of(row)

    def _mine(self) -> tuple[str, int]:
        return (self.writer, self.incarnation)

    # ----- opening: crash detection and takeover of a dead incarnation's records ----------
    def _check_design(self, tx: Tx) -> None:
        """Store this log's design if the log has none yet; `DesignError` if it was created
        under another (a log replayed under another design's decisions can send twice), or
        if it stores none and holds an open record the caller did not say was written under
        this design (``adopt_design=True``). Reads the provider account the log acts on."""
        d = self.design
        row = tx.one("SELECT account FROM tc_account WHERE id = 1")
        self.account = None if row is None else str(row[0])
        doc = json.dumps(d.doc, sort_keys=True)
        if (
            tx.run(
                "INSERT INTO tc_design (id, name, digest, doc) VALUES (1, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (d.name, d.digest, doc),
            )
            == 1
        ):
            if tx.first("SELECT count(*) FROM tc_writers")[0]:
                self._adopt(tx)
            return
        name, digest = tx.first("SELECT name, digest FROM tc_design WHERE id = 1")
        if digest == d.digest:  # a log written before logs kept the design itself
            tx.run("UPDATE tc_design SET doc = ? WHERE id = 1 AND doc IS NULL", (doc,))
        if digest != d.digest:
            raise D.DesignError(
                f"this intent log was created under design {name} (digest {digest}) and is "
                f"opened under {d.name} (digest {d.digest}): open it with the design it was "
                f"written under (provider={name}, with its timing), or start a new log"
            )

    def _adopt(self, tx: Tx) -> None:
        """Store the design of a log that had writers but stores none (written before logs
        stored their design, or its design row is gone): at once while it holds no open
        record, else only when the caller said so (``adopt_design``): settling a record
        under another design's decisions sends an email twice, or gives an applied refund
        up as "did not happen"."""
        d = self.design
        n = int(tx.first(f"SELECT count(*) FROM tc_records WHERE state IN {_OPEN}")[0])
        if n and not self._adopt_design:
            raise D.DesignError(
                f"this intent log stores no design (written before logs stored theirs, or "
                f"its design row is gone) and holds {n} open record(s): settling them under "
                f"a design it was not written under sends twice or gives up what happened; "
                f"if it was written under {d.name}, say so (toolcommit recover --provider "
                f"{d.name} --adopt-design {d.name}; IntentLog(..., adopt_design=True)), "
                "else give the design it was written under"
            )
        self.design_adopted = (
            f"this intent log stored no design: it now follows {d.name} (digest {d.digest}), "
            + (f"as stated, with {n} open record(s)" if n else "the first design that opened it")
        )
        _LOGGER.warning("%s", self.design_adopted)

    def bind_account(self, account: str) -> None:
        """Record `account`, the provider account this log's effects act on, if the log
        names none yet; `IntentLogError` if it names another (a tool acting on another
        account would settle this log's records where they were never sent)."""
        if not account or not isinstance(account, str):
            raise IntentLogError(f"account={account!r}: name the provider account (a string)")
        if self.account == account:
            return

        def fn(tx: Tx) -> tuple[str, list[L.Line], None]:
            tx.run(
                "INSERT INTO tc_account (id, account) VALUES (1, ?) ON CONFLICT (id) DO NOTHING",
                (account,),
            )
            return str(tx.first("SELECT account FROM tc_account WHERE id = 1")[0]), [], None

        stored = self._decide(fn)
        if stored != account:
            raise IntentLogError(
                f"this intent log acts on provider account {stored}, and a tool names "
                f"account {account}: point the tool at {stored}, or give it a log of its own"
            )
        self.account = stored

    def _open_writer(self) -> None:
        def fn(tx: Tx) -> tuple[None, list[L.Line], None]:
            self._check_design(tx)
            done = opened(tx)
            tx.run(  # where this incarnation runs (`toolcommit status`: alive or not)
                f"UPDATE tc_writers SET host = ?, pid = ?, backend = {self.store.backend_sql} "
                "WHERE writer = ?",
                (socket.gethostname(), os.getpid(), self.writer),
            )
            self.store.on_reconnect = (
                f"UPDATE tc_writers SET backend = {self.store.backend_sql} WHERE writer = ? "
                "AND incarnation = ?",
                (self.writer, self.incarnation),
            )
            return done

        def opened(tx: Tx) -> tuple[None, list[L.Line], None]:
            row = tx.one(
                "SELECT incarnation, running, seq FROM tc_writers WHERE writer = ?", (self.writer,)
            )
            bodies: list[L.Line] = []
            if row is None:
                tx.run(
                    "INSERT INTO tc_writers (writer, incarnation, running, seq) "
                    "VALUES (?, 1, 1, 0)",
                    (self.writer,),
                )
                self.incarnation, self._seq = 1, 0
                return None, bodies, None
            self.incarnation, self._seq = int(row[0]) + 1, int(row[2])
            self.crashed = bool(row[1])
            if self.crashed:
                bodies += [L.lifecycle("crash"), L.lifecycle("restart")]
            tx.run(
                "UPDATE tc_writers SET incarnation = ?, running = 1 WHERE writer = ?",
                (self.incarnation, self.writer),
            )
            for r in [
                record_of(x)
                for x in tx.all(
                    f"SELECT {_COLS} FROM tc_records WHERE owner = ? AND owner_inc < ? "
                    f"AND state IN {_OPEN} ORDER BY key",
                    (self.writer, self.incarnation),
                )
            ]:
                body = self._take(tx, r, f"restart of {self.writer}")
                if body is not None:
                    bodies.append(body)
            return None, bodies, None

        self._decide(fn)

    def _take(self, tx: Tx, r: Record, why: str, expired: bool = False) -> Optional[L.Line]:
        """Compare-and-set the lease of `r` to this incarnation (DISPATCHED -> UNKNOWN),
        only while its lease is still expired if `expired`; the transition line, or None if
        there is nothing to write or the write lost."""
        to = "UNKNOWN" if r.state == "DISPATCHED" else r.state
        sent = (  # the last send is now only where the holder may have been sending
            ""
            if r.state == "RECORDED"
            else f", sent_at = CASE WHEN state = 'DISPATCHED' OR in_flight = 1 THEN "
            f"{self.store.now_sql} ELSE sent_at END, in_flight = 0"
        )
        n = tx.run(
            f"UPDATE tc_records SET owner = ?, owner_inc = ?, state = ?, "
            f"lease_until = {self._lease_sql()}{sent} WHERE key = ? AND state = ? "
            f"AND owner = ? AND owner_inc = ?"
            + (f" AND lease_until < {self.store.now_sql}" if expired else ""),
            (*self._mine(), to, r.key, r.state, r.owner, r.owner_inc),
        )
        if n != 1:
            return None
        self.taken_over.append(
            Record(
                **{**r.__dict__, "state": to, "owner": self.writer, "owner_inc": self.incarnation}
            )
        )
        if to == r.state:
            return None
        return L.transition(r.key, r.state, to, r.fence, L.REASON["takeover"] + why)

    # ----- propose --------------------------------------------------------------------------
    def propose(
        self,
        call_id: str,
        tool: str,
        args: dict[str, Any],
        scope: str,
        *,
        new_attempt: bool = False,
        exclusive: Optional[bool] = None,
        dispatch: bool = False,
        principal: Optional[str] = None,
        identity: Optional[Sequence[str]] = None,
    ) -> Decision:
        """Atomic insert under the uniqueness constraint: the log decides.

        The key is the canonical intent of (`tool`, the identity arguments, the scope with
        the principal: `toolcommit.model.canon.intent_scope`) at the intent's current
        epoch: two principals are never one intent. `identity` names the arguments that
        make two requests one intent (the tool's `toolcommit.runtime.identity.Identity`
        fields; `args` normalized by it); None: the log's ``same=`` rule for `tool`, else
        every argument. Under a design with ``reask=hold`` a call names its `principal`; with `new_attempt` (the user asks again) and the latest record given up
        (``DEAD_LETTER``, ``COMPENSATED``, cancelled), at the next epoch, where the design
        advances epochs (``epoch=per_intent``; under ``none``, as email's, the re-ask is a
        duplicate of the given-up record: at most once). An accepted
        proposal's record is ``RECORDED`` with this writer holding the lease.

        With `dispatch`, an accepted proposal is also dispatched in the same transaction
        (as `dispatch` would: ``DISPATCHED``, fence 1, its first send stamped) and
        `Decision.ticket` says what to send: the happy path is then two commits, this one
        before the effect and the outcome's (`ack` or `timeout`) after. The lines are the
        same three (the proposal, PROPOSED -> RECORDED, RECORDED -> DISPATCHED), written
        together; a crash after the commit leaves the record DISPATCHED, which a takeover
        makes UNKNOWN, as a crash after a separate `dispatch` does.

        Raises
        ------
        IntentLogError
            `args` is not a JSON object, the call has no canonical form, or it names no
            principal under ``reask=hold``.
        """
        if not isinstance(args, dict):
            raise IntentLogError(f"args must be a JSON object, got {type(args).__name__}")
        if not isinstance(call_id, str):
            raise IntentLogError("call_id must be a string")
        self.unwritten.flush()  # outcomes a store fault held: a retry is answered by them
        self.check_principal(principal, f"call {call_id} of {tool}")
        fields = self.fields(tool, identity)
        if identity is None and fields is not None:
            try:
                R.check_names(tool, fields, args)
            except ValueError as e:
                raise IntentLogError(f"call {call_id}: {e}") from None
        kept = args if fields is None else {k: args[k] for k in fields if k in args}
        where = intent_scope(principal, scope)
        try:
            ci = canonical_intent(tool, kept, where)
            args_text = L.dumps(args)
        except (CanonError, TypeError, ValueError) as e:
            raise IntentLogError(f"call {call_id}: no canonical form: {e}") from None
        excl = tool in self.exclusive_tools if exclusive is None else exclusive
        slot = f"{where}\x1f{tool}" if excl else None  # one live intent per principal's scope
        same = self._same_content(call_id, tool, kept, principal)
        who: dict[str, Any] = {"principal": principal, "identity": fields}
        # accepted and dispatched at once: the values `dispatch`'s compare-and-set writes
        state, fence = ("DISPATCHED", 1) if dispatch else ("RECORDED", 0)
        sent = self.store.now_sql if dispatch else "NULL"

        def values(key: str, epoch: int) -> tuple[Any, ...]:
            return (key, ci.digest, epoch, tool, scope, args_text, call_id, state, fence)

        def accepted(key: str, epoch: int) -> list[L.Line]:
            """The lines of the proposal accepted as `key` (and dispatched, with `dispatch`)."""
            lines = [
                L.proposal(call_id, tool, args, scope, key, "accepted", epoch, **who),
                L.transition(key, "PROPOSED", "RECORDED", call_id=call_id, epoch=epoch),
            ]
            if dispatch:
                lines.append(L.transition(key, "RECORDED", "DISPATCHED", fence))
            return lines

        def took(rec: Record) -> Decision:
            return Decision(
                "accepted", rec.key, rec, self._ticket(rec, "apply") if dispatch else None
            )

        if self.store.one_statement and ci.digest not in self._proposed:
            # the expected case in one statement: an intent never seen (no record, and
            # under reask=hold no call of the same content), accepted at epoch 0
            key0 = semantic_key(ci.digest, 0)
            fresh = "NOT EXISTS (SELECT 1 FROM tc_records WHERE intent = ?)" + (
                "" if same is None else " AND NOT EXISTS (SELECT 1 FROM tc_asks WHERE content = ?)"
            )
            got = self._once(
                (
                    self._insert_sql(sent, f"{fresh} AND {GATE}"),
                    (*values(key0, 0), *self._mine(), slot, ci.digest)
                    + (() if same is None else (same,)),
                ),
                [] if same is None else [R.remember_sql(same, key0, scope)],
                accepted(key0, 0),
            )
            if got is not None:
                self._note_proposed(ci.digest)
                return took(got)

        def fn(tx: Tx) -> tuple[Decision, list[L.Line], str]:
            rec: Optional[Record]
            met = (
                None
                if same is None
                else R.meet(tx, self._get, same, scope, self.design.settles_by_read, new_attempt)
            )
            if met is not None:  # reask=hold: an earlier call of another scope
                decision, rec = met
                lines = (
                    []
                    if decision == "held"
                    else [
                        L.proposal(
                            call_id, tool, args, scope, rec.key, "duplicate", rec.epoch, **who
                        )
                    ]
                )
                return Decision(decision, rec.key, rec), lines, ci.digest
            for _ in range(8):
                row = tx.one(
                    f"SELECT {_COLS} FROM tc_records WHERE intent = ? ORDER BY epoch DESC LIMIT 1",
                    (ci.digest,),
                )
                latest = None if row is None else record_of(row)
                epoch = 0 if latest is None else latest.epoch
                if (
                    new_attempt
                    and latest is not None
                    and latest.state in GAVE_UP
                    and self.design.new_epochs
                ):
                    epoch += 1
                key = semantic_key(ci.digest, epoch)
                rec = self._insert(tx, (*values(key, epoch), *self._mine(), slot), sent)
                if rec is not None:
                    if same is not None:
                        R.remember(tx, same, key, scope)
                    return took(rec), accepted(key, epoch), ci.digest
                rec = self._get(tx, key)
                decision = "duplicate"
                if rec is None and slot is not None:
                    row = tx.one(f"SELECT {_COLS} FROM tc_records WHERE slot = ?", (slot,))
                    rec, decision = (None if row is None else record_of(row)), "conflict"
                if rec is not None:
                    return (
                        Decision(decision, rec.key if decision == "duplicate" else key, rec),
                        [L.proposal(call_id, tool, args, scope, key, decision, epoch, **who)],
                        ci.digest,
                    )
            raise StoreError(f"call {call_id}: the insert neither won nor met a record")

        decided = self._decide(fn)
        self._note_proposed(ci.digest)
        return decided

    def _note_proposed(self, digest: str, keep: int = 4096) -> None:
        """Note that this process proposed the intent `digest` (the latest `keep`)."""
        with self._lock:
            self._proposed.pop(digest, None)
            if len(self._proposed) >= keep:
                del self._proposed[next(iter(self._proposed))]
            self._proposed[digest] = None

    def _insert_sql(self, sent: str, where: str = "1 = 1") -> str:
        """Insert a record (12 parameters: key to slot) where `where` holds, unless its key
        (or slot) has one; ``RETURNING`` it where the store can."""
        return (
            f"INSERT INTO tc_records (key, intent, epoch, tool, scope, args, call_id, state, "
            f"fence, owner, owner_inc, lease_until, slot, first_sent, sent_at) SELECT "
            f"?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {self._lease_sql()}, ?, {sent}, {sent} "
            f"WHERE {where} ON CONFLICT DO NOTHING"
            + (f" RETURNING {_COLS}" if self.store.returning else "")
        )

    def _insert(self, tx: Tx, values: tuple[Any, ...], sent: str) -> Optional[Record]:
        """Insert a record unless its key (or slot) has one: the record inserted, or None."""
        if self.store.returning:  # the row back in the same round trip
            rows = tx.all(self._insert_sql(sent), values)
            return record_of(rows[0]) if rows else None
        return self._get(tx, values[0]) if tx.run(self._insert_sql(sent), values) == 1 else None

    def _same_content(
        self, call_id: str, tool: str, kept: dict[str, Any], principal: Optional[str]
    ) -> Optional[str]:
        """The content digest a ``reask=hold`` design compares across scopes (the identity
        arguments `kept`, the principal's), else None."""
        if not self.holds:
            return None
        try:
            return R.content(tool, kept, principal)
        except ValueError as e:
            raise IntentLogError(f"call {call_id}: {e}") from None

    @property
    def holds(self) -> bool:
        """Whether the design holds a re-ask while in doubt (``reask=hold``): then every
        call names its principal."""
        return self.design.knobs.get("reask") == "hold"

    def check_principal(self, principal: Any, what: str) -> None:
        """Refuse a `principal` that is not a non-empty string, or none where the design
        holds a re-ask (`holds`): a hold shared by two principals answers one with the
        other's outcome."""
        if principal is None and not self.holds:
            return
        if principal is None:
            raise IntentLogError(
                f"{what}: design {self.design.name} holds a re-ask while in doubt "
                "(reask=hold), so every call names who asked: pass principal= (the user, "
                "tenant or authenticated client; a function of the arguments on a wrapper)"
            )
        if not isinstance(principal, str) or not principal:
            raise IntentLogError(
                f"{what}: principal= must be a non-empty string naming who asked, got {principal!r}"
            )

    def fields(self, tool: str, identity: Optional[Sequence[str]] = None) -> Optional[list[str]]:
        """The identity fields of a call of `tool`: `identity`, else the log's ``same=``
        rule for `tool`, else None (every argument)."""
        got = R.rule_for(self.same, tool) if identity is None else identity
        if got is None:
            return None
        if isinstance(got, str) or not all(isinstance(n, str) for n in got):
            raise IntentLogError(f"{tool}: identity fields must be argument names, got {got!r}")
        return list(got)

    def declare(self, tool: str, rule: dict[str, Any]) -> None:
        """Store `tool`'s identity rule (`toolcommit.runtime.identity.Identity.rule`), or
        check it against the stored one. A changed rule would merge or split intents: it is
        refused while a record of the tool is open or settled untold (a re-ask would meet
        it), else stored in place of the old one, with a warning. So is a first rule while
        the tool has such records written without one (by an earlier release, whose keys
        and hold named no principal)."""
        text = L.dumps(rule)
        if self._rules.get(tool) == text:
            return

        def fn(tx: Tx) -> tuple[None, list[L.Line], None]:
            row = tx.one("SELECT rule FROM tc_tools WHERE tool = ?", (tool,))
            if row is None:
                self._refuse_live(tx, tool, "was written before the log stored its rule")
                tx.run(
                    "INSERT INTO tc_tools (tool, rule) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    (tool, text),
                )
            elif row[0] != text:
                self._retool(tx, tool, row[0], text)
            return None, [], None

        self._decide(fn)
        with self._lock:
            self._rules[tool] = text

    def _refuse_live(self, tx: Tx, tool: str, what: str) -> None:
        """`IntentLogError` if a record of `tool` may still be met by a re-ask (open, or
        settled without its caller hearing it): a new rule would merge or split it."""
        live = tx.first(
            f"SELECT count(*) FROM tc_records r WHERE r.tool = ? AND (r.state IN {_OPEN} OR "
            "EXISTS (SELECT 1 FROM tc_asks a WHERE a.key = r.key AND a.scope = r.scope "
            "AND a.told = 0))",
            (tool,),
        )[0]
        if live:
            raise IntentLogError(
                f"{tool}: {live} of its records may still be met by a re-ask (in doubt, or "
                f"settled without its caller hearing it), and its identity {what}: the "
                "rule would merge or split those intents. Let them settle under the rule "
                "they were written with (toolcommit status; recover), or use a new log"
            )

    def _retool(self, tx: Tx, tool: str, old: str, new: str) -> None:
        self._refuse_live(tx, tool, f"rule changed ({old} -> {new})")
        tx.run("UPDATE tc_tools SET rule = ? WHERE tool = ?", (new, tool))
        _LOGGER.warning("%s: identity rule changed from %s to %s", tool, old, new)

    # ----- dispatch and its outcomes ---------------------------------------------------------
    def _cas(
        self,
        key: str,
        frm: Sequence[str],
        to: str,
        *,
        fence: Optional[int] = None,
        bump: bool = False,
        release: bool = False,
        result: Any = None,
        reason: Optional[str] = None,
        mine: bool = True,
        sent: bool = False,
        first: bool = False,
        flight: Optional[bool] = None,
        when: Optional[Callable[[Record, float], bool]] = None,
        then: Sequence[Write] = (),
    ) -> Optional[Record]:
        """One compare-and-set from a state in `frm` to `to` (see the module contracts);
        returns the record after it, or None if the log refused (state, lease or fence).
        `sent` stamps ``sent_at`` (and `first` ``first_sent``) with the store's clock,
        `flight` sets ``in_flight`` (a send starts: True; its end is written: False);
        `when(record, now)`, if given, must hold of the locked record for the write;
        `then` (statements, their `GATE` left open) run after a write that won, in the
        same transaction."""
        sets = ["state = ?"]
        params: list[Any] = [to]
        if bump:
            sets.append("fence = fence + 1")
        if result is not None:
            sets.append("result = ?")
            params.append(L.dumps(result))
        if to in GAVE_UP:
            sets.append("slot = NULL")
        if release:
            sets.append("lease_until = 0")
        elif mine:
            sets.append(f"lease_until = {self._lease_sql()}")
        if sent:
            sets.append(f"sent_at = {self.store.now_sql}")
        if first:
            sets.append(f"first_sent = {self.store.now_sql}")
        if flight is not None:
            sets.append(f"in_flight = {int(flight)}")
        where = ["key = ?", f"state IN ({', '.join('?' * len(frm))})"]
        params += [key, *frm]
        if mine:
            where.append("owner = ? AND owner_inc = ?")
            params += list(self._mine())
        if fence is not None:
            where.append("fence = ?")
            params.append(fence)
        update = f"UPDATE tc_records SET {', '.join(sets)} WHERE {' AND '.join(where)}"

        def line(left: str, fence_after: int) -> list[L.Line]:
            """The transition line (none for no move: a replay's missed answer)."""
            return [] if left == to else [L.transition(key, left, to, fence_after, reason)]

        if (
            self.store.one_statement
            and when is None
            and len(frm) == 1
            and fence is not None
            and not bump
        ):
            # the expected case in one statement: the write wins, leaving frm[0] with the
            # fence it was given (so its line is known before it runs)
            got = self._once(
                (f"{update} AND {GATE} RETURNING {_COLS}", tuple(params)),
                then,
                line(frm[0], fence),
            )
            if got is not None:
                return got

        def fn(tx: Tx) -> tuple[Optional[Record], list[L.Line], Optional[str]]:
            if when is None and len(frm) == 1 and self.store.returning:
                # one statement: the update's own row lock and re-check name the state it
                # left (frm[0]), and RETURNING gives the record after it
                rows = tx.all(f"{update} RETURNING {_COLS}", params)
                if not rows:
                    return None, [], None
                before, after = None, record_of(rows[0])
            else:
                before = self._get(tx, key, lock=True)
                if before is None or (when is not None and not when(before, self._now(tx))):
                    return None, [], None
                if tx.run(update, params) != 1:
                    return None, [], None
                got = self._get(tx, key)
                assert got is not None  # updated in this transaction
                after = got
            for sql, more in then:
                tx.run(gated(sql), more)
            left = frm[0] if before is None else before.state
            return after, line(left, after.fence), after.intent

        return self._decide(fn)

    def _now(self, tx: Tx) -> float:
        return float(tx.first(f"SELECT {self.store.now_sql}")[0])

    def dispatch(self, key: str) -> Optional[Ticket]:
        """Compare-and-set RECORDED -> DISPATCHED with a new fence, if this writer holds the
        lease; the `Ticket` says what to send. None: not ours, or not RECORDED."""
        r = self._cas(
            key, ("RECORDED",), "DISPATCHED", bump=True, sent=True, first=True, flight=True
        )
        return None if r is None else self._ticket(r, "apply")

    def ack(self, ticket: Ticket, result: Any = None, heard: bool = True) -> bool:
        """The provider answered `ticket`'s request: DISPATCHED (an ``apply``) or
        RECONCILING (a ``replay``) at the ticket's generation -> ACKED, saving `result`.
        `heard`: the caller that asked gets `result` now (noted in the same commit, for
        ``reask=hold``); False where it may not (recovery; a caller that may have given
        up: then `IntentLog.heard` once it got it)."""
        frm = "RECONCILING" if ticket.purpose == "replay" else "DISPATCHED"

        def write(told: bool) -> bool:
            return (
                self._cas(
                    ticket.key,
                    (frm,),
                    "ACKED",
                    fence=ticket.generation,
                    result=result,
                    release=True,
                    flight=False,
                    reason=L.REASON["replay_answered"] if frm == "RECONCILING" else None,
                    then=[R.told_sql(ticket.key)] if told else [],
                )
                is not None
            )

        return self._outcome(ticket, "ack", write, heard and self.holds)

    def timeout(self, ticket: Ticket, reason: str = "timeout") -> bool:
        """No answer to `ticket`'s request (a timeout, an error, a cancelled task): an
        ``apply``'s DISPATCHED -> UNKNOWN (the outcome is in doubt; never re-sent blindly);
        a ``replay``'s record stays RECONCILING. Either way the send is stamped as the last
        one, from which the delay bound runs."""
        frm = "RECONCILING" if ticket.purpose == "replay" else "DISPATCHED"
        to = "RECONCILING" if frm == "RECONCILING" else "UNKNOWN"

        def write(_told: bool) -> bool:
            return (
                self._cas(
                    ticket.key,
                    (frm,),
                    to,
                    fence=ticket.generation,
                    reason=reason,
                    sent=True,
                    flight=False,
                )
                is not None
            )

        return self._outcome(ticket, "timeout", write, False)

    def _outcome(
        self, ticket: Ticket, what: str, write: Callable[[bool], bool], told: bool
    ) -> bool:
        """``write(told)`` the outcome (`what`) of `ticket`'s request, which was sent. A
        store fault is tried once more at once (a PostgreSQL store opens its connection
        again); failing that, the write is held (`unwritten`, untold: the caller hears
        the fault) for the log's next use, the record's lease released, and `Unwritten`
        raised: the effect may have happened (`toolcommit.runtime.unwritten`)."""
        try:
            return write(told)
        except StoreError:
            pass
        try:
            return write(told)
        except StoreError as e:
            self.unwritten.keep(ticket.key, lambda: write(False))
            _LOGGER.warning("the %s of %s is held, not written: %s", what, ticket.key, e)
            self._release_lease(ticket.key)
            raise Unwritten(str(e), ticket.key, what) from None

    def _release_lease(self, key: str) -> None:
        """Release this incarnation's lease on `key` if the store lets it (no line is
        written: a write in place, which a full disk often still takes), so the record
        counts in doubt and the design may settle it elsewhere."""
        try:
            with self._lock, self.store.tx() as tx:
                tx.run(
                    f"UPDATE tc_records SET lease_until = 0 WHERE key = ? AND owner = ? "
                    f"AND owner_inc = ? AND state IN {_OPEN}",
                    (key, *self._mine()),
                )
        except StoreError as e:
            _LOGGER.warning("the lease of %s could not be released: %s", key, e)

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

    def reconcile(self, key: str) -> Optional[Ticket]:
        """UNKNOWN -> RECONCILING with the generation bumped, as the design resolves it
        (`design.unknown_action`): a ``replay`` ticket (send the record's request again under
        the same key; `ack` its answer, `timeout` its silence) while the replay window is
        open, else a ``status`` ticket: send its fence, where the design has one, with the
        status read *before* reading, so a fencing provider rejects every older request from
        then on (the seal). A record already RECONCILING under this writer gives its status
        ticket again (a status read may be repeated). None: not ours, or the design parks
        unknown outcomes (`dead_letter`)."""
        if D.unknown_action(self.design, True) == "park":
            return None
        r = self._cas(
            key,
            ("UNKNOWN",),
            "RECONCILING",
            bump=True,
            sent=True,
            flight=True,
            when=lambda r, now: self._replays(r, now),
            reason=L.REASON["replay"],
        )
        if r is not None:
            return self._ticket(r, "replay")
        r = self._cas(key, ("UNKNOWN",), "RECONCILING", bump=True, reason=L.REASON["seal"])
        if r is None:
            with self._lock, self.store.read() as tx:
                r = self._get(tx, key)
            if r is None or r.state != "RECONCILING" or (r.owner, r.owner_inc) != self._mine():
                return None
        return self._ticket(r, "status")

    def _replays(self, r: Record, now: float) -> bool:
        return D.unknown_action(self.design, self.window_open(r, now)) == "replay"

    def settle(self, ticket: Ticket, present: bool, result: Any = None) -> bool:
        """RECONCILING at the ticket's generation -> ACKED (the status read shows the effect)
        or DEAD_LETTER (it shows none: final for this key; a new attempt is a new epoch).
        An "absent" the design does not trust yet (`read_wait` > 0: a request may still
        land) is refused: False, and the record stays RECONCILING."""
        to = D.after_read(self.design, present)
        if to == "ACKED":
            return (
                self._cas(
                    ticket.key,
                    ("RECONCILING",),
                    "ACKED",
                    fence=ticket.generation,
                    result=result,
                    release=True,
                    reason=L.REASON["present"],
                )
                is not None
            )
        if to != "DEAD_LETTER":
            raise IntentLogError(
                f"design {self.design.source}: a status read leads to {to}, "
                "which the log contract has no edge to"
            )
        return (
            self._cas(
                ticket.key,
                ("RECONCILING",),
                "DEAD_LETTER",
                fence=ticket.generation,
                release=True,
                reason=L.REASON["absent"] if self.design.status_read else L.REASON["no_read"],
                when=lambda r, now: self._read_wait(r, now) <= 0,
            )
            is not None
        )

    def dead_letter(self, key: str, reason: str = "parked for a human") -> bool:
        """UNKNOWN or RECONCILING -> DEAD_LETTER (no safe status read exists)."""
        return (
            self._cas(key, ("UNKNOWN", "RECONCILING"), "DEAD_LETTER", release=True, reason=reason)
            is not None
        )

    def compensated(self, key: str, reason: str = "reversal issued") -> bool:
        """UNKNOWN or RECONCILING -> COMPENSATED. Issue the reversal first (idempotently,
        under a key of its own), then record it: a crash in between re-issues, never loses."""
        return (
            self._cas(key, ("UNKNOWN", "RECONCILING"), "COMPENSATED", release=True, reason=reason)
            is not None
        )

    def cancel(self, key: str, reason: str = "cancelled") -> bool:
        """The user cancels before dispatch: RECORDED -> REJECTED_CONFLICT, whoever holds the
        lease. False if the record was already dispatched (then it is a compensation)."""
        return (
            self._cas(
                key, ("RECORDED",), "REJECTED_CONFLICT", release=True, reason=reason, mine=False
            )
            is not None
        )

    def renew(self, key: str) -> bool:
        """Extend this writer's lease on `key` (the heartbeat does it for a call `driving`
        it)."""
        return self._renew("key = ?", [key]) == 1

    def _ticket(self, r: Record, purpose: str) -> Ticket:
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

    def ticket(self, key: str, purpose: str = "status") -> Optional[Ticket]:
        """The current ticket of `key` for `purpose` (None: no such record)."""
        r = self.record(key)
        return None if r is None else self._ticket(r, purpose)

    # ----- recovery ----------------------------------------------------------------------------
    _DEAD = "owner_inc < (SELECT w.incarnation FROM tc_writers w WHERE w.writer = tc_records.owner)"

    def _takeable_sql(self) -> str:
        """Open records whose holder is gone: its lease expired, or its writer name was
        opened again since (a dead incarnation, this writer's own earlier ones included);
        never this incarnation's."""
        return (
            f"state IN {_OPEN} AND (lease_until < {self.store.now_sql} OR {self._DEAD}) "
            "AND NOT (owner = ? AND owner_inc = ?)"
        )

    def recover(self, limit: int = 100, tools: Optional[Iterable[str]] = None) -> list[Record]:
        """Take over up to `limit` open records whose holder is gone (an expired lease, a
        dead incarnation of any writer name, this one's included); a DISPATCHED one becomes
        UNKNOWN. Returns every open record this incarnation took over (now or when it
        opened) and holds, and no call of this process is driving: the records it must
        settle (`dispatch` a RECORDED one, `reconcile` the others; or let `recover_settle`
        in `toolcommit.runtime.shims` do it through the registered tools). With `tools`,
        only records of those tools are taken."""
        only = None if tools is None else sorted(tools)
        with otel.recover_span(self, "recover") as counts:
            with self._lock, self.store.read() as tx:
                keys = [
                    x[0]
                    for x in tx.all(
                        f"SELECT key FROM tc_records WHERE {self._takeable_sql()}"
                        + (
                            ""
                            if only is None
                            else f" AND tool IN ({', '.join('?' * len(only))})"
                            if only
                            else " AND 1 = 0"
                        )
                        + " ORDER BY key LIMIT ?",
                        (*self._mine(), *(only or ()), int(limit)),
                    )
                ]
            counts["taken"] = sum(self.take(key) is not None for key in keys)
            taken = {r.key for r in self.taken_over}
            return [r for r in self._idle() if r.key in taken]

    def in_doubt(self) -> list[Record]:
        """The open records this incarnation must settle and no call of this process is
        driving: those it took over, and its UNKNOWN and RECONCILING ones (a call that gave
        up waiting, `InDoubt`). What the settler settles."""
        taken = {r.key for r in self.taken_over}
        return [r for r in self._idle() if r.key in taken or r.state in ("UNKNOWN", "RECONCILING")]

    def _idle(self) -> list[Record]:
        with self._lock, self.store.read() as tx:
            rows = [
                record_of(x)
                for x in tx.all(
                    f"SELECT {_COLS} FROM tc_records WHERE owner = ? AND owner_inc = ? "
                    f"AND state IN {_OPEN} ORDER BY key",
                    self._mine(),
                )
            ]
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
            if (
                cur is None
                or tx.one(
                    f"SELECT key FROM tc_records WHERE key = ? AND {self._takeable_sql()}",
                    (key, *self._mine()),
                )
                is None
            ):
                return None, [], None
            dead = (
                tx.one(f"SELECT key FROM tc_records WHERE key = ? AND {self._DEAD}", (key,))
                is not None
            )
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
            rows = [
                (record_of(x[:-1]), bool(x[-1]))
                for x in tx.all(
                    f"SELECT {_COLS}, CASE WHEN {self._DEAD} THEN 1 ELSE 0 END FROM tc_records "
                    f"WHERE state IN {_OPEN}"
                )
            ]
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
            row = tx.one(
                f"SELECT lease_until - {self.store.now_sql} FROM tc_records WHERE key = ?", (key,)
            )
        return 0.0 if row is None else max(0.0, float(row[0]))

    def expire_leases(self, writer: Optional[str] = None) -> int:
        """See `expire_leases` (the module function)."""
        with self._lock:
            return expire_leases(self.store, writer)

    # ----- background: the heartbeat and the settler ---------------------------------------
    @contextmanager
    def driving(self, key: str) -> Iterator[None]:
        """While a call of this process drives `key`: the heartbeat renews its lease (see
        the class docstring) and the settler leaves it alone. Bounded by the call."""
        with self._bg_lock:
            self._busy[key] = self._busy.get(key, 0) + 1
            # its first beat a third of the lease on: the call's own write just renewed it
            self._start("heartbeat", IntentLog._beat, self._stop, first=self.lease / 3)
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
        skip = f" AND key NOT IN ({', '.join('?' * len(held))})" if held else ""
        with self._lock, self.store.tx() as tx:
            return tx.run(
                f"UPDATE tc_records SET lease_until = {self._lease_sql()} WHERE "
                f"owner = ? AND owner_inc = ? AND state IN {_OPEN} AND ({which}){skip}",
                (*self._mine(), *params, *held),
            )

    def settle_with(self, step: Callable[["IntentLog"], float]) -> bool:
        """Run ``step(log)`` (one settle pass; returns the seconds until the next is due) in
        the settler thread until `close`, if this log runs one (``settler=True``); whether
        it runs. `toolcommit.runtime.shims.effectful` gives it `settle_pass`."""
        if self.settler:
            with self._bg_lock:
                self._start("settler", step, self._wake)
                self._start("heartbeat", IntentLog._beat, self._stop)
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
            args=(weakref.ref(self), name, step, event, first),
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

    # ----- reading --------------------------------------------------------------------------
    def heard(self, key: str) -> None:
        """Note that `key`'s outcome reached a caller that asked (the guard returned it, the
        framework gave it to the model), so a later request of the same content is a new
        intent of the user's. A no-op unless the design holds re-asks (``reask=hold``).
        Never called for a caller that gave up or was cancelled (`toolcommit.runtime.caller`)."""
        if not self.holds:
            return
        sql, params = R.told_sql(key)
        self._decide(lambda tx: (tx.run(gated(sql), params), [], None))

    def record(self, key: str) -> Optional[Record]:
        with self._lock, self.store.read() as tx:
            return self._get(tx, key)

    def records(self, states: Optional[Iterable[str]] = None) -> list[Record]:
        """All records (in `states` if given), by key."""
        with self._lock, self.store.read() as tx:
            rows = [record_of(x) for x in tx.all(f"SELECT {_COLS} FROM tc_records ORDER BY key")]
        return rows if states is None else [r for r in rows if r.state in set(states)]

    def doubt_counts(self) -> dict[str, int]:
        """{tool: records UNKNOWN or RECONCILING} in this log's store (every writer's); 0
        for a tool registered with this log (`tools`) that has none."""
        if self._stop.is_set():
            return {}
        with self._lock, self.store.read() as tx:
            got = {
                t: int(n)
                for t, n in tx.all(
                    "SELECT tool, count(*) FROM tc_records WHERE state IN ('UNKNOWN', "
                    "'RECONCILING') GROUP BY tool ORDER BY tool"
                )
            }
        return {**dict.fromkeys(sorted(self.tools or ()), 0), **got}

    def unsettled(self) -> int:
        """How many records are not in a terminal state."""
        with self._lock, self.store.read() as tx:
            return int(tx.first(f"SELECT count(*) FROM tc_records WHERE state IN {_OPEN}")[0])

    def lines(self, batch: int = 5000) -> Iterator[str]:
        """Every stored line (JSON text), in the order they were written, as of one moment
        (`Store.snapshot`: this process's calls and lease renewals go on meanwhile)."""
        yield from read_lines(self.store, batch)

    def events(self) -> list[L.Line]:
        """Every stored line, decoded."""
        return [json.loads(t) for t in self.lines()]

    def export(self, out: IO[str]) -> int:
        """Write the whole log as JSON Lines to `out` (for ``toolcommit validate``)."""
        return L.write_jsonl(self.lines(), out)

    def close(self) -> None:
        """A clean shutdown: release this writer's leases and mark it stopped (its next
        opening is then a restart, not a crash recovery). Where the store cannot be written
        any more (the server gone) the shutdown is a crash's: its leases run out and the
        next opening recovers. The heartbeat and the settler stop first (waiting at most
        5 s, or `settle_every`, for a settle pass under way); a record a call or the settler
        still drives then (a replay under way) is handed back with its lease, never released
        under it: another process takes it over once the lease runs out."""
        self._stop_threads()
        self.unwritten.flush()
        with self._bg_lock:
            busy = sorted(self._busy)
        with self._lock:
            try:
                with self.store.tx() as tx:
                    tx.run(
                        f"UPDATE tc_records SET lease_until = 0 WHERE owner = ? "
                        f"AND owner_inc = ? AND state IN {_OPEN}"
                        + (f" AND key NOT IN ({', '.join('?' * len(busy))})" if busy else ""),
                        (*self._mine(), *busy),
                    )
                    tx.run(
                        "UPDATE tc_writers SET running = 0 WHERE writer = ? AND incarnation = ?",
                        self._mine(),
                    )
            except StoreError:
                pass
            finally:
                self.store.close()
                self._release_claim()

    def _release_claim(self) -> None:
        """Drop this process's claim of its writer name (`toolcommit.runtime.claim`); in a
        forked child, nothing (the claim is the parent's)."""
        if self._claim is not None and os.getpid() == self._opened_in:
            claim.release(self._claim, self.writer)
        self._claim = None  # once: a second close releases nothing

    def __enter__(self) -> "IntentLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
