"""Temporal activities: an activity (sync or ``async def``) whose runs go through the intent
log, the activity id as the call id and the workflow id as the scope.

Temporal re-runs an activity whose completion it did not see (a retry: the same activity id,
the next attempt) and a workflow may schedule it again (a new activity id): both meet the
first record, as the model's retry under a new id does, so the provider sees one effect. A
run that did not take effect through this run raises a Temporal ``ApplicationError`` whose
message is the truth (the effect may or may not have happened) and whose details are
`tell`'s dict; its ``type`` is ``Conflict``, ``GaveUp`` or ``InDoubt``. ``InDoubt`` is
retryable (Temporal's next attempt meets the record and settles it as the log's design
allows); the others are not.

Limitations
-----------
The scope is the workflow id: one intent per workflow, tool and arguments (a workflow that
refunds the same amount twice on purpose passes `scope` naming each request). An activity
started outside a workflow needs `scope`.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional

from toolcommit.runtime.frameworks import common as C
from toolcommit.runtime.shims import EffectError, InDoubt, tell

if TYPE_CHECKING:
    from temporalio.exceptions import ApplicationError


def _raised(e: EffectError) -> ApplicationError:
    from temporalio.exceptions import ApplicationError

    return ApplicationError(
        str(e), tell(e), type=type(e).__name__, non_retryable=not isinstance(e, InDoubt)
    )


def temporal_activity(
    log: C.LogOrOpener,
    fn: Callable[..., Any],
    *,
    name: Optional[str] = None,
    scope: Optional[C.Scope] = None,
    status: C.Status = None,
    new_request: Optional[Callable[..., Any]] = None,
    principal: C.Principal = None,
    identity: C.Fields = None,
    **defn_kw: Any,
) -> Callable[..., Any]:
    """`fn` as a Temporal activity (``activity.defn``) running through the intent log.

    Parameters
    ----------
    log : IntentLog or callable() -> IntentLog
    fn : callable
        Performs the effect, reading the key and fence to send from `current_ticket()`.
    name : str, optional
        The activity's and the tool's name (`fn`'s name by default).
    scope : str or callable(info, args) -> str, optional
        The workflow id (``activity.info().workflow_id``) by default.
    status : callable(Ticket) -> result or None, optional
        The provider's status read, where the log's design reads one.
    new_request : callable(info) -> bool, optional
        The user asked again: an intent given up gets a new attempt.
    principal : str or callable(info, args) -> str
        Who asked (the user, tenant or authenticated client): part of the intent, required
        under a design with ``reask=hold`` (every shipped one).
    identity : sequence of str, optional
        The arguments that make two requests one intent (default: all of `fn`'s); the
        arguments are normalized by `fn`'s annotations and defaults
        (`toolcommit.runtime.identity`).
    """
    from temporalio import activity

    tool = name or fn.__name__
    C.checked(log, fn, status, tool, principal)
    sig = inspect.signature(fn)
    ident = C.Identity.from_signature(fn, identity, tool)

    def prepare(*a: Any, **kw: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        info = activity.info()
        bound, args = C.bound_args(sig, a, kw)
        args = C.normalized(ident, bound, args)
        return (
            C.serving(log, tool),
            info.activity_id,
            tool,
            args,
            C.where(scope, info, args, default=info.workflow_id),
            lambda _t: fn(*bound.args, **bound.kwargs),
            status,
            C.again(new_request, info),
        ), {"principal": C.who(principal, info, args), "identity": ident}

    def failed(e: EffectError) -> NoReturn:
        raise _raised(e) from e

    run = functools.update_wrapper(C.guarded(fn, prepare, failed), fn)
    C.registered(log, tool, fn, status, fn.__module__)
    return activity.defn(name=tool, **defn_kw)(run)
