"""LangChain tools: a ``BaseTool`` (``@tool``, ``StructuredTool``) whose calls go through the
intent log, sync (``invoke``, `guard`) and async (``ainvoke``, `aguard`, the tool's coroutine
awaited inside the guard); under ``create_agent``, its ``ToolNode`` and its middleware.

The call id (the ``ToolCall``'s ``id``) is evidence only: the log keys the call by its
canonical intent, so the model's retry under a new id, and a retry by LangChain's
``ToolRetryMiddleware`` under the same id, meet the first record and the provider sees one
effect. A call that did not take effect through this call ends as an error ``ToolMessage``
(``status="error"``) whose content is `tell`'s JSON: plain words saying whether the effect
may have happened. The middleware does not retry it (no exception reaches it).

Limitations
-----------
``response_format="content_and_artifact"`` tools are refused (the log keeps one result).
Injected arguments (``InjectedToolCallId``, ``InjectedState``...) are not part of the intent.
"""

import inspect
import json
import uuid
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional

from toolcommit.runtime.frameworks import common as C
from toolcommit.runtime.frameworks.pydantic_langgraph import schema_identity
from toolcommit.runtime.log import IntentLogError
from toolcommit.runtime.shims import EffectError, aguard, guard, tell

if TYPE_CHECKING:
    from langchain_core.tools import BaseTool

_CALL_ID = "__toolcommit_call_id"


def _passing(method: Callable[..., Any], config: Any, run_manager: Any) -> dict[str, Any]:
    """The ``config`` and ``run_manager`` keywords `method` (a tool's ``_run``) accepts."""
    params = inspect.signature(method).parameters
    out: dict[str, Any] = {}
    if "run_manager" in params:
        out["run_manager"] = run_manager
    if "config" in params:
        out["config"] = config
    return out


def langchain_tool(
    log: C.LogOrOpener,
    tool: "BaseTool",
    *,
    scope: C.Scope,
    status: C.Status = None,
    new_request: Optional[Callable[..., Any]] = None,
    principal: C.Principal = None,
    identity: C.Fields = None,
) -> "BaseTool":
    """A ``BaseTool`` with `tool`'s name, description and schema, running `tool` through the
    intent log.

    Parameters
    ----------
    log : IntentLog or callable() -> IntentLog
    tool : langchain_core.tools.BaseTool
        Performs the effect, reading the key and fence to send from `current_ticket()`.
    scope : str or callable(args, config) -> str
        ``config`` is the run's ``RunnableConfig`` (its ``configurable`` holds the thread id).
        Name the user's request in it, so two real requests are two intents.
    status : callable(Ticket) -> result or None, optional
        The provider's status read, where the log's design reads one.
    new_request : callable(config) -> bool, optional
        The user asked again: an intent given up gets a new attempt.
    principal : str or callable(args, config) -> str
        Who asked (the user, tenant or authenticated client): part of the intent, required
        under a design with ``reask=hold`` (every shipped one).
    identity : sequence of str, optional
        The arguments that make two requests one intent (default: all of them), checked
        against the tool's ``args_schema``, by which the arguments are normalized
        (`toolcommit.runtime.identity`).
    """
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool, ToolException

    if tool.response_format == "content_and_artifact":
        raise IntentLogError(
            f"tool {tool.name!r}: response_format='content_and_artifact' is "
            "not supported; return the content only"
        )
    async_only = isinstance(tool, StructuredTool) and tool.func is None
    C.checked(
        log,
        tool.coroutine if isinstance(tool, StructuredTool) and async_only else tool._run,
        status,
        tool.name,
        principal,
    )
    inner, injected = tool, frozenset(tool._injected_args_keys)
    ident = schema_identity(tool, identity, skip=injected)

    def params(kw: dict[str, Any], config: Any) -> tuple[Any, ...]:
        cid = kw.pop(_CALL_ID, None) or f"call-{uuid.uuid4().hex[:12]}"
        args = ident.normalize({k: v for k, v in kw.items() if k not in injected})
        return (
            C.serving(log, inner.name),
            cid,
            inner.name,
            args,
            C.where(scope, args, config),
            C.again(new_request, config),
            {"principal": C.who(principal, args, config), "identity": ident},
        )

    def failed(e: EffectError) -> NoReturn:
        raise ToolException(json.dumps(tell(e)))

    class Guarded(BaseTool):
        name: str = inner.name
        description: str = inner.description
        args_schema: Any = inner.args_schema
        handle_tool_error: Any = True

        def _to_args_and_kwargs(
            self, tool_input: Any, tool_call_id: Optional[str]
        ) -> tuple[tuple[Any, ...], dict[str, Any]]:
            a, kw = inner._to_args_and_kwargs(tool_input, tool_call_id)
            return a, {**kw, _CALL_ID: tool_call_id}

        def _run(self, *a: Any, config: RunnableConfig, run_manager: Any = None, **kw: Any) -> Any:
            if async_only:
                raise IntentLogError(
                    f"tool {inner.name!r} is async only: call it with "
                    "ainvoke (graph.ainvoke); nothing was sent"
                )
            the_log, cid, name, args, where, new, who = params(kw, config)
            extra = _passing(inner._run, config, run_manager)
            try:
                return guard(
                    the_log,
                    cid,
                    name,
                    args,
                    where,
                    lambda _t: inner._run(*a, **kw, **extra),
                    status,
                    new,
                    **who,
                )
            except EffectError as e:
                failed(e)

        async def _arun(
            self, *a: Any, config: RunnableConfig, run_manager: Any = None, **kw: Any
        ) -> Any:
            the_log, cid, name, args, where, new, who = params(kw, config)
            extra = _passing(inner._arun, config, run_manager)
            try:
                return await aguard(
                    the_log,
                    cid,
                    name,
                    args,
                    where,
                    lambda _t: inner._arun(*a, **kw, **extra),
                    status,
                    new,
                    **who,
                )
            except EffectError as e:
                failed(e)

    method = inner._arun if async_only else inner._run
    C.registered(
        log,
        inner.name,
        lambda **args: method(**args, **_passing(method, {}, None)),
        status,
        C.module_of(inner),
    )
    return Guarded()
