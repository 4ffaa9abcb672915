"""One live process per writer name, on one machine: a SQLite log's writer name is claimed
at open by a lock the operating system holds for the process and drops when it ends, however
it ends (a SIGKILL included).

A second process opening a name a live process holds is refused at open (`claim` returns
a message), before it writes anything, instead of taking the live process's records over
and leaving that process to fail each later call with `Superseded`. A process that died
left no lock: its restart opens the name and takes over what the dead one held, as before.
The locks are POSIX record locks on one byte per name (a hash of it) of one file beside the
log, ``DB.writers.lock``: a process never conflicts with itself (two logs of one process
under one name are a restart in a test, as before) and a forked child holds none.

Limitations
-----------
SQLite only (a log on one machine; the file's folder must be writable, as WAL needs it
anyway). A PostgreSQL log's writers run on several machines: a second live process there is
still told `Superseded` at its next call.
"""

from __future__ import annotations

import hashlib
import os
import threading
from typing import Optional

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no claim
    fcntl = None  # type: ignore[assignment]

_LOCK = threading.Lock()
_FILES: dict[str, tuple[int, dict[str, int]]] = {}  # lock file -> (fd, {writer: claims})


def _byte(writer: str) -> int:
    """The byte of the lock file that stands for `writer` (a hash: 62 bits)."""
    return int.from_bytes(hashlib.sha256(writer.encode("utf-8")).digest()[:8], "big") >> 2


def claim(db: str, writer: str) -> Optional[str]:
    """Claim `writer` of the SQLite log `db` for this process; None when claimed (release
    it with `release`), else why not (a message naming the fix)."""
    if fcntl is None:
        return None
    path = os.path.abspath(db) + ".writers.lock"
    with _LOCK:
        if path not in _FILES:
            try:
                _FILES[path] = (os.open(path, os.O_RDWR | os.O_CREAT, 0o600), {})
            except OSError:
                return None  # the store says what is wrong with the folder
        fd, held = _FILES[path]
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _byte(writer))
        except OSError:
            if not held:
                os.close(fd)
                del _FILES[path]
            return (
                f"writer {writer!r} of {db} is held by another live process on this "
                "machine: one live process per writer name; give this one a name of its own "
                "(TOOLCOMMIT_WRITER, such as the pod's name), or stop the other first"
            )
        held[writer] = held.get(writer, 0) + 1
        return None


def release(db: str, writer: str) -> None:
    """Drop a claim of `writer` (`claim`); the lock goes with this process's last one."""
    if fcntl is None:
        return
    path = os.path.abspath(db) + ".writers.lock"
    with _LOCK:
        if path not in _FILES:
            return
        fd, held = _FILES[path]
        held[writer] = held.get(writer, 1) - 1
        if held[writer] > 0:
            return
        del held[writer]
        if held:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, _byte(writer))
        else:
            os.close(fd)  # drops every lock of this process on the file
            del _FILES[path]
