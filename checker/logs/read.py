"""Reading intent logs: files, ``-`` (stdin), gzip, one JSON object per line. Hostile input.

Logs come from untrusted processes, so the reader only reads (nothing in a log is ever
evaluated), bounds every line (`max_line_bytes`, enforced by a bounded ``readline`` before
any decoding), bounds nesting before decoding, and turns every defect into one
`InputError` line ``path:line: what is wrong; what to do``. The one tolerated defect is a
cut-off last line (no newline and not valid JSON: a writer died mid-write), which becomes
a warning.

JSON is decoded with orjson when it is importable (an optional speed-up), else with the
standard library; both see the same bytes and the same rules (UTF-8 only, no NaN, an
object per line).

Examples
--------
>>> problem({"type": "crash", "writer": "w1", "seq": 3})
>>> problem({"type": "crash", "writer": "w1", "seq": "3"})
"field 'seq' must be an integer from 0 to 2**63-1, found a string; fix the writer"
>>> problem({"type": "transition", "writer": "w", "seq": 1, "key": "k", "from": "PROPOSED", "to": "DONE"})
"unknown state 'DONE' in 'to'; valid states: PROPOSED, RECORDED, DISPATCHED, ACKED, UNKNOWN, RECONCILING, COMPENSATED, DEAD_LETTER, REJECTED_CONFLICT"
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

from toolcommit.model.errors import InputError
from toolcommit.spec import protocol

try:  # optional: the fastest decoder available
    import orjson as _orjson
except ImportError:  # pragma: no cover - depends on the machine
    _orjson = None

DEFAULT_MAX_LINE_BYTES = 1 << 20
MAX_NESTING = 64
_INT_MAX = (1 << 63) - 1

STATES = tuple(protocol().record.states)
_STATE_SET = frozenset(STATES)
DECISIONS = ("accepted", "duplicate", "conflict")
KINDS = ("apply", "compensate")
TYPES = ("proposal", "transition", "effect", "crash", "restart")

# The hand validation, as data; a test checks it against spec/log.schema.json.
# field -> kind: "str" (string), "int" (integer 0..2**63-1), "obj" (JSON object),
# "state" (a record state name), "decision", "kind".
COMMON = {"type": "str", "writer": "str", "seq": "int"}
COMMON_OPTIONAL = {"ts": "str"}
REQUIRED: dict[str, dict[str, str]] = {
    "proposal": {"call_id": "str", "tool": "str", "args": "obj", "scope": "str", "key": "str",
                 "decision": "decision"},
    "transition": {"key": "str", "from": "state", "to": "state"},
    "effect": {"tool": "str", "args": "obj", "scope": "str", "kind": "kind"},
    "crash": {},
    "restart": {},
}
OPTIONAL: dict[str, dict[str, str]] = {
    "proposal": {"epoch": "int"},
    "transition": {"fence": "int", "epoch": "int", "call_id": "str", "reason": "str"},
    "effect": {"key": "str", "idempotency_key": "str", "fence": "int", "effect_id": "str",
               "epoch": "int"},
    "crash": {},
    "restart": {},
}
ONE_OF = {"effect": ("key", "idempotency_key")}  # at least one of these is required

_FAST = {t: tuple((f, {"str": str, "int": int, "obj": dict}.get(k, str))
                  for f, k in {**COMMON, **REQUIRED[t]}.items()) for t in TYPES}
_FAST_OPT = {t: tuple((f, {"str": str, "int": int, "obj": dict}.get(k, str))
                      for f, k in {**COMMON_OPTIONAL, **OPTIONAL[t]}.items()) for t in TYPES}
_ENUMS = {"state": (_STATE_SET, STATES), "decision": (frozenset(DECISIONS), DECISIONS),
          "kind": (frozenset(KINDS), KINDS)}
_CHECK_ENUM = {t: tuple((f, k) for f, k in REQUIRED[t].items() if k in _ENUMS) for t in TYPES}


def _typename(v) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(v), "a value")


def _bad_field(field: str, kind: str, v) -> Optional[str]:
    if kind == "int":
        if type(v) is not int or not 0 <= v <= _INT_MAX:
            found = f"{v}" if type(v) is int else _typename(v)
            return f"field {field!r} must be an integer from 0 to 2**63-1, found {found}; fix the writer"
        return None
    if kind == "obj":
        return None if type(v) is dict else \
            f"field {field!r} must be a JSON object, found {_typename(v)}; fix the writer"
    if type(v) is not str:
        return f"field {field!r} must be a string, found {_typename(v)}; fix the writer"
    if kind in _ENUMS:
        allowed, names = _ENUMS[kind]
        if v not in allowed:
            what = "state" if kind == "state" else kind
            return f"unknown {what} {_clip(v)!r} in {field!r}; valid {what}s: {', '.join(names)}"
    elif field in ("writer", "key", "idempotency_key") and not v:
        return f"field {field!r} must not be empty; fix the writer"
    return None


def problem(ev) -> Optional[str]:
    """What is wrong with one decoded event, or None if it is well-formed.

    Checks the fields of `spec/log.schema.json` by hand: required fields per type, their
    types, enum values (states, decisions, kinds), and the effect's key-or-idempotency-key.
    Extra fields are allowed (the format is extensible).
    """
    if type(ev) is not dict:
        return f"expected a JSON object per line, found {_typename(ev)}; write one event per line"
    t = ev.get("type")
    if t is None:
        return "missing field 'type'; every line needs one of: " + ", ".join(TYPES)
    if type(t) is not str or t not in REQUIRED:
        return f"unknown type {_clip(t)!r}; valid types: {', '.join(TYPES)}"
    for fields in (COMMON, REQUIRED[t]):
        for f, kind in fields.items():
            if f not in ev:
                return f"missing field {f!r} in a {t} line; required: " + \
                    ", ".join([*COMMON, *REQUIRED[t]])
            why = _bad_field(f, kind, ev[f])
            if why:
                return why
    for fields in (COMMON_OPTIONAL, OPTIONAL[t]):
        for f, kind in fields.items():
            if f in ev and ev[f] is not None:
                why = _bad_field(f, kind, ev[f])
                if why:
                    return why
    either = ONE_OF.get(t)
    if either and all(ev.get(f) is None for f in either):
        return f"an {t} line needs {' or '.join(repr(f) for f in either)}; fix the writer"
    return None


_OPT_INT = frozenset(("fence", "epoch"))
_KNOWN = {t: frozenset([*COMMON, *COMMON_OPTIONAL, *REQUIRED[t], *OPTIONAL[t]]) for t in TYPES}
_STR = str
_KIND_SET = frozenset(KINDS)
_DECISION_SET = frozenset(DECISIONS)
_MISSING = object()
_OPT_NAMES = {t: tuple(["ts", *OPTIONAL[t]]) for t in TYPES}
_OPT_NAMES_NO_TS = {t: tuple(OPTIONAL[t]) for t in TYPES}


def _rest_ok(ev, t: str, n: int, names: Optional[tuple] = None) -> bool:
    """The `n` fields of `ev` beyond its type's required ones are all known optional fields
    (null or well-typed, `ts` included); unknown extra fields make this False (the caller
    then takes the thorough path, which allows them). `names` (default: all of `t`'s
    optional names) are the ones still to look for; once `n` of them are found there is no
    room left for another field, so the rest need no lookup."""
    for f in names if names is not None else _OPT_NAMES[t]:
        v = ev.get(f, _MISSING)
        if v is _MISSING:
            continue
        n -= 1
        if v is not None:
            if f in _OPT_INT:
                if type(v) is not int or not 0 <= v <= _INT_MAX:
                    return False
            elif type(v) is not _STR or (not v and (f == "idempotency_key" or f == "key")):
                return False
        if not n:
            return True
    return n == 0


def _flat(args) -> bool:
    for v in args.values():
        if type(v) is dict or type(v) is list:
            return False
    return True


def _ok_transition(ev) -> bool:
    k, a, b = ev.get("key"), ev.get("from"), ev.get("to")
    if type(k) is not _STR or not k or type(a) is not _STR or type(b) is not _STR \
            or a not in _STATE_SET or b not in _STATE_SET:
        return False
    n = len(ev) - 6
    return not n or _rest_ok(ev, "transition", n)


def _ok_proposal(ev) -> bool:
    k, args = ev.get("key"), ev.get("args")
    if type(k) is not _STR or not k or type(args) is not dict \
            or type(ev.get("tool")) is not _STR or type(ev.get("scope")) is not _STR \
            or type(ev.get("call_id")) is not _STR:
        return False
    d = ev.get("decision")
    if type(d) is not _STR or d not in _DECISION_SET or not _flat(args):
        return False
    n = len(ev) - 9
    return not n or _rest_ok(ev, "proposal", n)


def _ok_effect(ev) -> bool:
    args, kind = ev.get("args"), ev.get("kind")
    if type(args) is not dict or type(ev.get("tool")) is not _STR \
            or type(ev.get("scope")) is not _STR or type(kind) is not _STR \
            or kind not in _KIND_SET or not _flat(args):
        return False
    if ev.get("key") is None and ev.get("idempotency_key") is None:
        return False
    n = len(ev) - 7
    return not n or _rest_ok(ev, "effect", n)


def _ok_life(ev) -> bool:
    n = len(ev) - 3
    return not n or _rest_ok(ev, "crash", n)


_OK_BY_TYPE = {"transition": _ok_transition, "proposal": _ok_proposal, "effect": _ok_effect,
               "crash": _ok_life, "restart": _ok_life}


def _fast_ok(ev) -> bool:
    """The common case, cheaply: True means `problem(ev)` returns None *and* the event is
    flat (no field beyond its type's known ones, no container value except a flat `args`
    object), so its nesting is at most 2 and the reader's nesting check can be skipped.
    False means "take the thorough path" (`nesting`, then `problem`), not "invalid"; a test
    checks the implication on mutations of every field.

    One function, the per-type checks inline (a call per line, not three), and the usual
    one optional field, ``ts``, checked here rather than by `_rest_ok`."""
    if type(ev) is not dict:
        return False
    get = ev.get
    w = get("writer")
    seq = get("seq")
    t = get("type")
    if type(w) is not _STR or not w or type(seq) is not int or not 0 <= seq <= _INT_MAX \
            or type(t) is not _STR:
        return False
    if t == "transition":
        k, a, b = get("key"), get("from"), get("to")
        if type(k) is not _STR or not k or type(a) is not _STR or type(b) is not _STR \
                or a not in _STATE_SET or b not in _STATE_SET:
            return False
        n = len(ev) - 6
    elif t == "proposal":
        k, args, d = get("key"), get("args"), get("decision")
        if type(k) is not _STR or not k or type(args) is not dict \
                or type(get("tool")) is not _STR or type(get("scope")) is not _STR \
                or type(get("call_id")) is not _STR or type(d) is not _STR \
                or d not in _DECISION_SET:
            return False
        for v in args.values():
            if type(v) is dict or type(v) is list:
                return False
        n = len(ev) - 9
    elif t == "effect":
        args, kind = get("args"), get("kind")
        if type(args) is not dict or type(get("tool")) is not _STR \
                or type(get("scope")) is not _STR or type(kind) is not _STR \
                or kind not in _KIND_SET:
            return False
        for v in args.values():
            if type(v) is dict or type(v) is list:
                return False
        if get("key") is None and get("idempotency_key") is None:
            return False
        n = len(ev) - 7
    elif t == "crash" or t == "restart":
        n = len(ev) - 3
    else:
        return False
    if not n:
        return True
    ts = get("ts", _MISSING)
    if ts is not _MISSING:
        if ts is not None and type(ts) is not _STR:
            return False
        n -= 1
        if not n:
            return True
    return _rest_ok(ev, t, n, _OPT_NAMES_NO_TS[t])


def _clip(v, n: int = 40) -> str:
    s = v if isinstance(v, str) else json.dumps(v)[:n + 1] if not isinstance(v, (dict, list)) \
        else _typename(v)
    return s if len(s) <= n else s[: n - 1] + "…"


# ----- decoding ------------------------------------------------------------------------
def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


_std_decoder = json.JSONDecoder(parse_constant=_reject_constant)


def _loads_std(line: bytes):
    return _std_decoder.decode(line.decode("utf-8"))


loads: Callable[[bytes], object] = _orjson.loads if _orjson is not None else _loads_std
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
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as e:
        return (f"byte 0x{line[e.start]:02x} at column {e.start + 1} is not UTF-8; logs must be "
                "UTF-8 text")
    msg = decoder_message.split("\n")[0][:160]
    return f"not valid JSON ({msg}); each line must be one JSON object"


def decode(line: bytes):
    """Decode one line (bytes, newline optional) or raise ValueError with a clear reason."""
    if line.count(b"[") + line.count(b"{") > MAX_NESTING and nesting(line) > MAX_NESTING:
        raise ValueError(f"a value is nested deeper than {MAX_NESTING} levels; "
                         "flatten the arguments (hostile or broken writer)")
    try:
        return loads(line)
    except RecursionError:
        raise ValueError("a value is nested too deeply to decode; "
                         "flatten the arguments") from None
    except ValueError as e:          # orjson.JSONDecodeError and json's are ValueErrors
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


_CHUNK = 1 << 20

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
# `read_lines` does, decodes and runs `_fast_ok` on every line, and sends, per read, the
# read's length, its CRC-32 and the numbers of the lines that failed. The parent then only
# decodes and skips `_fast_ok` on lines the child passed. The parent compares length and
# CRC of every read with its own; on any mismatch (the file changed under us), a dead child
# or a failed fork it drops the helper and checks locally from that read on, so the events,
# errors and warnings are the same with or without it.
CHECK_AHEAD_MIN_BYTES = int(os.environ.get("TOOLCOMMIT_CHECK_AHEAD_MIN_BYTES", 32 << 20))
_HEAD = struct.Struct("<qII")       # read length, crc32, number of failed lines


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _check_ahead_child(fd: int, out: int, chunk: int, limit: int) -> None:
    """The child's loop (see above); writes to `out` until EOF, a line over `limit`, or
    any error (the parent then checks locally)."""
    pread, crc, loads_, fast_ok = os.pread, zlib.crc32, loads, _fast_ok
    w = os.fdopen(out, "wb", buffering=1 << 16)
    off = 0
    n = 0
    lines = _Lines()
    while True:
        buf = pread(fd, chunk, off)
        while buf and len(buf) < chunk:          # a short read before EOF: complete it
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
            if n == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            try:
                if fast_ok(loads_(line)):
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
        if pid == 0:                        # the child: never returns
            code = 0
            try:
                os.close(r)
                _check_ahead_child(raw.fileno(), w, chunk, limit)
            except BaseException:           # noqa: BLE001 - the parent falls back
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
    if path == "-" or type(stream) is not io.BufferedReader or not hasattr(os, "fork") \
            or not hasattr(os, "pread"):
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


def read_lines(path: str, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
               stdin: Optional[BinaryIO] = None,
               warn: Optional[Callable[[str], None]] = None,
               check: bool = True) -> Iterator[tuple[int, object]]:
    """Yield ``(line_number, event)`` for each non-blank line of one log.

    Raises `InputError` (with path:line) on the first bad line: too long, not UTF-8, not
    JSON, nested too deeply, a field `problem` rejects (unless `check` is False), or an
    empty log. A cut-off last line calls `warn` instead.

    Reads in chunks of at most ``min(1 MiB, max_line_bytes + 1)`` bytes and splits them into
    lines; an unfinished line is carried over and refused once it passes `max_line_bytes`,
    so memory stays below two chunks plus one line, whatever the input.
    """
    stream, to_close = _open(path, stdin)
    limit = max_line_bytes
    chunk = min(_CHUNK, limit + 1)
    n = 0
    events = 0
    cut = None
    fast_ok, loads_ = _fast_ok, loads
    ahead = _check_ahead(path, stream, chunk, limit)
    bad = None
    try:
        read = stream.read
        lines = _Lines()
        eof = False
        while not eof:
            try:
                buf = read(chunk)
            except (OSError, EOFError, zlib.error) as e:
                raise InputError(f"not a readable gzip stream ({e}); re-export the log",
                                 path, n + 1) from None
            if ahead is not None:
                bad = ahead.verdict(buf)
                if bad is None:
                    ahead = None
            eof = not buf
            parts = lines.feed(buf)
            for line in parts:
                n += 1
                if len(line) > limit:
                    raise InputError(f"line longer than {limit} bytes; raise --max-line-bytes "
                                     "if it is legitimate (hostile or broken writer)", path, n)
                if n == 1 and line.startswith(b"\xef\xbb\xbf"):
                    line = line[3:]
                try:
                    obj = loads_(line)
                except (ValueError, RecursionError):   # json's decoder recurses; orjson's does not
                    obj = _MISSING
                if obj is _MISSING or (not fast_ok(obj) if bad is None else n in bad):
                    # the thorough path: blank lines, reasons, nesting, field problems
                    if not line or line.isspace():
                        continue
                    try:
                        obj = decode(line)      # bounds nesting, then names the defect
                    except ValueError as e:
                        if eof:     # only the last line can lack a newline: cut off
                            cut = n
                            if warn:
                                warn(f"{path}:{n}: last line is cut off (no newline, not "
                                     "valid JSON): its writer died mid-write; the line is "
                                     "ignored")
                            break
                        raise InputError(str(e), path, n) from None
                    if check:
                        why = problem(obj)
                        if why:
                            raise InputError(why, path, n)
                events += 1
                yield n, obj
            if lines.pending > limit:
                raise InputError(f"line longer than {limit} bytes; raise --max-line-bytes if it "
                                 "is legitimate (hostile or broken writer)", path, n + 1)
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
        raise InputError(f"empty log ({why}); pass a JSON Lines file with one event per line",
                         path)


def read_events(paths: Sequence[str], max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
                stdin: Optional[BinaryIO] = None,
                warn: Optional[Callable[[str], None]] = None
                ) -> Iterator[tuple[int, int, dict]]:
    """Yield ``(file_index, line_number, event)`` for every event of every log, in order,
    each one checked by `problem` (an `InputError` names the first bad line)."""
    if max_line_bytes < 64:
        raise InputError(f"--max-line-bytes {max_line_bytes} is too small; use at least 64")
    if sum(1 for p in paths if p == "-") > 1:
        raise InputError("'-' (stdin) can be given only once")
    for fi, path in enumerate(paths):
        for n, ev in read_lines(path, max_line_bytes, stdin, warn):
            yield fi, n, ev  # type: ignore[misc]


def check_paths(paths: Sequence[str], max_line_bytes: int) -> None:
    """Refuse unusable path lists before reading anything."""
    if max_line_bytes < 64:
        raise InputError(f"--max-line-bytes {max_line_bytes} is too small; use at least 64")
    if sum(1 for p in paths if p == "-") > 1:
        raise InputError("'-' (stdin) can be given only once")
