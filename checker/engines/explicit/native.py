"""The native explicit engine: the model compiled to C, built once, run through ctypes.

`explore_native` takes the same inputs as `explore` and returns a `NativeExploration`, an
`Exploration` with the same fields and the same state ids, on one thread or several
(`jobs`; a test runs both engines on every shipped instance and compares them field by
field). The C source comes from
`native_c`; it is compiled with the machine's C compiler (`$CC`, else `cc`, `gcc` or
`clang`) on first use into a cache directory keyed by the hash of the source and the
compiler, written atomically (a temporary file renamed into place), so two processes
can race, and loaded only once checked (`toolcommit.checker.cbuild`: owner, mode and
hash). No new Python dependency: ctypes loads the library.

`explore_any` is the one entry point callers use. By default ('auto') an instance past
`QUICK_STATES` states is explored natively, a smaller one by the Python engine (it is done
before C could be generated and loaded); with no working C compiler the Python engine
answers and the result's `engine_note` says why. An engine can be asked for by argument
or by the environment variable TOOLCOMMIT_ENGINE=python|native|auto.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import os
import platform
import sys
import time
import weakref
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from toolcommit.checker.cbuild import cache_dir, compiler, verified
from toolcommit.checker.engines.explicit.codegen import Compiled
from toolcommit.checker.engines.explicit.explore import (
    EARLY,
    Exploration,
    StopWhen,
    _fired_by_name,
    explore,
)
from toolcommit.checker.engines.explicit.native_c import c_source, refusal
from toolcommit.model.errors import InternalError, UsageError

ENGINES = ("auto", "native", "python")
FLAGS = ("-O1", "-shared", "-fPIC", "-pthread", "-w")  # -O2: no faster, compiles 2x slower
ABI = 5
QUICK_STATES = 10_000  # 'auto': instances this small stay with the Python engine
MAX_STATES = (1 << 64) - 1  # tc_explore's max_states is a uint64_t
_STOPS = {3: "interrupted", 5: "native engine capacity (2^32 states or edges) reached", 6: EARLY}
STOP_EARLY = 6
STUCK_LATER = -3  # tc_out.stuck: the backward search is left to `find_stuck`
_loaded: dict[str, tuple] = {}  # cache key -> (library or None, why not)
# the arrays tc_explore allocates in tc_out (released with tc_free after they are read)
_ARRAYS = ("state", "parent", "via", "level_ends", "settled", "truncated", "eoff", "edst", "fired")


class _Out(ctypes.Structure):
    _fields_ = (
        [
            (n, ctypes.c_uint64)
            for n in ("states", "explored", "transitions", "peak_bytes", "memo_entries")
        ]
        + [(n, ctypes.c_int64) for n in ("deadlock", "stuck", "complete", "stop")]
        + [(n, ctypes.c_double) for n in ("seconds", "graph_seconds")]
        + [(n, ctypes.c_uint64) for n in ("nlevels", "nsettled", "ntruncated", "nedges", "jobs")]
        + [(n, ctypes.c_void_p) for n in _ARRAYS]
        + [
            ("first_violation", ctypes.c_int64 * 64),
            ("first_witness", ctypes.c_int64 * 64),
            ("first_bad_end", ctypes.c_int64 * 64),
            ("cpu_seconds", ctypes.c_double),
            ("phase_seconds", ctypes.c_double * 6),
        ]
    )


class _Stop(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("on", "invariants", "witnesses", "ends", "deadlock")]


_TICK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_double, ctypes.c_int
)


class PackedStates:
    """The explored states, `itemsize` bytes each in BFS order (the native state: 16 bytes
    up to 128 bits, else 8 a word, word 0 first): a read-only sequence of ints.

    >>> s = PackedStates(b"".join(v.to_bytes(16, sys.byteorder) for v in (5, 1 << 100)))
    >>> len(s), s[0], s[-1] == 1 << 100, list(s) == [5, 1 << 100]
    (2, 5, True, True)
    >>> PackedStates((1 << 150).to_bytes(24, "little"), 24)[0] == 1 << 150
    True
    """

    def __init__(self, raw: bytes, itemsize: int = 16):
        self._raw, self.itemsize = memoryview(raw), itemsize
        # a 128-bit integer is stored in the machine's byte order; wider states are
        # little-endian words (native_c refuses them on a big-endian machine)
        self._order = sys.byteorder if itemsize == 16 else "little"

    def __len__(self) -> int:
        return len(self._raw) // self.itemsize

    def __getitem__(self, i: int) -> int:
        n, z = len(self), self.itemsize
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("state id out of range")
        return int.from_bytes(self._raw[z * i : z * i + z], self._order)

    def __iter__(self):
        raw, z, order = self._raw, self.itemsize, self._order
        for i in range(0, len(raw), z):
            yield int.from_bytes(raw[i : i + z], order)

    def tobytes(self) -> bytes:
        return self._raw.tobytes()


@dataclass
class NativeExploration(Exploration):
    """An `Exploration` made by the native engine; `states` is a `PackedStates`."""

    engine: str = "native"
    memo_entries: int = 0  # entries of the symmetry memos (one a thread)
    graph_seconds: float = 0.0  # of `seconds`: PROGRESS's backward search
    jobs: int = 1  # the threads that searched
    # with jobs > 1, per step of native_bfs.c the CPU seconds of its busiest thread, summed:
    # expand, dedupe, ids, edges and store, the one-thread numbering, PROGRESS (what the
    # search would take on idle cores, for benchmarks on a shared machine)
    phase_seconds: tuple = ()
    search_cpu: float = 0.0  # the process's CPU seconds in the search (all threads)
    lib: object = None  # the library that searched (`find_stuck` goes on with it)


# ----- building ---------------------------------------------------------------------------
def library(c: Compiled) -> tuple[Optional[ctypes.CDLL], str]:
    """The loaded native engine for `c`, or (None, why it is unavailable)."""
    why = refusal(c)
    if why:
        return None, why
    cc = compiler()
    if cc is None:
        return None, "no C compiler (set CC or install cc)"
    source = c.__dict__.get("c_source") or c_source(c)
    c.c_source = source
    key = hashlib.sha256(
        "\0".join([source, *cc, *FLAGS, platform.machine(), str(ABI)]).encode()
    ).hexdigest()[:32]
    if key not in _loaded:
        _loaded[key] = _build_and_load(key, source, cc)
    return _loaded[key]


def _build_and_load(key: str, source: str, cc: list[str]) -> tuple[Optional[ctypes.CDLL], str]:
    """Load the engine from the cache (`cbuild.verified`: only a checked file of this user,
    built again when absent or refused)."""
    target = cache_dir() / f"engine-{key}.so"
    with verified(target, source, cc, FLAGS) as (path, why):
        if path is None:
            return None, why
        try:
            return _configure(ctypes.CDLL(path), target)
        except OSError as e:
            return None, f"cannot load {target}: {e}"


def _configure(lib: ctypes.CDLL, target: Path) -> tuple[Optional[ctypes.CDLL], str]:
    """`lib` with its functions' types declared, or (None, why it is not the engine)."""
    try:
        if lib.tc_abi() != ABI:
            return None, f"{target} is from another version of the engine"
        lib.tc_explore.argtypes = [
            ctypes.c_void_p,
            ctypes.c_uint64,
            ctypes.c_double,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_uint64,
            _TICK,
            ctypes.POINTER(_Stop),
            ctypes.POINTER(_Out),
        ]
        lib.tc_explore.restype = ctypes.c_int
        lib.tc_state_bytes.restype = ctypes.c_int
        lib.tc_free.argtypes = [ctypes.c_void_p]
        lib.tc_free.restype = None
        lib.tc_first_stuck.argtypes = [
            ctypes.c_uint64,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_uint64,
            ctypes.c_void_p,
            ctypes.c_uint64,
        ]
        lib.tc_first_stuck.restype = ctypes.c_int64
    except AttributeError as e:  # a symbol missing is not the engine
        return None, f"cannot load {target}: {e}"
    return lib, ""


# ----- running ----------------------------------------------------------------------------
def check_limits(max_states, timeout) -> None:
    """Refuse a limit the C engine's arguments cannot hold (a UsageError naming the range),
    before any search: a uint64_t would wrap 2**64 + 1000 states to 1,000.

    >>> check_limits(2 ** 64 + 1000, 0.0)
    Traceback (most recent call last):
    ...
    toolcommit.model.errors.UsageError: --max-states 18446744073709552616: use 0 (no limit) to 18446744073709551615
    """
    if type(max_states) is not int or not 0 <= max_states <= MAX_STATES:
        raise UsageError(f"--max-states {max_states}: use 0 (no limit) to {MAX_STATES}")
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout >= 0):
        raise UsageError(f"--timeout {timeout}: use a number of seconds >= 0 (0: no limit)")


def explore_native(
    c: Compiled,
    max_states: int = 0,
    timeout: float = 0.0,
    graph: bool = True,
    progress: Optional[Callable[[dict], None]] = None,
    measure_memory: bool = False,
    lib: Optional[ctypes.CDLL] = None,
    stop: Optional[StopWhen] = None,
    jobs: int = 1,
    chunk: int = 0,
    later: bool = False,
) -> NativeExploration:
    """`explore` run natively; the same result, state for state.

    With `graph` and `later`, PROGRESS's backward search is not run: the result's
    `stuck_later` is set and `find_stuck` runs it when a verdict needs it (a search whose
    PROGRESS may never be judged keeps only its edges).

    `jobs` threads search (the same states under the same ids, so the same result, see
    `native_bfs.c`); `chunk` is how many parents they expand per step (0: the default;
    tests make it small to cross many chunk boundaries).

    Raises UsageError when the native engine is unavailable (see `library`), MemoryError
    when the search runs out of memory, and re-raises an exception (KeyboardInterrupt)
    raised while it ran.
    """
    check_limits(max_states, timeout)
    if lib is None:
        lib, why = library(c)
        if lib is None:
            raise UsageError(f"native engine unavailable: {why}")
    raised: list = []

    def tick(states, explored, depth, seconds, report):
        try:
            if report and progress is not None:
                progress(
                    {"states": states, "explored": explored, "depth": depth, "seconds": seconds}
                )
        except BaseException as e:  # noqa: B036 - handed back to the caller after the search
            raised.append(e)
            return 1
        return 0

    if not isinstance(jobs, int) or jobs < 1:
        raise UsageError(f"--jobs must be a whole number >= 1, not {jobs}")
    out = _Out()
    t0 = time.perf_counter()
    size = lib.tc_state_bytes()
    words = (ctypes.c_uint64 * (size // 8))(
        *[(c.init >> (64 * i)) & ((1 << 64) - 1) for i in range(size // 8)]
    )
    when = (
        _Stop(0, 0, 0, 0, 0)
        if stop is None
        else _Stop(1, stop.invariants, stop.witnesses, stop.ends, int(stop.deadlock))
    )
    rc = lib.tc_explore(
        ctypes.cast(words, ctypes.c_void_p),
        max_states,
        float(timeout),
        (2 if later else 1) if graph else 0,
        jobs,
        chunk,
        _TICK(tick),
        ctypes.byref(when),
        ctypes.byref(out),
    )
    try:
        if raised:
            raise raised[0]
        if rc != 0:
            raise MemoryError(f"native engine ran out of memory after {out.states:,} states")
        return _result(
            c, lib, out, max_states, timeout, graph, measure_memory, time.perf_counter() - t0, size
        )
    finally:
        for name in _ARRAYS:
            _release(lib, out, name)


_CTYPES = {"I": ctypes.c_uint32, "i": ctypes.c_int32, "B": ctypes.c_char}


def _adopt(lib, out: _Out, name: str, count: int, code: str):
    """C array `name` (`count` items of array typecode `code`, "B": bytes) without a copy,
    for the arrays as long as the search (states, parents, edges): a ctypes array over the
    engine's memory, which `tc_free` releases once nothing refers to it (a memoryview of
    it included). Taken from `out`, so `_release` skips it."""
    ptr, kind = getattr(out, name), _CTYPES[code]
    if not ptr or not count:
        _release(lib, out, name)
        return (kind * 0)()
    a = (kind * count).from_address(ptr)
    weakref.finalize(a, lib.tc_free, ptr)
    setattr(out, name, None)
    return a


def _take(lib, out: _Out, name: str, count: int, code: str) -> array:
    """Copy C array `name` (`count` items of array typecode `code`) and free it: the
    shorter arrays (levels, goals, counts), which callers concatenate."""
    a = array(code)
    ptr = getattr(out, name)
    if ptr and count:
        a.frombytes(memoryview((ctypes.c_char * (count * a.itemsize)).from_address(ptr)))
    _release(lib, out, name)
    return a


def _release(lib, out: _Out, name: str) -> None:
    ptr = getattr(out, name)
    if ptr:
        lib.tc_free(ptr)
        setattr(out, name, None)


def _result(
    c: Compiled,
    lib,
    out: _Out,
    max_states: int,
    timeout: float,
    graph: bool,
    measure_memory: bool,
    seconds: float,
    size: int,
) -> NativeExploration:
    n = out.states
    raw = memoryview(_adopt(lib, out, "state", size * n, "B"))
    parent, via = _adopt(lib, out, "parent", n, "I"), _adopt(lib, out, "via", n, "i")
    levels = list(_take(lib, out, "level_ends", out.nlevels, "I"))
    complete = bool(out.complete)
    ex = NativeExploration(
        c,
        PackedStates(raw, size),
        parent,
        via,
        levels,
        complete,
        "" if complete else _stop_reason(out.stop, max_states, timeout),
    )
    ex.settled_ids = _take(lib, out, "settled", out.nsettled, "I")  # arrays, not lists:
    truncated = _take(lib, out, "truncated", out.ntruncated, "I")  # 4 bytes an id
    ex.truncated, ex.truncated_ids = len(truncated), truncated
    if graph and complete:
        ex.edges = (_adopt(lib, out, "eoff", n + 1, "I"), _adopt(lib, out, "edst", out.nedges, "I"))
        ex.stuck = None if out.stuck < 0 else out.stuck
        ex.stuck_later = out.stuck == STUCK_LATER
    fired = _take(lib, out, "fired", len(c.system.actions), "Q")
    ex.fired = _fired_by_name(c, list(fired))
    ex.first_violation = _firsts(out.first_violation, c.invariant_names)
    ex.first_witness = _firsts(out.first_witness, c.witness_names)
    ex.first_bad_end = _firsts(out.first_bad_end, c.end_names)
    ex.deadlock = None if out.deadlock < 0 else out.deadlock
    ex.transitions, ex.seconds, ex.memo_entries = out.transitions, seconds, out.memo_entries
    ex.graph_seconds, ex.jobs = out.graph_seconds, out.jobs
    ex.phase_seconds, ex.search_cpu = tuple(out.phase_seconds), out.cpu_seconds
    ex.early = out.stop == STOP_EARLY
    ex.lib = lib
    if measure_memory:
        ex.peak_bytes = out.peak_bytes
    return ex


def find_stuck(ex: Exploration) -> None:
    """Run PROGRESS's backward search a search left for later (`stuck_later`), natively over
    the edges it kept; sets `ex.stuck`. MemoryError when it runs out of memory."""
    if not ex.stuck_later:
        return
    lib, why = (ex.lib, "") if getattr(ex, "lib", None) is not None else library(ex.compiled)
    if lib is None:
        raise InternalError(f"a native search left PROGRESS for later, but: {why}")
    eoff, edst = ex.edges
    goals = [ex.settled_ids, ex.truncated_ids]
    addr = [_address(a) for a in (eoff, edst, *goals)]
    bad = lib.tc_first_stuck(ex.state_count, *addr[:3], len(goals[0]), addr[3], len(goals[1]))
    if bad == -2:
        raise MemoryError(
            f"native engine ran out of memory judging PROGRESS over {ex.state_count:,} states"
        )
    ex.stuck, ex.stuck_later = (None if bad < 0 else bad), False


def _address(a) -> Optional[int]:
    """Where the ids of `a` (an array, or a ctypes array from `_take`) lie; None if none."""
    if not len(a):
        return None
    return ctypes.addressof(a) if isinstance(a, ctypes.Array) else a.buffer_info()[0]


def _firsts(found, names) -> dict:
    """{name: state id} in the Python engine's order: by state id, then by bit."""
    hits = sorted((found[b], b) for b in range(len(names)) if found[b] >= 0)
    return {names[b]: sid for sid, b in hits}


def _stop_reason(stop: int, max_states: int, timeout: float) -> str:
    if stop == 1:
        return f"state limit {max_states} reached"
    if stop == 2:
        return f"time limit {timeout:g}s reached"
    return _STOPS.get(stop, f"stopped ({stop})")


# ----- choosing ---------------------------------------------------------------------------
def quick_try(
    c: Compiled,
    max_states: int = 0,
    timeout: float = 0.0,
    graph: bool = True,
    progress: Optional[Callable[[dict], None]] = None,
    stop: Optional[StopWhen] = None,
) -> tuple[Optional[Exploration], float]:
    """'auto's first try: the Python engine on at most `QUICK_STATES` states. Returns its
    exploration where that is the answer (complete, or stopped by the caller's own limit
    or time), else None; and the seconds left of `timeout` (0: none was set)."""
    budget = min(max_states or QUICK_STATES, QUICK_STATES)
    ex = explore(c, budget, timeout, graph=graph, progress=progress, stop=stop)
    if ex.complete or budget == max_states or not ex.stop_reason.startswith("state limit"):
        return ex, timeout
    return None, (max(timeout - ex.seconds, 1e-3) if timeout else 0.0)


def engine_choice(engine: Optional[str] = None) -> str:
    """`engine`, else $TOOLCOMMIT_ENGINE, else 'auto'; UsageError for anything else."""
    want = (engine or os.environ.get("TOOLCOMMIT_ENGINE") or "auto").strip().lower()
    if want not in ENGINES:
        raise UsageError(
            f"unknown explicit engine {want!r} (TOOLCOMMIT_ENGINE or engine=); "
            f"valid: {', '.join(ENGINES)}"
        )
    return want


def shared_enabled() -> bool:
    """Whether `shared` searches may use the shared engine (`native_vm`): yes unless
    TOOLCOMMIT_SHARED=0 (the plain answer back: each model's own C, or Python)."""
    return os.environ.get("TOOLCOMMIT_SHARED", "1").strip() != "0"


def explore_any(
    c: Compiled,
    max_states: int = 0,
    timeout: float = 0.0,
    graph: bool = True,
    progress: Optional[Callable[[dict], None]] = None,
    engine: Optional[str] = None,
    stop: Optional[StopWhen] = None,
    jobs: int = 1,
    later: bool = False,
    quick: bool = True,
) -> Exploration:
    """Explore `c` with the engine chosen by `engine_choice`; the same result either way
    (`later`: see `explore_native`; the Python engine runs PROGRESS's search at once).

    'native' runs the native engine (UsageError when it cannot be built); 'python' the
    Python engine. 'auto' (the default) lets the Python engine try first with a budget of
    `QUICK_STATES` states: most instances (every failure class) finish within it in
    milliseconds, less than generating, compiling or even loading C would take. A larger
    instance starts over natively (`stop` is passed to either engine, which stop alike), on
    `jobs` threads; when the native engine cannot be built, the Python engine goes on (on
    one core: it is the oracle, kept simple) and the result's `engine_note` says why.
    """
    want = engine_choice(engine)
    check_limits(max_states, timeout)  # the same range for either engine
    if want == "python":
        return explore(c, max_states, timeout, graph=graph, progress=progress, stop=stop)
    if want == "auto" and quick:  # not quick: the caller made the first try
        ex, timeout = quick_try(c, max_states, timeout, graph, progress, stop)
        if ex is not None:
            return ex
    lib, why = library(c)
    if lib is not None:
        return explore_native(
            c, max_states, timeout, graph, progress, lib=lib, stop=stop, jobs=jobs, later=later
        )
    if want == "native":
        raise UsageError(
            f"native engine unavailable: {why}; unset TOOLCOMMIT_ENGINE to use the Python engine"
        )
    ex = explore(c, max_states, timeout, graph=graph, progress=progress, stop=stop)
    ex.engine_note = f"native engine unavailable: {why}; Python engine used"
    return ex
