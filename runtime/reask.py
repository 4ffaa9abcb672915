"""A re-ask meets the intent in doubt: the log's side of the design knob `reask=hold`.

The user, told a call may or may not have happened, asks again in a new message; its scope
(the request id the runtime mints) makes a new key, so the log sees no duplicate. Under
``reask=hold`` (`spec/PROTOCOL.md`, "A re-ask while in doubt"; proved on instance
``reask_in_doubt``) a new call of the same tool and the *same* arguments in another scope
meets the earlier record:

- the earlier record is open (RECORDED, DISPATCHED, UNKNOWN, RECONCILING): ``held`` (the
  guard waits for it to settle, at most the log's `wait`; nothing is written);
- it settled and its outcome never reached a caller that asked (`heard`: the guard
  returned it to its caller, or a framework gave it to the model): ``answered`` (ACKED:
  not sent, the earlier result is the answer; given up where the design cannot tell "did
  not happen", `Design.settles_by_read` false: refused, it may have happened). The earlier
  outcome is marked told once that answer reaches its caller (`heard`);
- otherwise (told, given up after a read the design trusts, compensated, cancelled): the
  call is inserted as usual.

"The same arguments" is the canonical form (`model/canon.py`) of the call's identity
arguments (`toolcommit.runtime.identity`: the tool's identity fields, or the log's ``same=``
rule, a tuple of argument names or a dict of tool -> one; all of them by default) and its
principal, the scope left out (`content`): a re-ask is held only for the same principal,
so no call is ever answered with another principal's outcome. `rule_for` picks a tool's
rule from a log-wide rule or a per-tool dict.

Pure functions over one open transaction (`tx`); the log calls them inside its own. The
writes of a fresh proposal and of its ack are given as statements (`remember_sql`,
`told_sql`), which the log runs in its transaction or sends with the decision in one
statement (`Store.once`). "Told" is the caller's side: an ack notes it only where the
caller gets the outcome at once (a direct call); otherwise the guard or the framework
wrapper writes `heard` once the outcome reached the caller, never for a caller that gave
up or was cancelled (a sync tool's thread that finished after its caller's deadline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Optional, Union

from toolcommit.model.canon import CanonError, canonical_intent, intent_scope
from toolcommit.model.states import GAVE_UP
from toolcommit.model.states import OPEN as OPEN_STATES
from toolcommit.runtime.store import asks as A
from toolcommit.runtime.store.base import Tx

if TYPE_CHECKING:
    from toolcommit.runtime.records import Record

Rule = Optional[tuple[str, ...]]
SameRule = Union[Rule, Mapping[str, Rule]]


def check_same(same: Any) -> SameRule:
    """`same` if it is a rule (None, a tuple of argument names, a dict of tool -> one),
    as tuples; `ValueError` naming the fix otherwise (a function of the arguments cannot
    be stored in the log as the tool's rule)."""

    def one(rule: Any, where: str) -> Rule:
        if rule is None:
            return None
        if isinstance(rule, str) or not isinstance(rule, (tuple, list)):
            raise ValueError(
                f"same={where} must be a tuple of argument names (the identity fields), "
                f"got {rule!r}: a function of the arguments is no longer taken; declare "
                "the fields with identity= on the tool's wrapper"
            )
        if not all(isinstance(n, str) for n in rule):
            raise ValueError(f"same={where} must name arguments (strings), got {rule!r}")
        return tuple(rule)

    if isinstance(same, Mapping):
        return {str(t): one(r, f"[{t!r}]") for t, r in same.items()}
    return one(same, "")


def rule_for(same: SameRule, tool: str) -> Rule:
    """The rule for `tool`: `same` itself, or its entry for `tool` where `same` is a dict
    of tool -> rule (a tool it does not name: every argument)."""
    if isinstance(same, Mapping):
        return same.get(tool)
    return same


def check_names(tool: str, names: Any, args: dict[str, Any]) -> None:
    """`ValueError` if the log's ``same=`` rule names an argument the call does not have
    (a misspelt rule would merge every call of the tool)."""
    missing = [n for n in names if n not in args]
    if missing:
        raise ValueError(
            f"same= rule for {tool} names {', '.join(missing)}, which the "
            f"call's arguments ({', '.join(sorted(args))}) do not have"
        )


def content(tool: str, kept: dict[str, Any], principal: Optional[str] = None) -> str:
    """The digest of (tool, the identity arguments `kept`, the principal), scope left out:
    equal for a re-ask of the same thing by the same principal in any request, never for
    two principals (`intent_scope` with an empty scope).

    Raises
    ------
    ValueError
        The arguments have no canonical form.
    """
    try:
        return canonical_intent(tool, kept, intent_scope(principal, "")).digest
    except CanonError as e:
        raise ValueError(f"{tool}: no canonical form: {e}") from None


def meet(
    tx: Tx,
    get: Callable[[Tx, str], Optional[Record]],
    digest: str,
    scope: str,
    settles_by_read: bool,
    retry: bool = False,
) -> Optional[tuple[Literal["held", "answered"], Record]]:
    """What a new call of content `digest` in `scope` meets: ``("held", record)``,
    ``("answered", record)`` (the answer kept for `scope`, so a retry in that scope gets it
    again; told once it reached the caller: `heard`), or None (insert as usual). `get(tx,
    key)` reads a record. A call held once stays tied to the record it met (a row of its
    scope): when that record settles, its outcome answers the call's scope whether or not
    its own caller heard it, since this request was asked while it was in doubt. `retry`:
    the user asks again (``new_request``); where the latest
    record of `scope` was given up, an ACKED sibling answers whether or not its own caller
    heard it (instance ``reask_after_give_up``: the re-ask r2 took effect after the first
    was given up, so the retry of the first is that same intent, done)."""
    answer: Optional[Record] = None
    own: list[Record] = []
    acked: Optional[Record] = None
    for key, where, told in A.asked(tx, digest):
        rec = get(tx, key)
        if rec is None:
            continue
        if where == scope:
            if rec.scope == scope:
                own.append(rec)
            elif rec.state in OPEN_STATES:  # this scope was held by it: still open
                return "held", rec
            elif _answers(rec, settles_by_read):  # this scope met it: its outcome answers
                return "answered", rec
            continue
        if rec.scope != where:  # another scope's answer: not a record of it
            continue
        if rec.state in OPEN_STATES:  # tie this scope to it: asked while it was in doubt
            remember(tx, digest, rec.key, scope)
            return "held", rec
        if rec.state == "ACKED" and acked is None:
            acked = rec
        if not told and _answers(rec, settles_by_read) and answer is None:
            answer = rec
    if answer is None and retry and acked is not None and _gave_up(own):
        answer = acked
    if answer is None:
        return None
    remember(tx, digest, answer.key, scope, told=1)
    return "answered", answer


def _answers(rec: Record, settles_by_read: bool) -> bool:
    """Whether settled `rec`'s outcome answers a re-ask: done (ACKED), or given up where it
    may have happened (DEAD_LETTER where the design's give-up is not a final "absent")."""
    return rec.state == "ACKED" or (rec.state == "DEAD_LETTER" and not settles_by_read)


def _gave_up(own: list[Record]) -> bool:
    """Whether the latest attempt of a scope's own records was given up."""
    return bool(own) and max(own, key=lambda r: r.epoch).state in GAVE_UP


remember, remember_sql, told_sql = A.remember, A.remember_sql, A.told_sql
