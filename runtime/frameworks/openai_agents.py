"""The OpenAI Agents SDK: a function tool (sync or ``async def``) whose calls go through the
intent log (`toolcommit.runtime.shims.guard`, or `aguard`, awaited inside the guard).

The model's call id (``ToolContext.tool_call_id``) is evidence only: the log keys the call by
its canonical intent, so the model's retry under a new id meets the first record. A call that
did not take effect through this call returns `tell`'s dict to the model (the SDK shows it as
the tool's output): plain words saying whether the effect may have happened.

Limitations
-----------
The guard runs inside the SDK's tool call, so the SDK's failure handler never sees an
unknown outcome as an error string; an `IntentLogError` (the log itself failing) still
reaches it. In recovery (`recover_settle`) a tool taking the context gets ``None`` for it.
A sync tool runs in a worker thread (``asyncio.to_thread``, as the SDK runs one); its
outcome counts as heard only once it is back with the SDK, so a ``timeout_seconds`` that
passes while the thread runs on leaves it unheard: the user's re-ask in a new request gets
it (`Answered`), never a second effect.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

from toolcommit.runtime.frameworks import common as C
from toolcommit.runtime.shims import tell

if TYPE_CHECKING:
    from agents import FunctionTool


def _takes_ctx(params: Sequence[inspect.Parameter]) -> bool:
    from agents import RunContextWrapper
    from agents.tool_context import ToolContext

    if not params:
        return False
    ann = params[0].annotation
    names = ("ToolContext", "RunContextWrapper")
    return (
        params[0].name in ("ctx", "context")
        or ann in (ToolContext, RunContextWrapper)
        or (isinstance(ann, str) and ann.split("[")[0] in names)
    )


def openai_agents_tool(
    log: C.LogOrOpener,
    fn: Callable[..., Any],
    *,
    scope: C.Scope,
    name: Optional[str] = None,
    status: C.Status = None,
    new_request: Optional[Callable[..., Any]] = None,
    principal: C.Principal = None,
    identity: C.Fields = None,
    **tool_kw: Any,
) -> FunctionTool:
    """A ``FunctionTool`` (``agents.function_tool``) running `fn` through the intent log.

    Parameters
    ----------
    log : IntentLog or callable() -> IntentLog
    fn : callable
        Performs the effect, reading the key and fence to send from `current_ticket()`; its
        first parameter may be the ``ToolContext`` (named ``ctx`` or annotated).
    scope : str or callable(ctx, args) -> str
        Name the user's request in it, so two real requests are two intents.
    status : callable(Ticket) -> result or None, optional
        The provider's status read, where the log's design reads one.
    new_request : callable(ctx) -> bool, optional
        The user asked again: an intent given up gets a new attempt.
    principal : str or callable(ctx, args) -> str
        Who asked (the user, tenant or authenticated client): part of the intent, required
        under a design with ``reask=hold`` (every shipped one).
    identity : sequence of str, optional
        The arguments that make two requests one intent (default: all of them), checked
        against the tool's ``params_json_schema``, by which the arguments are normalized
        (`toolcommit.runtime.identity`).
    **tool_kw
        Passed to ``function_tool`` (``description_override``, ``strict_mode``...).
    """
    from agents import function_tool
    from agents.tool_context import ToolContext

    tool = name or fn.__name__
    C.checked(log, fn, status, tool, principal)
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    takes_ctx = _takes_ctx(params)
    skip = (params[0].name,) if takes_ctx else ()

    def prepare(ctx: Any, *a: Any, **kw: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        bound, args = C.bound_args(sig, ((ctx,) + a) if takes_ctx else a, kw, skip)
        args = C.normalized(ident, bound, args)
        return (
            C.serving(log, tool),
            ctx.tool_call_id,
            tool,
            args,
            C.where(scope, ctx, args),
            lambda _t: fn(*bound.args, **bound.kwargs),
            status,
            C.again(new_request, ctx),
        ), {"principal": C.who(principal, ctx, args), "identity": ident}

    wrapper: Any = C.guarded(fn, prepare, tell)  # a function: its metadata set below
    if not inspect.iscoroutinefunction(fn):  # in a thread, as the SDK runs a sync tool
        wrapper = C.heard_in_thread(wrapper, log)
    wrapper.__name__, wrapper.__doc__, wrapper.__wrapped__ = tool, fn.__doc__, fn
    wrapper.__module__ = fn.__module__
    ctx_param = inspect.Parameter(
        "ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ToolContext
    )
    rest = params[1:] if takes_ctx else params
    wrapper.__signature__ = sig.replace(parameters=[ctx_param] + rest)
    wrapper.__annotations__ = {
        **{k: v for k, v in getattr(fn, "__annotations__", {}).items() if k not in skip},
        "ctx": ToolContext,
    }
    run = (lambda **args: fn(None, **args)) if takes_ctx else fn
    C.registered(log, tool, run, status, fn.__module__)
    made = function_tool(wrapper, name_override=tool, **tool_kw)
    ident = C.Identity.from_schema(made.params_json_schema, identity, tool)
    return made
