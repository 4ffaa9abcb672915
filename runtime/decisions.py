"""An `IntentLog`'s decisions after a proposal: dispatch, and the outcome of each request
(`ack`, `timeout`), the resolution of an unknown one (`reconcile`, `settle`, `dead_letter`,
`compensated`), `cancel`, `heard`. Each is one compare-and-set on the record
(`Decisions._cas`; its SQL in `toolcommit.runtime.store.records`), written with its lines in
one transaction (see `toolcommit.runtime.log` for the contracts)."""

from __future__ import annotations

import logging
from typing import Any, Callable, Optional, Sequence

from toolcommit.runtime import design as D
from toolcommit.runtime import lines as L
from toolcommit.runtime import reask as R
from toolcommit.runtime.exceptions import IntentLogError
from toolcommit.runtime.logcore import LogCore
from toolcommit.runtime.records import Record, Ticket
from toolcommit.runtime.store import records as SR
from toolcommit.runtime.store.base import StoreError, Tx, Write, gated
from toolcommit.runtime.unwritten import Unwritten

_LOGGER = logging.getLogger("toolcommit.runtime")


class Decisions(LogCore):
    """Dispatch and the outcomes of a record's requests (a base of `IntentLog`)."""

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
        update, params = SR.cas_sql(
            self.store,
            self.lease,
            key,
            frm,
            to,
            self._mine() if mine else None,
            fence=fence,
            bump=bump,
            result=None if result is None else L.dumps(result),
            release=release,
            sent=sent,
            first=first,
            flight=flight,
        )

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
                (SR.returning(update), tuple(params)),
                then,
                line(frm[0], fence),
            )
            if got is not None:
                return got

        def fn(tx: Tx) -> tuple[Optional[Record], list[L.Line], Optional[str]]:
            if when is None and len(frm) == 1 and self.store.returning:
                # one statement: the update's own row lock and re-check name the state it
                # left (frm[0]), and RETURNING gives the record after it
                won = SR.cas_returning(tx, update, params)
                if won is None:
                    return None, [], None
                before, after = None, won
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
                SR.release(tx, self._mine(), key)
        except StoreError as e:
            _LOGGER.warning("the lease of %s could not be released: %s", key, e)

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

    def heard(self, key: str) -> None:
        """Note that `key`'s outcome reached a caller that asked (the guard returned it, the
        framework gave it to the model), so a later request of the same content is a new
        intent of the user's. A no-op unless the design holds re-asks (``reask=hold``).
        Never called for a caller that gave up or was cancelled (`toolcommit.runtime.caller`)."""
        if not self.holds:
            return
        sql, params = R.told_sql(key)
        self._decide(lambda tx: (tx.run(gated(sql), params), [], None))
