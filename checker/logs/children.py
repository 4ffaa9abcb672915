"""Child processes that never outlive their parent, and forks that no signal can split.

Every process toolcommit forks (validate's shards, torture's job processes, workers and
provider) is forked inside `held_signals` and starts with `child_start`: on Linux the
kernel then sends it SIGKILL the moment its parent ends, however the parent ends
(SIGTERM, SIGKILL, a crash), so nothing is left running, blocked on a pipe no one reads;
elsewhere the children still stop when their pipes to the parent close.

Why the fork holds SIGINT and SIGTERM: a Python handler that raises (KeyboardInterrupt, or
`toolcommit.checker.interrupts`) while the interpreter runs its fork hooks is reported as
"Exception ignored" and lost, in the parent (which then carries on as if never stopped)
or in the child (before it could set its own handlers). Held, the signal waits until the
fork is done: the parent then stops at once, the child ignores a Ctrl-C meant for the
whole process group (its parent decides) and takes a SIGTERM's default action.
"""

from __future__ import annotations

import ctypes
import os
import signal
from contextlib import contextmanager
from typing import Iterator

PR_SET_PDEATHSIG = 1  # <sys/prctl.h>
HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (a fork, or a cleanup that must finish),
    then arrive."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def fork() -> int:
    """`os.fork` inside `held_signals`, the child set up by `child_start`: 0 in the child,
    the child's pid in the parent."""
    parent = os.getpid()
    with held_signals():
        pid = os.fork()
        if pid == 0:
            child_start(parent)
    return pid


def child_start(parent: int) -> None:
    """In a child just forked from `parent` with the signals held: die with the parent,
    ignore SIGINT, default SIGTERM, and let the held signals arrive."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD)


def die_with_parent(parent: int) -> bool:
    """In a child just forked from process `parent`: be killed when `parent` dies. If it
    died already (before this call could ask), end now. True if the kernel took the
    request (Linux)."""
    asked = False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        asked = libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before the request: too late
        os._exit(1)
    return asked
