"""Outcomes a process knows and its store would not take: the answer to a request already
sent (or its silence) when the write that records it fails (a full disk, the database
connection lost between the dispatch's commit and the ack's).

Such an outcome is neither lost nor trusted: the caller is told the effect was sent and is
in doubt (`Unwritten`, which the guard turns into `InDoubt`), and the log keeps the write
(`Held`) to make at its next use, when the store may take it again. Until then the record
stays DISPATCHED under this process, and its lease must not outlive the fault: the log
releases it (so `toolcommit status` counts the record in doubt, and another process may
settle it through the design) and never renews it while the write is held.

A held write is a compare-and-set like every write of the log: made later, it lands only if
the record is still where the request left it; once another process took the record over
(a restart, a `recover`), it writes nothing and is dropped. A process that dies holding one
loses nothing the design cannot recover: its record is taken over as any dead holder's.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

from toolcommit.runtime.store import StoreError

_LOGGER = logging.getLogger("toolcommit.runtime")


class Unwritten(StoreError):
    """A request was sent and the store would not take its outcome (`what`: ``ack`` or
    ``timeout``) for the record `key`: the effect may have happened. The log holds the
    write and makes it at its next use (`Held`)."""

    def __init__(self, message: str, key: str, what: str):
        super().__init__(message)
        self.key, self.what = key, what


class Held:
    """The writes of this process's outcomes that the store refused, one per record key:
    each a function writing it (True: written; False: the record moved on, nothing to
    write), kept until a `flush` makes it or finds it moot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writes: dict[str, Callable[[], bool]] = {}
        self._warned: set[str] = set()  # keys whose refused write was logged

    def keep(self, key: str, write: Callable[[], bool]) -> None:
        with self._lock:
            self._writes[key] = write

    def keys(self) -> list[str]:
        """The records whose outcome is held: their leases are not renewed."""
        with self._lock:
            return sorted(self._writes)

    def flush(self, key: Optional[str] = None) -> bool:
        """Make every held write (only `key`'s if given), in key order; drop each one
        the store took, or that found its record moved on; keep each one it refused
        again (warned once). Whether one (of `key`) is still held."""
        for k in self.keys() if key is None else [key]:
            with self._lock:
                write = self._writes.get(k)
            if write is None:
                continue
            try:
                write()
            except StoreError as e:
                if k not in self._warned:
                    self._warned.add(k)
                    _LOGGER.warning("the outcome of %s is held, not written yet: %s", k, e)
                continue
            with self._lock:
                if self._writes.get(k) is write:
                    del self._writes[k]
                    self._warned.discard(k)
        held = self.keys()
        return bool(held) if key is None else key in held
