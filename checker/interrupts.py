"""Interrupting a write cleanly: SIGINT and SIGTERM remove the write's temporaries first.

Used by `toolcommit.checker.output`; a write registers each temporary in `temps` before
creating it, so whatever moment a signal arrives, nothing it made is left behind.
"""

from __future__ import annotations

import os
import shutil
import signal
from contextlib import contextmanager, suppress
from pathlib import Path


class _Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Interrupts:
    """While active, SIGINT and SIGTERM end the write (its `temps` are removed, then the
    signal takes its usual effect), except inside `hold()`, where they wait for its end.

    Signals already ignored or handled by someone else are left alone, and outside the main
    thread no handler is installed (the temporaries are still removed on any exception).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.temps: list[Path] = []
        self.pending = 0
        self.holding = False
        self.saved: dict = {}

    def __enter__(self) -> "Interrupts":
        for signum in self.SIGNALS:
            try:
                current = signal.getsignal(signum)
                if current in (signal.SIG_DFL, signal.default_int_handler):
                    signal.signal(signum, self._on_signal)
                    self.saved[signum] = current
            except ValueError:  # not the main thread
                pass
        return self

    def _on_signal(self, signum, frame) -> None:
        if self.holding:
            self.pending = self.pending or signum
        else:
            raise _Interrupted(signum)

    @contextmanager
    def hold(self):
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.pending:
            raise _Interrupted(self.pending)

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.holding = True
        try:
            for path in reversed(self.temps):
                discard(path)
        finally:
            for signum, handler in self.saved.items():
                signal.signal(signum, handler)
        signum = self.pending or (exc.signum if isinstance(exc, _Interrupted) else 0)
        if signum:
            _deliver(signum)
        return False


def discard(path: Path) -> None:
    """Remove the temporary `path` (a file or a staging folder), if it exists."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(FileNotFoundError):
            os.unlink(path)


def _deliver(signum: int) -> None:
    """Give `signum` its usual effect now that the temporaries are gone."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt from None
    signal.raise_signal(signum)  # default action: the process ends by this signal
    raise SystemExit(128 + signum)
