"""Start the downstream server tethered to the gateway: it, and all it started, die with it.

``python -m toolcommit.gateway.tether PID COMMAND...`` is the command the gateway gives
the `mcp` SDK, which starts it as the leader of a process group of its own. The tether
watches its parent, the gateway PID, through a pidfd and ends the group when it ends
(`die_with_parent`; at once if PID is already gone), starts COMMAND as its child in its group, gives the
child its stdin and stdout (keeping no copy: the gateway sees the server's end as its
own), and waits for it. When the gateway ends, however (a SIGKILL included), the tether
kills its whole group: the server, and whatever a wrapper (``sh -c``, ``npx``, ``uv
run``) forked to run it, even one that never reads the stdin that closed with the
gateway. When the server exits, the tether exits with its status; the SDK's own stop
(SIGTERM, then SIGKILL, to the group) reaches all of them. Elsewhere than Linux nothing
asks for the signal (the server still sees its stdin close). A COMMAND that cannot start
is one line on stderr and exit 127, as a shell says it.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading

PR_SET_PDEATHSIG = 1  # <sys/prctl.h>


def command(gateway: int, server: list[str]) -> list[str]:
    """The argv that starts `server` tethered to process `gateway`."""
    return [sys.executable, "-m", __name__, str(gateway), *server]


def die_with_parent(parent: int, sig: int = signal.SIGTERM) -> None:
    """Kill the group when process `parent` ends (Linux), or now if it ended already.

    A pidfd (Linux 5.3) is watched by a thread: it becomes readable when the process ends,
    whichever of its threads started this one. PR_SET_PDEATHSIG, the fallback, fires when
    the parent's *thread* that forked ends, which a gateway starting servers from a worker
    thread does while it lives on: there a SIGTERM with the parent alive is the SDK's stop."""
    try:
        fd = os.pidfd_open(parent)
    except (AttributeError, OSError):  # pragma: no cover - an older kernel
        fd = None
    if fd is None:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - not Linux
            pass
    else:
        threading.Thread(target=_watch, args=(fd,), daemon=True).start()
    if os.getppid() != parent:  # the parent died before the request: too late
        _end_group()


def _watch(fd: int) -> None:
    """Wait for the pidfd `fd` to say its process ended, then end the group."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not poller.poll():
        pass
    _end_group()


def _end_group(*_) -> None:
    """SIGKILL to this process's group: the server, what it started, and the tether."""
    try:
        os.killpg(os.getpgrp(), signal.SIGKILL)
    finally:
        os._exit(1)


def _on_sigterm(gateway: int):
    """The tether's SIGTERM: its gateway died (kill the group), or the SDK stops the group
    (every process of it got the SIGTERM: the tether leaves the server its grace)."""

    def handler(*_) -> None:
        if os.getppid() != gateway:
            _end_group()
        os._exit(128 + signal.SIGTERM)

    return handler


def _start(argv: list[str]) -> int:
    """Fork and exec `argv` in this group; the child's pid (the child never returns)."""
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            print(f"toolcommit gateway: cannot start {argv[0]!r}: {e.strerror}", file=sys.stderr)
        os._exit(127)
    return pid


def main(argv: list[str]) -> int:
    """Tether to argv[0]'s pid, run argv[1:] and wait for it: its exit status."""
    gateway = int(argv[0])
    signal.signal(signal.SIGTERM, _on_sigterm(gateway))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(gateway)
    child = _start(argv[1:])
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the server's pipes are the child's alone: its EOF is the gateway's
    os.dup2(null, 1)
    os.close(null)
    _, status = os.waitpid(child, 0)
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code  # killed by a signal: 128 + its number


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
