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

import contextlib
import functools
import inspect
import uuid
from typing import Any, Callable, Optional, Union

from toolcommit.runtime import otel
from toolcommit.runtime import refuse as F
from toolcommit.runtime.caller import hearing as hearing  # re-exported
from toolcommit.runtime.exceptions import (  # re-exported
    Answered as Answered,
)
from toolcommit.runtime.exceptions import (
    Conflict as Conflict,
)
from toolcommit.runtime.exceptions import (
    EffectError as EffectError,
)
from toolcommit.runtime.exceptions import (
    GaveUp as GaveUp,
)
from toolcommit.runtime.exceptions import (
    Held as Held,
)
from toolcommit.runtime.exceptions import (
    InDoubt as InDoubt,
)
from toolcommit.runtime.identity import Identity
from toolcommit.runtime.log import Decision, IntentLog, IntentLogError, Ticket
from toolcommit.runtime.registry import Lazy, Tool, add, next_registration
from toolcommit.runtime.settle import needs_tool as needs_tool
from toolcommit.runtime.settle import recover_settle as recover_settle
from toolcommit.runtime.settle import serve as serve
from toolcommit.runtime.settle import settle_pass as settle_pass
from toolcommit.runtime.steps import (
    _RESERVED,
    IdentityRule,
    _call,
    _drive_async,
    _drive_sync,
    _proposer,
)
from toolcommit.runtime.steps import Principal as Principal
from toolcommit.runtime.steps import Status as Status
from toolcommit.runtime.steps import current_ticket as current_ticket
from toolcommit.runtime.steps import tell as tell


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
