"""Thin shims: one effectful call through the whole protocol, as a decorator or a function,
sync or async.

`guard` (sync) and `aguard` (async) share one core, `_steps`: a generator that makes the
log's decisions and yields the I/O it needs (send the request, read the status, sleep) to a
driver, so the protocol is written once. Propose (the log decides) and, when accepted,
dispatch in the same commit; for a record this writer holds, run the effect under its
ticket (dispatching first a record found RECORDED); ack only with the effect's (awaited)
result; resolve an unknown outcome as the log's design says (a replay under the same key
within the replay window, a status read once the design trusts one, a visible give-up),
never by a blind re-send. A duplicate proposal whose record is ``ACKED`` gets the saved
result back without touching the provider; one whose record another writer holds waits for
it (at most the log's `wait`) and takes it over once its lease expired.

While the effect runs, `current_ticket()` returns its `Ticket` (a context variable): the one
way to the idempotency key and fence to send, in a plain function and a framework tool alike.
An exception from the effect, and a cancelled task (or KeyboardInterrupt), is an unknown
outcome: the record goes UNKNOWN; a cancellation is then re-raised.

Examples
--------
>>> import tempfile, os
>>> from toolcommit.runtime import IntentLog
>>> log = IntentLog.sqlite(os.path.join(tempfile.mkdtemp(), "i.db"), writer="w1",
...                        provider="stripe")
>>> sent = []
>>> @effectful(log, tool="refund", scope=lambda order, amount: f"order:{order}",
...            principal="user:42", status=lambda t: None)
... def refund(order, amount):
...     sent.append(current_ticket().idempotency_key[:4])
...     return {"refund": "re_1"}
>>> refund("o7", 20, call_id="t1"), refund("o7", 20.0, call_id="t2"), sent
({'refund': 're_1'}, {'refund': 're_1'}, ['tc1-'])
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import time
import uuid
from typing import Any, Callable, Generator, Optional, TypeVar, Union

from toolcommit.runtime import design as D
from toolcommit.runtime import lines as L
from toolcommit.runtime import otel
from toolcommit.runtime import refuse as F
from toolcommit.runtime.acting import act, done
from toolcommit.runtime.caller import WRITES, Asked, NoAnswer, Write, unanswered
from toolcommit.runtime.caller import hearing as hearing  # re-exported
from toolcommit.runtime.identity import Fields, Identity
from toolcommit.runtime.log import Decision, IntentLog, IntentLogError, Record, Ticket
from toolcommit.runtime.registry import Lazy, Tool, add, lazy_one, next_registration, tool_for
from toolcommit.runtime.store import GAVE_UP, OPEN_STATES, StoreError
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


class EffectError(IntentLogError):
    """The call did not take effect through this call site; `record` says where it stands
    and `happened` whether the effect happened: ``"no"``, ``"unknown"``."""

    happened = "unknown"

    def __init__(
        self, message: str, record: Optional[Record] = None, happened: Optional[str] = None
    ):
        super().__init__(message)
        self.record = record
        if happened is not None:
            self.happened = happened

    def tell(self) -> str:
        """What the model is told (a sentence it can pass on to the user)."""
        return str(self)


class Conflict(EffectError):
    """An exclusive tool's scope already holds another live intent: nothing was sent."""

    happened = "no"


class GaveUp(EffectError):
    """The intent's record is settled without an effect this log can show (DEAD_LETTER,
    COMPENSATED or cancelled). `happened` is ``"no"`` after a status read the design trusts
    (or a cancel before dispatch), ``"unknown"`` where nothing can be read (at-most-once: an
    email may have been sent). A new attempt is the user's: ``new_request=True``."""


class InDoubt(EffectError):
    """The outcome is unknown for now (a status read failed or the design defers it, or
    another live writer holds the record). Never retry by hand: the log settles it."""


class Held(InDoubt):
    """``reask=hold``: an earlier call of the same tool and arguments in another scope (the
    user's earlier request) is still unsettled after the log's `wait`: nothing was sent."""


class Answered(EffectError):
    """``reask=hold``: an earlier call of the same tool and arguments in another scope
    settled without its caller hearing it, and answers this one: nothing was sent. `result`
    is the earlier effect's (``happened="yes"``), or None where it was given up and may have
    happened (``"unknown"``). The user's next request proceeds."""

    def __init__(
        self,
        message: str,
        record: Optional[Record] = None,
        happened: Optional[str] = None,
        result: Any = None,
    ):
        super().__init__(message, record, happened)
        self.result = result


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


def refuse_tool(fn: Callable[..., Any], tool: str, reserved: tuple[str, ...] = ()) -> None:
    """`IntentLogError` when a tool is wrapped for a function no guard can run as one
    effect (`toolcommit.runtime.refuse.tool_function`: a generator, or a parameter in
    `reserved` the wrapper keeps for itself)."""
    try:
        F.tool_function(fn, tool, reserved)
    except F.Refused as e:
        raise IntentLogError(str(e)) from None


def _refuse_coroutine(fn: Optional[Callable[..., Any]], what: str) -> None:
    """`IntentLogError` for a `fn` known to be async before it is called: an ``async def``,
    a partial or bound method of one, a callable object whose ``__call__`` is one, or a sync
    wrapper of one (``functools.wraps``: its ``__wrapped__``). Before anything is written;
    a plain function returning a coroutine is only known once called (`_drive_sync`)."""
    if fn is not None and any(
        inspect.iscoroutinefunction(f) or inspect.iscoroutinefunction(getattr(f, "__call__", None))
        for f in (fn, inspect.unwrap(fn) if callable(fn) else fn)
    ):
        raise IntentLogError(
            f"{what} {getattr(fn, '__name__', fn)!r} is async: use the async "
            "form (aguard, or @effectful on the async def itself)"
        )


def _needs_status(log: IntentLog, status: Status) -> None:
    d = log.design
    if status is None and d.settles_by_read:
        raise IntentLogError(
            f"design {d.source} settles an unknown outcome by a status read "
            "(status_via=" + d.knobs["status_via"] + "): pass status="
        )


def check_status(
    log: Union[IntentLog, Callable[[], IntentLog]], status: Status, sync: bool = False
) -> None:
    """Refuse, when a tool is wrapped, a `status` it cannot use: not a function, ``async``
    for a `sync` tool, or missing where `log`'s design settles an unknown outcome by a
    status read. The last is known here when `log` is an `IntentLog`; a lazy log (a
    function returning one) is checked when a call first opens it."""
    if status is not None and not callable(status):
        raise IntentLogError(
            f"status={status!r} is not a function: pass "
            "status(ticket) -> the effect's result, or None when absent"
        )
    if sync:
        _refuse_coroutine(status, "status of a sync tool")
    if isinstance(log, IntentLog):
        _needs_status(log, status)


def check_principal(
    log: Union[IntentLog, Callable[[], IntentLog]], principal: Principal, tool: str
) -> None:
    """Refuse, when a tool is wrapped, a `principal` it cannot use: none where `log`'s
    design holds a re-ask (known here when `log` is an `IntentLog`; a lazy log refuses
    the call), or one neither a non-empty string nor a function."""
    what = f"tool {tool}"
    if principal is not None and not isinstance(principal, str) and not callable(principal):
        raise IntentLogError(
            f"{what}: principal={principal!r} is neither a string nor a function of the "
            "call's arguments returning one"
        )
    if isinstance(principal, str) and not principal:
        raise IntentLogError(f"{what}: principal= must name who asked, got an empty string")
    if principal is None and isinstance(log, IntentLog):
        log.check_principal(None, what)


def principal_of(principal: Principal, *about: Any, **args: Any) -> Optional[str]:
    """The call's principal: the string, ``principal(*about, **args)``, or None."""
    return principal(*about, **args) if callable(principal) else principal


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


def guard(
    log: IntentLog,
    call_id: str,
    tool: str,
    args: dict[str, Any],
    scope: str,
    execute: Callable[[Ticket], Any],
    status: Optional[Callable[[Ticket], Any]] = None,
    new_request: bool = False,
    saved: Callable[[Any], Any] = lambda r: r,
    on_proposed: Optional[Callable[[Decision], None]] = None,
    *,
    principal: Optional[str] = None,
    identity: IdentityRule = None,
) -> Any:
    """Run one effectful call through the log (see the module docstring).

    Parameters
    ----------
    execute : callable(Ticket) -> result
        Performs the effect (``ticket.purpose`` ``apply``, or ``replay``: the same request
        under the same key), sending ``ticket.idempotency_key`` and ``ticket.fence`` (also
        `current_ticket()`). Any exception means no answer: the outcome is unknown.
    status : callable(Ticket) -> result or None, optional
        The provider's status read where ``ticket.via`` says (``list`` or ``search``),
        sending the ticket's fence: the effect's result if present, None if absent; an
        exception if it cannot tell. A tuple, a bool or an empty container or string ([],
        {}, "") is neither: refused (IntentLogError), the record left in doubt, since
        "none found" and "done, with an empty answer" would otherwise read alike. Required
        where the design reads status.
    new_request : bool
        The user asked again: an intent given up gets a new attempt (the next epoch).
    saved : callable(result) -> JSON value
        What the log keeps of a result (a duplicate gets it back); the result itself if it
        is JSON, else its repr.
    on_proposed : callable(Decision), optional
        Called with the log's decision on the proposal, before anything is sent (an
        accepted proposal is already dispatched: the same commit; a conflict included,
        before `Conflict` is raised): where a runtime marks the call proposed.
    principal : str
        Who asked (a user, a tenant, an authenticated client): part of the intent, so
        nothing is ever answered across principals. Required under a design with
        ``reask=hold`` (every shipped one).
    identity : Identity or sequence of str, optional
        What makes two calls one intent: the tool's `toolcommit.runtime.identity.Identity`
        (`args` normalized by its declared types and defaults, its fields kept, its rule
        stored in the log), or the argument names alone; None: the log's ``same=`` rule,
        else every argument.

    Returns
    -------
    The effect's result (or the saved one, for a duplicate of an acknowledged intent).

    Raises
    ------
    Conflict, GaveUp, InDoubt, Held, Answered
        See each; the log stays consistent whichever is raised. IntentLogError for an
        async `execute` or `status` (use `aguard`), or a missing `status` the design needs.
    """
    _refuse_coroutine(execute, "execute")
    _refuse_coroutine(status, "status")
    refuse_tool(execute, tool)
    _needs_status(log, status)
    propose = _proposer(
        log, call_id, tool, args, scope, new_request, on_proposed, principal, identity
    )
    with otel.guard_span(log, call_id, tool), contextlib.closing(_call(log, propose, saved)) as gen:
        return _drive_sync(log, gen, execute, status)


async def aguard(
    log: IntentLog,
    call_id: str,
    tool: str,
    args: dict[str, Any],
    scope: str,
    execute: Callable[[Ticket], Any],
    status: Optional[Callable[[Ticket], Any]] = None,
    new_request: bool = False,
    saved: Callable[[Any], Any] = lambda r: r,
    on_proposed: Optional[Callable[[Decision], None]] = None,
    *,
    principal: Optional[str] = None,
    identity: IdentityRule = None,
) -> Any:
    """`guard` for async code: `execute` and `status` may be ``async def`` (or return an
    awaitable), and are awaited inside the guard; ACKED only with the awaited result. A
    cancellation while the effect runs makes the record UNKNOWN, then is re-raised. The
    log's own decisions are synchronous (milliseconds on SQLite)."""
    refuse_tool(execute, tool)
    _needs_status(log, status)
    propose = _proposer(
        log, call_id, tool, args, scope, new_request, on_proposed, principal, identity
    )
    with otel.guard_span(log, call_id, tool), contextlib.closing(_call(log, propose, saved)) as gen:
        return await _drive_async(log, gen, execute, status)


# ----- recovery through registered tools -------------------------------------------------------
def register(
    tool: str,
    run: Callable[[dict[str, Any]], Any],
    status: Status = None,
    log: Union[IntentLog, Lazy, None] = None,
    *,
    account: Optional[str] = None,
    module: Optional[str] = None,
) -> None:
    """Let `recover_settle` settle `log`'s records of `tool`: ``run(args)`` performs the
    effect (under `current_ticket()`), `status` reads it. `effectful` registers what it
    decorates. The registry is per log (`toolcommit.runtime.registry`): `log` an
    `IntentLog` (its settler, ``settler=``, settles them too), or a function returning it
    (the tool is that log's from its first call, when the function is the only one
    registering a tool of this name), or None (every log's that has no `tool` of its own:
    the framework wrappers').

    `account` names the provider account `run` acts on: the log records it
    (`IntentLog.bind_account`) and refuses a tool naming another (`IntentLogError`), and
    ``toolcommit recover --tools`` refuses tools naming another than the log's. `module`
    (default: `run`'s) is where ``recover --tools MODULE`` finds the tool."""
    module = module or getattr(run, "__module__", None)
    add(Tool(tool, run, status, account, module, next_registration()), log)
    if isinstance(log, IntentLog):
        serve(log, tool)


def needs_tool(log: IntentLog, rec: Record) -> bool:
    """Whether settling `rec` needs its tool and `log` has none registered for it
    (a replay or a status read; a dispatch): then only a call, or a registration, settles it."""
    return tool_for(log, rec.tool) is None and (log.design.status_read or rec.state == "RECORDED")


def recover_settle(
    log: IntentLog, limit: int = 100, tools: Optional[set[str]] = None
) -> dict[str, str]:
    """One pass that never waits: take over the records of gone holders (`IntentLog.recover`)
    and settle every record in doubt this writer holds (`IntentLog.in_doubt`) through the
    design, with the log's registered tool (`register`; only `tools` if given): a replay
    under the same key, a status read, a give-up. Returns {key: state after}; a record whose
    tool the log has not, or whose read the design defers (`IntentLog.due` says for how
    long), stays held (UNKNOWN or RECONCILING) for the next pass. Async tools run in a fresh
    event loop (call this from sync code). Traced as one ``toolcommit.recover`` span, each
    record settled a ``toolcommit.settle`` span (`toolcommit.runtime.otel`)."""
    with otel.recover_span(log, "pass") as counts:
        return _recover_settle(log, limit, tools, counts)


def _recover_settle(
    log: IntentLog, limit: int, tools: Optional[set[str]], counts: dict[str, Any]
) -> dict[str, str]:
    taken = len(log.taken_over)
    log.recover(limit, tools)
    out = {}
    for rec in log.in_doubt():
        if log.closing:
            break  # `close` began: settle nothing more (what is under way ends first)
        if tools is not None and rec.tool not in tools:
            continue
        if needs_tool(log, rec) or rec.state == "RECONCILING" and log.read_wait(rec.key) > 0:
            out[rec.key] = rec.state  # needs the tool, or not due yet: left for later
            continue
        tool = tool_for(log, rec.tool)

        def execute(t: Ticket, tool: Optional[Tool] = tool) -> Any:
            assert tool is not None  # needs_tool said the log has it
            return tool.run(t.args)

        with (
            otel.settle_span(log, rec),
            contextlib.closing(_steps(log, rec.key, lambda r: r, wait=0)) as gen,
        ):
            try:
                asyncio.run(_drive_async(log, gen, execute, None if tool is None else tool.status))
            except EffectError:
                pass
        now = log.record(rec.key)
        out[rec.key] = rec.state if now is None else now.state
    left = sum(s in OPEN_STATES for s in out.values())
    counts.update(taken=len(log.taken_over) - taken, settled=len(out) - left, left=left)
    return out


def settle_pass(log: IntentLog) -> float:
    """The settler's pass (`IntentLog.settle_with`): `recover_settle` for the tools
    registered with `log`; the seconds until the next is due (at most `settle_every`). A
    pass is traced (`recover_settle`) only when something was due as it began."""
    due = log.due() if otel.tracing() else 0.0
    with otel.recover_span(log, "settler", quiet=due is None or due > 0) as counts:
        _recover_settle(log, 1000, None if log.tools is None else set(log.tools), counts)
    due = log.due()
    return log.settle_every if due is None or due <= 0 else min(due, log.settle_every)


def serve(log: IntentLog, tool: str, opener: Optional[Lazy] = None) -> None:
    """Register `tool` with `log`'s settler (started with the first, once per log, stopped
    by `IntentLog.close`); a tool registered with the function that opened `log` becomes
    `log`'s here: `opener`'s, else the only one of its name so registered (`register`). Every
    guarded call's log is served (`effectful`, the framework wrappers), so a record in
    doubt is settled in a live process as soon as the design allows, with nobody calling
    recover."""
    lazy_one(log, tool, opener)
    if log.tools is not None and tool not in log.tools:
        log.tools.add(tool)
        log.settle_with(settle_pass)


def effectful(
    log: Union[IntentLog, Callable[[], IntentLog]],
    tool: str,
    scope: Union[str, Callable[..., str]],
    *,
    account: Optional[str] = None,
    status: Status = None,
    principal: Principal = None,
    identity: IdentityRule = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function (sync or ``async def``) that performs one effect: its calls go
    through `guard` (or `aguard`, awaited, for an async function).

    The function reads the key and fence to send from `current_ticket()`. Callers pass
    ``call_id=`` (the model's tool-call id, evidence only; a fresh one if omitted) and
    optionally ``new_request=True`` (the user asked again). Its other arguments, bound by
    name with defaults applied, are the intent's arguments (they must be JSON); `scope` is a
    string or a function of those arguments: name the user's request in it
    (``user:42:request:7``), so two real requests are two intents. `log` may be a function
    returning the log (opened lazily). The tool is registered for `recover_settle` and
    with the log's settler (`IntentLog` ``settler=``), which settles its records in doubt.
    `account` names the provider account the function acts on (`register`).

    `principal` is who asked (a string, or a function of the arguments, as `scope`): part
    of the intent, required under a design with ``reask=hold`` (every shipped one; refused
    here for an `IntentLog`, at the first call for a lazy one). `identity` names the
    arguments that make two requests one intent (``("charge", "amount")``, checked here
    against the function's parameters; default: all of them) or is an `Identity`: the
    arguments are coerced to the function's annotations where exact (``"2000"`` for an
    ``int`` is 2000) and an omitted optional one is its default (`toolcommit.runtime.identity`).

    Refused here (`IntentLogError`): a generator or async generator function (the guard
    would record done an effect that runs later, or never), and one declaring ``call_id``
    or ``new_request`` (the wrapper keeps them: the function would never get them).
    `status` is checked here, when the function is decorated (`check_status`); whether
    the design needs one, here for a log given as an `IntentLog`, and at the first call
    for a lazy one (its design is known once it is open).
    """

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        refuse_tool(fn, tool, _RESERVED)
        sig = inspect.signature(fn)
        params = [p for n, p in sig.parameters.items() if n not in _RESERVED]
        public = sig.replace(parameters=params)
        is_async = inspect.iscoroutinefunction(fn)
        check_status(log, status, sync=not is_async)
        check_principal(log, principal, tool)
        ident = (
            identity
            if isinstance(identity, Identity)
            else Identity.from_signature(fn, identity, tool, skip=_RESERVED)
        )

        def prepare(
            a: tuple[Any, ...], kw: dict[str, Any]
        ) -> tuple[IntentLog, dict[str, Any], str, Optional[str], Callable[[Ticket], Any]]:
            bound = public.bind(*a, **kw)
            bound.apply_defaults()
            args = ident.normalize(bound.arguments)
            bound.arguments.update((k, v) for k, v in args.items() if k in bound.arguments)
            where = scope(**args) if callable(scope) else scope
            who = principal_of(principal, **args)
            if isinstance(log, IntentLog):
                the_log, opener = log, None
            else:
                the_log, opener = log(), log
            serve(the_log, tool, opener)
            return the_log, args, where, who, lambda _t: fn(*bound.args, **bound.kwargs)

        @functools.wraps(fn)
        async def acall(
            *a: Any, call_id: Optional[str] = None, new_request: bool = False, **kw: Any
        ) -> Any:
            the_log, args, where, who, run = prepare(a, kw)
            return await aguard(
                the_log,
                call_id or f"call-{uuid.uuid4().hex[:12]}",
                tool,
                args,
                where,
                run,
                status,
                new_request,
                principal=who,
                identity=ident,
            )

        @functools.wraps(fn)
        def scall(
            *a: Any, call_id: Optional[str] = None, new_request: bool = False, **kw: Any
        ) -> Any:
            the_log, args, where, who, run = prepare(a, kw)
            return guard(
                the_log,
                call_id or f"call-{uuid.uuid4().hex[:12]}",
                tool,
                args,
                where,
                run,
                status,
                new_request,
                principal=who,
                identity=ident,
            )

        call: Callable[..., Any] = acall if is_async else scall
        setattr(call, "__signature__", public)
        register(tool, lambda args: fn(**args), status, log, account=account, module=fn.__module__)
        return call

    return wrap
