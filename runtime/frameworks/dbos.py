"""DBOS steps: a step (sync or ``async def``) whose runs go through the intent log,
``WORKFLOW_ID:STEP_ID`` as the call id and the workflow id as the scope.

DBOS re-runs a step whose output it did not record (a crash inside it, recovered under the
same step id) and a workflow may call it again (a new step id); both meet the first record, so
the provider sees one effect. A run that did not take effect through this run raises the
library's `Conflict`, `GaveUp` or `InDoubt` (an `EffectError`: its message is the truth, the
effect may or may not have happened; `tell(e)` gives a model the same words), which DBOS
records as the step's outcome. With ``retries_allowed`` DBOS retries an outcome in doubt
through the log (a later attempt may meet it settled), never a final answer, and a step that
exhausts its attempts raises the last attempt's `EffectError` (its words), not DBOS's
"exceeded its maximum of N retries".

Limitations
-----------
The scope is the workflow id: one intent per workflow, tool and arguments (pass `scope` to
name each request when a workflow repeats an effect on purpose). A step called outside a
workflow needs `scope`.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Optional

from toolcommit.runtime.frameworks import common as C
from toolcommit.runtime.shims import EffectError, InDoubt


def dbos_step(
    log: C.LogOrOpener,
    fn: Callable[..., Any],
    *,
    name: Optional[str] = None,
    scope: Optional[C.Scope] = None,
    status: C.Status = None,
    new_request: Optional[Callable[..., Any]] = None,
    principal: C.Principal = None,
    identity: C.Fields = None,
    **step_kw: Any,
) -> Callable[..., Any]:
    """`fn` as a DBOS step (``DBOS.step``) running through the intent log; `log`, `fn`,
    `name` and `status` as `temporal_activity` takes them.

    `scope` is a string or ``scope(workflow_id, args)`` (the workflow id by default);
    ``new_request(workflow_id) -> bool`` says the user asked again; `principal` (who
    asked: a string or ``principal(workflow_id, args)``, required under ``reask=hold``) and
    `identity` (the arguments that make two requests one intent) as `temporal_activity`
    takes them; other keywords go to ``DBOS.step`` (``retries_allowed``, ``max_attempts``...).
    """
    from dbos import DBOS

    tool = name or fn.__name__
    C.checked(log, fn, status, tool, principal)
    sig = inspect.signature(fn)
    ident = C.Identity.from_signature(fn, identity, tool)

    def prepare(*a: Any, **kw: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        wf = DBOS.workflow_id
        bound, args = C.bound_args(sig, a, kw)
        args = C.normalized(ident, bound, args)
        return (
            C.serving(log, tool),
            f"{wf}:{DBOS.step_id}",
            tool,
            args,
            C.where(scope, wf, args, default=wf),
            lambda _t: fn(*bound.args, **bound.kwargs),
            status,
            C.again(new_request, wf),
        ), {"principal": C.who(principal, wf, args), "identity": ident}

    run = functools.update_wrapper(C.guarded(fn, prepare), fn)
    C.registered(log, tool, fn, status, fn.__module__)
    if step_kw.get("retries_allowed") and "should_retry" not in step_kw:
        step_kw["should_retry"] = _worth_retrying
    return _with_words(DBOS.step(name=tool, **step_kw)(run))


def _worth_retrying(e: BaseException) -> bool:
    """Whether DBOS retries a step that raised `e`: an outcome still in doubt (`InDoubt`,
    `Held`: a later attempt may meet it settled) or a failure not the guard's; never a final
    answer (`Conflict`, `GaveUp`, `Answered`), which DBOS then records in the guard's words."""
    return not isinstance(e, EffectError) or isinstance(e, InDoubt)


def _with_words(step: Callable[..., Any]) -> Callable[..., Any]:
    """`step` raising the guard's own `EffectError` where DBOS gave up retrying it (its
    ``DBOSMaxStepRetriesExceeded`` says only "exceeded its maximum of N retries"): the
    last attempt's words, which the model must get (its `__cause__`: DBOS's error)."""
    from dbos._error import DBOSMaxStepRetriesExceeded  # not exported by dbos itself

    def words(e: DBOSMaxStepRetriesExceeded) -> BaseException:
        last = e.errors[-1] if e.errors else None
        return last if isinstance(last, EffectError) else e

    if inspect.iscoroutinefunction(step):

        async def acall(*a: Any, **kw: Any) -> Any:
            try:
                return await step(*a, **kw)
            except DBOSMaxStepRetriesExceeded as e:
                raise words(e) from e

        return functools.update_wrapper(acall, step)

    def call(*a: Any, **kw: Any) -> Any:
        try:
            return step(*a, **kw)
        except DBOSMaxStepRetriesExceeded as e:
            raise words(e) from e

    return functools.update_wrapper(call, step)
