"""Independent searches side by side, on threads of one process.

The native engine searches outside the GIL, so two searches on two threads take two cores.
`beside(calls, progress)` runs each call with a progress callback of its own and returns
their results in order. When one fails (or the caller is interrupted), the others are
stopped at their next progress poll (within about a second: the callback raises
`Stopped` inside them) and the first failure is raised; no thread is left running.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Callable, Optional, Sequence, TypeVar

T = TypeVar("T")


class Stopped(Exception):
    """Raised inside a search's progress callback once a search beside it failed."""


def beside(
    calls: Sequence[Callable[[Callable], T]], progress: Optional[Callable] = None
) -> list[T]:
    """Run every call of `calls` at once, each given a progress callback (which forwards
    to `progress`, if any); their results in order, or the first exception raised."""
    stop = threading.Event()
    lock = threading.Lock()  # one progress report at a time

    def tick(t) -> None:
        if stop.is_set():
            raise Stopped("stopped: a search beside this one failed")
        if progress is not None:
            with lock:
                progress(t)

    with ThreadPoolExecutor(len(calls), thread_name_prefix="toolcommit-search") as pool:
        futures = [pool.submit(call, tick) for call in calls]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f.exception() for f in futures if f.done() and f.exception()), None)
            if failed is not None:
                raise failed
            return [f.result() for f in futures]
        except BaseException:
            stop.set()  # the `with` then waits for the others to see it
            raise
