"""Thin shims: one effectful call through the whole protocol, as a decorator or a function.

`guard` is the core every shim shares: propose (the log decides), then, for a record this
writer holds, dispatch and run the effect with the ticket's idempotency key and fence, ack
or settle an unknown outcome by reconcile (a `status` read), dead-letter or compensation,
never by running the effect again. A duplicate proposal whose record is ``ACKED`` gets the
saved result back without touching the provider.

While the effect runs, `current_ticket()` returns its `Ticket` (a context variable), so a
tool written for a framework can read the idempotency key and fence it must send without
new parameters in its schema.

Examples
--------
>>> import tempfile, os
>>> from toolcommit.runtime import IntentLog
>>> log = IntentLog.sqlite(os.path.join(tempfile.mkdtemp(), "i.db"), writer="w1")
>>> sent = []
>>> @effectful(log, tool="refund", scope=lambda order, amount: f"order:{order}")
... def refund(order, amount, *, idempotency_key, fence):
...     sent.append((idempotency_key[:4], fence))
...     return {"refund": "re_1"}
>>> refund("o7", 20, call_id="t1"), refund("o7", 20.0, call_id="t2"), sent
({'refund': 're_1'}, {'refund': 're_1'}, [('tc1-', 1)])
"""
from __future__ import annotations

import contextvars
import functools
import inspect
import uuid
from typing import Any, Callable, Optional, Union

from toolcommit.checker.runtime.log import Decision, IntentLog, IntentLogError, Record, Ticket

_TICKET: contextvars.ContextVar[Optional[Ticket]] = contextvars.ContextVar(
    "toolcommit_ticket", default=None)
_RESERVED = ("call_id", "idempotency_key", "fence")


class EffectError(IntentLogError):
    """The call did not take effect through this call site; `record` says where it stands."""

    def __init__(self, message: str, record: Optional[Record] = None):
        super().__init__(message)
        self.record = record


class Conflict(EffectError):
    """An exclusive tool's scope already holds another live intent."""


class GaveUp(EffectError):
    """The intent's record is settled without an effect (DEAD_LETTER, COMPENSATED or
    cancelled): a new attempt is the user's, with ``new_attempt=True``."""


class InDoubt(EffectError):
    """The outcome is unknown and stays so for now (no status read, a failed read, or
    another live writer holds the record). Never retry by hand: the log settles it."""


def current_ticket() -> Optional[Ticket]:
    """The ticket of the effect running now (inside a `guard`), else None."""
    return _TICKET.get()


def _status(result) -> tuple[bool, Any]:
    if isinstance(result, tuple):
        return bool(result[0]), result[1]
    return bool(result), None


def _json_result(value) -> Any:
    try:
        from toolcommit.checker.runtime.lines import dumps
        dumps(value)
        return value
    except (TypeError, ValueError):
        return {"repr": repr(value)}


def _settled(rec: Record):
    if rec.state == "ACKED":
        return rec.result
    if rec.state in ("DEAD_LETTER", "COMPENSATED", "REJECTED_CONFLICT"):
        raise GaveUp(f"intent {rec.key} was given up ({rec.state})", rec)
    raise InDoubt(f"intent {rec.key} is {rec.state}, held by {rec.owner}", rec)


def guard(log: IntentLog, call_id: str, tool: str, args: dict, scope: str,
          execute: Callable[[Ticket], Any], status: Optional[Callable[[Ticket], Any]] = None,
          compensate: Optional[Callable[[Ticket], Any]] = None,
          new_attempt: bool = False, saved: Callable[[Any], Any] = lambda r: r) -> Any:
    """Run one effectful call through the log (see the module docstring).

    Parameters
    ----------
    execute : callable(Ticket) -> result
        Performs the effect, sending ``ticket.idempotency_key`` and ``ticket.fence``. Any
        exception means the outcome is unknown.
    status : callable(Ticket) -> bool or (bool, result), optional
        The provider's status read under the ticket's key, sending its (sealing) fence.
    compensate : callable(Ticket), optional
        Issues a reversal (idempotently) when there is no status read.
    saved : callable(result) -> JSON value
        What the log keeps of a result (a duplicate gets it back); the result itself if it
        is JSON, else its repr.

    Returns
    -------
    The effect's result (or the saved one, for a duplicate of an acknowledged intent).

    Raises
    ------
    Conflict, GaveUp, InDoubt
        See each; the log stays consistent whichever is raised.
    """
    d = log.propose(call_id, tool, args, scope, new_attempt=new_attempt)
    if d.decision == "conflict":
        raise Conflict(f"call {call_id}: scope {scope} already holds intent {d.record.key}",
                       d.record)
    return _drive(log, d, execute, status, compensate, saved)


def _drive(log: IntentLog, d: Decision, execute, status, compensate, saved):
    rec = d.record
    mine = (rec.owner, rec.owner_inc) == (log.writer, log.incarnation)
    if rec.settled or not mine:
        return _settled(log.record(d.key) or rec)
    if rec.state == "RECORDED":
        t = log.dispatch(d.key)
        if t is None:
            return _settled(log.record(d.key))
        token = _TICKET.set(t)
        try:
            result = execute(t)
        except Exception as e:
            log.timeout(t, f"no answer: {type(e).__name__}")
            return _unknown(log, d.key, status, compensate, e)
        finally:
            _TICKET.reset(token)
        log.ack(t, _json_result(saved(result)))
        return result
    return _unknown(log, d.key, status, compensate, None)


def _unknown(log: IntentLog, key: str, status, compensate, cause):
    """Settle an UNKNOWN (or RECONCILING) record this writer holds, without re-sending."""
    if status is not None:
        t = log.reconcile(key)
        if t is None:
            return _settled(log.record(key))
        try:
            present, result = _status(status(t))
        except Exception as e:
            raise InDoubt(f"intent {key}: the status read failed ({type(e).__name__}); "
                          "the log keeps it RECONCILING for recovery", log.record(key)) from e
        log.settle(t, present, _json_result(result) if present else None)
        return _settled(log.record(key))
    if compensate is not None:
        rec = log.record(key)
        compensate(Ticket(key, key, rec.fence, "compensate", rec.tool, rec.args, rec.scope,
                          rec.epoch))
        log.compensated(key)
        return _settled(log.record(key))
    log.dead_letter(key, "no status read: parked for a human")
    raise InDoubt(f"intent {key}: outcome unknown and no status read; dead-lettered",
                  log.record(key)) from cause


def effectful(log: Union[IntentLog, Callable[[], IntentLog]], tool: str,
              scope: Union[str, Callable[..., str]], *, status=None, compensate=None):
    """Decorate a function that performs one effect: calls go through `guard`.

    The function takes keyword-only ``idempotency_key`` and ``fence`` (sent to the
    provider); callers pass ``call_id=`` (the model's tool-call id, evidence only; a
    fresh one if omitted) and optionally ``new_attempt=True``. Its other arguments, bound
    by name with defaults applied, are the intent's arguments (they must be JSON); `scope`
    is a string or a function of those arguments. `log` may be a function returning the
    log (opened lazily).
    """
    def wrap(fn):
        sig = inspect.signature(fn)
        params = [p for n, p in sig.parameters.items() if n not in _RESERVED]
        public = sig.replace(parameters=params)

        @functools.wraps(fn)
        def call(*a, call_id: Optional[str] = None, new_attempt: bool = False, **kw):
            bound = public.bind(*a, **kw)
            bound.apply_defaults()
            args = dict(bound.arguments)
            where = scope(**args) if callable(scope) else scope
            the_log = log() if callable(log) and not isinstance(log, IntentLog) else log
            return guard(the_log, call_id or f"call-{uuid.uuid4().hex[:12]}", tool, args,
                         where, lambda t: fn(*bound.args, **bound.kwargs,
                                             idempotency_key=t.idempotency_key, fence=t.fence),
                         status, compensate, new_attempt)
        call.__signature__ = public
        return call
    return wrap
