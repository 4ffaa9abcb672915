"""CrewAI tools: a ``BaseTool`` (``@tool``, a ``BaseTool`` subclass, or a plain function)
whose calls go through the intent log, sync (``run``/``_run``, `guard`) and async
(``arun``/``_arun``, `aguard`, the tool's coroutine awaited inside the guard); under an
``Agent`` in a ``Crew``, native function calling or the ReAct text loop alike.

CrewAI does not give a tool its call's id, so each call is proposed under a fresh id; the
log keys the call by its canonical intent anyway, so the model's retry after a lost answer
meets the first record and the provider sees one effect. A call that did not take effect
through this call returns a CrewAI ``ToolFailure`` whose message (what the model reads) is
`tell`'s JSON: plain words saying whether the effect may have happened; CrewAI records it in
``TaskOutput.tool_failures`` and applies the tool failure policy (``warn`` by default: the
run goes on; ``raise`` ends it).

Limitations
-----------
CrewAI's tool cache is off for a guarded tool: it keys by tool and arguments only, so a new
request with the same arguments would get the old answer with no effect, and an unknown
outcome would be answered from it without asking the log. An async tool called with ``run``
runs in a fresh event loop (CrewAI's own behaviour), so not from inside a running loop.
"""

import inspect
import json
import uuid
from typing import Any, Callable, Optional, Union

from toolcommit.runtime.frameworks import common as C
from toolcommit.runtime.shims import EffectError, aguard, guard, tell


def _never_cached(_args: Any = None, _result: Any = None) -> bool:
    """CrewAI's ``cache_function`` for a guarded tool (see Limitations)."""
    return False


# the settings of `tool` the guarded tool keeps, where this CrewAI has them
_KEPT = (
    "name",
    "description",
    "args_schema",
    "result_schema",
    "result_as_answer",
    "max_usage_count",
    "tool_failure_policy",
    "env_vars",
)


def _told(e: EffectError) -> Any:
    """What the model gets for `e`: a ``ToolFailure`` where this CrewAI has them."""
    said = tell(e)
    try:
        from crewai.tools.tool_failure import ToolFailure
    except ImportError:  # CrewAI before tool failures
        return json.dumps(said)
    return ToolFailure(message=json.dumps(said), details=said)


def crewai_tool(
    log: C.LogOrOpener,
    tool: Any,
    *,
    scope: Union[str, Callable[..., str]],
    status: Optional[Callable[..., Any]] = None,
    new_request: Optional[Callable[..., Any]] = None,
    principal: C.Principal = None,
    identity: C.Fields = None,
) -> Any:
    """A CrewAI ``BaseTool`` with `tool`'s name, description and argument schema, running
    `tool` through the intent log.

    Parameters
    ----------
    log : IntentLog or callable() -> IntentLog
    tool : crewai.tools.BaseTool or callable
        Performs the effect, reading the key and fence to send from `current_ticket()`. A
        function (sync or ``async def``, with a docstring) is made a tool by ``crewai.tool``.
    scope : str or callable(args) -> str
        Name the user's request in it, so two real requests are two intents.
    status : callable(Ticket) -> result or None, optional
        The provider's status read, where the log's design reads one.
    new_request : callable(args) -> bool, optional
        The user asked again: an intent given up gets a new attempt.
    principal : str or callable(args) -> str
        Who asked (the user, tenant or authenticated client): part of the intent, required
        under a design with ``reask=hold`` (every shipped one).
    identity : sequence of str, optional
        The arguments that make two requests one intent (default: all of them), checked
        against the tool's ``args_schema``, by which the arguments are normalized
        (`toolcommit.runtime.identity`).
    """
    from crewai.tools import BaseTool
    from crewai.tools import tool as as_tool
    from crewai.tools.base_tool import Tool

    inner = tool if isinstance(tool, BaseTool) else as_tool(tool)
    if isinstance(inner, Tool):  # @tool: one function, sync or async
        has_async = inspect.iscoroutinefunction(inner.func)
        body = inner.func
    else:  # a subclass: _run, and _arun if defined
        has_async = type(inner)._arun is not BaseTool._arun
        body = inner._run
    C.checked(log, body, status, inner.name, principal)
    fields = list(inner.args_schema.model_fields)
    ident = C.Identity.from_model(inner.args_schema, identity, inner.name)

    def params(a: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, ...]:
        args = ident.normalize({**dict(zip(fields, a)), **kw})
        cid = f"call-{uuid.uuid4().hex[:12]}"  # CrewAI gives no call id to a tool
        return (
            C.serving(log, inner.name),
            cid,
            inner.name,
            args,
            C.where(scope, args),
            C.again(new_request, args),
            {"principal": C.who(principal, args), "identity": ident},
        )

    class Guarded(BaseTool):  # type: ignore[misc, unused-ignore]
        def _run(self, *a: Any, **kw: Any) -> Any:
            if has_async and isinstance(inner, Tool):
                return self._arun(*a, **kw)  # a coroutine: ``run`` runs it
            the_log, cid, name, args, where, new, who = params(a, kw)
            try:
                return guard(
                    the_log,
                    cid,
                    name,
                    args,
                    where,
                    lambda _t: inner._run(**args),
                    status,
                    new,
                    **who,
                )
            except EffectError as e:
                return _told(e)

        async def _arun(self, *a: Any, **kw: Any) -> Any:
            the_log, cid, name, args, where, new, who = params(a, kw)
            method = inner._arun if has_async else inner._run
            try:
                return await aguard(
                    the_log,
                    cid,
                    name,
                    args,
                    where,
                    lambda _t: method(**args),
                    status,
                    new,
                    **who,
                )
            except EffectError as e:
                return _told(e)

    C.registered(
        log,
        inner.name,
        inner._arun if has_async else inner._run,
        status,
        C.module_of(inner.func if isinstance(inner, Tool) else inner),
    )
    kept = {f: getattr(inner, f) for f in _KEPT if f in BaseTool.model_fields}
    return Guarded(**kept, cache_function=_never_cached)
