"""The core of one guarded call, written once for sync and async: `_steps`, a generator
that makes the log's decisions and yields the I/O it needs (send the request, read the
status, sleep) to a driver (`_drive_sync`, `_drive_async`); `current_ticket` while an effect
runs; `tell`, what the model is told. `toolcommit.runtime.shims` wraps it as `guard`,
`aguard` and `effectful`; `toolcommit.runtime.settle` drives it for records in doubt."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
from typing import Any, Callable, Generator, Optional, TypeVar, Union

from toolcommit.runtime import design as D
from toolcommit.runtime import lines as L
from toolcommit.runtime import otel
from toolcommit.runtime import refuse as F
from toolcommit.runtime.acting import act, done
from toolcommit.runtime.caller import WRITES, Asked, NoAnswer, Write, unanswered
from toolcommit.runtime.exceptions import Answered, Conflict, EffectError, GaveUp, Held, InDoubt
from toolcommit.runtime.identity import Fields, Identity
from toolcommit.runtime.log import Decision, IntentLog, IntentLogError, Record, Ticket
from toolcommit.runtime.store import GAVE_UP, StoreError
from toolcommit.runtime.unwritten import Unwritten

_TICKET: contextvars.ContextVar[Optional[Ticket]] = contextvars.ContextVar(
    "toolcommit_ticket", default=None
)
_R = TypeVar("_R")
_RESERVED = ("call_id", "new_request")
_POLL = 0.05  # seconds between looks at a record another writer holds
#: the core's steps: yields ("send" | "read", ticket) or ("sleep", seconds), is sent
#: (ok, value) after a send or read, returns R
_Steps = Generator[tuple[str, Any], Any, _R]
Status = Optional[Callable[[Ticket], Any]]
#: what makes two calls one intent: a tool's `Identity`, or argument names (None: all)
IdentityRule = Union[Identity, Fields]
#: who asked: a string, or (on a wrapper) a function of the call's arguments returning one
Principal = Union[str, Callable[..., str], None]


def current_ticket() -> Optional[Ticket]:
    """The ticket of the effect (or status read) running now, inside a guard; else None."""
    return _TICKET.get()


def tell(e: EffectError) -> dict[str, Any]:
    """What a framework wrapper returns to the model for `e`: plain words first."""
    rec = e.record
    out = {
        "toolcommit": type(e).__name__,
        "happened": e.happened,
        "message": str(e),
        "intent": rec.key if rec else None,
        "state": rec.state if rec else None,
    }
    if isinstance(e, Answered) and e.result is not None:
        out["result"] = e.result  # the earlier request's answer
    return out


def _json_result(value: Any) -> Any:
    try:
        from toolcommit.runtime.lines import dumps

        dumps(value)
        return value
    except (TypeError, ValueError):
        return {"repr": repr(value)}


# ----- what the model is told ------------------------------------------------------------------
def _gave_up(log: IntentLog, rec: Record) -> GaveUp:
    if rec.state == "REJECTED_CONFLICT":
        return GaveUp(
            f"The {rec.tool} was not done: it was cancelled before it was sent (intent {rec.key}).",
            rec,
            "no",
        )
    if rec.state == "COMPENSATED":
        return GaveUp(
            f"The {rec.tool} was reversed or never took effect (intent {rec.key}): "
            "do not tell the user it was done.",
            rec,
            "no",
        )
    if log.design.settles_by_read:
        return GaveUp(
            f"The {rec.tool} did not happen: the provider shows no effect, and no "
            f"request of it can still arrive (intent {rec.key}). Tell the user it "
            "was not done; they may ask again.",
            rec,
            "no",
        )
    return GaveUp(
        f"The {rec.tool} may or may not have happened: its answer was lost and the "
        f"provider cannot be asked (intent {rec.key}). Do not tell the user it was "
        "done; tell them it may have happened, and that asking again may do it twice.",
        rec,
        "unknown",
    )


def _met(d: Decision, tool: str) -> EffectError:
    """What the model is told when a hold met an earlier request (`reask=hold`)."""
    rec = d.record
    if d.decision == "held":
        return Held(
            f"The {tool} was not sent: an earlier request for the same {tool} "
            f"(intent {rec.key}) may or may not have happened and is still being "
            "settled. Do not tell the user it was done, and do not send it again: "
            "asking again later gets that request's outcome.",
            rec,
            "unknown",
        )
    if rec.state == "ACKED":
        return Answered(
            f"The {tool} was not sent again: an earlier request for the same "
            f"{tool} was done (intent {rec.key}; its answer: {rec.result!r}), but "
            "its outcome never reached the user: they were told it may or may not "
            "have happened, or nothing, when its call gave up waiting. Tell the "
            "user it was done; if they want another, they may ask again.",
            rec,
            "yes",
            rec.result,
        )
    return Answered(
        f"The {tool} was not sent: an earlier request for the same {tool} "
        f"(intent {rec.key}) was given up and may have happened; sending again "
        "may do it twice. Tell the user; if they still want it, they may ask "
        "again.",
        rec,
        "unknown",
    )


def _unwritten(log: IntentLog, t: Ticket, e: Unwritten) -> InDoubt:
    """What the caller is told when its request was sent and the log could not record
    what came back (`toolcommit.runtime.unwritten`)."""
    try:
        rec = log.record(t.key)
    except StoreError:
        rec = None
    return InDoubt(
        f"The {t.tool} was sent, but the intent log could not record its outcome (its "
        f"store refused the write): it may have happened (intent {t.key}). Do not tell "
        "the user it was done, and do not send it again: the log records the outcome "
        "once its store takes writes, and asking again then gets that outcome.",
        rec,
        "unknown",
    )


def _in_doubt(rec: Record, why: str) -> InDoubt:
    return InDoubt(
        f"The {rec.tool} may or may not have happened: {why} (intent {rec.key}). "
        "Do not tell the user it was done, and do not retry it: the intent log "
        "settles it.",
        rec,
        "unknown",
    )


# ----- the core: the log's decisions, yielding the I/O they need ----------------------------
def _mine(log: IntentLog, rec: Record) -> bool:
    return (rec.owner, rec.owner_inc) == (log.writer, log.incarnation)


def _steps(
    log: IntentLog,
    key: str,
    saved: Callable[[Any], Any],
    wait: Optional[float] = None,
    ticket: Optional[Ticket] = None,
    asked: Optional[Asked] = None,
) -> _Steps[Any]:
    """Drive `key`'s record to a settled state, waiting at most `wait` (default: the log's)
    for another holder or a deferred read; yields ``("send", ticket)`` and ``("read",
    ticket)`` (answered with ``(ok, value)``) and ``("sleep", seconds)``; returns the
    effect's result (the live one when this call sent it, else the saved one). `ticket`:
    the record was dispatched by its proposal's commit, send it first. `asked`: the call's
    caller, who hears the returned outcome (None: no caller hears it, as in recovery).
    While it runs the log renews the record's lease (`IntentLog.driving`): close the
    generator. Of the drivers of one record in this process one acts at a time
    (`toolcommit.runtime.acting`): the others wait for its outcome (at most `wait`)."""
    me = object()
    with log.driving(key):
        try:
            if ticket is not None:
                act(log, key, me)  # a record just dispatched by this call's proposal
                got = yield from _send(log, ticket, saved, asked)
                if got is not None:
                    return got[0]
            wait = log.wait if wait is None else wait
            return (yield from _drive_key(log, key, saved, wait, asked, me))
        finally:
            done(log, key, me)


def _drive_key(
    log: IntentLog,
    key: str,
    saved: Callable[[Any], Any],
    wait: float,
    asked: Optional[Asked],
    me: object,
) -> _Steps[Any]:
    deadline = time.monotonic() + wait
    while True:
        rec = log.record(key)
        assert rec is not None  # proposed before it is driven
        if rec.state == "ACKED":
            return rec.result
        if rec.state in GAVE_UP:
            raise _gave_up(log, rec)
        if _mine(log, rec) and rec.state == "DISPATCHED" and log.unwritten.flush(key):
            raise _in_doubt(
                rec,
                "it was sent, and the intent log could not record its outcome: its "
                "store refuses writes; the log records it once the store takes them",
            )
        if _mine(log, rec) and not act(log, key, me):  # the settler (or a call) acts on it
            if time.monotonic() + _POLL > deadline:
                raise _in_doubt(rec, f"this process is settling it now ({rec.state})")
            yield "sleep", _POLL
            continue
        if not _mine(log, rec) or rec.state == "DISPATCHED":
            left = log.lease_left(key) if not _mine(log, rec) else _POLL
            if left <= 0 and log.take(key) is not None:
                continue
            if time.monotonic() + min(left, _POLL) > deadline:
                raise _in_doubt(
                    rec,
                    f"writer {rec.owner} holds it ({rec.state}) and its lease "
                    f"has {left:.1f} s left",
                )
            yield "sleep", min(max(left, 0.001), _POLL)
            continue
        if rec.state == "RECORDED":
            t = log.dispatch(key)
            if t is not None:
                got = yield from _send(log, t, saved, asked)
                if got is not None:
                    return got[0]
            continue
        if rec.state == "UNKNOWN":
            if D.unknown_action(log.design, True) == "park":
                log.dead_letter(key, L.REASON["park"])
                continue
            t = log.reconcile(key)
            if t is not None and t.purpose == "replay":
                got = yield from _send(log, t, saved, asked)
                if got is not None:
                    return got[0]
            continue
        got = yield from _read(log, rec, deadline, saved)  # RECONCILING, ours
        if got is not None:
            return got[0]


def _send(
    log: IntentLog, t: Ticket, saved: Callable[[Any], Any], asked: Optional[Asked] = None
) -> _Steps[Optional[tuple[Any]]]:
    """Send `t`'s request; ack its answer (noting it heard in the same commit where the
    guard returns it to its caller), or time it out: None."""
    ok, value = yield "send", t
    try:
        return _answered(log, t, ok, value, saved, asked)
    except Unwritten as e:
        raise _unwritten(log, t, e) from None


def _answered(
    log: IntentLog,
    t: Ticket,
    ok: bool,
    value: Any,
    saved: Callable[[Any], Any],
    asked: Optional[Asked],
) -> Optional[tuple[Any]]:
    """Write what `_send`'s request got: its answer (`ok`: the answer, as a 1-tuple) or
    its silence (None)."""
    if ok:
        direct = asked is not None and asked.later is None
        if log.ack(t, _json_result(saved(value)), heard=direct):
            otel.answered()
            if asked is not None:
                asked.told = direct
            return (value,)
        rec = log.record(t.key)
        assert rec is not None
        if rec.state == "ACKED":
            otel.answered()
            return (value,)
        return None
    why = f": {value}" if isinstance(value, NoAnswer) else ""
    log.timeout(t, f"no answer: {type(value).__name__}{why}"[:200])
    return None


def _read(
    log: IntentLog, rec: Record, deadline: float, saved: Callable[[Any], Any]
) -> _Steps[Optional[tuple[Any]]]:
    """A status read of a RECONCILING record this writer holds, once the design trusts it."""
    t = log.ticket(rec.key)
    assert t is not None
    if not log.design.status_read:
        log.settle(t, False)
        return None
    wait = log.read_wait(rec.key)
    if wait > 0:
        if time.monotonic() + wait > deadline:
            raise _in_doubt(
                rec,
                f"a request of it may still reach the provider for "
                f"{wait:.0f} s, and only then does a status read tell",
            )
        yield "sleep", wait
        return None
    ok, value = yield "read", t
    if not ok:
        raise _in_doubt(rec, f"the status read failed ({type(value).__name__})") from value
    _status_contract(rec, value)
    present = value is not None
    log.settle(t, present, _json_result(saved(value)) if present else None)
    return None


def _status_contract(rec: Record, value: Any) -> None:
    """Refuse a status read that broke the contract (the result, or None): a tuple, a bool
    or an empty container or string says neither, so the record stays in doubt rather than
    read as present (ACKED: the user told it was done) or absent (given up: a re-ask sends
    it again). An empty list is how a search says "none found", and an empty dict how an
    effect with no body says "done": the log cannot tell which was meant."""
    if isinstance(value, (tuple, bool)) or F.empty_result(value):
        raise IntentLogError(
            f"The {rec.tool} may or may not have happened (intent {rec.key}): its status "
            f"read returned {value!r}, but status must return the effect's result when the "
            "provider shows it and None when it does not (a (found, result) tuple, a bool "
            "or an empty container is not the contract: return None for none found). The "
            "record stays in doubt until a status read that keeps the contract settles it: "
            "fix the status function."
        )


# ----- drivers -----------------------------------------------------------------------------
def _propose(
    log: IntentLog,
    call_id: str,
    tool: str,
    args: dict[str, Any],
    scope: str,
    new_request: bool,
    on_proposed: Optional[Callable[[Decision], None]] = None,
    *,
    principal: Optional[str] = None,
    fields: Optional[list[str]] = None,
) -> Decision:
    d = log.propose(
        call_id,
        tool,
        args,
        scope,
        new_attempt=new_request,
        dispatch=True,
        principal=principal,
        identity=fields,
    )
    otel.decided(d)
    if d.decision == "held":
        return d
    if on_proposed is not None:
        on_proposed(d)
    if d.decision == "conflict":
        raise Conflict(
            f"The {tool} was not done: scope {scope} already holds another "
            f"{tool} ({d.record.key}).",
            d.record,
        )
    if d.decision == "answered":
        raise _met(d, tool)
    return d


def _call(
    log: IntentLog, propose: Callable[[], Decision], saved: Callable[[Any], Any]
) -> _Steps[Any]:
    """The whole call as steps: propose, waiting while a hold holds (`reask=hold`, at most
    the log's `wait`), then drive the record (`_steps`)."""
    deadline, asked = time.monotonic() + log.wait, Asked()
    try:
        d = propose()
        while d.decision == "held":
            if time.monotonic() + _POLL > deadline:
                raise _met(d, d.record.tool)
            yield "sleep", _POLL
            d = propose()
    except Answered as e:  # the earlier outcome, given to this caller
        if e.record is not None:
            asked.heard(log, e.record.key)
        raise
    got = yield from _steps(log, d.key, saved, ticket=d.ticket, asked=asked)
    asked.heard(log, d.key)  # the outcome returns to the caller now
    return got


def _proposer(
    log: IntentLog,
    call_id: str,
    tool: str,
    args: dict[str, Any],
    scope: str,
    new_request: bool,
    on_proposed: Optional[Callable[[Decision], None]],
    principal: Optional[str],
    identity: IdentityRule,
) -> Callable[..., Decision]:
    """The call's proposal (`_propose`), its arguments identified first (`_identified`:
    normalized, the principal checked) before anything is written."""
    args, fields = _identified(log, call_id, tool, args, principal, identity)
    return functools.partial(
        _propose,
        log,
        call_id,
        tool,
        args,
        scope,
        new_request,
        on_proposed,
        principal=principal,
        fields=fields,
    )


def _identified(
    log: IntentLog,
    call_id: str,
    tool: str,
    args: dict[str, Any],
    principal: Optional[str],
    identity: IdentityRule,
) -> tuple[dict[str, Any], Optional[list[str]]]:
    """The call's arguments as the log keeps them and its identity fields: normalized by
    an `Identity` (whose rule the log stores, `IntentLog.declare`), or as given with the
    named fields (None: the log's ``same=`` rule, else every argument). Refuses a missing
    principal where the design needs one, before anything is written."""
    log.check_principal(principal, f"call {call_id} of {tool}")
    if isinstance(identity, Identity):
        log.declare(tool, identity.rule())
        return identity.normalize(args), identity.names
    return args, None if identity is None else list(identity)


def _reply(value: Any, writes: list[Write]) -> tuple[bool, Any]:
    """What a step gets back: the effect's value, or no answer where its last keyed write
    got none (the wire's word beats the tool's: a caught timeout is still a timeout)."""
    lost = unanswered(writes)
    return (True, value) if lost is None else (False, lost)


def _drive_sync(
    log: IntentLog, gen: _Steps[Any], execute: Callable[[Ticket], Any], status: Status
) -> Any:
    reply = None
    while True:
        try:
            op, arg = gen.send(reply)
        except StopIteration as stop:
            return stop.value
        if op == "sleep":
            time.sleep(arg)
            reply = None
            continue
        fn = execute if op == "send" else status
        writes: list[Write] = []
        token, noted = _TICKET.set(arg), WRITES.set(writes)
        try:
            if fn is None:  # no status read given: the read fails
                raise TypeError("'NoneType' object is not callable")
            value = fn(arg)
            if inspect.isawaitable(value):
                getattr(value, "close", lambda: None)()
                raise IntentLogError(
                    f"{getattr(fn, '__name__', 'the effect')} returned an awaitable to a sync "
                    "guard, closed unstarted: use aguard (or @effectful on the async def). "
                    + (
                        "Its record is in doubt (sent as far as the log knows) until the "
                        "log settles it: a call through aguard with the same arguments does"
                        if op == "send"
                        else "The record stays in doubt"
                    )
                )
            reply = _reply(value, writes)
        except IntentLogError as e:
            if op == "send":  # an awaitable returned, a keyless write refused: say which
                log.timeout(arg, f"the effect was stopped: {type(e).__name__}: {e}"[:200])
            raise
        except Exception as e:
            reply = (False, e)
        except BaseException:
            if op == "send":
                log.timeout(arg, "interrupted")
            raise
        finally:
            WRITES.reset(noted)
            _TICKET.reset(token)


async def _drive_async(
    log: IntentLog, gen: _Steps[Any], execute: Callable[[Ticket], Any], status: Status
) -> Any:
    reply = None
    while True:
        try:
            op, arg = gen.send(reply)
        except StopIteration as stop:
            return stop.value
        if op == "sleep":
            await asyncio.sleep(arg)
            reply = None
            continue
        fn = execute if op == "send" else status
        writes: list[Write] = []
        token, noted = _TICKET.set(arg), WRITES.set(writes)
        try:
            if fn is None:  # no status read registered: the read fails
                raise TypeError("'NoneType' object is not callable")
            value = fn(arg)
            if inspect.isawaitable(value):
                value = await value
            reply = _reply(value, writes)
        except Exception as e:
            reply = (False, e)
        except BaseException:  # the task was cancelled: an unknown outcome
            if op == "send":
                log.timeout(arg, "task cancelled")
            raise
        finally:
            WRITES.reset(noted)
            _TICKET.reset(token)
