"""What the library refuses when it starts, not mid-run: unsafe settings and misuse, each
in one line naming what is wrong and what to do (`Refused`, a `ValueError`).

Pure checks of values and functions; the log, the store and the shims call them where a
setting or a tool is given (`IntentLog.__init__`, `SqliteStore`, `effectful`, `guard`) and
raise them as their own errors (`IntentLogError`, `StoreError`).

- A lease, a wait or a settler pause that is not a positive number of seconds: a lease of
  0 lets `recover` take a live call; a pause of 0 makes the settler spin.
- A SQLite log that is not a file (``""``, ``":memory:"``): the log must outlive the
  process, or a restart sends the same effect again.
- A tool that is a generator (its effect runs after the guard acknowledged it, or never)
  or that declares a parameter the wrapper keeps for itself (``call_id``, ``new_request``).
- A status read returning an empty container: neither the effect's result nor None.
"""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Iterable, Optional


class Refused(ValueError):
    """A setting or a tool the library will not run with; the message says the fix."""


def seconds(name: str, value: Any, *, zero: bool = False) -> float:
    """`value` as seconds: a finite number above 0 (0 too where `zero`); else `Refused`."""
    try:
        got = float(value)
    except (TypeError, ValueError):
        got = math.nan
    if isinstance(value, bool) or not math.isfinite(got) or got < 0 or (got == 0 and not zero):
        raise Refused(
            f"{name}={value!r}: give a number of seconds above 0{' (or 0)' if zero else ''}"
            + _WHY.get(name, "")
        )
    return got


_WHY = {
    "lease": " (a lease of 0 or less has expired as it is written, so `recover` or "
    "another writer takes a live call over: the effect is sent twice)",
    "settle_every": " (the settler's longest pause: 0 or less makes it spin)",
    "wait": " (how long a call waits for another holder; 0 to never wait)",
}


def sqlite_path(path: Any) -> Optional[str]:
    """Why `path` names no durable SQLite file (a message), or None when it does: the
    empty name and ``:memory:`` (or a ``mode=memory`` URI) are private temporary
    databases that vanish with the process, so a restart would send again what it sent."""
    text = path if isinstance(path, str) else None
    if text is None:
        return None
    bare = text.strip()
    if (
        bare == ""
        or bare == ":memory:"
        or (bare.startswith("file:") and (bare[5:].startswith(":memory:") or "mode=memory" in bare))
    ):
        return (
            f"{text!r} is not a file: the intent log must outlive the process (a restart "
            "reading an empty log sends again what was sent); give the path of a file on "
            "a durable volume, such as /var/lib/app/intents.db"
        )
    return None


def tool_function(fn: Callable[..., Any], tool: str, reserved: Iterable[str]) -> None:
    """Refuse a function no guard can run as one effect: a generator or async generator
    (calling it only creates the generator: the guard would acknowledge an effect that has
    not run), or one declaring a parameter the wrapper keeps for itself (`reserved`: it
    would never reach the function, whose call then fails as if nothing answered)."""
    kind = (
        "an async generator"
        if inspect.isasyncgenfunction(fn)
        else "a generator"
        if inspect.isgeneratorfunction(fn)
        else None
    )
    name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    if kind is not None:
        raise Refused(
            f"tool {tool}: {name} is {kind} function: calling it only creates the generator, "
            "so the effect would run after the log recorded it done (or never); make it a "
            "plain function (or async def) that performs the effect and returns its result"
        )
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return
    taken = [p for p in reserved if p in params]
    if taken:
        raise Refused(
            f"tool {tool}: {name} declares {', '.join(taken)}, which the wrapper keeps for "
            "itself (the model's call id, the user's new request) and never passes on: "
            "rename the parameter"
        )


def empty_result(value: Any) -> bool:
    """Whether a status read's `value` is an empty container or string: neither the
    effect's result nor None, so it settles nothing (see `toolcommit.runtime.shims.guard`)."""
    return isinstance(value, (list, dict, set, frozenset, str, bytes)) and not value


def log_schema(
    where: str,
    have: dict[str, set[str]],
    log: dict[str, set[str]],
    adopt: bool,
    create: bool,
    later: frozenset[tuple[str, str]] = frozenset(),
) -> Optional[str]:
    """Why the database `where`, whose tables are `have` ({name: columns}), may not hold
    the intent log whose tables are `log` (a message), or None: checked before anything is
    written to it. A table named like one of the log's without its columns is another
    program's (refused even with `adopt`); the log's first three tables (``tc_records``,
    ``tc_events``, ``tc_writers``; the rest came later and are added) make a log; other
    tables without them are another program's database (refused without `adopt`); an empty
    one is a new log only where `create` (``toolcommit recover`` never creates a log).
    `later`: the (table, column) pairs a log written before them lacks (added at open)."""
    for name in sorted(set(have) & set(log)):
        missing = sorted(log[name] - have[name])
        if missing and not {(name, c) for c in missing} <= later:
            return (
                f"{where} holds a table {name} that is not an intent log's (no column "
                f"{', '.join(missing)}): it is another program's; give the log a file (or "
                "schema) of its own"
            )
    if _CORE <= set(have):
        return None
    if not create:
        return (
            f"{where} holds no intent log (no {', '.join(sorted(_CORE - set(have)))} "
            "table): give the log a guarded process wrote (recover and status never create one)"
        )
    others = sorted(set(have) - set(log))
    if set(have) & set(log):
        return (
            f"{where} holds only part of an intent log ({', '.join(sorted(set(have) & set(log)))}"
            f"; no {', '.join(sorted(_CORE - set(have)))}): give the log's own file or a new one"
        )
    if others and not adopt:
        return (
            f"{where} is another application's database (tables {', '.join(others[:5])}"
            f"{', ...' if len(others) > 5 else ''}) and holds no intent log; the log would "
            "switch it to WAL and add its tables: give a new file, or pass adopt=True to put "
            "the log there"
        )
    return None


_CORE = frozenset({"tc_records", "tc_events", "tc_writers"})
