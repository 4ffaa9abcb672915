"""Reading trace files: concatenated JSON documents, with line numbers for citations.

A trace file may be one JSON document (an OTLP export, a JSON array), JSON Lines (the
OpenTelemetry Collector's file exporter, a dumped event stream) or pretty-printed
documents one after another (the Python SDK's ConsoleSpanExporter). `documents` reads
all three; `Lines` turns a character offset into a line number.
"""
from __future__ import annotations

import bisect
import gzip
import json
from typing import Iterator

from toolcommit.model.errors import InputError

_DECODER = json.JSONDecoder()


def read_text(path: str) -> str:
    """The file's text (gzip by magic number); `InputError` if unreadable."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise InputError("no such file; give the path of an exported trace", path) from None
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise InputError(f"cannot read this file ({e}); it must be UTF-8 JSON, plain or "
                         "gzip", path) from None


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
            raise InputError(f"not JSON ({e.msg}); a trace file holds JSON documents, one "
                             "after another or one per line", path, lines.at(e.pos)) from None
        yield value, i
        i = end
