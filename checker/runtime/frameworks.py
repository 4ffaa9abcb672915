"""Framework wrappers (optional extra ``frameworks``): Pydantic AI tools and LangGraph's
ToolNode, each call going through `toolcommit.runtime.shims.guard`.

The model's tool-call id (Pydantic AI's ``ctx.tool_call_id``, LangGraph's
``tool_call["id"]``) is passed as evidence, never as identity: the log keys the call by its
canonical intent, so a call re-issued under a new id, or paraphrased, meets the first
record. Inside the tool, `toolcommit.runtime.shims.current_ticket()` gives the idempotency
key and fence to send.

Limitations
-----------
Both wrappers run the log's decisions synchronously (a few milliseconds on SQLite) and wrap
synchronous tools: Pydantic AI runs a sync tool in a thread; for LangGraph, the wrapper is
``wrap_tool_call`` (``graph.invoke``), not the async ``awrap_tool_call``.
"""
from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Iterable, Optional, Union

from toolcommit.checker.runtime.log import IntentLog
from toolcommit.checker.runtime.shims import EffectError, guard


def _failure(e: EffectError) -> dict:
    """What the model is told when a call did not take effect through it."""
    rec = e.record
    return {"toolcommit": type(e).__name__, "detail": str(e),
            "intent": rec.key if rec else None, "state": rec.state if rec else None}


def pydantic_ai_tool(log: IntentLog, fn: Callable, *, scope: Union[str, Callable],
                     name: Optional[str] = None, status=None, compensate=None, **tool_kw):
    """A ``pydantic_ai.Tool`` running `fn` through the intent log.

    `fn` performs the effect (its first parameter may be the ``RunContext``); `scope` is a
    string or ``scope(ctx, args) -> str``. A call that does not take effect through this
    call (a conflict, a given-up or in-doubt intent) returns a small dict saying so, for
    the model to read, instead of raising.
    """
    from pydantic_ai import RunContext, Tool

    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    takes_ctx = bool(params) and (params[0].name == "ctx" or params[0].annotation is RunContext)
    tool = name or fn.__name__

    def wrapper(ctx, *a, **kw):
        bound = (sig.bind(ctx, *a, **kw) if takes_ctx else sig.bind(*a, **kw))
        bound.apply_defaults()
        args = {k: v for k, v in bound.arguments.items() if not (takes_ctx and v is ctx)}
        where = scope(ctx, args) if callable(scope) else scope
        try:
            return guard(log, ctx.tool_call_id, tool, args, where,
                         lambda t: fn(*bound.args, **bound.kwargs), status, compensate)
        except EffectError as e:
            return _failure(e)

    wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
    wrapper.__annotations__ = {**getattr(fn, "__annotations__", {}), "ctx": RunContext}
    if not takes_ctx:
        ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                      annotation=RunContext)
        sig_out = sig.replace(parameters=[ctx_param] + params)
    else:
        sig_out = sig
    wrapper.__signature__ = sig_out
    return Tool(wrapper, takes_ctx=True, name=tool, **tool_kw)


def langgraph_tool_node(log: IntentLog, tools: Iterable, *, scope: Union[str, Callable],
                        effectful: Optional[Iterable[str]] = None, status=None, compensate=None,
                        **node_kw):
    """A ``langgraph.prebuilt.ToolNode`` whose effectful tools run through the intent log.

    `effectful` names the tools that change the world (all, if None); others run as
    usual. `scope` is a string or ``scope(request) -> str`` (the ``ToolCallRequest``: its
    ``state`` holds the graph's state). An error ``ToolMessage`` from the tool (ToolNode
    turns exceptions into those) is an unknown outcome: reconciled, never re-run. A call
    that does not take effect through this call returns an error ``ToolMessage`` saying why.
    """
    from langchain_core.messages import ToolMessage
    from langgraph.prebuilt import ToolNode

    only = None if effectful is None else frozenset(effectful)

    class _Failed(Exception):
        pass

    def wrap(request, execute):
        call = request.tool_call
        if only is not None and call["name"] not in only:
            return execute(request)
        where = scope(request) if callable(scope) else scope

        def run(_ticket):
            out = execute(request)
            if isinstance(out, ToolMessage) and out.status == "error":
                raise _Failed(str(out.content))
            return out
        try:
            out = guard(log, call["id"], call["name"], dict(call["args"]), where, run, status,
                        compensate, saved=lambda m: {"content": m.content}
                        if isinstance(m, ToolMessage) else m)
        except EffectError as e:
            return ToolMessage(content=json.dumps(_failure(e)), tool_call_id=call["id"],
                               name=call["name"], status="error")
        if isinstance(out, ToolMessage):
            return out
        content: Any = out.get("content", out) if isinstance(out, dict) else out
        return ToolMessage(content=content if isinstance(content, str) else json.dumps(content),
                           tool_call_id=call["id"], name=call["name"])

    return ToolNode(list(tools), wrap_tool_call=wrap, **node_kw)
