"""Framework wrappers (optional extra ``frameworks``): Pydantic AI tools and LangGraph's
ToolNode, each call going through `toolcommit.runtime.shims.guard` (or `aguard` for an
``async def`` tool, awaited inside the guard).

The model's tool-call id (Pydantic AI's ``ctx.tool_call_id``, LangGraph's
``tool_call["id"]``) is passed as evidence, never as identity: the log keys the call by its
canonical intent, so a call re-issued under a new id, or paraphrased, meets the first
record. Inside the tool, `toolcommit.runtime.current_ticket()` gives the idempotency key and
fence to send. `new_request` (a function of the run context, or of LangGraph's request)
says the user asked again, so an intent given up gets a new attempt. A call that did not
take effect through this call returns what `toolcommit.runtime.shims.tell` says, in plain
words: the effect may not have happened.

Limitations
-----------
The log's decisions are synchronous (a few milliseconds on SQLite), also inside an async
tool. Pydantic AI: a sync tool runs in a worker thread (Pydantic AI's own executor), and
its outcome counts as heard (`IntentLog.heard`) only once it is back with
the agent: a tool ``timeout=`` that passes while the thread runs on leaves it unheard, so
the user's re-ask in a new request gets it (`Answered`), never a second effect. LangGraph: a sync tool runs through ``wrap_tool_call`` (``graph.invoke``), an async
one through ``awrap_tool_call`` (``graph.ainvoke``).
"""

from __future__ import annotations

import inspect
import json
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable, Optional

from toolcommit.runtime.frameworks.common import (
    Fields,
    Principal,
    Scope,
    Status,
    module_of,
    who,
)
from toolcommit.runtime.identity import Identity, IdentityError
from toolcommit.runtime.log import IntentLog, IntentLogError, Ticket
from toolcommit.runtime.shims import (
    EffectError,
    aguard,
    check_principal,
    check_status,
    guard,
    hearing,
    register,
    tell,
)

if TYPE_CHECKING:
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import BaseTool
    from langgraph.prebuilt import ToolNode
    from pydantic_ai import Tool


def pydantic_ai_tool(
    log: IntentLog,
    fn: Callable[..., Any],
    *,
    scope: Scope,
    name: Optional[str] = None,
    status: Status = None,
    new_request: Optional[Callable[..., Any]] = None,
    principal: Principal = None,
    identity: Fields = None,
    **tool_kw: Any,
) -> Tool[Any]:
    """A ``pydantic_ai.Tool`` running `fn` (sync or ``async def``) through the intent log.

    `fn` performs the effect (its first parameter may be the ``RunContext``); `scope` is a
    string or ``scope(ctx, args) -> str``; ``new_request(ctx) -> bool`` marks the user's
    new request. `principal` (who asked: a string or ``principal(ctx, args)``, required
    under ``reask=hold``) is part of the intent; `identity` names the arguments that make
    two requests one (default: all of `fn`'s, by whose annotations and defaults, the
    schema Pydantic AI gives the model, the arguments are normalized:
    `toolcommit.runtime.identity`). A call that does not take effect through this call (a conflict, a given-up
    or in-doubt intent) returns `tell`'s dict for the model to read, instead of raising.

    `status` is checked here (`toolcommit.runtime.shims.check_status`), and the tool is
    registered with `log` (`toolcommit.runtime.shims.register`): the log's settler settles
    its records in doubt, and ``recover --tools`` finds it by `fn`'s module; recovery has
    no run context, so a tool that takes one is called there with ``ctx=None``.
    """
    from pydantic_ai import RunContext, Tool

    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    takes_ctx = bool(params) and (params[0].name == "ctx" or params[0].annotation is RunContext)
    tool = name or fn.__name__
    check_status(log, status, sync=not inspect.iscoroutinefunction(fn))
    check_principal(log, principal, tool)
    ident = Identity.from_signature(fn, identity, tool, skip=[params[0].name] if takes_ctx else [])
    register(
        tool,
        (lambda args: fn(None, **args)) if takes_ctx else (lambda args: fn(**args)),
        status,
        log,
        module=fn.__module__,
    )

    def prepare(
        ctx: Any, a: tuple[Any, ...], kw: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        bound = sig.bind(ctx, *a, **kw) if takes_ctx else sig.bind(*a, **kw)
        bound.apply_defaults()
        args = {k: v for k, v in bound.arguments.items() if not (takes_ctx and v is ctx)}
        args = ident.normalize(args)
        bound.arguments.update((k, v) for k, v in args.items() if k in bound.arguments)
        where = scope(ctx, args) if callable(scope) else scope
        again = bool(new_request(ctx)) if new_request is not None else False
        return (
            log,
            ctx.tool_call_id,
            tool,
            args,
            where,
            lambda t: fn(*bound.args, **bound.kwargs),
            status,
            again,
        ), {"principal": who(principal, ctx, args), "identity": ident}

    async def awrapper(ctx: Any, *a: Any, **kw: Any) -> Any:
        p, k = prepare(ctx, a, kw)
        try:
            return await aguard(*p, **k)
        except EffectError as e:
            return tell(e)

    def sync(ctx: Any, a: tuple[Any, ...], kw: dict[str, Any]) -> Any:
        p, k = prepare(ctx, a, kw)
        try:
            return guard(*p, **k)
        except EffectError as e:
            return tell(e)

    async def swrapper(ctx: Any, *a: Any, **kw: Any) -> Any:
        # a sync tool runs in a worker thread, as Pydantic AI runs one; its outcome is
        # heard only if it gets back here (a tool timeout cancels this await, not the thread)
        with hearing() as h:
            out = await _in_thread(sync, ctx, a, kw)
        h.heard(log)
        return out

    # a function: its name, annotations and signature are the tool's, set below
    wrapper: Any = awrapper if inspect.iscoroutinefunction(fn) else swrapper

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    wrapper.__annotations__ = {**getattr(fn, "__annotations__", {}), "ctx": RunContext}
    if not takes_ctx:
        ctx_param = inspect.Parameter(
            "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=RunContext
        )
        sig_out = sig.replace(parameters=[ctx_param] + params)
    else:
        sig_out = sig
    wrapper.__signature__ = sig_out
    return Tool(wrapper, takes_ctx=True, name=tool, **tool_kw)


async def _in_thread(fn: Callable[..., Any], *a: Any) -> Any:
    """``fn(*a)`` in a worker thread, in a copy of this context, as Pydantic AI runs a sync
    tool (its own executor where it has one: `pydantic_ai._utils.run_in_executor`)."""
    try:
        from pydantic_ai._utils import run_in_executor
    except ImportError:  # pragma: no cover - an older or newer Pydantic AI
        import contextvars

        import anyio

        ctx = contextvars.copy_context()
        return await anyio.to_thread.run_sync(ctx.run, fn, *a, abandon_on_cancel=True)
    return await run_in_executor(fn, *a)


def langgraph_tool_node(
    log: IntentLog,
    tools: Iterable[BaseTool],
    *,
    scope: Scope,
    effectful: Optional[Iterable[str]] = None,
    status: Status = None,
    new_request: Optional[Callable[..., Any]] = None,
    principal: Principal = None,
    identity: Optional[dict[str, Fields]] = None,
    **node_kw: Any,
) -> ToolNode:
    """A ``langgraph.prebuilt.ToolNode`` whose effectful tools run through the intent log,
    sync (``graph.invoke``) or async (``graph.ainvoke``, the tools' coroutines awaited inside
    the guard).

    `effectful` names the tools that change the world (all, if None); others run as
    usual. `scope` is a string or ``scope(request) -> str`` (the ``ToolCallRequest``: its
    ``state`` holds the graph's state); ``new_request(request) -> bool`` marks the user's new
    request. ``principal`` (who asked: a string or ``principal(request)``, required under
    ``reask=hold``) is part of the intent; `identity` maps a tool's name to the arguments
    that make two requests one (default: all), checked against its ``args_schema``, by
    which its arguments are normalized (`toolcommit.runtime.identity`). An error
    ``ToolMessage`` from the tool (ToolNode turns exceptions into those) is
    an unknown outcome: resolved as the log's design says, never re-run blindly. A call that
    does not take effect through this call returns an error ``ToolMessage`` saying, in plain
    words, that the effect may not have happened.

    `status` is checked here (`toolcommit.runtime.shims.check_status`), and each effectful
    tool is registered with `log` (its settler settles the tool's records in doubt) and for
    ``recover --tools``. An async-only tool run by the sync
    ``graph.invoke`` is refused before anything is proposed or sent (`IntentLogError`,
    saying nothing was sent): run the graph with ``graph.ainvoke``.
    """
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt import ToolNode

    tools = list(tools)
    only = None if effectful is None else frozenset(effectful)
    check_status(log, status)
    check_principal(log, principal, "of the tool node")
    idents = {
        t.name: schema_identity(t, (identity or {}).get(t.name))
        for t in tools
        if only is None or t.name in only
    }
    unknown = sorted(set(identity or ()) - set(idents))
    if unknown:
        raise IdentityError(f"identity= names {', '.join(unknown)}, no effectful tool of the node")
    for t in tools:
        if only is None or t.name in only:
            register(t.name, _recovery_run(t), status, log, module=module_of(t))

    class _Failed(Exception):
        pass

    def checked(out: Any) -> Any:
        if isinstance(out, ToolMessage) and out.status == "error":
            raise _Failed(str(out.content))
        return out

    def saved(m: Any) -> Any:
        return {"content": m.content} if isinstance(m, ToolMessage) else m

    def message(call: dict[str, Any], out: Any) -> ToolMessage:
        if isinstance(out, ToolMessage):
            return out
        content: Any = out.get("content", out) if isinstance(out, dict) else out
        return ToolMessage(
            content=content if isinstance(content, str) else json.dumps(content),
            tool_call_id=call["id"],
            name=call["name"],
        )

    def failed(call: dict[str, Any], e: EffectError) -> ToolMessage:
        return ToolMessage(
            content=json.dumps(tell(e)), tool_call_id=call["id"], name=call["name"], status="error"
        )

    def params(request: Any) -> tuple[dict[str, Any], str, bool, dict[str, Any]]:
        call = request.tool_call
        where = scope(request) if callable(scope) else scope
        again = bool(new_request(request)) if new_request is not None else False
        ident = idents[call["name"]]
        return call, where, again, {"principal": who(principal, request), "identity": ident}

    def wrap(request: Any, execute: Callable[[Any], Any]) -> Any:
        call = request.tool_call
        if only is not None and call["name"] not in only:
            return execute(request)
        _refuse_sync_run(request.tool, call["name"])
        call, where, again, kw = params(request)
        try:
            out = guard(
                log,
                call["id"],
                call["name"],
                dict(call["args"]),
                where,
                lambda _t: checked(execute(request)),
                status,
                again,
                saved,
                **kw,
            )
        except EffectError as e:
            return failed(call, e)
        return message(call, out)

    async def awrap(request: Any, execute: Callable[[Any], Awaitable[Any]]) -> Any:
        call = request.tool_call
        if only is not None and call["name"] not in only:
            return await execute(request)
        call, where, again, kw = params(request)

        async def run(_t: Ticket) -> Any:
            return checked(await execute(request))

        try:
            out = await aguard(
                log,
                call["id"],
                call["name"],
                dict(call["args"]),
                where,
                run,
                status,
                again,
                saved,
                **kw,
            )
        except EffectError as e:
            return failed(call, e)
        return message(call, out)

    return ToolNode(tools, wrap_tool_call=wrap, awrap_tool_call=awrap, **node_kw)


def schema_identity(tool: Any, fields: Fields = None, skip: Iterable[str] = ()) -> Identity:
    """A LangChain tool's identity from its ``args_schema`` (a Pydantic model or a JSON
    Schema), without the arguments in `skip` (injected ones: not the model's); from its
    input schema where it declares none."""
    schema = getattr(tool, "args_schema", None)
    if schema is None:
        schema = tool.get_input_schema()
    if not isinstance(schema, dict):
        schema = schema.model_json_schema()
    drop = frozenset(skip)
    if drop:
        props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in drop}
        req = [k for k in schema.get("required") or () if k not in drop]
        schema = {**schema, "properties": props, "required": req}
    return Identity.from_schema(schema, fields, tool.name)


def _async_only(tool: Any) -> bool:
    """A LangChain tool with a coroutine and no sync function (``@tool async def``)."""
    return getattr(tool, "func", True) is None and getattr(tool, "coroutine", None) is not None


def _refuse_sync_run(tool: Any, name: str) -> None:
    if _async_only(tool):
        raise IntentLogError(
            f"The {name} was not done: nothing was sent and no intent was "
            f"recorded. Tool {name!r} is async and the graph ran it "
            "synchronously (graph.invoke): run the graph with graph.ainvoke "
            "(or astream)."
        )


def _recovery_run(tool: BaseTool) -> Callable[[dict[str, Any]], Any]:
    """How `recover_settle` performs `tool`'s effect from its arguments (awaitable for an
    async-only tool)."""
    if _async_only(tool):
        return lambda args: tool.ainvoke(args)
    return lambda args: tool.invoke(args)
