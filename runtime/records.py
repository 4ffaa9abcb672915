"""The values the intent log hands out: `Record`, `Decision`, `Ticket`, and the key format."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, Optional, Sequence

from toolcommit.model.states import OPEN as OPEN_STATES
from toolcommit.runtime.store.base import StoreError

#: what the log decides about a proposal (`Decision`)
DecisionKind = Literal["accepted", "duplicate", "conflict", "held", "answered"]
#: what a request is for (`Ticket`): a dispatch, the same request again, a status read
Purpose = Literal["apply", "replay", "status"]


@dataclass(frozen=True)
class Record:
    """One intent record, as the store holds it."""

    key: str
    intent: str  # canonical digest (v1) of (tool, args, scope)
    epoch: int
    tool: str
    scope: str
    args: dict[str, Any]
    call_id: str  # the call that created it (evidence, not identity)
    state: str
    fence: int
    owner: Optional[str]
    owner_inc: int
    lease_until: float
    result: Optional[object] = None
    first_sent: Optional[float] = None  # store clock: the first send (the replay window)
    sent_at: Optional[float] = None  # store clock: the last send ended (the delay bound)

    @property
    def settled(self) -> bool:
        return self.state not in OPEN_STATES


@dataclass(frozen=True)
class Decision:
    """What the log decided about one proposal (`DecisionKind`): ``accepted``,
    ``duplicate`` (the key has a record: `record` is it), ``conflict`` (an exclusive tool's
    scope holds another live intent: `record` is that one), and under a design that holds a
    re-ask (``reask=hold``) ``held`` (an earlier call of the same content in another scope
    is still open: `record` is it; nothing written) or ``answered`` (such a call settled
    without its caller hearing it, and answers this one: `record` is it). `ticket`: what to
    send, when the proposal was accepted and dispatched in the same transaction
    (``propose(..., dispatch=True)``), else None."""

    decision: DecisionKind
    key: str
    record: Record
    ticket: Optional["Ticket"] = None

    @property
    def accepted(self) -> bool:
        return self.decision == "accepted"


@dataclass(frozen=True)
class Ticket:
    """What to send with one request: the `idempotency_key` and `fence` (None where the
    design sends none), its `purpose` (``apply`` a dispatch, ``replay`` the same request again
    under the same key, ``status`` a status read), the call's content, `via` (where a status
    read must look: ``list`` or ``search``) and `sdk_retries` (whether the client library may
    re-send by itself; turn its retries off when False), `key_header` (the header the
    provider reads the key from: what `toolcommit.runtime.wire` stamps). `generation` is the log's own
    fence counter, the compare-and-set token of `ack` and `timeout`."""

    key: str
    idempotency_key: Optional[str]
    fence: Optional[int]
    purpose: Purpose
    tool: str
    args: dict[str, Any]
    scope: str
    epoch: int
    generation: int = 0
    via: str = "search"
    sdk_retries: bool = False
    key_header: Optional[str] = None


def semantic_key(digest: str, epoch: int) -> str:
    """The record key (also the idempotency key sent to the provider)."""
    return f"tc1-{digest[:32]}-e{epoch}"


def record_of(row: Sequence[Any]) -> Record:
    (
        key,
        intent,
        epoch,
        tool,
        scope,
        args,
        call_id,
        state,
        fence,
        owner,
        owner_inc,
        lease_until,
        _slot,
        result,
        first_sent,
        sent_at,
    ) = row
    return Record(
        key,
        intent,
        int(epoch),
        tool,
        scope,
        _json(key, "args", args),
        call_id,
        state,
        int(fence),
        owner,
        int(owner_inc),
        float(lease_until),
        None if result is None else _json(key, "result", result),
        None if first_sent is None else float(first_sent),
        None if sent_at is None else float(sent_at),
    )


def _json(key: str, column: str, text: Any) -> Any:
    """The JSON value a record's `column` holds; `StoreError` (one line) where it is not
    JSON: the log was written by something other than the library."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as e:
        raise StoreError(
            f"record {key}: its {column} is not JSON ({e}): the log was changed outside "
            "toolcommit; restore it from a backup, or remove the record"
        ) from None
