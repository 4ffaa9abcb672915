"""The terminal, at the edge: the width text is fitted to, and progress on standard error.

`width()` is COLUMNS if set, else the size of the terminal standard output is, else
`fit.DEFAULT` (100). `Progress` shows one line on standard error, rewritten in place, once a
run has gone on for two seconds, and only when standard error is a terminal: piped or
redirected, it writes nothing. The line is cut to one column less than the terminal it is
written to (`columns`: COLUMNS, else that terminal's size, else `shutil.get_terminal_size`'s,
80 when none says), so it never wraps; `close()` erases it, so the report starts clean, and
`close_all()` erases any line a command left (the command line calls it however the
command ended).
"""

from __future__ import annotations

import os
import shutil
import sys
import time

from toolcommit.checker.output import visible
from toolcommit.checker.render.fit import DEFAULT

AFTER = 2.0  # seconds before the first progress line
EVERY = 0.25  # seconds between rewrites
PROGRESS_DEFAULT = 80  # a progress line's columns when no terminal says
_OPEN: set = set()  # the Progress objects whose line is shown, not yet erased


def width() -> int:
    """COLUMNS, else the terminal's columns, else DEFAULT."""
    return shutil.get_terminal_size((DEFAULT, 24)).columns or DEFAULT


def columns(stream) -> int:
    """The columns of the terminal `stream` writes to: COLUMNS if set, else that terminal's
    size, else `shutil.get_terminal_size` (80 when no terminal says)."""
    if not os.environ.get("COLUMNS", "").strip().isdigit():
        try:
            return os.get_terminal_size(stream.fileno()).columns or PROGRESS_DEFAULT
        except (AttributeError, ValueError, OSError):
            pass
    return shutil.get_terminal_size((PROGRESS_DEFAULT, 24)).columns or PROGRESS_DEFAULT


def close_all() -> None:
    """Erase every progress line still shown (a command that ended by an error, too)."""
    for p in list(_OPEN):
        p.close()


class Progress:
    """A progress line on stderr (a terminal only) for runs longer than two seconds.

    Callable with an engine `Tick` (check, prove), with `(name, info)` (ask's cells: info
    has states, depth and seconds), or through `design` (design's instance checks) and
    `run` (torture's runs)."""

    def __init__(self, stream=None):
        self.stream = stream  # None: sys.stderr, looked up when written (tests swap it)
        self.t0, self.last = time.perf_counter(), 0.0
        self.shown = False
        self.designs: set = set()
        self.checks = self.runs = self.bad = 0

    def _out(self):
        return self.stream or sys.stderr

    def active(self) -> bool:
        out = self._out()
        try:
            return out.isatty()
        except (AttributeError, ValueError):
            return False

    def due(self) -> bool:
        """Whether a line would be shown now (two seconds in, a terminal, not too soon)."""
        now = time.perf_counter()
        return now - self.t0 >= AFTER and now - self.last >= EVERY and self.active()

    def show(self, text: str) -> None:
        """Rewrite the line with `text` (cut to the terminal), if it is time to."""
        if not self.due():
            return
        self.last = time.perf_counter()
        out = self._out()
        room = max(columns(out) - 1, 1)  # the last column would wrap the cursor
        out.write("\r\x1b[K" + visible(text)[:room])  # only our own controls
        out.flush()
        self.shown = True
        _OPEN.add(self)

    def __call__(self, tick, info=None) -> None:
        if not self.due():
            return
        if info is None:  # an engine's Tick
            name, info = (
                tick.phase,
                {"states": tick.states, "depth": tick.depth, "seconds": tick.seconds},
            )
        else:
            name = tick
        states, depth, seconds = info.get("states"), info.get("depth"), info.get("seconds")
        parts = [f"{states:,} states"] if isinstance(states, int) else []
        parts += [f"depth {depth}"] if depth else []
        if isinstance(states, int) and seconds:
            parts.append(f"{states / seconds:,.0f} states/s")
        self.show(f"  [{name}] {', '.join(parts + [f'{self.elapsed():.0f}s'])}")

    def design(self, design: dict, instance: str, seconds: float) -> None:
        """One instance judged for a candidate design (`toolcommit design`)."""
        self.designs.add(tuple(sorted(design.items())))
        self.checks += 1
        self.show(
            f"  [design] {len(self.designs)} designs judged ({self.checks} instance "
            f"checks, last: {instance}), {self.elapsed():.0f}s"
        )

    def run(self, result) -> None:
        """One run done (`toolcommit torture`): `result.clean` says how it ended."""
        self.runs += 1
        self.bad += not result.clean
        self.show(f"  [torture] {self.runs} runs done, {self.bad} not clean, {self.elapsed():.0f}s")

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def close(self) -> None:
        """Erase the progress line, if one was shown."""
        if self.shown:
            out = self._out()
            out.write("\r\x1b[K")
            out.flush()
            self.shown = False
        _OPEN.discard(self)
