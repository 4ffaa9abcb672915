"""The model's value encodings, shared by the builders (`semantics`, `provider`, `faults`).

Every state variable holds a small integer; these tables name the values. Record states
come from `spec/protocol.json` in spec order (index 0, PROPOSED, means "no record yet").

Examples
--------
>>> RV["PROPOSED"], MSG_VALUES[M_ERR], SEEN_VALUES[S_ERR]
(0, 'ERR', 'saved error')
"""

from __future__ import annotations

from toolcommit.spec import protocol

from .expr import Const
from .states import GAVE_UP as GAVE_UP  # re-exported: the builders read them here
from .states import IN_DOUBT as IN_DOUBT
from .states import OPEN, TERMINAL

PROP_VALUES = ("ABSENT", "PROPOSED", "RECORDED", "REJECTED_DUPLICATE", "REJECTED_CONFLICT")
P_ABSENT, P_PROPOSED, P_RECORDED, P_DUP, P_CONFLICT = range(5)

# A request slot (one per key and fence). ERR (an error response is pending) exists only
# where a profile lets the provider answer with errors; otherwise the slot has 6 values.
MSG_VALUES = ("NONE", "INFLIGHT", "DELAYED", "ACK", "LOST", "DONE", "ERR")
M_NONE, M_INFLIGHT, M_DELAYED, M_ACK, M_LOST, M_DONE, M_ERR = range(7)
PLAIN_MSG = 6  # slot values without ERR

# What the provider's idempotency layer remembers for a token: nothing, the saved success,
# or a saved error (only where errors are modelled; otherwise 0/1).
SEEN_VALUES = ("unseen", "saved ok", "saved error")
S_UNSEEN, S_OK, S_ERR = range(3)

# The fence seal as a message (only where a profile makes it one).
SEAL_VALUES = ("NONE", "SENT", "ACK", "LOST")
SEAL_NONE, SEAL_SENT, SEAL_ACK, SEAL_LOST = range(4)

# Fault budgets only an environment profile raises (zero in every spec instance); an
# instance's bounds list them only when set, so records made under `ideal` do not change.
ENV_FAULTS = (
    "errors_before",
    "errors_after",
    "key_expiries",
    "stale_reads",
    "seal_losses",
    "deadlines",
    "failovers",
)

# Budgets an instance's bounds list only when set: the real systems' faults, and the user's
# second request (`new_intents`, set only by the instance that has a second intent) and the
# caller's deadline (`caller_deadlines`, likewise), so the records of every instance without
# one do not change.
LISTED_WHEN_SET = ENV_FAULTS + ("new_intents", "caller_deadlines")

CAP = 2  # effect counters saturate here: two effects already break I1
MONITOR_ORDER = ("LEGAL", "P2", "FENCE", "P3", "OWN")  # the flags' order in the packed state


def record_values() -> tuple[str, ...]:
    """Record states in spec order; index 0 (PROPOSED) means 'no record yet'."""
    return tuple(protocol().record.states)


RV = {name: i for i, name in enumerate(record_values())}
SETTLED = TERMINAL  # the record states' classes: `toolcommit.model.states`, from the spec
P2_ALLOWED = ("UNKNOWN", "RECONCILING", "COMPENSATED", "DEAD_LETTER")
UNSETTLED = OPEN


def r(*names: str) -> tuple[int, ...]:
    """Record-state values of `names`."""
    return tuple(RV[n] for n in names)


def const(v: int) -> Const:
    return Const(v)
