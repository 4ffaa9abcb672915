"""What the framework wrappers (the modules of ``frameworks/``) share: the intent's arguments bound by
name, the scope, principal and new-request hooks, the tool's identity from its declared
schema (`toolcommit.runtime.identity`), the checks made when a tool is wrapped, and the
tool's registration with its log (`toolcommit.runtime.shims.register`): the log's settler
settles the tool's records in doubt in this process, and ``recover --tools MODULE`` finds
the tool by the module it was written in."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Awaitable, Callable, Iterable, Optional, Union

from toolcommit.runtime.caller import hearing
from toolcommit.runtime.identity import Fields as Fields  # re-exported for the wrappers
from toolcommit.runtime.identity import Identity as Identity  # re-exported for the wrappers
from toolcommit.runtime.log import IntentLog
from toolcommit.runtime.shims import (
    EffectError,
    aguard,
    check_principal,
    check_status,
    guard,
    refuse_tool,
    register,
    serve,
)
from toolcommit.runtime.shims import Principal as Principal  # re-exported for the wrappers
from toolcommit.runtime.shims import Status as Status  # re-exported for the wrappers

LogOrOpener = Union[IntentLog, Callable[[], IntentLog]]
#: a request's scope: a string, or a function of what the framework knows of the call
Scope = Union[str, Callable[..., str]]


def the_log(log: LogOrOpener) -> IntentLog:
    """`log` itself, or the log its opener returns (opened lazily, at the first call)."""
    return log if isinstance(log, IntentLog) else log()


def serving(log: LogOrOpener, tool: str) -> IntentLog:
    """The call's log (`the_log`), its settler settling `tool`'s records (`shims.serve`:
    started with its first tool; a lazy log's tool becomes its own here)."""
    out = the_log(log)
    serve(out, tool, None if isinstance(log, IntentLog) else log)
    return out


def checked(
    log: LogOrOpener,
    fn: Optional[Callable[..., Any]],
    status: Status,
    tool: str,
    principal: Principal = None,
) -> None:
    """Refuse misuse when the tool is wrapped, not at its first call (`shims.refuse_tool`:
    a generator tool; `shims.check_status`: a `status` that is not a function, async for a
    sync tool, or missing where the log's design needs one; `shims.check_principal`: no
    `principal` where the design holds a re-ask; both when the log is already open)."""
    if fn is not None:
        refuse_tool(fn, tool)  # a generator: its effect would run after the ack
    check_status(log, status, sync=not inspect.iscoroutinefunction(fn))
    check_principal(log, principal, tool)


def who(principal: Principal, *about: Any) -> Optional[str]:
    """The call's principal: the string, or ``principal(*about)`` (None without one)."""
    return principal(*about) if callable(principal) else principal


def normalized(
    ident: Identity, bound: inspect.BoundArguments, args: dict[str, Any]
) -> dict[str, Any]:
    """`args` normalized by the tool's identity (`Identity.normalize`), the bound call
    updated to match: the effect runs with the values the log keeps (and replays)."""
    out = ident.normalize(args)
    bound.arguments.update((k, v) for k, v in out.items() if k in bound.arguments)
    return out


def bound_args(
    sig: inspect.Signature, a: tuple[Any, ...], kw: dict[str, Any], skip: Iterable[str] = ()
) -> tuple[inspect.BoundArguments, dict[str, Any]]:
    """Bind a call to `sig` with defaults applied; the intent's arguments by name, without
    the parameters in `skip` (a framework's context)."""
    bound = sig.bind(*a, **kw)
    bound.apply_defaults()
    drop = frozenset(skip)
    return bound, {k: v for k, v in bound.arguments.items() if k not in drop}


def where(scope: Optional[Scope], *about: Any, default: Optional[str] = None) -> Optional[str]:
    """The scope: the string, or `scope(*about)`, or `default` when `scope` is None."""
    if scope is None:
        return default
    return scope(*about) if callable(scope) else scope


def again(new_request: Optional[Callable[..., Any]], *about: Any) -> bool:
    """Whether the user asked again (``new_request(*about)``); False without the hook."""
    return bool(new_request(*about)) if new_request is not None else False


def registered(
    log: LogOrOpener, tool: str, fn: Callable[..., Any], status: Status, module: Optional[str]
) -> None:
    """Register `tool` with `log` (an `IntentLog`, or its opener: the tool is the log's at
    its first call) for its settler and `recover_settle`: the effect is ``fn(**args)``;
    `module` is where the tool was written (``recover --tools MODULE`` finds it there)."""
    register(tool, lambda args: fn(**args), status, log, module=module)


def module_of(obj: Any) -> Optional[str]:
    """The module a tool was written in: a function's, else its ``func`` or ``coroutine``'s
    (a LangChain or CrewAI tool made from one), else its class's."""
    for f in (obj, getattr(obj, "func", None), getattr(obj, "coroutine", None)):
        if inspect.isfunction(f) or inspect.ismethod(f):
            return str(f.__module__)
    return getattr(type(obj), "__module__", None)


def guarded(
    fn: Callable[..., Any],
    prepare: Callable[..., tuple[tuple[Any, ...], dict[str, Any]]],
    failed: Optional[Callable[[EffectError], Any]] = None,
) -> Callable[..., Any]:
    """A function calling `guard` with ``prepare(*a, **kw)``'s arguments (positional,
    keyword), or an ``async def`` awaiting `aguard` when `fn` is one. An `EffectError` goes
    to ``failed(e)``, whose return (or raise) is the call's; without `failed` it is raised."""

    def settle(e: EffectError) -> Any:
        if failed is None:
            raise e
        return failed(e)

    async def acall(*a: Any, **kw: Any) -> Any:
        p, k = prepare(*a, **kw)
        try:
            return await aguard(*p, **k)
        except EffectError as e:
            return settle(e)

    def call(*a: Any, **kw: Any) -> Any:
        p, k = prepare(*a, **kw)
        try:
            return guard(*p, **k)
        except EffectError as e:
            return settle(e)

    return acall if inspect.iscoroutinefunction(fn) else call


def heard_in_thread(call: Callable[..., Any], log: LogOrOpener) -> Callable[..., Awaitable[Any]]:
    """`call` (a sync guarded call) as an ``async def`` that runs it in a worker thread in a
    copy of this context (``asyncio.to_thread``, as a framework runs a sync tool), its
    outcome heard only once it is back here (`toolcommit.runtime.caller.hearing`): a
    framework's tool timeout cancels this await, not the thread, and a caller that gave up
    did not hear what the thread did later."""

    async def acall(*a: Any, **kw: Any) -> Any:
        with hearing() as h:
            out = await asyncio.to_thread(call, *a, **kw)
        h.heard(the_log(log))
        return out

    return acall
