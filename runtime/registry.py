"""The tools each intent log settles its records through (`toolcommit.runtime.shims`'s
`register`, `recover_settle`, the settler, ``toolcommit recover --tools``).

The registry is per log: a tool registered with an `IntentLog` is that log's; one
registered with a function returning the log becomes the log's at its first call
(`lazy_one`), when no other such function registers a tool of that name; one registered
with no log serves every log that has none of that name (the framework wrappers'). So two
logs of one process, each with its ``refund``, settle each through its own function.

A tool may name the provider account it acts on: the log records it
(`IntentLog.bind_account`), refuses a tool naming another, and `serve_modules` refuses a
module whose tools name another than the log's.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import weakref
from typing import Any, Callable, Optional, Sequence, Union

from toolcommit.runtime.log import IntentLog, IntentLogError, Ticket

Status = Optional[Callable[[Ticket], Any]]
Lazy = Callable[[], IntentLog]


@dataclasses.dataclass(frozen=True)
class Tool:
    """A tool records are settled through: ``run(args)`` performs the effect (under
    `current_ticket()`), `status` reads it, `account` names the provider account it acts on
    (None: unnamed), `module` is where it was written (``recover --tools``)."""

    name: str
    run: Callable[[dict[str, Any]], Any]
    status: Status
    account: Optional[str]
    module: Optional[str]
    seq: int  # registration order: what importing a module registered (`serve_modules`)


_LOCK = threading.Lock()
_SEQ = itertools.count()
#: each log's own tools (registered with it, or with the function that opened it)
_OWN: weakref.WeakKeyDictionary[IntentLog, dict[str, Tool]] = weakref.WeakKeyDictionary()
#: tools registered with a function opening the log at their first call, by (function, name)
_LAZY: dict[tuple[Lazy, str], Tool] = {}
#: tools registered with no log: any log's, where it has no tool of that name of its own
_ANY: dict[str, Tool] = {}


def next_registration() -> int:
    """The number the next registration gets: mark it before importing a module of tools
    (`serve_modules`)."""
    return next(_SEQ)


def add(t: Tool, log: Union[IntentLog, Lazy, None]) -> None:
    """Register `t` for `log`: an `IntentLog` (`bind`), a function returning one, or None."""
    if isinstance(log, IntentLog):
        bind(log, t)
        return
    with _LOCK:
        if log is None:
            _ANY[t.name] = t
        else:
            _LAZY[(log, t.name)] = t


def bind(log: IntentLog, t: Tool) -> None:
    """Make `t` one of `log`'s tools, recording the account it names (`IntentLogError`
    if the log acts on another)."""
    if t.account is not None:
        log.bind_account(t.account)
    with _LOCK:
        _OWN.setdefault(log, {})[t.name] = t


def lazy_one(log: IntentLog, name: str, opener: Optional[Lazy] = None) -> None:
    """Bind to `log` the tool `name` registered with a function returning a log, if `log`
    has no `name` of its own: the one `opener` (the function that just returned `log`)
    registered, else the only one so registered (the call that just opened `log` is then
    its)."""
    with _LOCK:
        if name in _OWN.get(log, {}):
            return
        mine = None if opener is None else _LAZY.get((opener, name))
        found = [mine] if mine else [t for (_, n), t in _LAZY.items() if n == name]
    if len(found) == 1:
        bind(log, found[0])


def tool_for(log: IntentLog, name: str) -> Optional[Tool]:
    """The tool `log` settles `name`'s records through: its own, else one for every log
    (unless that names another provider account than the log's)."""
    with _LOCK:
        t = _OWN.get(log, {}).get(name) or _ANY.get(name)
    return None if t is None or t.account not in (None, log.account) else t


def registered(log: Optional[IntentLog] = None) -> set[str]:
    """The tools `log` can settle records through; without `log`, the names of every tool
    registered in this process."""
    with _LOCK:
        if log is not None:
            return set(_OWN.get(log, {})) | set(_ANY)
        return {n for own in _OWN.values() for n in own} | {n for _, n in _LAZY} | set(_ANY)


def serve_modules(log: IntentLog, modules: Sequence[str], since: int) -> list[str]:
    """Give `log` the tools of `modules` (``recover --tools``): each registered by one of
    them, or while they were imported (registration number `since` on). Refused
    (`IntentLogError`) where two of one name remain, or where the log names its provider
    account and a tool names another or none. Returns notes for the operator."""
    with _LOCK:
        made = {id(t): t for own in _OWN.values() for t in own.values()}
        made.update((id(t), t) for t in [*_LAZY.values(), *_ANY.values()])
    by_name: dict[str, list[Tool]] = {}
    for t in sorted(made.values(), key=lambda t: t.seq):
        if t.seq >= since or any(f"{t.module}.".startswith(f"{m}.") for m in modules):
            by_name.setdefault(t.name, []).append(t)
    where, notes = f"--tools {' '.join(modules)}", []
    for name, found in sorted(by_name.items()):
        named = sorted({t.account or "none" for t in found})
        if log.account is not None:
            found = [t for t in found if t.account == log.account]
            if not found:
                raise IntentLogError(
                    f"{where}: tool {name} names provider account {' and '.join(named)}, and "
                    f"this log acts on {log.account}: run recover where the tools act on "
                    f"{log.account} (account={log.account!r})"
                )
        elif any(t.account is not None for t in found):
            notes.append(
                f"the log names no provider account: tool {name}'s ({', '.join(named)}) "
                "is not checked"
            )
        if len(found) > 1:
            raise IntentLogError(
                f"{where}: {len(found)} tools named {name} (on {len(found)} logs), and "
                "nothing tells which is this log's: give each its account=, or a name of its own"
            )
        with _LOCK:
            _OWN.setdefault(log, {})[name] = found[0]
    return notes
