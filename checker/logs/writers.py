"""Writer chains: each writer's own order, by ``seq``. Lost lines (SEQ_GAP), repeated lines
(SEQ_DUP) and crashes, whatever order the lines arrive in.

A writer's seq numbers are kept as sorted, disjoint intervals, so memory follows the gaps,
not the lines. The driver's hot loop handles the common case itself (the writer's next
seq, see `Writer.nxt`) and calls `note_seq` for the rest.

Examples
--------
>>> from toolcommit.checker.logs.findings import Findings
>>> found, w = Findings(), Writer("w1")
>>> [note_seq(w, s, found, s) for s in (1, 2, 5, 4, 2)]
[True, True, True, True, False]
>>> report_gaps([w], found), [f.property for f in found.freeze()]
(True, ['SEQ_DUP', 'SEQ_GAP'])
"""

from __future__ import annotations

import bisect
from typing import Iterable, Optional

from toolcommit.checker.logs.findings import Findings


class Writer:
    """One writer: its seq numbers as sorted intervals [los[i], his[i]] (their first and last
    locations in lo_locs/hi_locs), its crashes (seq and location, sorted by seq), and the
    fast path: while the interval extended last is the highest one, `nxt` is the seq that
    extends it and `hi_loc` its newest location (its entries in `his`/`hi_locs` are then
    stale until `sync`); otherwise `nxt` is -1."""

    __slots__ = (
        "name",
        "idx",
        "base",
        "nxt",
        "hi_loc",
        "los",
        "his",
        "lo_locs",
        "hi_locs",
        "cur",
        "crashes",
        "crash_locs",
    )

    def __init__(self, name: str, idx: int = 0):
        self.name = name
        self.idx = idx  # its index in the driver's list of writer names
        self.base = 0  # its part of every location of its lines (findings.Findings.loc)
        self.nxt = -1
        self.hi_loc = 0
        self.los: list[int] = []
        self.his: list[int] = []
        self.lo_locs: list[int] = []
        self.hi_locs: list[int] = []
        self.cur = -1  # index of the interval extended last
        self.crashes: list[int] = []
        self.crash_locs: list[int] = []


def sync(w: Writer) -> None:
    """Write the fast path's interval end back into the interval lists."""
    if w.nxt >= 0:
        w.his[w.cur] = w.nxt - 1
        w.hi_locs[w.cur] = w.hi_loc
        w.nxt = -1


def note_seq(w: Writer, seq: int, found: Findings, loc: int) -> bool:
    """Register `seq` for `w` (any seq, in any order); False, and a SEQ_DUP finding, if the
    writer already used it (the caller then ignores the line)."""
    sync(w)
    los, his = w.los, w.his
    j = bisect.bisect_right(los, seq) - 1  # the interval starting at or before seq
    if j >= 0 and seq <= his[j]:
        found.add(
            "SEQ_DUP",
            w.name,
            "possible",
            f"writer {w.name} used seq {seq} twice; a line was repeated or two "
            "processes share one writer name, so the log cannot be trusted as is; "
            "the later copy was ignored",
            [("note", w.name, f"seq {seq} again", loc)],
        )
        return False
    if j >= 0 and his[j] + 1 == seq:  # extends interval j (and may join j + 1)
        his[j] = seq
        w.hi_locs[j] = loc
        if j + 1 < len(los) and los[j + 1] == seq + 1:
            his[j] = his[j + 1]
            w.hi_locs[j] = w.hi_locs[j + 1]
            del los[j + 1], his[j + 1], w.lo_locs[j + 1], w.hi_locs[j + 1]
        w.cur = j
    elif j + 1 < len(los) and los[j + 1] == seq + 1:  # starts interval j + 1 one earlier
        los[j + 1] = seq
        w.lo_locs[j + 1] = loc
        w.cur = j + 1
    else:  # a new interval
        los.insert(j + 1, seq)
        his.insert(j + 1, seq)
        w.lo_locs.insert(j + 1, loc)
        w.hi_locs.insert(j + 1, loc)
        w.cur = j + 1
    if w.cur == len(los) - 1:  # extending the highest interval needs no merge: fast path
        w.nxt = his[w.cur] + 1
        w.hi_loc = w.hi_locs[w.cur]
    return True


def report_gaps(writers: Iterable[Writer], found: Findings) -> bool:
    """A SEQ_GAP finding for every hole in a writer's seq numbers, and for a writer whose
    first seq is above 1 (writers number their lines from 0 or 1: its first lines were
    lost); True if there was one."""
    any_gap = False
    for w in writers:
        sync(w)
        if w.los and w.los[0] > 1:
            any_gap = True
            lost = "seq 1" if w.los[0] == 2 else f"seq 1..{w.los[0] - 1}"
            found.add(
                "SEQ_GAP",
                w.name,
                "possible",
                f"writer {w.name} starts at seq {w.los[0]}: its first lines ({lost}) were "
                "lost, so the log cannot prove conformance (or a violation hidden in them)",
                [("note", w.name, f"seq {w.los[0]} (first seen)", w.lo_locs[0])],
            )
        for i in range(len(w.los) - 1):
            any_gap = True
            a, b = w.his[i], w.los[i + 1]
            lost = f"seq {a + 1}" if b - a == 2 else f"seq {a + 1}..{b - 1}"
            found.add(
                "SEQ_GAP",
                w.name,
                "possible",
                f"writer {w.name} skips {lost}: lines were lost, so the log cannot "
                "prove conformance (or a violation hidden in them)",
                [
                    ("note", w.name, f"seq {a}", w.hi_locs[i]),
                    ("note", w.name, f"seq {b} ({lost} missing)", w.lo_locs[i + 1]),
                ],
            )
    return any_gap


def note_crash(w: Writer, seq: int, loc: int) -> None:
    i = bisect.bisect(w.crashes, seq)
    w.crashes.insert(i, seq)
    w.crash_locs.insert(i, loc)


def crashed_between(w: Optional[Writer], lo: int, hi: int) -> Optional[tuple]:
    """The last crash of `w` with lo < seq < hi, as a story step, or None."""
    if w is None or not w.crashes:
        return None
    i = bisect.bisect_left(w.crashes, hi) - 1
    if i >= 0 and w.crashes[i] > lo:
        return (
            "crash",
            w.name,
            f"crash (seq {w.crashes[i]}): planner memory lost",
            w.crash_locs[i],
        )
    return None
