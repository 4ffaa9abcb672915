"""The library's exceptions, one tree under `toolcommit.model.errors.ToolcommitError`.

`IntentLogError`: a call the log cannot decide, or a misuse it refuses; `Superseded`: another
process opened this writer name; `Forked`: a log used in a forked child. `EffectError` and
its kinds (`Conflict`, `GaveUp`, `InDoubt`, `Held`, `Answered`): a call that did not take
effect through this call site, and what the model is told (`guard`, `effectful`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Optional

from toolcommit.model.errors import ToolcommitError
from toolcommit.runtime.store.base import StoreError

if TYPE_CHECKING:
    from toolcommit.runtime.records import Record

#: whether a call's effect happened, as the model is told (`EffectError.happened`)
Happened = Literal["yes", "no", "unknown"]

__all__ = [
    "Happened",
    "Answered",
    "Conflict",
    "EffectError",
    "Forked",
    "GaveUp",
    "Held",
    "InDoubt",
    "IntentLogError",
    "StoreError",
    "Superseded",
]


class IntentLogError(ToolcommitError):
    """A call the log cannot decide (no canonical form, not a JSON object)."""


class Superseded(IntentLogError):
    """Another process opened this writer name: this one must stop writing."""


class Forked(IntentLogError, StoreError):
    """The log is used in a child forked after it was opened (`toolcommit.runtime.forked`):
    refused at every use; its `close` there writes nothing (the leases are the parent's)."""


class EffectError(IntentLogError):
    """The call did not take effect through this call site; `record` says where it stands
    and `happened` whether the effect happened (`Happened`)."""

    happened: Happened = "unknown"

    def __init__(
        self, message: str, record: Optional[Record] = None, happened: Optional[Happened] = None
    ):
        super().__init__(message)
        self.record = record
        if happened is not None:
            self.happened = happened

    def tell(self) -> str:
        """What the model is told (a sentence it can pass on to the user)."""
        return str(self)


class Conflict(EffectError):
    """An exclusive tool's scope already holds another live intent: nothing was sent."""

    happened: Happened = "no"


class GaveUp(EffectError):
    """The intent's record is settled without an effect this log can show (DEAD_LETTER,
    COMPENSATED or cancelled). `happened` is ``"no"`` after a status read the design trusts
    (or a cancel before dispatch), ``"unknown"`` where nothing can be read (at-most-once: an
    email may have been sent). A new attempt is the user's: ``new_request=True``."""


class InDoubt(EffectError):
    """The outcome is unknown for now (a status read failed or the design defers it, or
    another live writer holds the record). Never retry by hand: the log settles it."""


class Held(InDoubt):
    """``reask=hold``: an earlier call of the same tool and arguments in another scope (the
    user's earlier request) is still unsettled after the log's `wait`: nothing was sent."""


class Answered(EffectError):
    """``reask=hold``: an earlier call of the same tool and arguments in another scope
    settled without its caller hearing it, and answers this one: nothing was sent. `result`
    is the earlier effect's (``happened="yes"``), or None where it was given up and may have
    happened (``"unknown"``). The user's next request proceeds."""

    def __init__(
        self,
        message: str,
        record: Optional[Record] = None,
        happened: Optional[Happened] = None,
        result: Any = None,
    ):
        super().__init__(message, record, happened)
        self.result = result
