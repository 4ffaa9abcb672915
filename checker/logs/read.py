"""Reading intent logs: files, ``-`` (stdin), gzip, one JSON object per line. Hostile input.

Logs come from untrusted processes, so the reader only reads (nothing in a log is ever
evaluated), bounds every line (`max_line_bytes`, enforced on the bytes before any decoding),
bounds nesting before decoding, and turns every defect into one `InputError` line
``path:line: what is wrong; what to do``. The one tolerated defect is a cut-off last line
(no newline and not valid JSON: a writer died mid-write), which becomes a warning. Each
decoded line is checked against the schema's fields.

Each line goes first to the typed decoder (`toolcommit.checker.logs.typed`, msgspec: one C
call decodes and checks the common case); a line it refuses, or every line without
msgspec, is decoded with orjson when it is importable, else with the standard library,
and checked by `toolcommit.checker.logs.events` (`fast_ok`, then `problem`, which names
the defect). All see the same bytes and the same rules (UTF-8 only, no NaN, an object per
line), so a line is accepted or refused, with the same words, whichever decoder runs.

Examples
--------
>>> import io
>>> data = io.BufferedReader(io.BytesIO(b'\\xef\\xbb\\xbf{"type":"crash","writer":"w","seq":1}\\n\\n'))
>>> [(n, ev.type, ev.writer, ev.seq) for n, ev in read_lines("-", stdin=data)]
[(1, 'crash', 'w', 1)]
>>> check_paths(["-", "-"], DEFAULT_MAX_LINE_BYTES)
Traceback (most recent call last):
  ...
toolcommit.model.errors.InputError: '-' (stdin) can be given only once
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import struct
import sys
import zlib
from typing import BinaryIO, Callable, Iterator, Optional, Sequence

from toolcommit.checker.logs import typed
from toolcommit.checker.logs.events import fast_ok, problem
from toolcommit.checker.logs.typed import from_dict
from toolcommit.model.canon import memory_limited
from toolcommit.model.errors import InputError

try:  # optional: the fastest decoder available
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the machine
    _orjson = None
if memory_limited():  # orjson crashes when an allocation fails (`memory_limited`)
    _orjson = None

DEFAULT_MAX_LINE_BYTES = 1 << 20
MIN_MAX_LINE_BYTES = 64
MAX_NESTING = 64
_BOM = b"\xef\xbb\xbf"
_NOT_JSON = object()


def check_paths(paths: Sequence[str], max_line_bytes: int) -> None:
    """Refuse unusable arguments before reading anything (the one place these are checked):
    a line limit under `MIN_MAX_LINE_BYTES`, or stdin (``-``) named twice."""
    if max_line_bytes < MIN_MAX_LINE_BYTES:
        raise InputError(
            f"--max-line-bytes {max_line_bytes} is too small; use at least {MIN_MAX_LINE_BYTES}"
        )
    if sum(1 for p in paths if p == "-") > 1:
        raise InputError("'-' (stdin) can be given only once")


# ----- decoding ------------------------------------------------------------------------
def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


_std_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def _loads_std(line: bytes):
    return _std_decoder.decode(line.decode("utf-8"))


loads: Callable[[bytes], object] = _orjson.loads if _orjson is not None else _loads_std
#: the typed decoder (`typed.decode_raw`: one C call decodes and checks a line), or None
#: without msgspec; tests set it to None to run the dict path
TYPED: Optional[Callable[[bytes], object]] = typed.decode_raw
DECODER = "orjson" if _orjson is not None else "json"

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[\[\]{}]")


def nesting(line: bytes) -> int:
    """The deepest nesting of arrays/objects in `line`, brackets inside strings ignored."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(_STRINGS.sub(b"", line)):
        if m.group() in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def why_not_json(line: bytes, decoder_message: str) -> str:
    """One clear reason a line failed to decode."""
    if line.startswith(b"SQLite format 3\x00"):  # read from stdin or gzip: no path to sniff
        return (
            "an SQLite database, not JSON Lines: for the intent log library's database, "
            "write its log with `toolcommit export DB -o intents.jsonl` and validate that; "
            "for a DBOS system database, give its path with --from dbos"
        )
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as e:
        return (
            f"byte 0x{line[e.start]:02x} at column {e.start + 1} is not UTF-8; logs must be "
            "UTF-8 text"
        )
    msg = decoder_message.split("\n")[0][:160]
    return f"not valid JSON ({msg}); each line must be one JSON object"


def decode(line: bytes):
    """Decode one line (bytes, newline optional) or raise ValueError with a clear reason."""
    if line.count(b"[") + line.count(b"{") > MAX_NESTING and nesting(line) > MAX_NESTING:
        raise ValueError(
            f"a value is nested deeper than {MAX_NESTING} levels; "
            "flatten the arguments (hostile or broken writer)"
        )
    try:
        return loads(line)
    except RecursionError:
        raise ValueError("a value is nested too deeply to decode; flatten the arguments") from None
    except ValueError as e:  # orjson.JSONDecodeError and json's are ValueErrors
        raise ValueError(why_not_json(line, str(e))) from None


# ----- streams -------------------------------------------------------------------------
def _open(path: str, stdin: Optional[BinaryIO]) -> tuple[BinaryIO, list]:
    """Open `path` (or stdin for "-") for binary reading, unwrapping gzip by magic bytes."""
    to_close: list = []
    if path == "-":
        raw = stdin if stdin is not None else sys.stdin.buffer
        if not hasattr(raw, "peek"):
            raw = io.BufferedReader(raw)  # type: ignore[arg-type]
    else:
        try:
            raw = open(path, "rb")
        except OSError as e:
            raise InputError(f"cannot read: {e.strerror or e}; check the path", path) from None
        to_close.append(raw)
    try:
        head = raw.peek(2)[:2]
    except OSError as e:
        for f in to_close:
            f.close()
        raise InputError(f"cannot read: {e.strerror or e}; check the path", path) from None
    if head == b"\x1f\x8b":
        gz = gzip.GzipFile(fileobj=raw, mode="rb")
        to_close.insert(0, gz)
        return gz, to_close  # type: ignore[return-value]
    return raw, to_close


open_log = _open  # for a second reading of a log's lines (logs/validate.py)

_CHUNK = 1 << 20
_BATCH = 256  # lines decoded in one C loop (measured: 256 decodes faster than a chunk)


class _Lines:
    """Splits chunks into complete lines, the same way in `read_lines` and in its
    check-ahead helper: the bytes after the last newline wait for the next chunk
    (`pending` counts them), and an empty chunk (end of file) releases them as the last
    line."""

    __slots__ = ("tail", "pending")

    def __init__(self):
        self.tail: list[bytes] = []
        self.pending = 0

    def feed(self, buf: bytes) -> list[bytes]:
        if not buf:
            parts = [b"".join(self.tail)] if self.tail else []
            self.tail, self.pending = [], 0
            return parts
        parts = buf.split(b"\n")
        last = parts.pop()
        if parts and self.tail:
            parts[0] = b"".join(self.tail) + parts[0]
            self.tail, self.pending = [], 0
        if last:
            self.tail.append(last)
            self.pending += len(last)
        return parts


# ----- check-ahead helper: the field checks on the second core ---------------------------
# For a large plain file, a forked child reads the same bytes (pread on the inherited
# descriptor: the parent's file offset is not touched), splits them exactly as
# `read_lines` does, decodes and runs `fast_ok` on every line, and sends, per read, the
# read's length, its CRC-32 and the numbers of the lines that failed. The parent then only
# decodes and skips `fast_ok` on lines the child passed. The parent compares length and
# CRC of every read with its own; on any mismatch (the file changed under us), a dead child
# or a failed fork it drops the helper and checks locally from that read on, so the events,
# errors and warnings are the same with or without it. Only on the dict path (no msgspec):
# the typed decoder checks the fields while it decodes, which leaves the helper nothing to do.
CHECK_AHEAD_MIN_BYTES = int(os.environ.get("TOOLCOMMIT_CHECK_AHEAD_MIN_BYTES", 32 << 20))
_HEAD = struct.Struct("<qII")  # read length, crc32, number of failed lines


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _check_ahead_child(fd: int, out: int, chunk: int, limit: int) -> None:
    """The child's loop (see above); writes to `out` until EOF, a line over `limit`, or
    any error (the parent then checks locally)."""
    pread, crc, loads_, ok = os.pread, zlib.crc32, loads, fast_ok
    w = os.fdopen(out, "wb", buffering=1 << 16)
    off = 0
    n = 0
    lines = _Lines()
    while True:
        buf = pread(fd, chunk, off)
        while buf and len(buf) < chunk:  # a short read before EOF: complete it
            more = pread(fd, chunk - len(buf), off + len(buf))
            if not more:
                break
            buf += more
        off += len(buf)
        parts = lines.feed(buf)
        bad = []
        for line in parts:
            n += 1
            if len(line) > limit:
                bad.append(n)
                continue
            if n == 1 and line.startswith(_BOM):
                line = line[3:]
            try:
                if ok(loads_(line)):
                    continue
            except (ValueError, RecursionError):
                pass
            bad.append(n)
        w.write(_HEAD.pack(len(buf), crc(buf), len(bad)))
        if bad:
            w.write(struct.pack(f"<{len(bad)}q", *bad))
        if not buf or lines.pending > limit:
            break
        if len(parts) > 64:
            w.flush()
    w.flush()


class _CheckAhead:
    """The parent's end: `verdict(buf)` is the set of line numbers of `buf` (as split by
    `read_lines`) that need the thorough path, or None once the helper is gone."""

    def __init__(self, raw, chunk: int, limit: int):
        self.pid = 0
        self.src = None
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(r)
            os.close(w)
            return
        if pid == 0:  # the child: never returns
            code = 0
            try:
                os.close(r)
                _check_ahead_child(raw.fileno(), w, chunk, limit)
            except BaseException:  # noqa: BLE001 - the parent falls back
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        self.pid = pid
        self.src = os.fdopen(r, "rb", buffering=1 << 16)

    def verdict(self, buf: bytes):
        src = self.src
        if src is None:
            return None
        head = src.read(_HEAD.size)
        if len(head) == _HEAD.size:
            size, crc, nbad = _HEAD.unpack(head)
            body = src.read(8 * nbad) if nbad else b""
            if size == len(buf) and crc == zlib.crc32(buf) and len(body) == 8 * nbad:
                return set(struct.unpack(f"<{nbad}q", body)) if nbad else _NONE_BAD
        self.close()
        return None

    def close(self) -> None:
        if self.src is not None:
            self.src.close()
            self.src = None
        if self.pid:
            try:
                os.kill(self.pid, 9)
            except OSError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0


_NONE_BAD: frozenset = frozenset()


def _check_ahead(path: str, stream, chunk: int, limit: int) -> Optional[_CheckAhead]:
    """A helper for `stream` when it pays: a plain (not gzip) regular file of at least
    `CHECK_AHEAD_MIN_BYTES`, on a machine with two CPUs or more."""
    if (
        path == "-"
        or type(stream) is not io.BufferedReader
        or not hasattr(os, "fork")
        or not hasattr(os, "pread")
    ):
        return None
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return None
    import stat

    if not stat.S_ISREG(st.st_mode) or st.st_size < CHECK_AHEAD_MIN_BYTES or _cpus() < 2:
        return None
    h = _CheckAhead(stream, chunk, limit)
    return h if h.src is not None else None


def read_lines(
    path: str,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    stdin: Optional[BinaryIO] = None,
    warn: Optional[Callable[[str], None]] = None,
    on_cut: Optional[Callable[[int], None]] = None,
    helper: bool = True,
) -> Iterator[tuple[int, object]]:
    """Yield ``(line_number, event)`` for each non-blank line of one log, the event as a
    `toolcommit.checker.logs.typed` object: `read_batches`, one line at a time (same
    arguments, errors and warnings)."""
    for numbers, events in read_batches(path, max_line_bytes, stdin, warn, on_cut, helper):
        yield from zip(numbers, events)


def read_batches(
    path: str,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    stdin: Optional[BinaryIO] = None,
    warn: Optional[Callable[[str], None]] = None,
    on_cut: Optional[Callable[[int], None]] = None,
    helper: bool = True,
) -> Iterator[tuple[Sequence[int], list]]:
    """Yield ``(line_numbers, events)`` for the non-blank lines of one log, in order, in
    batches (about one per chunk read), each event a `toolcommit.checker.logs.typed`
    object and each number its line's.

    Raises `InputError` (with path:line) on the first bad line, after yielding every event
    before it: too long, not UTF-8, not JSON, nested too deeply, a field `problem` rejects,
    or an empty log. A cut-off last line calls `warn` (with a message) and `on_cut` (with
    its line number) instead, after the events before it are yielded: it is a lost line,
    not an error. A UTF-8 byte order mark before the first line is skipped. `helper`
    False never starts the check-ahead helper (a shard of the sharded checker has no core
    to spare). The caller checks `max_line_bytes` first (`check_paths`).

    Reads in chunks of at most ``min(1 MiB, max_line_bytes + 1)`` bytes and splits them into
    lines; an unfinished line is carried over and refused once it passes `max_line_bytes`,
    so memory stays below two chunks plus one line, whatever the input. A chunk whose
    lines are all short enough and all taken by the typed decoder (the common case) is
    decoded in one C loop; any other chunk goes line by line (the thorough path where a
    line needs it).
    """
    stream, to_close = _open(path, stdin)
    limit = max_line_bytes
    chunk = min(_CHUNK, limit + 1)
    n = 0
    events = 0
    cut = None
    fast, invalid = TYPED, typed.INVALID
    ahead = _check_ahead(path, stream, chunk, limit) if fast is None and helper else None
    bad = None
    try:
        read = stream.read
        lines = _Lines()
        eof = False
        while not eof:
            try:
                buf = read(chunk)
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(
                    f"not a readable gzip stream ({e}); re-export the log", path, n + 1
                ) from None
            if ahead is not None:
                bad = ahead.verdict(buf)
                if bad is None:
                    ahead = None
            eof = not buf
            parts = lines.feed(buf)
            if parts and n == 0 and parts[0].startswith(_BOM):
                parts[0] = parts[0][3:]
            # every line fits the limit: the chunk does (each line but the first is inside
            # it) and so does the first (it may start with the carried-over tail)
            direct = (
                fast is not None
                and parts
                and len(parts[0]) <= limit
                and (len(buf) <= limit or max(map(len, parts)) <= limit)
            )
            if direct:  # small batches: a whole chunk's events at once would leave the caches
                batches = [parts[i : i + _BATCH] for i in range(0, len(parts), _BATCH)]
            else:  # a line too long (refused before decoding), or no typed decoder
                batches = [parts] if parts else []
            for part in batches:
                evs = None
                if direct:
                    try:
                        evs = list(map(fast, part))
                    except invalid:
                        evs = None
                if evs is not None:  # every line an event: no blank, none refused
                    yield range(n + 1, n + 1 + len(evs)), evs
                    n += len(evs)
                    events += len(evs)
                    continue
                for out, n, cut in _one_by_one(part, n, bad, path, limit, eof, warn, on_cut):
                    events += len(out[1])
                    yield out
                if cut is not None:
                    break
            if cut is not None:
                break
            if lines.pending > limit:
                raise _too_long(limit, path, n + 1)
    finally:
        if ahead is not None:
            ahead.close()
        for f in to_close:
            try:
                f.close()
            except Exception:  # noqa: BLE001 - closing a broken gzip must not mask the error
                pass
    if events == 0:
        why = "its only line is cut off" if cut else "no events"
        raise InputError(f"empty log ({why}); pass a JSON Lines file with one event per line", path)


def _one_by_one(parts: list, n: int, bad, path: str, limit: int, eof: bool, warn, on_cut):
    """The lines of one chunk (numbered from ``n + 1``), one at a time: the typed decoder,
    else the dict decoder and the fast field check (or the check-ahead child's verdict
    `bad`), else the thorough path. Yields ``((numbers, events), last number, cut)``: the
    events read so far before it raises on a bad line or reports a cut-off last line
    (`cut`: its number), and once at the end."""
    ok, loads_, fast, invalid = fast_ok, loads, TYPED, typed.INVALID
    nums: list[int] = []
    evs: list = []
    for line in parts:
        n += 1
        if len(line) > limit:
            yield (nums, evs), n - 1, None
            raise _too_long(limit, path, n)
        if fast is not None:
            try:
                ev = fast(line)
            except invalid:
                pass
            else:
                nums.append(n)
                evs.append(ev)
                continue
        else:
            try:
                obj = loads_(line)
            except (ValueError, RecursionError):  # json's decoder recurses
                obj = _NOT_JSON
            if obj is not _NOT_JSON and (ok(obj) if bad is None else n not in bad):
                nums.append(n)
                evs.append(from_dict(obj))
                continue
        # the thorough path: blank lines, reasons, nesting, field problems
        if not line or line.isspace():
            continue
        try:
            obj = decode(line)  # bounds nesting, then names the defect
        except ValueError as e:
            yield (nums, evs), n - 1, None
            nums, evs = [], []
            if eof:  # only the last line can lack a newline: cut off
                if warn:
                    warn(
                        f"{path}:{n}: last line is cut off (no newline, not "
                        "valid JSON): its writer died mid-write; the line is "
                        "ignored"
                    )
                if on_cut:
                    on_cut(n)
                yield (nums, evs), n, n
                return
            raise InputError(str(e), path, n) from None
        why = problem(obj)
        if why:
            yield (nums, evs), n - 1, None
            raise InputError(why, path, n)
        nums.append(n)
        evs.append(from_dict(obj))
    yield (nums, evs), n, None


def _too_long(limit: int, path: str, n: int) -> InputError:
    return InputError(
        f"line longer than {limit} bytes; raise --max-line-bytes if it is "
        "legitimate (hostile or broken writer)",
        path,
        n,
    )
