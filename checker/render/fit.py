"""Text that fits a width: wrapped lines that hang under their marker, tables that split
or turn, and sequences (a counterexample's steps) broken between their parts.

Pure: every function takes the width and returns lines; the command line finds the width
(`toolcommit.checker.cli.terminal.width`: COLUMNS, the terminal's size, else `DEFAULT`).
No line returned is wider than the width, however narrow (a word longer than a line is
broken; below `NARROWEST` the width is taken as `NARROWEST`).

Examples
--------
>>> wrap_line("  10. the provider receives key k0's request with fence 1: applied", 40)
["  10. the provider receives key k0's", '      request with fence 1: applied']
>>> table([["option", "verdict"], ["reject", "HOLDS"]], 40)
['option  verdict', '------  -------', 'reject  HOLDS']
"""

from __future__ import annotations

import re
import textwrap
from typing import Sequence

DEFAULT = 100  # the width when neither COLUMNS nor a terminal says
NARROWEST = 30  # narrower widths are taken as this one

# a list marker or an aligned label: a continuation hangs under the text after it
_MARK = re.compile(r"^(\s*)(\d+\.\s+|\[\d+\]\s+|[-*]\s+|[A-Za-z][\w ]{0,12}:\s{2,})")


def usable(width: int) -> int:
    """The width lines are fitted to: `width`, but at least `NARROWEST`."""
    return max(int(width), NARROWEST)


def hang_of(line: str, width: int) -> int:
    """Where a wrapped `line` continues: under the text after its list marker or aligned
    label, else two spaces in from its indentation (never so deep that little is left)."""
    m = _MARK.match(line)
    indent = len(line) - len(line.lstrip(" "))
    hang = len(m.group(0)) if m else indent + 2
    return hang if hang <= width // 2 else min(indent + 2, width // 2)


def wrap_line(line: str, width: int, hang: int | None = None) -> list[str]:
    """`line` broken at spaces into lines no wider than `width`, continuations indented by
    `hang` (default: `hang_of`)."""
    width = usable(width)
    line = line.rstrip()
    if len(line) <= width:
        return [line]
    hang = hang_of(line, width) if hang is None else min(hang, width // 2)
    indent = len(line) - len(line.lstrip(" "))
    return _Wrapper(
        width,
        initial_indent=" " * indent,
        subsequent_indent=" " * hang,
        break_on_hyphens=False,
        break_long_words=True,
    ).wrap(line[indent:]) or [""]


class _Wrapper(textwrap.TextWrapper):
    """A word too long for a line is broken after a `+`, `,` or `/` in it first (a config
    label, a path), and only then anywhere."""

    _SEP = re.compile(r"(?<=[+,/])(?=[^+,/])")

    def _split(self, text):
        room = self.width - len(self.subsequent_indent)
        out = []
        for chunk in super()._split(text):
            out += [c for c in self._SEP.split(chunk) if c] if len(chunk) > room else [chunk]
        return out


def fit(text: str, width: int, whole: tuple = ()) -> str:
    """Every line of `text` wrapped to `width` (lines that fit are left as they are), but a
    line that starts with one of `whole` (a command to paste, say), which stays one line."""
    end = "\n" if text.endswith("\n") else ""
    out = [
        piece
        for line in text.split("\n")
        for piece in ([line] if whole and line.startswith(whole) else wrap_line(line, width))
    ]
    if end:
        out = out[:-1]
    return "\n".join(out) + end


def paragraph(text: str, width: int, indent: str = "", hang: str | None = None) -> list[str]:
    """A paragraph filled to `width`, its first line after `indent`, the rest after `hang`."""
    width = usable(width)
    hang = indent if hang is None else hang
    return textwrap.wrap(
        text,
        width,
        initial_indent=indent,
        subsequent_indent=hang,
        break_on_hyphens=False,
        break_long_words=True,
    ) or [indent.rstrip()]


def sequence(head: str, parts: Sequence[str], sep: str, width: int, hang: int) -> list[str]:
    """`head` then `parts` joined by `sep`, broken only between parts where one fits on a
    line (a part wider than a line is wrapped on its own); continuations after `hang`."""
    width = usable(width)
    hang = min(hang, width // 2)
    lines, cur = [], head
    for i, part in enumerate(parts):
        piece = part + (sep.rstrip() if i < len(parts) - 1 else "")
        joined = cur + ("" if cur == head else " ") + piece if cur.strip() else cur + piece
        if len(joined) <= width:
            cur = joined
            continue
        if cur.strip():
            lines.append(cur)
        cur = " " * hang + piece
        if len(cur) > width:
            wrapped = wrap_line(cur, width, hang)
            lines += wrapped[:-1]
            cur = wrapped[-1]
    lines.append(cur)
    return [line.rstrip() for line in lines]


# ----- tables ---------------------------------------------------------------------------
def _widths(rows) -> list[int]:
    return [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]


def _render(rows, align: str, gap: int, rule: bool) -> list[str]:
    w = _widths(rows)
    out = []
    for n, row in enumerate(rows):
        cells = [c.rjust(w[i]) if align[i] == "r" else c.ljust(w[i]) for i, c in enumerate(row)]
        out.append((" " * gap).join(cells).rstrip())
        if n == 0 and rule:
            out.append((" " * gap).join("-" * x for x in w))
    return out


def _span(rows, gap: int) -> int:
    w = _widths(rows)
    return sum(w) + gap * (len(w) - 1)


def table(
    rows: Sequence[Sequence[str]],
    width: int,
    align: str = "",
    gap: int = 2,
    keep: int = 1,
    rule: bool = True,
    turn: bool = False,
) -> list[str]:
    """`rows` (the first the header) as aligned columns no wider than `width`.

    `align` has one letter per column, "l" or "r" (default all "l"). A table too wide is
    first turned (rows become columns) if `turn` and that fits, else split into column
    groups, each repeating the first `keep` columns, else written one block per row: the
    row's first cells, then one indented "header: value" line per cell.
    """
    width = usable(width)
    rows = [[str(c) for c in r] for r in rows]
    align = (align or "l" * len(rows[0])).ljust(len(rows[0]), "l")
    if _span(rows, gap) <= width:
        return _render(rows, align, gap, rule)
    if turn:
        turned = [list(col) for col in zip(*rows)]
        if _span(turned, gap) <= width:
            return _render(turned, "l" * len(turned[0]), gap, rule)
    groups = _groups(rows, width, gap, keep)
    if groups:
        out: list[str] = []
        for cols in groups:
            sub = [[r[i] for i in [*range(keep), *cols]] for r in rows]
            out += ([""] if out else []) + _render(
                sub, "".join(align[i] for i in [*range(keep), *cols]), gap, rule
            )
        return out
    return blocks(rows, width, keep)


def _groups(rows, width: int, gap: int, keep: int) -> list[list[int]]:
    """The columns after the first `keep` in consecutive groups that each fit beside them;
    [] if one column alone does not fit."""
    w = _widths(rows)
    base = sum(w[:keep]) + gap * keep
    groups, cur, used = [], [], base
    for i in range(keep, len(w)):
        if base + w[i] > width:
            return []
        if cur and used + w[i] > width:
            groups.append(cur)
            cur, used = [], base
        cur.append(i)
        used += w[i] + gap
    return groups + ([cur] if cur else [])


def blocks(rows: Sequence[Sequence[str]], width: int, keep: int = 1) -> list[str]:
    """One block per row after the header: its first `keep` cells on a line, then
    "  header: value" for each other non-empty cell, wrapped under the value."""
    width = usable(width)
    head, out = rows[0], []
    for n, row in enumerate(rows[1:]):
        if n:
            out.append("")
        out += wrap_line(" ".join(c for c in row[:keep] if c), width, 2)
        for h, c in zip(head[keep:], row[keep:]):
            if c:
                out += wrap_line(f"  {h}: {c}", width, min(len(h) + 4, width // 2))
    return out
