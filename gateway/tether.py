"""Start the downstream server tethered to the gateway: it dies when the gateway does.

``python -m toolcommit.gateway.tether PID COMMAND...`` is the command the gateway
gives the `mcp` SDK: it asks the kernel to SIGKILL it when its parent, the gateway PID,
ends (`die_with_parent`; ends at once if PID is already gone) and then becomes
COMMAND (``exec``: same process, the request kept). A gateway SIGKILLed mid-call then
leaves no server running, not even one that never reads the stdin that closed with it.
Elsewhere than Linux it only becomes COMMAND (the server still sees its stdin close).
A COMMAND that cannot start is one line on stderr and exit 127, as a shell says it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # <sys/prctl.h>


def command(gateway: int, server: list[str]) -> list[str]:
    """The argv that starts `server` tethered to process `gateway`."""
    return [sys.executable, "-m", __name__, str(gateway), *server]


def die_with_parent(parent: int) -> None:
    """Be SIGKILLed when process `parent` dies (Linux); end now if it died already."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before the request: too late
        os._exit(1)


def main(argv: list[str]) -> int:
    """Tether to argv[0]'s pid and exec argv[1:]; returns only if the exec failed."""
    die_with_parent(int(argv[0]))
    try:
        os.execvp(argv[1], argv[1:])
    except OSError as e:
        print(f"toolcommit gateway: cannot start {argv[1]!r}: {e.strerror}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
