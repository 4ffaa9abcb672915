"""The values the intent log hands out: `Record`, `Decision`, `Ticket`, and the key format."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

from toolcommit.checker.runtime.store import OPEN_STATES


@dataclass(frozen=True)
class Record:
    """One intent record, as the store holds it."""

    key: str
    intent: str          # canonical digest (v1) of (tool, args, scope)
    epoch: int
    tool: str
    scope: str
    args: dict
    call_id: str         # the call that created it (evidence, not identity)
    state: str
    fence: int
    owner: Optional[str]
    owner_inc: int
    lease_until: float
    result: Optional[object] = None

    @property
    def settled(self) -> bool:
        return self.state not in OPEN_STATES


@dataclass(frozen=True)
class Decision:
    """What the log decided about one proposal: ``accepted``, ``duplicate`` (the key has a
    record: `record` is it) or ``conflict`` (an exclusive tool's scope holds another live
    intent: `record` is that one)."""

    decision: str
    key: str
    record: Record

    @property
    def accepted(self) -> bool:
        return self.decision == "accepted"


@dataclass(frozen=True)
class Ticket:
    """What to send: the `idempotency_key` and `fence` of one request (`purpose` ``apply``
    for a dispatch, ``status`` for a reconcile's status read), with the call's content."""

    key: str
    idempotency_key: str
    fence: int
    purpose: str
    tool: str
    args: dict
    scope: str
    epoch: int


def semantic_key(digest: str, epoch: int) -> str:
    """The record key (also the idempotency key sent to the provider)."""
    return f"tc1-{digest[:32]}-e{epoch}"


def record_of(row) -> Record:
    (key, intent, epoch, tool, scope, args, call_id, state, fence, owner, owner_inc,
     lease_until, _slot, result) = row
    return Record(key, intent, int(epoch), tool, scope, json.loads(args), call_id, state,
                  int(fence), owner, int(owner_inc), float(lease_until),
                  None if result is None else json.loads(result))
