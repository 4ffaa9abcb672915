"""The exact checker split by key: shards that each check the keys they own, and the
protocol that makes their merged report the single-process report, byte for byte.

Every shard reads every line (the logs are files every shard can open) and runs the same
stage code as the single process, but only on the lines it owns: a line of key K (an
effect without ``key``: its ``idempotency_key``) belongs to shard ``shard_of(K)`` (a
hash of K modulo the shards); crash and restart lines belong to shard 0. On the lines it does not own a shard only
follows the writer (`Conformance.skip`): each writer's order is global, so every shard
follows every writer, ignores the same repeated seq numbers, knows every crash (P4) and
numbers writers alike; shard 0 alone reports SEQ_GAP, SEQ_DUP and CUT_OFF.

Keys are independent except through intents: keys of one canonical intent (CANON, I1
across keys, an effect named by another key) must be judged together. So, after reading
(`Shard.run`), the shards find the intents more than one of them holds (a bitmap of
digest prefixes, then the exact digests: `Shard.candidates`), each hands over the keys and
intents connected to those (`Shard.closure`), and one more shard, owning exactly those
keys, checks them together (the *fixup*); the others `Shard.finish` without them.
`coordinate` runs this protocol over any way of calling shards (processes,
`toolcommit.checker.logs.pool`; a Dask cluster, `toolcommit.checker.logs.cluster`) and
`toolcommit.checker.logs.merge` builds the one report. The first bad line is reported
whichever shard met it: the least (file, line) of the shards' errors; shards that read
different logs (a writer still appending) are refused, never merged.
"""
from __future__ import annotations

import gc
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from toolcommit.model.errors import InputError, ToolcommitError

from toolcommit.checker.logs.conformance import Conformance
from toolcommit.checker.logs.findings import LINE_BITS, Findings
from toolcommit.checker.logs.intents import EventError
from toolcommit.checker.logs.read import read_batches

WRITER_PROPS = frozenset(("SEQ_GAP", "SEQ_DUP", "CUT_OFF"))   # keyed by writer or file
BITMAP_BITS = 24                       # digest prefix bits in a shard's bitmap (2 MiB)


def shard_of(name: str, shards: int, stable: bool = True) -> int:
    """The shard that owns key `name`: by CRC-32 (the same in every process), or, when
    not `stable`, by Python's string hash, which is cheaper (the core hashes every key
    anyway) but the same only in processes forked from one parent."""
    if stable:
        return zlib.crc32(name.encode("utf-8", "surrogatepass")) % shards
    return hash(name) % shards


def display(path: str) -> str:
    return "<stdin>" if path == "-" else path


@dataclass
class Part:
    """What one shard found: its findings collector (keys handed over forgotten), line
    counts, keys and intents it judged, the writers by index, the reader's warnings, the
    stories of the focus keys it owns, its first keys with their positions (for the
    message refusing a focus key the log does not name), and its process's peak memory
    and CPU time (for benchmarks)."""

    found: Findings
    counts: dict
    keys: int
    intents: int
    writers: list
    warnings: list
    history: dict
    focus: list                                        # focus keys it read (handed or not)
    first_keys: list = field(default_factory=list)   # [((file, line), key)], at most 5
    all_keys: int = 0                                  # keys before any handover
    read: tuple = ()                                   # what it read (`Shard.read`)
    peak_kib: int = 0                                  # the shard process's peak RSS
    cpu_s: float = 0.0                                 # and the CPU seconds of the shard


class Shard:
    """One shard of the checker (see the module docstring).

    Parameters
    ----------
    paths : sequence of str
        The logs, in order (files every shard can open; not stdin).
    index, shards : int
        This shard's number and how many there are.
    owned : set of str, optional
        The fixup shard: it owns exactly these keys (and no crash line, no writer finding).
    stable : bool
        Route keys by `shard_of` with ``stable`` (False: every shard must be forked from
        one process).
    complete_effects : bool
        The effect lines are the provider's whole ledger (see `Conformance`).
    """

    def __init__(self, paths: Sequence[str], max_line_bytes: int, focus: Sequence[str],
                 index: int, shards: int, owned: Optional[set] = None, stable: bool = True,
                 complete_effects: bool = False):
        self.paths, self.max_line_bytes = list(paths), max_line_bytes
        self.index, self.shards, self.owned, self.stable = index, shards, owned, stable
        self.focus = list(focus)
        self.checker = c = Conformance([display(p) for p in paths], focus,
                                        complete_effects=complete_effects)
        self.lead = index == 0 and owned is None      # reports what writers did
        if not self.lead:
            c.seq_found = Findings(c.files, c.wnames)  # scratch: shard 0 reports them
        self.warnings: list[str] = []
        self.first_keys: list = []
        self.handed: tuple = (set(), set())
        self.cpu0 = _usage()[1]
        self.last_lines: list[int] = []

    def run(self) -> tuple[Optional[tuple], Optional[bytes], tuple]:
        """Read every line and check the owned ones. Returns (error, bitmap, read): the
        first error as ((file, line), message) or None, a bitmap of the intents' digest
        prefixes (None after an error), and what was read (`Shard.read`)."""
        collecting = gc.isenabled()
        gc.disable()   # the core builds no reference cycles; collection would only cost time
        try:
            self._read()
        except ToolcommitError as e:
            return (self._where, str(e)), None, self.read
        finally:
            if collecting:
                gc.enable()
        bits = bytearray(1 << (BITMAP_BITS - 3))
        for d in self.checker.intents:
            i = int.from_bytes(d[:3], "little")
            bits[i >> 3] |= 1 << (i & 7)
        return None, bytes(bits), self.read

    @property
    def read(self) -> tuple:
        """What this shard read: the last line number of each file and the warnings. Shards
        that read different logs (a writer still appending) cannot be merged."""
        return tuple(self.last_lines), tuple(self.warnings)

    def _read(self) -> None:
        c = self.checker
        route = (self.index, self.shards, self.owned, bool(self.stable), bool(self.lead),
                 self._one, c.skip)
        for fi, path in enumerate(self.paths):
            n = 0
            self._where = (fi, 0)
            cut = (lambda line, fi=fi: c.cut_off(fi, line)) if self.lead else None
            try:
                for numbers, events in read_batches(path, self.max_line_bytes, None,
                                                    self.warnings.append, on_cut=cut,
                                                    helper=False):
                    if not c.lane_feed(numbers, events, fi, route):
                        n = self._route(numbers, events, fi)
                    if numbers:
                        n = numbers[-1]
            except EventError as e:
                n = e.line
                self._where = (fi, n)
                raise InputError(str(e), path, n) from None
            except InputError as e:
                self._where = (fi, e.line)
                raise
            self.last_lines.append(n)

    def _one(self, ev, fi: int, n: int) -> None:
        """`_route` for one line (the native lane's unusual ones)."""
        self._route((n,), (ev,), fi)

    def _route(self, numbers, events, fi: int) -> int:
        """Feed the lines this shard owns, follow the writers of the others (the native
        lane does the same in C: `lane.feed` with a route); the last line number."""
        c = self.checker
        feed, skip, keys, writers = c.feed, c.skip, c.keys, c.writers
        me, shards, owned, lead = self.index, self.shards, self.owned, self.lead
        crc = None if not self.stable else zlib.crc32
        firsts = self.first_keys if self.focus else None
        nkeys = len(keys)
        at = fi << LINE_BITS
        n = 0
        try:
            for n, ev in zip(numbers, events):    # this runs once per line
                t = ev.type
                if t == "crash" or t == "restart":
                    if not lead:
                        skip(ev, fi, n)
                        continue
                    mine = True
                else:         # whose key is it?
                    name = ev.key
                    if name is None:
                        name = ev.idempotency_key
                    if owned is not None:
                        mine = name in owned
                    elif crc is None:
                        mine = hash(name) % shards == me
                    else:
                        mine = crc(name.encode("utf-8", "surrogatepass")) % shards == me
                if not mine:
                    # `Conformance.skip` inlined for its common case (a keyed line):
                    # the next seq of a known writer
                    w = writers.get(ev.writer)
                    if w is not None and ev.seq == w.nxt:
                        w.nxt += 1
                        w.hi_loc = w.base | at | n
                    else:
                        skip(ev, fi, n)
                    continue
                feed(ev, fi, n)
                if firsts is not None and len(keys) != nkeys:
                    nkeys = len(keys)
                    if len(firsts) < 5:
                        firsts.append(((fi, n), next(reversed(keys))))
        except EventError as e:
            e.line = n
            raise
        return n

    def candidates(self, bitmap: bytes) -> list[bytes]:
        """The digests of this shard's intents whose prefix bit is set in `bitmap`."""
        return [d for d in self.checker.intents
                if bitmap[(i := int.from_bytes(d[:3], "little")) >> 3] >> (i & 7) & 1]

    def closure(self, shared) -> list[str]:
        """The keys, here, connected to the intents `shared` (through keys and intents:
        a key's intents are those of its accepted proposals and its effects); they and
        their intents are handed over to the fixup shard."""
        st = self.checker
        index: dict[str, list] = {}             # key -> intents naming it, unpacked ones
        for d, e in st.intents.items():
            if type(e) is not str:
                for name in _names(e):
                    index.setdefault(name, []).append(d)
        keys: set[str] = set()
        digests: set[bytes] = set()
        todo = [d for d in shared if d in st.intents]
        while todo:
            d = todo.pop()
            if d in digests:
                continue
            digests.add(d)
            e = st.intents[d]
            for name in ([e] if type(e) is str else _names(e)):
                if name in keys:
                    continue
                keys.add(name)
                k = st.key(name)
                if k.digest is not None:
                    todo.append(k.digest)
                todo.extend(index.get(name, ()))
        self.handed = (keys, digests)
        return sorted(keys)

    def finish(self) -> Part:
        """The end-of-log checks on the keys this shard keeps, and its `Part`."""
        c = self.checker
        all_keys = len(c.keys)
        present = [k for k in dict.fromkeys(self.focus) if k in c.keys]
        keys, digests = self.handed
        if keys:
            c.found.forget(keys, spare=WRITER_PROPS)
            for name in keys:
                del c.keys[name]
            for d in digests:
                del c.intents[d]
        c.close()
        return Part(c.found, dict(c.counts), len(c.keys), len(c.intents), c.wnames,
                    self.warnings, {k: c.focus[k] for k in present if k not in keys}, present,
                    self.first_keys, all_keys, self.read, _usage()[0], _usage()[1] - self.cpu0)


def _usage() -> tuple[int, float]:
    """This process's peak RSS (KiB) and CPU seconds, for benchmarks."""
    try:
        import resource
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_maxrss, r.ru_utime + r.ru_stime
    except (ImportError, OSError):  # pragma: no cover - not Unix
        return 0, 0.0


def _names(e) -> list[str]:
    """Every key an (unpacked) intent names: accepted ones, then its effects' only."""
    return ([e.key] if e.recorded else []) + [m[0] for m in e.more or ()] + \
        list(e.effect_keys or ())


# ----- the protocol, over any way of calling shards -----------------------------------------
def coordinate(call: Callable[[str, list], list], shards: int,
               fixup: Callable[[set], Part]) -> tuple[list[Part], Optional[Part]]:
    """Run the shards through the protocol; returns their parts and the fixup's (or None).

    `call(method, args)` calls `method` on every shard, shard i with the arguments
    ``args[i]`` (a tuple), and returns their answers in shard order; `fixup(keys)` runs a
    shard owning exactly `keys` to its `Part`. Raises the `InputError` of the first bad
    line (by file, then line) any shard met."""
    ran = call("run", [()] * shards)
    errors = [r[0] for r in ran if r[0] is not None]
    if errors:            # each shard stops at its first: the least is the log's first
        raise InputError(min(errors)[1])
    _same_logs(r[2] for r in ran)
    seen = multi = 0
    for _, bits, _ in ran:
        b = int.from_bytes(bits, "little")
        multi |= seen & b
        seen |= b
    handed: set = set()
    if multi:
        size = len(ran[0][1])
        lists = call("candidates", [(multi.to_bytes(size, "little"),)] * shards)
        count: dict[bytes, int] = {}
        for ds in lists:
            for d in ds:
                count[d] = count.get(d, 0) + 1
        shared = {d for d, n in count.items() if n > 1}
        if shared:
            for keys in call("closure", [(shared,)] * shards):
                handed.update(keys)
    parts = call("finish", [()] * shards)
    fix = fixup(handed) if handed else None
    if fix is not None:
        _same_logs([parts[0].read, fix.read])
    return parts, fix


def _same_logs(reads) -> None:
    if len(set(reads)) > 1:
        raise changed()


def changed() -> InputError:
    """The error of shards that did not read the same logs."""
    return InputError("the logs changed while the shards read them (is a writer still "
                      "appending?); validate a copy that no one writes, or use --jobs 1")
