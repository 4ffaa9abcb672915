"""Reading trace files: concatenated JSON documents, with line numbers for citations.

A trace file may be one JSON document (an OTLP export, a JSON array), JSON Lines (the
OpenTelemetry Collector's file exporter, a dumped event stream) or pretty-printed
documents one after another (the Python SDK's ConsoleSpanExporter). `documents` reads
all three; `Lines` turns a character offset into a line number; `names` gives each file a
name no other file of the run has (a writer's name comes from its file).

A byte-order mark at the start of a file is read as nothing (as plain `validate` does), and
a value nested deeper than `MAX_DEPTH` is refused where it starts: no export nests that
deep, and the readers walk values recursively.
"""

from __future__ import annotations

import bisect
import codecs
import gzip
import json
import os
from typing import Iterator, Sequence

from toolcommit.model.errors import InputError

_DECODER = json.JSONDecoder()
MAX_DEPTH = 200
MAX_FILE_BYTES = 1 << 30  # a trace or ledger read whole: larger is refused, never grown into


def read_text(path: str, most: int = MAX_FILE_BYTES) -> str:
    """The file's text (gzip by magic number), read in chunks: at most `most` bytes (after
    decompression), and a NUL byte or bytes that are not UTF-8 end the read where they
    are, so ``/dev/zero`` or a device is refused at once, not read until memory runs out;
    `InputError` if unreadable."""
    try:
        with open(path, "rb") as f:
            if f.peek(2)[:2] == b"\x1f\x8b":  # peeked, not read: a pipe works too
                with gzip.GzipFile(fileobj=f) as z:
                    return _decoded(z, path, most)
            return _decoded(f, path, most)
    except FileNotFoundError:
        raise InputError("no such file; give the path of an exported trace", path) from None
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile) as e:
        raise InputError(
            f"cannot read this file ({e}); it must be UTF-8 JSON, plain or gzip", path
        ) from None


def _decoded(f, path: str, most: int) -> str:
    """The UTF-8 text of stream `f`, bounded (see `read_text`)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()  # a byte-order mark is no text
    parts, size = [], 0
    while chunk := f.read(1 << 20):
        size += len(chunk)
        if size > most:
            raise InputError(
                f"larger than {most} bytes; no trace or ledger this reader takes is: cut it "
                "into files, or give the export itself",
                path,
            )
        if b"\x00" in chunk:
            raise InputError(
                "a NUL byte: not JSON text (a device such as /dev/zero, or a binary file)", path
            )
        parts.append(decoder.decode(chunk))
    parts.append(decoder.decode(b"", final=True))
    return "".join(parts)


def long_line(path: str, limit: int) -> None:
    """`InputError` at the first line of `path` longer than `limit` bytes (UTF-8)."""
    for n, line in enumerate(read_text(path).encode("utf-8").split(b"\n"), 1):
        if len(line) > limit:
            raise InputError(
                f"line longer than {limit} bytes; raise --max-line-bytes if it is legitimate",
                path,
                n,
            )


class Lines:
    """Offsets to 1-based line numbers in one text."""

    def __init__(self, text: str):
        self.text = text
        self._starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def at(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, max(offset, 0))

    def of(self, needle: str, start: int = 0) -> int:
        """The line of `needle`'s first occurrence at or after `start` (else `start`'s)."""
        i = self.text.find(needle, start) if needle else -1
        return self.at(i if i >= 0 else start)


def documents(text: str, path: str) -> Iterator[tuple[object, int]]:
    """Each top-level JSON value in `text` and its start offset; `InputError` (file:line)
    at the first value that is not JSON."""
    i, n = 0, len(text)
    lines = None
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            return
        try:
            value, end = _DECODER.raw_decode(text, i)
        except json.JSONDecodeError as e:
            lines = lines or Lines(text)
            raise InputError(
                f"not JSON ({e.msg}); a trace file holds JSON documents, one "
                "after another or one per line",
                path,
                lines.at(e.pos),
            ) from None
        except (RecursionError, ValueError) as e:  # nested too deep; a 4,301-digit number
            lines = lines or Lines(text)
            why = (
                f"a value nested deeper than {MAX_DEPTH} levels"
                if isinstance(e, RecursionError)
                else str(e).split(";")[0]
            )
            raise InputError(
                f"not readable JSON ({why}); fix or cut the document that starts here",
                path,
                lines.at(i),
            ) from None
        if not shallow(value):
            lines = lines or Lines(text)
            raise InputError(
                f"a value nested deeper than {MAX_DEPTH} levels; no trace or "
                "ledger nests that deep: fix or cut the document that starts "
                "here",
                path,
                lines.at(i),
            )
        yield value, i
        i = end


def shallow(value, limit: int = MAX_DEPTH) -> bool:
    """True if `value` (decoded JSON) nests at most `limit` containers deep (no recursion).

    >>> shallow([[[1]]], 3), shallow([[[1]]], 2)
    (True, False)
    """
    todo = [(value, 1)]
    while todo:
        v, d = todo.pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        if d > limit:
            return False
        todo.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return True


def names(paths: Sequence[str]) -> list[str]:
    """A display name for each of `paths`: its base name, or as many of its last folders as
    make it differ from every other path's (files of one name in two folders are two
    writers, never one). The same path given twice keeps one name.

    >>> names(["a/run.jsonl", "b/run.jsonl", "c/x.jsonl"])
    ['a/run.jsonl', 'b/run.jsonl', 'x.jsonl']
    >>> names(["logs/run.jsonl", "./run.jsonl", "run.jsonl"])
    ['logs/run.jsonl', 'run.jsonl', 'run.jsonl']
    """
    parts = [os.path.normpath(p).split(os.sep) for p in paths]
    out = []
    for i, mine in enumerate(parts):
        n = 1
        while n < len(mine) and any(o != mine and o[-n:] == mine[-n:] for o in parts):
            n += 1
        out.append("/".join(mine[-n:]))
    return out
