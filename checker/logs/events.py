"""The event schema, checked by hand: one decoded line in, what is wrong with it (or None) out.

The fields of `spec/log.schema.json` are written here once, as data (`COMMON`, `REQUIRED`,
`OPTIONAL`, `ONE_OF`; a test checks them against the schema). `problem` is the thorough
check and names the defect; `fast_ok` is the common case, cheaply, used on every line
(see its contract). Pure: no I/O, nothing in an event is ever evaluated.

Examples
--------
>>> problem({"type": "crash", "writer": "w1", "seq": 3})
>>> problem({"type": "crash", "writer": "w1", "seq": "3"})
"field 'seq' must be an integer from 0 to 2**63-1, found a string; fix the writer"
>>> problem({"type": "transition", "writer": "w", "seq": 1, "key": "k", "from": "PROPOSED", "to": "DONE"})
"unknown state 'DONE' in 'to'; valid states: PROPOSED, RECORDED, DISPATCHED, ACKED, UNKNOWN, RECONCILING, COMPENSATED, DEAD_LETTER, REJECTED_CONFLICT"
>>> fast_ok({"type": "crash", "writer": "w1", "seq": 3}), fast_ok({"type": "crash", "writer": "w1", "seq": 3, "x": 1})
(True, False)
"""

from __future__ import annotations

import json
from typing import Optional

from toolcommit.spec import protocol

INT_MAX = (1 << 63) - 1

STATES = tuple(protocol().record.states)
DECISIONS = ("accepted", "duplicate", "conflict")
KINDS = ("apply", "compensate")
TYPES = ("proposal", "transition", "effect", "crash", "restart")

# field -> kind: "str" (string), "int" (integer 0..2**63-1), "obj" (JSON object),
# "names" (an array of strings), "state" (a record state name), "decision", "kind".
COMMON = {"type": "str", "writer": "str", "seq": "int"}
COMMON_OPTIONAL = {"ts": "str"}
REQUIRED: dict[str, dict[str, str]] = {
    "proposal": {
        "call_id": "str",
        "tool": "str",
        "args": "obj",
        "scope": "str",
        "key": "str",
        "decision": "decision",
    },
    "transition": {"key": "str", "from": "state", "to": "state"},
    "effect": {"tool": "str", "args": "obj", "scope": "str", "kind": "kind"},
    "crash": {},
    "restart": {},
}
OPTIONAL: dict[str, dict[str, str]] = {
    "proposal": {"epoch": "int", "principal": "str", "identity": "names"},
    "transition": {"fence": "int", "epoch": "int", "call_id": "str", "reason": "str"},
    "effect": {
        "key": "str",
        "idempotency_key": "str",
        "fence": "int",
        "effect_id": "str",
        "epoch": "int",
    },
    "crash": {},
    "restart": {},
}
ONE_OF = {"effect": ("key", "idempotency_key")}  # at least one of these is required
NON_EMPTY = frozenset(("writer", "key", "idempotency_key", "principal"))
KNOWN = {t: frozenset([*COMMON, *COMMON_OPTIONAL, *REQUIRED[t], *OPTIONAL[t]]) for t in TYPES}
ENUMS = {
    "state": (frozenset(STATES), STATES),
    "decision": (frozenset(DECISIONS), DECISIONS),
    "kind": (frozenset(KINDS), KINDS),
}


# ----- the thorough check: names the defect -------------------------------------------------
def problem(ev) -> Optional[str]:
    """What is wrong with one decoded event, or None if it is well-formed.

    Checks the fields of `spec/log.schema.json`: required fields per type, their types,
    enum values (states, decisions, kinds), non-empty names, and the effect's
    key-or-idempotency-key. Extra fields are allowed (the format is extensible).
    """
    if type(ev) is not dict:
        return f"expected a JSON object per line, found {_typename(ev)}; write one event per line"
    t = ev.get("type")
    if t is None:
        return "missing field 'type'; every line needs one of: " + ", ".join(TYPES)
    if type(t) is not str or t not in REQUIRED:
        return f"unknown type {clip(t)!r}; valid types: {', '.join(TYPES)}"
    for fields in (COMMON, REQUIRED[t]):
        for f, kind in fields.items():
            if f not in ev:
                return f"missing field {f!r} in a {t} line; required: " + ", ".join(
                    [*COMMON, *REQUIRED[t]]
                )
            why = _bad_field(f, kind, ev[f])
            if why:
                return why
    for fields in (COMMON_OPTIONAL, OPTIONAL[t]):
        for f, kind in fields.items():
            if f in ev and ev[f] is not None:
                why = _bad_field(f, kind, ev[f])
                if why:
                    return why
    either = ONE_OF.get(t)
    if either and all(ev.get(f) is None for f in either):
        return f"an {t} line needs {' or '.join(repr(f) for f in either)}; fix the writer"
    return None


def _bad_field(field: str, kind: str, v) -> Optional[str]:
    if kind == "int":
        if type(v) is not int or not 0 <= v <= INT_MAX:
            found = f"{v}" if type(v) is int else _typename(v)
            return f"field {field!r} must be an integer from 0 to 2**63-1, found {found}; fix the writer"
        return None
    if kind == "obj":
        return (
            None
            if type(v) is dict
            else f"field {field!r} must be a JSON object, found {_typename(v)}; fix the writer"
        )
    if kind == "names":
        if type(v) is not list or any(type(x) is not str for x in v):
            found = _typename(v) if type(v) is not list else "an array with a non-string"
            return f"field {field!r} must be an array of strings, found {found}; fix the writer"
        return None
    if type(v) is not str:
        return f"field {field!r} must be a string, found {_typename(v)}; fix the writer"
    if kind in ENUMS:
        allowed, names = ENUMS[kind]
        if v not in allowed:
            what = "state" if kind == "state" else kind
            return f"unknown {what} {clip(v)!r} in {field!r}; valid {what}s: {', '.join(names)}"
    elif field in NON_EMPTY and not v:
        return f"field {field!r} must not be empty; fix the writer"
    return None


def _typename(v) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(v), "a value")


def clip(v, n: int = 40) -> str:
    """A short display of any JSON value (containers by their type name)."""
    s = (
        v
        if isinstance(v, str)
        else json.dumps(v)[: n + 1]
        if not isinstance(v, (dict, list))
        else _typename(v)
    )
    return s if len(s) <= n else s[: n - 1] + "…"


# ----- the fast check: the common case, on every line ----------------------------------------
# The same rules as `problem`, specialised per type and inlined: this runs once per line
# (in the reader, and in its check-ahead child), where a call per field would cost more
# than the decoding. A test checks on mutations of every field that it agrees with
# `problem` (`test_fast_and_thorough_validation_agree_on_mutations`).
_STR = str  # a module global: found faster than the builtin
_STATE_SET = ENUMS["state"][0]
_KIND_SET = ENUMS["kind"][0]
_DECISION_SET = ENUMS["decision"][0]
_OPT_INT = frozenset(f for t in TYPES for f, k in OPTIONAL[t].items() if k == "int")
_OPT_LIST = frozenset(f for t in TYPES for f, k in OPTIONAL[t].items() if k == "names")
_OPT_NAMES = {t: tuple(OPTIONAL[t]) for t in TYPES}
_MISSING = object()
_SIZE = {t: len(COMMON) + len(REQUIRED[t]) for t in TYPES}  # fields of a minimal event


def fast_ok(ev) -> bool:
    """True means `problem(ev)` is None *and* the event is flat (no field beyond its type's
    known ones, no container value except a flat `args` object), so its nesting is at most
    2 and the reader's nesting check can be skipped. False means "take the thorough path"
    (`nesting`, then `problem`), not "invalid"."""
    if type(ev) is not dict:
        return False
    get = ev.get
    w = get("writer")
    seq = get("seq")
    t = get("type")
    if (
        type(w) is not _STR
        or not w
        or type(seq) is not int
        or not 0 <= seq <= INT_MAX
        or type(t) is not _STR
    ):
        return False
    if t == "transition":
        k, a, b = get("key"), get("from"), get("to")
        if (
            type(k) is not _STR
            or not k
            or type(a) is not _STR
            or type(b) is not _STR
            or a not in _STATE_SET
            or b not in _STATE_SET
        ):
            return False
    elif t == "proposal" or t == "effect":
        args = get("args")
        if (
            type(args) is not dict
            or type(get("tool")) is not _STR
            or type(get("scope")) is not _STR
        ):
            return False
        for v in args.values():
            if type(v) is dict or type(v) is list:
                return False
        if t == "proposal":
            k, d = get("key"), get("decision")
            if (
                type(k) is not _STR
                or not k
                or type(get("call_id")) is not _STR
                or type(d) is not _STR
                or d not in _DECISION_SET
            ):
                return False
        else:
            kind = get("kind")
            if (
                type(kind) is not _STR
                or kind not in _KIND_SET
                or (get("key") is None and get("idempotency_key") is None)
            ):
                return False
    elif t != "crash" and t != "restart":
        return False
    n = len(ev) - _SIZE[t]
    if not n:
        return True
    ts = get("ts", _MISSING)  # the usual one extra field, checked here
    if ts is not _MISSING:
        if ts is not None and type(ts) is not _STR:
            return False
        n -= 1
        if not n:
            return True
    return _rest_ok(ev, t, n)


def _rest_ok(ev, t: str, n: int) -> bool:
    """The `n` fields of `ev` beyond its type's required ones and `ts` are all known
    optional fields (null or well-typed); an unknown extra field makes this False (the
    caller then takes the thorough path, which allows it). Once `n` of them are found there
    is no room left for another field, so the rest need no lookup."""
    for f in _OPT_NAMES[t]:
        v = ev.get(f, _MISSING)
        if v is _MISSING:
            continue
        n -= 1
        if v is not None:
            if f in _OPT_INT:
                if type(v) is not int or not 0 <= v <= INT_MAX:
                    return False
            elif f in _OPT_LIST:
                if type(v) is not list or any(type(x) is not _STR for x in v):
                    return False
            elif type(v) is not _STR or (not v and f in NON_EMPTY):
                return False
        if not n:
            return True
    return n == 0
