"""The logs a module of tools opens while ``toolcommit recover --tools`` imports it.

A module written like the docs' examples opens its log at import, under the live pod's
writer name (``writer="pod-refunds-0"``, or ``TOOLCOMMIT_WRITER`` in the pod's shell).
Opened by the sweeper under that name, it would supersede the live pod (a new incarnation
of its name) and take over the records its calls are driving. Inside `guests`, an
`IntentLog` opened is a guest of the sweeper instead: it writes under a name of its own
(``WRITER+GUEST``, so the live writer keeps its incarnation and every lease), runs no
settler (the sweeper settles), and is handed back for the sweeper to close.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional


@dataclass
class Guests:
    """The sweeper's name (`suffix` of every guest's writer name) and the logs opened."""

    suffix: str
    opened: list[Any] = field(default_factory=list)

    def close(self) -> None:
        """Close every guest log (a clean shutdown: it held nothing)."""
        for log in self.opened:
            log.close()
        self.opened.clear()


_CURRENT: ContextVar[Optional[Guests]] = ContextVar("toolcommit_guests", default=None)


@contextmanager
def guests(suffix: str) -> Iterator[Guests]:
    """While inside, every `IntentLog` opened is a guest (see the module docstring)."""
    g = Guests(suffix)
    token = _CURRENT.set(g)
    try:
        yield g
    finally:
        _CURRENT.reset(token)


def current() -> Optional[Guests]:
    """The guests being opened now (None: an ordinary open)."""
    return _CURRENT.get()
