"""The line index: the writer stage once, for shards that decode only the lines they own.

Sharded by key, each shard used to decode every line, to route it and to follow every
writer's order, and held every writer. With the index, one process (the coordinator)
reads every line once without decoding it: the native lane's scan (`lane.index`) finds a
plain line's type, writer, seq and routing name (its ``key``, else an effect's
``idempotency_key``); any other line is decoded here by the reader's own rules. It runs the
writer stage for everyone (`writers.note_seq`: each writer's number, its repeated and
missing seqs; SEQ_GAP, SEQ_DUP and CUT_OFF are its findings) and writes, per line, its kind,
its writer's index + 1 (0: a repeated seq, which every shard ignores) and the CRC-32 of its
routing name into memory the shards share (`Shared`, mapped before they fork). The shards
read the same lines, wait for the index where they catch it up, decode only those they
own (`lane.pick`) and feed them with the index's writer numbers (`lane.feed_at`); they hold
no writers but those that crashed (P4 reads their crashes). The index stops at the first
line it must refuse (its error is one of those the protocol compares) and gives up (the
shards then run as before) on a log it cannot cover: too many lines or writer names for
the memory it sized from the files.
"""

from __future__ import annotations

import gc
import mmap
import os
import struct
import time
import zlib
from typing import Optional, Sequence

from toolcommit.checker.logs import typed
from toolcommit.checker.logs.conformance import Conformance
from toolcommit.checker.logs.events import problem
from toolcommit.checker.logs.findings import LINE_BITS
from toolcommit.checker.logs.read import _BOM, _CHUNK, _too_long, decode
from toolcommit.checker.logs.typed import from_dict
from toolcommit.checker.logs.writers import note_seq, report_gaps
from toolcommit.model.errors import InputError, ToolcommitError

RUNNING, DONE, STOPPED, ABANDONED = 0, 1, 2, 3
NONE, KEYED, ALL = 0, 1, 2  # a line's kind: no event, routed by name, every shard's
_HEAD = struct.Struct("<QQ")  # state, writer names published
_FILE = struct.Struct("<QQ")  # per file: lines indexed, line the index stopped at
_MIN_LINE = 16  # bytes a line is sized at (an event takes 38 or more)


def chunks(f):
    """The bytes of `f` as (data, complete): data to look at, complete the length of its
    complete lines (each ending with a newline; what follows is the start of the next
    line, carried into the next data), or -1 at the end of the file, when data is the
    last line, without its newline (empty: none). The lines are `read.read_batches`'s: a
    UTF-8 byte order mark before the first line is left out."""
    tail, first = b"", True
    while True:
        buf = f.read(_CHUNK)
        if not buf:
            yield tail, -1
            return
        data = tail + buf if tail else buf
        if first:
            first = False
            if data.startswith(_BOM):
                data = data[3:]
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        yield data, cut


class Shared:
    """The index's memory, shared with the shards forked after it is made: a header, per
    file the kind, writer index + 1 and routing CRC-32 of each line (by line number), and
    the writer names in order."""

    def __init__(self, paths: Sequence[str]):
        sizes = [os.path.getsize(p) for p in paths]
        self.caps = [s // _MIN_LINE + 64 for s in sizes]
        self.max_writers = sum(self.caps)
        self.names_bytes = sum(sizes) // 4 + (1 << 20)
        head = _HEAD.size + _FILE.size * len(paths)
        layout, off = [], head
        for cap in self.caps:
            off += -off % 8
            layout.append((off, off + cap, off + 5 * cap))  # kind, widx, crc
            off += 9 * cap
        off += -off % 8
        self.name_offs = off
        off += 8 * (self.max_writers + 1)
        self.name_data = off
        self.map = mmap.mmap(-1, off + self.names_bytes)  # anonymous: shared on fork
        self.kind, self.widx, self.crc = [], [], []
        mv = memoryview(self.map)
        for (k, w, c), cap in zip(layout, self.caps):
            self.kind.append(mv[k : k + cap])
            self.widx.append(mv[w : w + 4 * cap].cast("I"))
            self.crc.append(mv[c : c + 4 * cap].cast("I"))
        self.offs = mv[self.name_offs : self.name_data].cast("Q")
        self.files = len(paths)

    def close(self) -> None:
        """Unmap (the views first: a mapping with exported views cannot close)."""
        for v in (*self.kind, *self.widx, *self.crc, self.offs):
            v.release()
        self.kind = self.widx = self.crc = []
        self.map.close()

    # the header (the index writes, the shards read)
    def state(self) -> tuple[int, int]:
        return _HEAD.unpack_from(self.map, 0)

    def set_state(self, state: int, names: int) -> None:
        _HEAD.pack_into(self.map, 0, state, names)

    def progress(self, fi: int) -> tuple[int, int]:
        return _FILE.unpack_from(self.map, _HEAD.size + _FILE.size * fi)

    def set_progress(self, fi: int, done: int, stop: int = 0) -> None:
        """File `fi` indexed up to line `done`; `stop`: the line it stopped at, plus one."""
        _FILE.pack_into(self.map, _HEAD.size + _FILE.size * fi, done, stop)

    def wait(self, fi: int, upto: int) -> tuple[int, int]:
        """Wait until file `fi` is indexed up to line `upto` (or the index stopped, finished
        or gave up): (state, the last line a shard may read)."""
        pause = 0.0001
        while True:
            state = self.state()[0]  # first: once it is final, so is the progress
            done, stop = self.progress(fi)
            if stop:  # stopped at line stop - 1: the lines before it
                return STOPPED, max(0, stop - 2)
            if done >= upto or state == DONE:
                return RUNNING, done
            if state != RUNNING:
                return state, done
            time.sleep(pause)
            pause = min(pause * 2, 0.002)

    # the writer names
    def add_name(self, i: int, name: str) -> bool:
        """Publish writer `i`'s name (False: no room, the index gives up)."""
        data = name.encode("utf-8", "surrogatepass")
        start = self.offs[i]
        if i + 1 >= len(self.offs) or start + len(data) > self.names_bytes:
            return False
        self.map[self.name_data + start : self.name_data + start + len(data)] = data
        self.offs[i + 1] = start + len(data)
        return True


class SharedNames:
    """The writer names by index, read from `Shared` (a shard's `Findings.writers`): the
    names are published before any line that needs them. Pickles as an empty list (the
    coordinator renders the report with its own names)."""

    def __init__(self, shared: Shared):
        self.shared = shared
        self._cache: dict[int, str] = {}

    def __len__(self) -> int:
        return self.shared.state()[1]

    def __getitem__(self, i: int) -> str:
        name = self._cache.get(i)
        if name is None:
            s = self.shared
            a, b = s.offs[i], s.offs[i + 1]
            name = self._cache[i] = bytes(s.map[s.name_data + a : s.name_data + b]).decode(
                "utf-8", "surrogatepass"
            )
        return name

    def __reduce__(self):
        return (list, ())


class Index:
    """The coordinator's side: the writer stage over every line of `paths` (see the
    module docstring). After `run`: `store` (its writers, names and SEQ_* / CUT_OFF
    findings), `warnings`, `error` (((file, line), message) of the first line it refused,
    or None), `read` (what it read, as `shards.Shard.read`) and `abandoned`."""

    def __init__(self, paths: Sequence[str], max_line_bytes: int, shared: Shared, lane):
        self.paths, self.limit, self.shared, self.lane = list(paths), max_line_bytes, shared, lane
        self.store = Conformance([("<stdin>" if p == "-" else p) for p in paths], native=False)
        self.by_bytes: dict[bytes, object] = {}
        self.warnings: list[str] = []
        self.error: Optional[tuple] = None
        self.last_lines: list[int] = []
        self.abandoned = False

    @property
    def read(self) -> tuple:
        """The lines of each file it indexed (the shards must have split the same)."""
        return tuple(self.last_lines), ()

    def new_writer(self, name: bytes):
        """The Writer of a name the index meets for the first time (numbered in order)."""
        w = self.store.writer(name.decode("utf-8", "surrogatepass"))
        self.by_bytes[name] = w
        if not self.shared.add_name(w.idx, w.name):
            raise _GiveUp()
        self.shared.set_state(RUNNING, len(self.store.wnames))
        return w

    def run(self) -> None:
        s = self.shared
        collecting = gc.isenabled()
        gc.disable()  # as a shard's run: no reference cycles here, collection only costs
        try:
            for fi, path in enumerate(self.paths):
                n = self._file(fi, path)
                self.last_lines.append(n)
                s.set_progress(fi, n)
            s.set_state(DONE, len(self.store.wnames))
            report_gaps(self.store.writers.values(), self.store.found)  # the lead's SEQ_GAP
        except _GiveUp:
            self.abandoned = True
            s.set_state(ABANDONED, len(self.store.wnames))
        except _Stop as e:
            self.error = ((e.fi, e.line), e.message)
            s.set_progress(e.fi, max(0, e.line - 1), e.line + 1)
            s.set_state(STOPPED, len(self.store.wnames))
        except BaseException:
            s.set_state(ABANDONED, len(self.store.wnames))
            raise
        finally:
            if collecting:
                gc.enable()

    def _file(self, fi: int, path: str) -> int:
        """Index one file (lines split as `read.read_batches` splits them); its last line
        number."""
        lane, s, limit = self.lane, self.shared, self.limit
        kind, widx, crc = s.kind[fi], s.widx[fi], s.crc[fi]
        found = self.store.found
        self.cut = False
        try:
            f = open(path, "rb")
        except OSError as e:
            raise _Stop(fi, 0, InputError(f"cannot read: {e.strerror or e}; check the path", path))
        n = 0
        with f:
            for data, complete in chunks(f):
                last = complete < 0  # data is the last line (no newline)
                stop, pos = (0 if last else complete), 0
                while pos < stop:
                    took, lines = lane.index(
                        data,
                        pos,
                        n + 1,
                        fi,
                        limit,
                        self.by_bytes,
                        self.new_writer,
                        found,
                        kind,
                        widx,
                        crc,
                    )
                    pos += took
                    n += lines
                    if pos < stop:  # a line the scan left to us
                        if n + 1 >= len(kind):
                            raise _GiveUp()
                        end = data.index(b"\n", pos)
                        n += 1
                        self._slow(data[pos:end], n, fi, path, False)
                        pos = end + 1
                if len(data) - stop > limit:  # read_batches: a line past the limit
                    raise _Stop(fi, n + 1, _too_long(limit, path, n + 1))
                if last and data:
                    if n + 1 >= len(kind):
                        raise _GiveUp()
                    n += 1
                    if not self._slow(data, n, fi, path, True):
                        self.cut = True
                s.set_progress(fi, n)
        lane.index_done()
        if not kind[1 : n + 1].tobytes().strip(b"\0"):  # read_batches refuses a log without events
            why = "its only line is cut off" if self.cut else "no events"
            raise _Stop(
                fi,
                0,
                InputError(
                    f"empty log ({why}); pass a JSON Lines file with one event per line", path
                ),
            )
        return n

    def _slow(self, line: bytes, n: int, fi: int, path: str, eof: bool) -> bool:
        """A line the scan did not take, by the reader's own rules (`read._one_by_one`):
        False for a cut-off last line (a warning and CUT_OFF, no event)."""
        s, st = self.shared, self.store
        if len(line) > self.limit:
            raise _Stop(fi, n, _too_long(self.limit, path, n))
        if not line or line.isspace():
            s.kind[fi][n], s.widx[fi][n], s.crc[fi][n] = NONE, 0, 0
            return True
        ev = typed.decode(line) if typed.decode is not None else None
        if ev is None:
            try:
                obj = decode(line)
            except ValueError as e:
                if eof:
                    self.warnings.append(
                        f"{path}:{n}: last line is cut off (no newline, not "
                        "valid JSON): its writer died mid-write; the line is "
                        "ignored"
                    )
                    st.cut_off(fi, n)
                    s.kind[fi][n], s.widx[fi][n], s.crc[fi][n] = NONE, 0, 0
                    return False
                raise _Stop(fi, n, InputError(str(e), path, n))
            why = problem(obj)
            if why:
                raise _Stop(fi, n, InputError(why, path, n))
            ev = from_dict(obj)
        w = st.writers.get(ev.writer)
        if w is None:
            w = self.new_writer(ev.writer.encode("utf-8", "surrogatepass"))
        loc = w.base | (fi << LINE_BITS) | n
        seq = ev.seq
        if seq == w.nxt:
            w.nxt, w.hi_loc, keep = seq + 1, loc, True
        else:
            keep = note_seq(w, seq, st.found, loc)
        if w.idx + 1 >= 1 << 32:
            raise _GiveUp()
        name = (
            None
            if ev.type in ("crash", "restart")
            else (ev.key if ev.key is not None else getattr(ev, "idempotency_key", None))
        )
        s.kind[fi][n] = KEYED if name is not None else ALL
        s.widx[fi][n] = w.idx + 1 if keep else 0
        s.crc[fi][n] = zlib.crc32(name.encode("utf-8", "surrogatepass")) if name is not None else 0
        return True


class _Stop(Exception):
    def __init__(self, fi: int, line: int, error: ToolcommitError):
        self.fi, self.line, self.message = fi, line, str(error)


class _GiveUp(Exception):
    """The index cannot cover this log (too many lines or names for its memory)."""


def usable(paths: Sequence[str], focus: Sequence[str], lane) -> bool:
    """Whether the index can serve: the native lane loaded, no focus histories, every log
    a regular plain (not gzip) file."""
    if lane is None or focus or not hasattr(lane, "index"):
        return False
    for p in paths:
        try:
            with open(p, "rb") as f:
                if f.read(2) == b"\x1f\x8b":
                    return False
        except OSError:
            return False
    return True
