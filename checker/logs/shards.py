"""The exact checker split by key: shards that each check the keys they own, and the
protocol that makes their merged report the single-process report, byte for byte.

Every shard reads every line (the logs are files every shard can open) and runs the same
stage code as the single process, but only on the lines it owns: a line of key K (an
effect without ``key``: its ``idempotency_key``) belongs to shard ``shard_of(K)`` (a
hash of K modulo the shards); crash and restart lines belong to shard 0. Each writer's
order is global, so every shard must ignore the same repeated seq numbers, know every
crash (P4) and number writers alike. With the line index (`toolcommit.checker.logs.index`,
the processes of `pool` on regular files), the coordinator runs that writer stage once
and tells the shards, per line, its writer's number and whether to ignore it: a shard
then decodes only its own lines (and every crash), and holds no writers but those that
crashed. Without it (a Dask cluster, focus keys, gzip) a shard decodes every line and on
the lines it does not own only follows the writer (`Conformance.skip`); shard 0 then
reports SEQ_GAP, SEQ_DUP and CUT_OFF.

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

from toolcommit.checker.logs import typed
from toolcommit.checker.logs.conformance import Conformance
from toolcommit.checker.logs.events import problem
from toolcommit.checker.logs.findings import LINE_BITS, Findings
from toolcommit.checker.logs.intents import EventError
from toolcommit.checker.logs.read import _BATCH, decode, read_batches
from toolcommit.checker.logs.stages import STAGE
from toolcommit.checker.logs.writers import Writer, note_crash
from toolcommit.model.errors import InputError, ToolcommitError

WRITER_PROPS = frozenset(("SEQ_GAP", "SEQ_DUP", "CUT_OFF"))  # keyed by writer or file
ABANDONED_READ = ("abandoned",)  # what a shard read when the line index gave up
BITMAP_BITS = 24  # digest prefix bits in a shard's bitmap (2 MiB)


def shard_of(name: str, shards: int, stable: bool = True) -> int:
    """The shard that owns key `name`: by CRC-32 (the same in every process), or, when
    not `stable`, by Python's string hash, which is cheaper (the core hashes every key
    anyway) but the same only in processes forked from one parent."""
    if stable:
        return zlib.crc32(name.encode("utf-8", "surrogatepass")) % shards
    return hash(name) % shards


def prefix_bitmap(digests, lane=None) -> bytes:
    """The bitmap (2 ** BITMAP_BITS bits) with a bit set per digest prefix: its first
    three bytes, little-endian; by the native lane when given (`lane.prefix_bits`).

    >>> prefix_bitmap([bytes([9, 0, 0]) + bytes(29)])[1]
    2
    """
    if lane is not None:
        return lane.prefix_bits(digests, 1 << (BITMAP_BITS - 3))
    bits = bytearray(1 << (BITMAP_BITS - 3))
    for d in digests:
        i = int.from_bytes(d[:3], "little")
        bits[i >> 3] |= 1 << (i & 7)
    return bytes(bits)


def prefixed(digests: dict, bitmap: bytes, lane=None) -> list[bytes]:
    """The digests (a dict's keys, in order) whose prefix bit `prefix_bitmap` would set is
    set in `bitmap`; by the native lane when given (`lane.prefix_hits`).

    >>> d = bytes([9, 0, 0]) + bytes(29)
    >>> prefixed({d: 1, bytes(32): 2}, prefix_bitmap([d]))  == [d]
    True
    """
    if lane is not None:
        return lane.prefix_hits(digests, bitmap)
    return [
        d for d in digests if bitmap[(i := int.from_bytes(d[:3], "little")) >> 3] >> (i & 7) & 1
    ]


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
    focus: list  # focus keys it read (handed or not)
    first_keys: list = field(default_factory=list)  # [((file, line), key)], at most 5
    all_keys: int = 0  # keys before any handover
    read: tuple = ()  # what it read (`Shard.read`)
    peak_kib: int = 0  # the shard process's peak RSS
    cpu_s: float = 0.0  # and the CPU seconds of the shard


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
    shared : logs.index.Shared, optional
        The line index: the shard decodes only the lines it owns, with the writer numbers
        the index gives them, and holds no writer but those that crashed (see
        `toolcommit.checker.logs.index`; the coordinator runs the index and reports what
        writers did).
    """

    def __init__(
        self,
        paths: Sequence[str],
        max_line_bytes: int,
        focus: Sequence[str],
        index: int,
        shards: int,
        owned: Optional[set] = None,
        stable: bool = True,
        complete_effects: bool = False,
        shared=None,
    ):
        self.paths, self.max_line_bytes = list(paths), max_line_bytes
        self.index, self.shards, self.owned, self.stable = index, shards, owned, stable
        self.focus = list(focus)
        self.checker = c = Conformance(
            [display(p) for p in paths], focus, complete_effects=complete_effects
        )
        self.lead = index == 0 and owned is None  # reports what writers did
        self.shared = shared
        if shared is not None:  # the index numbers writers and reports what they did
            from toolcommit.checker.logs.index import SharedNames

            c.wnames = c.found.writers = SharedNames(shared)
            c.seq_found = Findings(c.files, c.wnames)
            self.abandoned = False
        elif not self.lead:
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
        gc.disable()  # the core builds no reference cycles; collection would only cost time
        try:
            if self.shared is not None:
                self._read_indexed()
            else:
                self._read()
        except ToolcommitError as e:
            return (self._where, str(e)), None, self.read
        finally:
            if collecting:
                gc.enable()
        if self.shared is not None and self.abandoned:
            return None, None, ABANDONED_READ
        return None, prefix_bitmap(self.checker.intents, self.checker.lane), self.read

    @property
    def read(self) -> tuple:
        """What this shard read: the last line number of each file and the warnings. Shards
        that read different logs (a writer still appending) cannot be merged."""
        return tuple(self.last_lines), tuple(self.warnings)

    def _read(self) -> None:
        c = self.checker
        route = (
            self.index,
            self.shards,
            self.owned,
            bool(self.stable),
            bool(self.lead),
            self._one,
            c.skip,
        )
        for fi, path in enumerate(self.paths):
            n = 0
            self._where = (fi, 0)
            cut = (lambda line, fi=fi: c.cut_off(fi, line)) if self.lead else None
            try:
                for numbers, events in read_batches(
                    path, self.max_line_bytes, None, self.warnings.append, on_cut=cut, helper=False
                ):
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

    def _read_indexed(self) -> None:
        """`_read` with the line index: the lines split as the index splits them, waiting for
        it where this shard catches it up, decoding only the lines `lane.pick` gives (this
        shard's, and every crash or restart) and feeding them with the index's writer
        numbers (`lane.feed_at`), a batch at a time. Stops where the index stopped, or
        gave up."""
        from toolcommit.checker.logs.index import ABANDONED, STOPPED, chunks

        s, lane = self.shared, self.checker.lane
        owned = (
            None
            if self.owned is None
            else {zlib.crc32(k.encode("utf-8", "surrogatepass")) for k in self.owned}
        )
        state = None
        for fi, path in enumerate(self.paths):
            self._where = (fi, 0)
            n = 0
            with open(path, "rb") as f:
                for data, complete in chunks(f):
                    # `end`: where a line without a newline ends (the file's last), else -1
                    end, pos = (len(data) if complete < 0 else -1), 0
                    while pos < len(data) and (complete < 0 or pos < complete):
                        state, upto = s.wait(fi, n + 1)
                        if state == ABANDONED:
                            self.abandoned = True
                            return
                        if upto <= n:  # where the index stopped, or the log grew
                            n += 0 if state == STOPPED else 1
                            break
                        raw, numbers, took, lines = lane.pick(
                            data,
                            pos,
                            end,
                            n + 1,
                            upto - n,
                            s.kind[fi],
                            s.crc[fi],
                            self.index,
                            self.shards,
                            owned,
                        )
                        for i in range(0, len(raw), _BATCH):
                            self._feed_picked(
                                raw[i : i + _BATCH], numbers[i : i + _BATCH], fi, path
                            )
                        pos += took
                        n += lines
                    else:
                        continue
                    break
            self.last_lines.append(n)
            if state == STOPPED:
                return

    def _feed_picked(self, lines: list, numbers: list, fi: int, path: str) -> None:
        c, s = self.checker, self.shared
        try:
            events = list(map(typed.decode_raw, lines))
        except typed.INVALID:
            events = [self._decode_one(line, n, fi, path) for line, n in zip(lines, numbers)]
        if self.owned is not None:  # the fixup: its keys only (a CRC-32 can collide)
            keep = [
                j
                for j, ev in enumerate(events)
                if ev.type in ("crash", "restart")
                or (ev.key if ev.key is not None else ev.idempotency_key) in self.owned
            ]
            events, numbers = [events[j] for j in keep], [numbers[j] for j in keep]
        try:
            c.lane.feed_at(
                c,
                events,
                numbers,
                fi,
                s.widx[fi],
                c.found._writer_shift,
                bool(self.lead),
                self._stage,
                self._crash,
            )
        except EventError as e:
            self._where = (fi, c.lane.failed_line())
            raise InputError(str(e), path, self._where[1]) from None

    def _decode_one(self, line: bytes, n: int, fi: int, path: str):
        """One line the typed decoder refused, by the reader's thorough path."""
        ev = typed.decode(line) if typed.decode is not None else None
        if ev is not None:
            return ev
        self._where = (fi, n)
        try:
            obj = decode(line)
        except ValueError as e:
            raise InputError(str(e), path, n) from None
        why = problem(obj)
        if why:
            raise InputError(why, path, n)
        return typed.from_dict(obj)

    def _stage(self, ev, loc: int) -> None:
        """`lane.feed_at`'s fallback: the event's stage (its writer only by name)."""
        STAGE[ev.type](self.checker, ev, _Named(ev.writer), loc)

    def _crash(self, ev, loc: int, widx: int) -> None:
        """A crash, which P4 reads: noted on the writer (the only writers a shard holds)."""
        c = self.checker
        w = c.writers.get(ev.writer)
        if w is None:
            w = c.writers[ev.writer] = Writer(ev.writer, widx - 1)
            w.base = c.found.writer_base(widx - 1)
        note_crash(w, ev.seq, loc)

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
            for n, ev in zip(numbers, events):  # this runs once per line
                t = ev.type
                if t == "crash" or t == "restart":
                    if not lead:
                        skip(ev, fi, n)
                        continue
                    mine = True
                else:  # whose key is it?
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
        return prefixed(self.checker.intents, bitmap, self.checker.lane)

    def closure(self, shared) -> list[str]:
        """The keys, here, connected to the intents `shared` (through keys and intents:
        a key's intents are those of its accepted proposals and its effects); they and
        their intents are handed over to the fixup shard."""
        st = self.checker
        index: dict[str, list] = {}  # key -> intents naming it, unpacked ones
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
            for name in [e] if type(e) is str else _names(e):
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
        return Part(
            c.found,
            dict(c.counts),
            len(c.keys),
            len(c.intents),
            c.wnames,
            self.warnings,
            {k: c.focus[k] for k in present if k not in keys},
            present,
            self.first_keys,
            all_keys,
            self.read,
            _usage()[0],
            _usage()[1] - self.cpu0,
        )


class _Named:
    """A writer known by name only: what a stage reads of it (`w.name`)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


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
    return (
        ([e.key] if e.recorded else []) + [m[0] for m in e.more or ()] + list(e.effect_keys or ())
    )


# ----- the protocol, over any way of calling shards -----------------------------------------
class IndexGaveUp(Exception):
    """The line index could not cover the log: run the shards without it."""


def coordinate(
    call: Callable[..., list], shards: int, fixup: Callable[[set], Part], index=None
) -> tuple[list[Part], Optional[Part]]:
    """Run the shards through the protocol; returns their parts and the fixup's (or None).

    `call(method, args)` calls `method` on every shard, shard i with the arguments
    ``args[i]`` (a tuple), and returns their answers in shard order; `fixup(keys)` runs a
    shard owning exactly `keys` to its `Part`. With the line `index` (`logs.index.Index`,
    shards made with its memory), `call` runs it while the shards read (``meanwhile``), and
    its error counts with theirs. Raises the `InputError` of the first bad line (by file,
    then line) any shard (or the index) met, and `IndexGaveUp` when the index gave up."""
    if index is None:
        ran = call("run", [()] * shards)
    else:
        ran = call("run", [()] * shards, meanwhile=index.run)
        if index.abandoned or any(r[2] == ABANDONED_READ for r in ran):
            raise IndexGaveUp()
    errors = [r[0] for r in ran if r[0] is not None]
    if index is not None and index.error is not None:
        errors.append(index.error)
    if errors:  # each shard stops at its first: the least is the log's first
        raise InputError(min(errors)[1])
    _same_logs([r[2] for r in ran] + ([index.read] if index is not None else []))
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
    return InputError(
        "the logs changed while the shards read them (is a writer still "
        "appending?); validate a copy that no one writes, or use --jobs 1"
    )
