"""Independent jobs on every core the process may use: `fork_map`, for the design modules
whose work splits into pieces that depend on nothing but their inputs (a question's cells,
`design`'s environment strengthenings of one size).

Each piece runs in a forked worker (it inherits the loaded engines, nothing is rebuilt) and
the results come back in the order of the inputs, so the caller's answer is the same as one
computed in turn. With one core, or no `fork`, the pieces run in this process.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Iterable, Iterator, Optional


def jobs() -> int:
    """The cores this process may use (1 where that cannot be known)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return 1


def fork_map(fn: Callable, items: Iterable, timeout: Optional[float] = None) -> Iterator:
    """`map(fn, items)`, in forked workers when there are cores to share: `fn` and each item
    must pickle (`fn` a module-level function), and so must each result. `timeout` bounds
    the wait for all of them (None: the pieces are bounded by their own limits). An
    exception in a piece is raised here, in order."""
    items = list(items)
    workers = min(jobs(), len(items))
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(fn, items)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        yield from pool.map(fn, items, timeout=timeout)
