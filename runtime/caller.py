"""The caller's side of an outcome: what the wire saw of the running effect's writes, and
whether the outcome reached the caller that asked.

The instrumented HTTP clients (`toolcommit.runtime.wire`) note each keyed write the running
effect sends (`sent_write`) and mark it answered when a response comes back; the guard's
drivers read the notes after the effect returns: an effect whose last keyed write got no
answer is in doubt (`NoAnswer`) whatever it returned.

"Heard" (`reask=hold`'s told, `IntentLog.heard`) is written only when the
outcome reached the caller that asked: a guard returning to its caller (with its ack, in
one commit), or, inside `hearing`, the awaiting caller of a sync guard run in a worker
thread once the result is back with it; never for a caller that gave up or was cancelled.
The notes and the hearing are context variables, so a thread run in a copy of the
effect's context (``asyncio.to_thread``, ``contextvars.copy_context``) shares them.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator, Optional

from toolcommit.runtime.log import IntentLog


class Write:
    """One keyed write the running effect sent (`what`: method and URL), as an instrumented
    client saw it (`toolcommit.runtime.wire`); `answered` once a response came back."""

    __slots__ = ("what", "answered")

    def __init__(self, what: str):
        self.what, self.answered = what, False


WRITES: contextvars.ContextVar[Optional[list[Write]]] = contextvars.ContextVar(
    "toolcommit_writes", default=None
)


def sent_write(what: str) -> Optional[Write]:
    """Note a keyed write the running effect is sending (the instrumented clients call it):
    the `Write` to mark answered when a response comes back; None outside an effect."""
    writes = WRITES.get()
    if writes is None:
        return None
    w = Write(what)
    writes.append(w)
    return w


class NoAnswer(Exception):
    """The effect's last keyed write got no answer, whatever the effect returned (a tool
    that caught its timeout and returned an error): its outcome is unknown."""


def unanswered(writes: list[Write]) -> Optional[NoAnswer]:
    if not writes or writes[-1].answered:  # a later answer under the key is the key's
        return None
    return NoAnswer(f"{writes[-1].what} got no answer")


class Hearing:
    """The outcomes a call run elsewhere gave (a sync tool in a framework's worker thread,
    whose awaiting caller may give up): `heard(log)` once they reached the caller."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def heard(self, log: IntentLog) -> None:
        """The outcomes reached the caller that asked (the model got them)."""
        for key in dict.fromkeys(self.keys):
            log.heard(key)


_LATER: contextvars.ContextVar[Optional[Hearing]] = contextvars.ContextVar(
    "toolcommit_hearing", default=None
)


@contextlib.contextmanager
def hearing() -> Iterator[Hearing]:
    """Inside, a guard's outcome is not taken as heard when the guard returns: the `Hearing`
    collects it, and the caller that asked calls ``heard(log)`` once the outcome reached
    it. For a sync guard run in a worker thread whose awaiting caller may be cancelled (at
    its deadline) while the thread runs on: enter it in the awaiting coroutine; the thread
    must run in a copy of its context (``asyncio.to_thread``, ``contextvars.copy_context``)."""
    h = Hearing()
    token = _LATER.set(h)
    try:
        yield h
    finally:
        _LATER.reset(token)


class Asked:
    """The caller of a guard: `later` collects what it heard (`hearing`), else the guard
    returns the outcome to it (noted with the ack, or at the end: `told`)."""

    __slots__ = ("later", "told")

    def __init__(self) -> None:
        self.later, self.told = _LATER.get(), False

    def heard(self, log: IntentLog, key: str) -> None:
        if self.later is not None:
            self.later.keys.append(key)
        elif not self.told:
            log.heard(key)
            self.told = True
