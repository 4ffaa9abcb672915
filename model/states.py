"""The record states' classes, derived once from `spec/protocol.json` (the record
lifecycle): every module that asks "is this record open?" or "was it given up?" reads
these, in the spec's order.

- `TERMINAL`: the lifecycle's terminal states (settled).
- `OPEN` (unsettled): every state but the initial one (no record yet) and the terminal ones.
- `APPLIED`: the terminal states a provider's ack leads to (the effect happened).
- `GAVE_UP`: the other terminal states (settled without an effect the log can show).
- `IN_DOUBT`: the state a timeout leads to, and the open states reached from it: a request
  was sent and its outcome is not known.

Examples
--------
>>> OPEN, GAVE_UP, IN_DOUBT
(('RECORDED', 'DISPATCHED', 'UNKNOWN', 'RECONCILING'), ('COMPENSATED', 'DEAD_LETTER', 'REJECTED_CONFLICT'), ('UNKNOWN', 'RECONCILING'))
>>> sql_list(OPEN)
"('RECORDED', 'DISPATCHED', 'UNKNOWN', 'RECONCILING')"
"""

from __future__ import annotations

from toolcommit.spec import protocol

_RECORD = protocol().record


def _after(events: tuple[str, ...]) -> set[str]:
    return {e.target for e in _RECORD.edges if e.event in events}


def _in_spec_order(names: set[str]) -> tuple[str, ...]:
    return tuple(s for s in _RECORD.states if s in names)


def _in_doubt() -> tuple[str, ...]:
    """The timeout's target and every open state reachable from it through open states."""
    open_ = set(OPEN)
    found, todo = set[str](), list(_after(("timeout",)))
    while todo:
        s = todo.pop()
        if s in found or s not in open_:
            continue
        found.add(s)
        todo += [e.target for e in _RECORD.edges if e.source == s]
    return _in_spec_order(found)


TERMINAL: tuple[str, ...] = tuple(_RECORD.terminal)
OPEN: tuple[str, ...] = tuple(
    s for s in _RECORD.states if s != _RECORD.initial and s not in _RECORD.terminal
)
APPLIED: tuple[str, ...] = _in_spec_order(_after(("receive_ack",)) & set(TERMINAL))
GAVE_UP: tuple[str, ...] = tuple(s for s in TERMINAL if s not in APPLIED)
IN_DOUBT: tuple[str, ...] = _in_doubt()


def sql_list(states: tuple[str, ...]) -> str:
    """`states` as an SQL list of literals: ``('A', 'B')`` (state names are identifiers)."""
    return "(" + ", ".join(f"'{s}'" for s in states) + ")"
