"""The gateway as a process of its own: one per log and writer, stopped by a signal.

`open_sqlite` opens the gateway's intent log on a SQLite file under a lock that says one
gateway serves it under its writer name (a file beside the log, released by the kernel
when the process ends, however); `until_signalled` runs the gateway until it returns or
SIGINT / SIGTERM arrives, then stops it cleanly (its servers stopped, the log closed by
the caller). Every refusal is a `UsageError` of one line.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
from typing import Awaitable, Callable

import anyio

from toolcommit.gateway.calls import PROVIDER
from toolcommit.model.errors import UsageError
from toolcommit.runtime import IntentLog, IntentLogError, StoreError
from toolcommit.runtime.refuse import sqlite_path


def only_gateway(db: str, writer: str) -> int:
    """Hold a lock that says one gateway serves `db` under `writer` (released by the OS
    when this process ends, however): its descriptor; UsageError if another holds it."""
    tag = hashlib.sha256(writer.encode("utf-8")).hexdigest()[:12]
    path = f"{os.path.abspath(db)}.gateway-{tag}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            other = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        finally:
            os.close(fd)
        raise UsageError(
            f"--db {db}: another gateway (pid {other or '?'}) serves it under "
            f"writer {writer!r}; stop it, or give another --writer"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    return fd


def open_sqlite(db: str, writer: str, lease: float) -> tuple[int, IntentLog]:
    """(the lock's descriptor, the log) for a gateway on the SQLite file `db` under
    `writer`; close both when done."""
    why = sqlite_path(db)  # before the lock file is made beside it
    if why is not None:
        raise UsageError(f"--db {why}")
    db_dir = os.path.dirname(os.path.abspath(db))
    if not os.path.isdir(db_dir):
        raise UsageError(f"--db {db}: no directory {db_dir}; create it or give another path")
    lock = only_gateway(db, writer)
    try:
        return lock, IntentLog.sqlite(db, writer=writer, provider=PROVIDER, lease=lease)
    except (StoreError, IntentLogError) as e:  # a writer name another live process holds
        os.close(lock)
        raise UsageError(f"--db {db}: {str(e).splitlines()[0]}") from None


async def until_signalled(main: Callable[[], Awaitable[None]]) -> None:
    """Run `main()` until it returns or SIGINT / SIGTERM arrives (then it is cancelled:
    the downstream servers are stopped)."""
    async with anyio.create_task_group() as tg:

        async def watch():
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch)
        await main()
        tg.cancel_scope.cancel()
