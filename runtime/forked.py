"""A log used in a child process forked after it was opened (``os.fork``, multiprocessing's
``fork`` start method, a pre-forking server) is refused at every use, in one line.

The child inherits the parent's connection (SQLite's file locks and state, a PostgreSQL
session) and the parent's writer name and leases: writing through it can corrupt the file
or break the parent's session, and closing it would release the parent's leases. So in the
child each open log's store is replaced by `ForkedStore`, whose every transaction raises
the log's refusal and whose `close` leaves the parent's connection alone; the log's locks,
which a parent thread may have held at the fork, are made anew. Open a log in the child
instead (a writer name of its own). Before a fork every open log's store lock is taken
(bounded), so no thread is inside the database driver when the process is copied.
"""

from __future__ import annotations

import os
import threading
import weakref
from contextlib import AbstractContextManager
from typing import Any, Callable, Optional, Sequence

from toolcommit.runtime.store import Store, Tx, Write

_LOGS: "weakref.WeakSet[Any]" = weakref.WeakSet()


class ForkedStore(Store):
    """The store of a log in a forked child: every use raises ``refused(message)``."""

    def __init__(self, was: Store, parent: int, writer: str, refused: Callable[[str], Exception]):
        super().__init__()
        self.dialect, self.now_sql, self.lock_sql = was.dialect, was.now_sql, was.lock_sql
        self.returning, self.one_statement = was.returning, False
        self._was, self._refused = was, refused  # the parent's: never used, never closed
        self._message = (
            f"this intent log (writer {writer!r}) was opened in process {parent} and is used "
            f"in process {os.getpid()}, forked from it: its connection and leases are the "
            "parent's; open a log in the child after the fork, under a writer name of its own"
        )

    def _refuse(self) -> Exception:
        return self._refused(self._message)

    def tx(self) -> AbstractContextManager[Tx]:
        raise self._refuse()

    def read(self) -> AbstractContextManager[Tx]:
        raise self._refuse()

    def snapshot(self) -> AbstractContextManager[Tx]:
        raise self._refuse()

    def once(
        self,
        writer: tuple[str, int],
        first: Write,
        then: Sequence[Write],
        seq: int,
        lines: Sequence[tuple[int, str]],
    ) -> Optional[tuple[Any, ...]]:
        raise self._refuse()

    def close(self) -> None:
        """Nothing: the connection is the parent's."""


def watch(log: Any, refused: Callable[[str], Exception]) -> None:
    """Refuse `log` in any child forked from this process from now on (`ForkedStore`)."""
    log._opened_in, log._refused_forked = os.getpid(), refused
    _LOGS.add(log)


def _in_child() -> None:
    for log in list(_LOGS):
        if isinstance(log.store, ForkedStore):
            continue
        log._lock, log._bg_lock = threading.RLock(), threading.Lock()
        log._threads = {}  # the parent's threads: none runs here, and none starts
        log._stop, log._wake = threading.Event(), threading.Event()
        log._stop.set()
        log.store = ForkedStore(log.store, log._opened_in, log.writer, log._refused_forked)


_HELD: list[Any] = []  # the store locks `_before` took, for the fork's two sides to release
_QUIET = 5.0  # seconds the fork waits for each store's transaction under way


def _before() -> None:
    """Take every open log's store lock (at most `_QUIET` s each), so no thread of this
    process is inside the store's driver when the fork copies it: a child forked while a
    settler or heartbeat held SQLite's mutex deadlocked at its first SQLite call, even on a
    connection of its own."""
    for log in sorted(list(_LOGS), key=id):
        lock = getattr(log.store, "_lock", None)
        if lock is not None and lock.acquire(timeout=_QUIET):
            _HELD.append(lock)


def _release() -> None:
    while _HELD:
        _HELD.pop().release()


def _child() -> None:
    _release()
    _in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before, after_in_parent=_release, after_in_child=_child)
