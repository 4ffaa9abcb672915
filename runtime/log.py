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
toolcommit.runtime.exceptions.IntentLogError: call t4 of refund: design stripe holds a re-ask while in doubt (reask=hold), so every call names who asked: pass principal= (the user, tenant or authenticated client; a function of the arguments on a wrapper)
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
from typing import Any, Callable, Iterable, Optional, Sequence, Union

from toolcommit.model.canon import CanonError, canonical_intent, intent_scope
from toolcommit.runtime import claim, forked, otel
from toolcommit.runtime import design as D
from toolcommit.runtime import guest as G
from toolcommit.runtime import lines as L
from toolcommit.runtime import reask as R
from toolcommit.runtime import refuse as F
from toolcommit.runtime.decisions import Decisions
from toolcommit.runtime.exceptions import Forked, IntentLogError, Superseded
from toolcommit.runtime.export import Export
from toolcommit.runtime.leases import Leases
from toolcommit.runtime.records import Decision, DecisionKind, Record, Ticket, semantic_key
from toolcommit.runtime.rules import Rules
from toolcommit.runtime.store import (
    GAVE_UP,
    PostgresStore,
    SqliteStore,
    Store,
    StoreError,
    expire_leases,
    read_lines,
)
from toolcommit.runtime.store import design as SD
from toolcommit.runtime.store import records as SR
from toolcommit.runtime.store import writers as SW
from toolcommit.runtime.store.base import Tx
from toolcommit.runtime.unwritten import Held

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

_LOGGER = logging.getLogger("toolcommit.runtime")


class IntentLog(Decisions, Leases, Export, Rules):
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

    # ----- opening: crash detection and takeover of a dead incarnation's records ----------
    def _check_design(self, tx: Tx) -> None:
        """Store this log's design if the log has none yet; `DesignError` if it was created
        under another (a log replayed under another design's decisions can send twice), or
        if it stores none and holds an open record the caller did not say was written under
        this design (``adopt_design=True``). Reads the provider account the log acts on."""
        d = self.design
        self.account = SD.account(tx)
        stored = SD.keep_design(tx, d.name, d.digest, json.dumps(d.doc, sort_keys=True))
        if stored is None:
            if SW.any_writer(tx):
                self._adopt(tx)
            return
        name, digest = stored
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
        n = SR.count_open(tx)
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

    def _open_writer(self) -> None:
        def fn(tx: Tx) -> tuple[None, list[L.Line], None]:
            self._check_design(tx)
            done = opened(tx)
            # where this incarnation runs (`toolcommit status`: alive or not)
            SW.runs_at(tx, self.store, self.writer, socket.gethostname(), os.getpid())
            self.store.on_reconnect = SW.on_reconnect(self.store, self._mine())
            return done

        def opened(tx: Tx) -> tuple[None, list[L.Line], None]:
            row = SW.current(tx, self.writer)
            bodies: list[L.Line] = []
            if row is None:
                SW.first(tx, self.writer)
                self.incarnation, self._seq = 1, 0
                return None, bodies, None
            self.incarnation, self.crashed, self._seq = row[0] + 1, row[1], row[2]
            if self.crashed:
                bodies += [L.lifecycle("crash"), L.lifecycle("restart")]
            SW.reopen(tx, self.writer, self.incarnation)
            for r in SR.held(tx, self._mine(), older=True):
                body = self._take(tx, r, f"restart of {self.writer}")
                if body is not None:
                    bodies.append(body)
            return None, bodies, None

        self._decide(fn)

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
            got = self._once(
                SR.fresh_insert(
                    self.store, self.lease, sent, (*values(key0, 0), *self._mine(), slot), same
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
                how, rec = met
                lines = (
                    []
                    if how == "held"
                    else [
                        L.proposal(
                            call_id, tool, args, scope, rec.key, "duplicate", rec.epoch, **who
                        )
                    ]
                )
                return Decision(how, rec.key, rec), lines, ci.digest
            for _ in range(8):
                latest = SR.latest(tx, ci.digest)
                epoch = 0 if latest is None else latest.epoch
                if (
                    new_attempt
                    and latest is not None
                    and latest.state in GAVE_UP
                    and self.design.new_epochs
                ):
                    epoch += 1
                key = semantic_key(ci.digest, epoch)
                rec = SR.insert(
                    tx, self.store, self.lease, (*values(key, epoch), *self._mine(), slot), sent
                )
                if rec is not None:
                    if same is not None:
                        R.remember(tx, same, key, scope)
                    return took(rec), accepted(key, epoch), ci.digest
                rec = self._get(tx, key)
                decision: DecisionKind = "duplicate"
                if rec is None and slot is not None:
                    rec, decision = SR.in_slot(tx, slot), "conflict"
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
                    SR.release(tx, self._mine(), keep=busy)
                    SW.stopped(tx, self._mine())
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
