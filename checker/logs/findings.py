"""Findings as data: what a log breaks, told as a story of cited lines, and their collector.

A `Finding` names a property, the key it breaks on, its certainty, and the story: a tuple
of `Citation`s (who did what, at which file:line). Stages record findings through one
`Findings` collector, which merges repeats on one key, keeps at most `MAX_PER_PROPERTY`
keys per property (the first ones by key, counting the rest, so which are listed does not
depend on the order lines arrive in, and collectors of disjoint keys `merge` exactly) and
bounds each story. While checking, a step is a
tuple ``(kind, writer, text, loc)`` and a location is one int that knows the line's
writer too (`Findings.loc`), so a step citing a line always names who wrote it;
`Findings.freeze` turns them into the public types.

Examples
--------
>>> found = Findings(["a.jsonl"], ["w1", "w2"])
>>> _ = found.add("RACE", "k1", "certain", "two writers",
...               [("transition", "", "RECORDED -> DISPATCHED", found.loc(1, 0, 7))])
>>> f, = found.freeze()
>>> f.property, f.writers, f.locations, f.steps[0].where
('RACE', ('w2',), (('a.jsonl', 7),), 'a.jsonl:7')
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence

MAX_PER_PROPERTY = 1000  # findings kept per property; the rest are counted, not stored
LINE_BITS = 40  # a location: (writer index + 1, file index, line number) in one int
_MAX_STEPS = 40  # a story longer than this keeps its start and its end


@dataclass(frozen=True)
class Citation:
    """One event of a finding's story: who did what, where (`file`, `line`)."""

    kind: str  # proposal | transition | effect | crash | restart | note
    writer: str
    text: str
    file: str = ""
    line: int = 0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""


@dataclass(frozen=True)
class Finding:
    """A property the log breaks (`certainty` "certain") or may break ("possible").

    `key` is the implementation key (or the writer, for SEQ_GAP / SEQ_DUP, or the
    canonical intent's form for I1 across keys); `locations` are (file, line) pairs;
    `steps` tell the story in order; `explanation` says why it breaks the property.
    """

    property: str
    key: str
    certainty: str
    writers: tuple[str, ...]
    locations: tuple[tuple[str, int], ...]
    steps: tuple[Citation, ...]
    explanation: str
    more: int = 0  # further occurrences of the same property on the same key, not listed

    def to_json(self) -> dict:
        return {
            "property": self.property,
            "key": self.key,
            "certainty": self.certainty,
            "writers": list(self.writers),
            "locations": [{"file": f, "line": n} for f, n in self.locations],
            "steps": [
                {"kind": s.kind, "writer": s.writer, "text": s.text, "file": s.file, "line": s.line}
                for s in self.steps
            ],
            "explanation": self.explanation,
            "more": self.more,
        }


class Draft:
    """A finding while the log is still being read (mutable; `Findings.freeze` ends it)."""

    __slots__ = (
        "property",
        "key",
        "certainty",
        "writers",
        "locs",
        "steps",
        "explanation",
        "more",
        "dead",
    )

    def __init__(self, prop: str, key: str, certainty: str, explanation: str):
        self.property, self.key, self.certainty = prop, key, certainty
        self.writers: list[str] = []
        self.locs: list[int] = []
        self.steps: list[tuple] = []
        self.explanation = explanation
        self.more = 0
        self.dead = False  # retracted: it keeps its place under the cap, unlisted

    def extend(self, step: tuple) -> None:
        """Add one step to a story that is not yet full (a fork branch going on)."""
        if len(self.steps) < _MAX_STEPS:
            self.steps.append(step)
            self.locs.append(step[3])


class Findings:
    """The collector: one `Draft` per (property, key), capped per property.

    The cap keeps, per property, the `MAX_PER_PROPERTY` least keys of every finding ever
    recorded (a retracted one keeps its place, unlisted, until a lesser key takes it), so
    what is listed depends on the set of findings only, not on the order they came in.

    Parameters
    ----------
    files : sequence of str
        Display names; a location's file index points into it.
    writers : list of str
        Writer names by index (shared with the caller, which appends to it); a location's
        writer index points into it.
    keep : iterable of str
        Keys whose findings are never dropped by the cap (the focus keys).
    """

    def __init__(
        self,
        files: Sequence[str] = ("<events>",),
        writers: Optional[list] = None,
        keep: Iterable[str] = (),
    ):
        self.files = list(files)
        self.keep = frozenset(keep)
        self.writers: list[str] = writers if writers is not None else []
        self.file_bits = max(1, len(self.files).bit_length())
        self._files_mask = (1 << self.file_bits) - 1
        self._writer_shift = LINE_BITS + self.file_bits
        self._drafts: dict[tuple[str, str], Draft] = {}
        self._slots: dict[str, list[str]] = {}  # property -> sorted keys under the cap
        # findings beyond the cap: (property, key) -> certain, so the totals stay true
        # (memory: one entry per dropped finding, at most one per key and property)
        self._dropped: dict[tuple[str, str], bool] = {}

    def add(
        self,
        prop: str,
        key: str,
        certainty: str,
        explanation: str,
        steps: Iterable[tuple] = (),
        locs: Iterable[int] = (),
        label: Optional[str] = None,
        update: bool = False,
    ) -> Optional[Draft]:
        """Record (or extend) the finding `prop` on `key` (shown as `label` if given).

        A step is (kind, writer, text, loc); loc 0 means none. A second occurrence adds its
        steps and counts in `more`; it replaces the explanation only if `update` (a count
        that grows, as in I1) or if it makes a possible finding certain, so the story stays
        the first one. Returns None when the property's cap dropped it (it is still
        counted)."""
        b = self._drafts.get((prop, key))
        certain = certainty == "certain"
        if b is None or b.dead:
            b = Draft(prop, key, certainty, explanation)
            if not self._admit(b):
                self._dropped[(prop, key)] = certain or self._dropped.get((prop, key), False)
                return None
        else:
            b.more += 1
            if update or (certain and b.certainty != "certain"):
                b.explanation = explanation
            if certain:
                b.certainty = "certain"
            if len(b.steps) > _MAX_STEPS:
                return b
        if label is not None:
            b.key = label
        steps = [s if s[1] or not s[3] else (s[0], self.writer_of(s[3]), s[2], s[3]) for s in steps]
        if len(steps) > _MAX_STEPS:  # a long (illegal) history: its start and its end
            steps = steps[:5] + [("note", "", f"... {len(steps) - 39} steps ...", 0)] + steps[-34:]
        for s in steps:
            if s not in b.steps:
                b.steps.append(s)
                if s[1] and s[1] not in b.writers:
                    b.writers.append(s[1])
        for loc in locs:
            if loc and loc not in b.locs:
                b.locs.append(loc)
        for s in steps:
            if s[3] and s[3] not in b.locs:
                b.locs.append(s[3])
        return b

    def _admit(self, b: Draft) -> bool:
        """Store `b` (new, or replacing a retracted draft) if its key is among its
        property's least `MAX_PER_PROPERTY` (or a kept key); a greater one it displaces
        is counted as dropped. False if `b` itself is dropped."""
        k = (b.property, b.key)
        old = self._drafts.get(k)
        if old is not None or b.key in self.keep:  # its place is taken already
            self._drafts[k] = b
            return True
        slots = self._slots.setdefault(b.property, [])
        if len(slots) >= MAX_PER_PROPERTY:
            if b.key > slots[-1]:
                return False
            out = self._drafts.pop((b.property, slots.pop()))
            if not out.dead:
                self._dropped[(out.property, out.key)] = out.certainty == "certain"
        bisect.insort(slots, b.key)
        self._drafts[k] = b
        return True

    def retract(self, key: str, props) -> None:
        """Forget the findings `props` on `key` (listed or not): they are judged again."""
        for prop in props:
            b = self._drafts.get((prop, key))
            if b is not None:
                if key in self.keep:
                    del self._drafts[(prop, key)]
                else:
                    self._drafts[(prop, key)] = dead = Draft(prop, key, b.certainty, "")
                    dead.dead = True
            self._dropped.pop((prop, key), None)

    def forget(self, keys, spare=()) -> None:
        """Hand the findings on `keys` (but not those of the properties `spare`) over to
        another collector, which recorded them too and `merge` then reports: they stay
        here as unlisted places under the cap, so what this collector dropped stays
        dropped."""
        keys = set(keys)
        for k in [k for k in self._drafts if k[1] in keys and k[0] not in spare]:
            dead = self._drafts[k] = Draft(k[0], k[1], "possible", "")
            dead.dead = True
        for k in [k for k in self._dropped if k[1] in keys and k[0] not in spare]:
            del self._dropped[k]

    def merge(self, other: "Findings") -> None:
        """Add the findings of `other`, a collector of the same files and writers that
        recorded other keys (or the keys this one `forget`): the result is what one
        collector would have recorded from both (the cap keeps the least keys of either)."""
        for k, b in other._drafts.items():
            mine = self._drafts.get(k)
            if mine is not None:
                if not mine.dead and not b.dead:
                    raise ValueError(f"both collectors have {k[0]} on {k[1]}")
                if mine.dead:
                    self._drafts[k] = b
            elif not self._admit(b) and not b.dead:
                self._dropped[k] = b.certainty == "certain"
        for k, certain in other._dropped.items():
            mine = self._drafts.get(k)
            if k in self._dropped or (mine is not None and not mine.dead):
                raise ValueError(f"both collectors have {k[0]} on {k[1]}")
            self._dropped[k] = certain

    @property
    def dropped(self) -> int:
        """How many findings the cap left out."""
        return len(self._dropped)

    def totals(self) -> dict[str, int]:
        """Certain and possible findings, listed or not."""
        live = [b for b in self._drafts.values() if not b.dead]
        certain = sum(b.certainty == "certain" for b in live) + sum(self._dropped.values())
        return {"certain": certain, "possible": len(live) + self.dropped - certain}

    def get(self, prop: str, key: str) -> Optional[Draft]:
        b = self._drafts.get((prop, key))
        return None if b is None or b.dead else b

    def drafts(self) -> Iterator[Draft]:
        return (b for b in self._drafts.values() if not b.dead)

    def loc(self, writer: int, file_index: int, line: int) -> int:
        """The location of `line` in file `file_index`, written by writer index `writer`
        (-1: unknown). It fits 64 bits while there are fewer than 2**(24 - file_bits)
        writers (bigger ints are fine, only less compact)."""
        return self.writer_base(writer) | (file_index << LINE_BITS) | line

    def writer_base(self, writer: int) -> int:
        """The writer's part of its locations (a writer's lines OR their file and line in)."""
        return (writer + 1) << self._writer_shift

    def where(self, loc: int) -> tuple[str, int]:
        """A location as (file name, line)."""
        fi = (loc >> LINE_BITS) & self._files_mask
        return (self.files[fi] if fi < len(self.files) else "?", loc & ((1 << LINE_BITS) - 1))

    def writer_of(self, loc: int) -> str:
        """The name of the writer of the line at `loc` ("" if unknown)."""
        i = (loc >> self._writer_shift) - 1
        return self.writers[i] if 0 <= i < len(self.writers) else ""

    def citation(self, s: tuple) -> Citation:
        kind, writer, text, loc = s
        if loc:
            f, n = self.where(loc)
            return Citation(kind, writer, text, f, n)
        return Citation(kind, writer, text)

    def freeze(self) -> list[Finding]:
        """Every finding, certain ones first, then by property and key."""
        out = [self._freeze(b) for b in self.drafts()]
        out.sort(key=lambda f: (f.certainty != "certain", f.property, f.key))
        return out

    def _freeze(self, b: Draft) -> Finding:
        locs = tuple(sorted({self.where(x) for x in b.locs}))
        steps = tuple(self.citation(s) for s in b.steps)
        return Finding(
            b.property,
            b.key,
            b.certainty,
            tuple(sorted(b.writers)),
            locs,
            steps,
            b.explanation,
            b.more,
        )


# ----- how events read in a story --------------------------------------------------------------
def short(v, n: int = 60) -> str:
    """A JSON value in at most `n` characters."""
    try:
        s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        s = "?"
    return s if len(s) <= n else s[: n - 1] + "…"


def form_hint(ev) -> str:
    return f"{short(ev.tool, 30)} {short(ev.args)} in scope {short(ev.scope, 40)}"


def effect_text(ev) -> str:
    fx = f" fence {ev.fence}" if ev.fence is not None else ""
    return f"{ev.kind} {short(ev.args, 40)}{fx}"


def describe(ev, loc: int) -> tuple:
    """A proposal, transition or effect (a `toolcommit.checker.logs.typed` object) as a
    story step."""
    t = ev.type
    if t == "proposal":
        return (
            "proposal",
            ev.writer,
            f"call {ev.call_id}: {short(ev.tool, 20)} {short(ev.args, 40)} -> {ev.decision}",
            loc,
        )
    if t == "transition":
        fx = f" (fence {ev.fence})" if ev.fence is not None else ""
        return ("transition", ev.writer, f"{ev.from_} -> {ev.to}{fx}", loc)
    return ("effect", ev.writer, effect_text(ev), loc)
