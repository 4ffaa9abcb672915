"""Log conformance, the pure core: events in, typed findings and a verdict out. No I/O.

The log format is the public contract of `spec/log.schema.json`. The core consumes events
already decoded and checked by `toolcommit.checker.logs.read` (or built by a test) as dicts:

- every event: ``type`` (``proposal | transition | effect | crash | restart``), ``writer``
  (str: the process that wrote it), ``seq`` (int >= 0, increasing per writer; a gap means
  lost lines), optional ``ts`` (str, RFC 3339; read by nobody here).
- ``proposal``: ``call_id``, ``tool``, ``args`` (a JSON object), ``scope``, ``key`` (the
  implementation's semantic key), ``decision`` (``accepted | duplicate | conflict``),
  optional ``epoch`` (int).
- ``transition``: ``key``, ``from``, ``to`` (record states of `spec/protocol.json`; a key's
  first transition starts at ``PROPOSED``), optional ``fence``, ``epoch`` (int),
  ``call_id``, ``reason`` (str).
- ``effect``: what the provider applied: ``key`` and/or ``idempotency_key``, ``tool``,
  ``args``, ``scope``, ``kind`` (``apply | compensate``), optional ``fence`` (int),
  ``effect_id`` (str; two records with one id are one effect), ``epoch`` (int).

Ordering without clocks
-----------------------
Timestamps are never read. Within a writer, events are ordered by ``seq``; across writers a
key's transitions are ordered by chaining: each one leaves the state the previous one
entered. Transitions that do not chain yet wait in the key's buffer; a key is *closed* (its
buffer dropped, a compact summary kept) once its chain reaches a terminal state. What is
still buffered then, or at the end of the stream, is classified: a second transition out of
a state the chain already left is a ``RACE`` (another writer acted on the same state), a
``P4`` finding (its writer crashed since its previous action on the key, so it acted from
memory) or ``LEGAL`` (its writer rewound a key it had itself moved on); one that starts from
a state the key never reached is ``LEGAL`` (``possible`` when lines were lost).

Memory grows with the keys still open (their buffered transitions) plus one summary per
distinct key and per distinct canonical intent; never with the number of lines. A closed key
whose intent has only that key is packed with its intent into one 114-byte record
(`_PACK`), its intent's entry pointing at the key's name, and its writer kept as an index:
with the two dict entries, the key's name and the 16-byte digest that is about 390 bytes
per intent in CPython (measured: 10M lines, 1.9M intents, under 800 MiB peak; see
benchmarks/RESULTS-validate.md). Keys or intents that are unusual (forks, several keys per
intent, several effects) stay objects, and a packed key touched again is unpacked for good.

Limitations
-----------
- When two writers race out of one state, which branch the chain follows depends on the
  order the lines arrive in; the race itself, and so the verdict, does not.
- A transition that arrives after its key closed is compared with the key's summary, not
  its full history: its finding names the key's last transition, not the one it forks from.
- Effects are attributed to intents by their own (tool, args, scope), to keys by ``key``
  (else by an ``idempotency_key`` that names a logged key).

Examples
--------
>>> evs = [
...   {"type": "proposal", "writer": "w1", "seq": 1, "call_id": "t1", "tool": "refund",
...    "args": {"amount": 20}, "scope": "u42", "key": "k1", "decision": "accepted"},
...   {"type": "transition", "writer": "w1", "seq": 2, "key": "k1", "from": "PROPOSED", "to": "RECORDED"},
...   {"type": "transition", "writer": "w1", "seq": 3, "key": "k1", "from": "RECORDED", "to": "DISPATCHED", "fence": 1},
...   {"type": "transition", "writer": "w1", "seq": 4, "key": "k1", "from": "DISPATCHED", "to": "ACKED", "fence": 1},
...   {"type": "effect", "writer": "bank", "seq": 1, "key": "k1", "tool": "refund",
...    "args": {"amount": 20.0}, "scope": "u42", "kind": "apply", "fence": 1}]
>>> check(evs).verdict
<Verdict.CONFORMS: 'CONFORMS'>
>>> evs.append({"type": "effect", "writer": "bank", "seq": 2, "key": "k1", "tool": "refund",
...   "args": {"amount": 20}, "scope": "u42", "kind": "apply"})
>>> r = check(evs)
>>> r.verdict, sorted({f.property for f in r.findings})
(<Verdict.VIOLATES: 'VIOLATES'>, ['I1', 'P1'])
"""
from __future__ import annotations

import bisect
import json
import struct
from dataclasses import dataclass, field
from enum import Enum
from typing import Iterable, Optional, Sequence

from toolcommit.model.canon import CanonError, digest_of_form as _digest_of_form
from toolcommit.model.canon import fast_form_v1 as _fast_form, intent_digest
from toolcommit.model.canon import sorted_dump as _sorted_dump
from toolcommit.spec import protocol

# ----- the spec's names, as small integers for the hot path ------------------------------
_REC = protocol().record
STATES: tuple[str, ...] = tuple(_REC.states)
CODE: dict[str, int] = {s: i for i, s in enumerate(STATES)}
EDGES: frozenset[tuple[int, int]] = frozenset((CODE[a], CODE[b]) for a, b in _REC.edge_set)
TERMINAL: frozenset[int] = frozenset(CODE[s] for s in _REC.terminal)
INITIAL = CODE[_REC.initial]
_RECORDED, _DISPATCHED, _UNKNOWN = CODE["RECORDED"], CODE["DISPATCHED"], CODE["UNKNOWN"]
_RECONCILING, _DEAD, _ACKED = CODE["RECONCILING"], CODE["DEAD_LETTER"], CODE["ACKED"]
_CANCELLED = CODE["REJECTED_CONFLICT"]
_IN_DOUBT = frozenset((_DISPATCHED, _UNKNOWN, _RECONCILING))
_AFTER_UNKNOWN = frozenset(b for a, b in EDGES if a == _UNKNOWN)
_NEXT: tuple[int, ...] = tuple(sum(1 << b for a, b in EDGES if a == s) for s in range(len(STATES)))

_MEMO_MAX = 1 << 14
_MAX_PENDING = 4096   # buffered transitions per key before they are classified at once
_MAX_CHAIN = 256      # transitions kept per key's chain for stories (longer is illegal anyway)

MAX_PER_PROPERTY = 1000  # findings kept per property; the rest are counted, not stored
_LOC_SHIFT = 40          # a location is one int: file index << 40 | line number


class EventError(ValueError):
    """An event the core cannot use (its call has no canonical form); the driver adds
    file:line and turns it into an `InputError`."""


class Verdict(str, Enum):
    """CONFORMS (no finding), VIOLATES (a certain finding), INCONCLUSIVE (only possible
    findings: lost lines, unknown outcomes, unsettled keys)."""

    CONFORMS = "CONFORMS"
    VIOLATES = "VIOLATES"
    INCONCLUSIVE = "INCONCLUSIVE"

    @property
    def exit_code(self) -> int:
        return {"CONFORMS": 0, "VIOLATES": 1, "INCONCLUSIVE": 3}[self.value]


@dataclass(frozen=True)
class Step:
    """One event of a finding's story: who did what, where (`file`, `line`)."""

    kind: str      # proposal | transition | effect | crash | restart | note
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
    steps: tuple[Step, ...]
    explanation: str
    more: int = 0  # further occurrences of the same property on the same key, not listed

    def to_json(self) -> dict:
        return {"property": self.property, "key": self.key, "certainty": self.certainty,
                "writers": list(self.writers),
                "locations": [{"file": f, "line": n} for f, n in self.locations],
                "steps": [{"kind": s.kind, "writer": s.writer, "text": s.text,
                           "file": s.file, "line": s.line} for s in self.steps],
                "explanation": self.explanation, "more": self.more}


@dataclass(frozen=True)
class Report:
    """The verdict, its findings (certain first), the reader's warnings and counts."""

    verdict: Verdict
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...] = ()
    stats: dict = field(default_factory=dict)
    dropped: int = 0  # findings not stored beyond MAX_PER_PROPERTY
    history: dict = field(default_factory=dict)  # focus key -> tuple[Step, ...]


# ----- internal state ------------------------------------------------------------------
class _Writer:
    """One writer's seq numbers as sorted intervals [los[i], his[i]] (their first and last
    locations in lo_locs/hi_locs), plus a fast path: while the interval extended last is the
    highest one, `nxt` is the seq that extends it and `hi_loc` its newest location (its
    entries in `his`/`hi_locs` are then stale until `_sync`); otherwise `nxt` is -1."""

    __slots__ = ("name", "idx", "nxt", "hi_loc", "los", "his", "lo_locs", "hi_locs", "cur",
                 "crashes", "crash_locs")

    def __init__(self, name: str, idx: int = 0):
        self.name = name
        self.idx = idx
        self.nxt = -1
        self.hi_loc = 0
        self.los: list[int] = []
        self.his: list[int] = []
        self.lo_locs: list[int] = []
        self.hi_locs: list[int] = []
        self.cur = -1            # index of the interval extended last
        self.crashes: list[int] = []
        self.crash_locs: list[int] = []


class _Key:
    """One implementation key while it is open (or after a closed key was touched again).

    `chain` holds its transitions as tuples (writer, seq, from, to, fence, loc); `pending`
    those that do not chain yet (an empty tuple when none). Closing drops both (None), and a
    closed key is then usually packed into `_PACK` bytes (see `Conformance._pack`).
    """

    __slots__ = ("tip", "visited", "chain", "pending", "max_fence", "last_loc", "last_writer",
                 "flags", "dispatches", "dispatch_loc", "applies", "apply_loc", "apply_id",
                 "compensates", "min_apply_fence", "min_apply_loc", "accepted", "accept_loc",
                 "digest", "forks", "name")

    def __init__(self, name: str = ""):
        self.name = name
        self.tip = INITIAL
        self.visited = 1 << INITIAL
        self.chain: Optional[list] = None
        self.pending = ()
        self.max_fence = None
        self.last_loc = 0
        self.last_writer = ""
        self.flags = 0           # _F_* bits
        self.dispatches = 0
        self.dispatch_loc = 0
        self.applies = 0
        self.apply_loc = 0
        self.apply_id = None
        self.compensates = 0
        self.min_apply_fence = None
        self.min_apply_loc = 0
        self.accepted = 0
        self.accept_loc = 0
        self.digest = None
        self.forks = None        # writer -> (state, property) of its fork branch, if any


_F_RECORD, _F_CANCELLED, _F_SEALED, _F_TRANSITIONS = 1, 2, 4, 8


class _Intent:
    """One canonical intent: its first key, every later key, and effect counts."""

    more = None              # list of (key, epoch, loc) for further keys
    applies = 0
    apply_locs: Optional[list] = None
    compensates = 0
    dispatches = 0
    dispatch_locs: Optional[list] = None
    acked = 0
    recorded = False

    def __init__(self, key: str, epoch, loc: int):
        self.key, self.epoch, self.loc = key, epoch, loc


# A closed key and its intent, packed (the common case: the intent has this one key, at
# most one apply, one dispatch location). Fields: tip, visited, flags, nones, acked,
# dispatches, applies, compensates, accepted, last writer index, last_loc, dispatch_loc,
# apply_loc, accept_loc, min_apply_loc, max_fence, min_apply_fence, apply_id, intent epoch,
# digest. `nones` bits say which of max_fence, min_apply_fence, apply_id, epoch are None.
_PACK = struct.Struct("<BHBBBIIIII5Q3qq16s")
_N_MAXF, _N_MINF, _N_AID, _N_EPOCH = 1, 2, 4, 8
_I64 = (1 << 63) - 1


class _Builder:
    __slots__ = ("property", "key", "certainty", "writers", "locs", "steps", "explanation",
                 "more")

    def __init__(self, prop, key, certainty, explanation):
        self.property, self.key, self.certainty = prop, key, certainty
        self.writers: list[str] = []
        self.locs: list[int] = []
        self.steps: list[tuple] = []
        self.explanation = explanation
        self.more = 0


# ----- the checker ---------------------------------------------------------------------
class Conformance:
    """Incremental conformance checker: `feed` events in any cross-writer order, then
    `finish` once for the `Report`.

    Parameters
    ----------
    files : sequence of str
        Display names; an event's location is ``(file index, line)``.
    focus : iterable of str, optional
        Keys whose full history (every event naming them, plus crashes and restarts) is
        kept for `Report.history` (the Mermaid renderer draws it).
    pack : bool
        Pack closed keys and their intents into bytes (the default; a test checks that the
        report does not depend on it).
    """

    def __init__(self, files: Sequence[str] = ("<events>",), focus: Iterable[str] = (),
                 pack: bool = True):
        self.files = list(files)
        self.writers: dict[str, _Writer] = {}
        self.keys: dict[str, _Key] = {}
        self.intents: dict[bytes, _Intent] = {}
        self.keyless_effects = 0
        self.orphans: dict[bytes, int] = {}   # keyless effect intents without any record yet
        self._found: dict[tuple[str, str], _Builder] = {}
        self._per_prop: dict[str, int] = {}
        self.dropped = 0
        self.counts = {"proposal": 0, "transition": 0, "effect": 0, "crash": 0, "restart": 0}
        self.focus = {k: [] for k in focus}
        self._handlers = {"proposal": self._proposal, "transition": self._transition,
                          "effect": self._effect, "crash": self._crash,
                          "restart": self._restart}
        self._finished = False
        self._memo: dict[bytes, bytes] = {}
        self._wnames: list[str] = []
        self._packing = pack

    # ----- locations and findings ------------------------------------------------------
    def loc(self, file_index: int, line: int) -> int:
        return (file_index << _LOC_SHIFT) | line

    def _where(self, loc: int) -> tuple[str, int]:
        fi = loc >> _LOC_SHIFT
        return (self.files[fi] if fi < len(self.files) else "?", loc & ((1 << _LOC_SHIFT) - 1))

    def _find(self, prop: str, key: str, certainty: str, explanation: str,
              steps: Iterable[tuple] = (), locs: Iterable[int] = (),
              label: Optional[str] = None, update: bool = False) -> Optional[_Builder]:
        """Record (or extend) the finding `prop` on `key` (shown as `label` if given).

        A step is (kind, writer, text, loc); loc 0 means none. A second occurrence adds its
        steps and counts in `more`; it replaces the explanation only if `update` (a count
        that grows, as in I1), so the story stays the first one."""
        b = self._found.get((prop, key))
        if b is None:
            n = self._per_prop.get(prop, 0)
            if n >= MAX_PER_PROPERTY:
                self.dropped += 1
                return None
            self._per_prop[prop] = n + 1
            b = self._found[(prop, key)] = _Builder(prop, key, certainty, explanation)
        else:
            b.more += 1
            if update or (certainty == "certain" and b.certainty != "certain"):
                b.explanation = explanation
            if certainty == "certain":
                b.certainty = "certain"
            if len(b.steps) > 40:
                return b
        if label is not None:
            b.key = label
        steps = list(steps)
        if len(steps) > 40:       # a long (illegal) history: its start and its end tell it
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

    @staticmethod
    def _tstep(t) -> tuple:
        w, seq, frm, to, fence, loc = t
        fx = f" (fence {fence})" if fence is not None else ""
        return ("transition", w, f"{STATES[frm]} -> {STATES[to]}{fx}", loc)

    def _chain_steps(self, k: _Key) -> list:
        return [self._tstep(t) for t in (k.chain or ())]

    # ----- feeding -------------------------------------------------------------------------
    def feed(self, ev: dict, file_index: int = 0, line: int = 0) -> None:
        """Consume one well-formed event (see the module docstring for its shape).

        Raises
        ------
        EventError
            The event's call has no canonical form.
        """
        loc = (file_index << _LOC_SHIFT) | line
        wname = ev["writer"]
        w = self.writers.get(wname)
        if w is None:
            w = self.writers[wname] = _Writer(wname, len(self._wnames))
            self._wnames.append(wname)
        seq = ev["seq"]
        if seq == w.nxt:                 # the common case: the writer's next line
            w.nxt = seq + 1
            w.hi_loc = loc
        elif not self._seq(w, seq, loc):
            return
        t = ev["type"]
        self.counts[t] += 1
        if self.focus:
            self._remember(ev, loc)
        if t == "transition":
            # the common case inline: an open key whose chain this transition extends
            # along a spec edge with a fence that does not go backwards
            name = ev["key"]
            k = self.keys.get(name)
            frm = CODE[ev["from"]]
            to = CODE[ev["to"]]
            if type(k) is _Key and k.chain is not None and frm == k.tip and not k.pending \
                    and (_NEXT[frm] >> to) & 1:
                fence = ev.get("fence")
                if fence is None or k.max_fence is None or fence >= k.max_fence:
                    if fence is not None:
                        k.max_fence = fence
                    k.flags |= _F_RECORD | _F_TRANSITIONS
                    chain = k.chain
                    if len(chain) < _MAX_CHAIN:
                        chain.append((wname, seq, frm, to, fence, loc))
                    k.tip = to
                    k.visited |= 1 << to
                    k.last_loc = loc
                    k.last_writer = wname
                    # _note_edge, inlined: this is the per-line hot path
                    if to == _DISPATCHED:
                        k.dispatches += 1
                        if not k.dispatch_loc:
                            k.dispatch_loc = loc
                    elif frm == _RECORDED and to == _CANCELLED:
                        k.flags |= _F_CANCELLED
                    elif frm == _RECONCILING and to == _DEAD:
                        k.flags |= _F_SEALED
                    if to in TERMINAL:
                        self._close(name, k)
                    return
            self._transition(ev, w, loc)
            return
        self._handlers[t](ev, w, loc)

    @staticmethod
    def _sync(w: _Writer) -> None:
        """Write the fast path's interval end back into the interval lists."""
        if w.nxt >= 0:
            w.his[w.cur] = w.nxt - 1
            w.hi_locs[w.cur] = w.hi_loc
            w.nxt = -1

    def _seq(self, w: _Writer, seq: int, loc: int) -> bool:
        """Register `seq` for `w`; False (and SEQ_DUP) if the writer already used it."""
        self._sync(w)
        ok = self._seq_slow(w, seq, loc)
        if w.cur == len(w.los) - 1:     # extending the highest interval needs no merge
            w.nxt = w.his[w.cur] + 1
            w.hi_loc = w.hi_locs[w.cur]
        return ok

    def _seq_slow(self, w: _Writer, seq: int, loc: int) -> bool:
        los, his, i = w.los, w.his, w.cur
        if i >= 0 and seq == his[i] + 1 and (i + 1 == len(los) or los[i + 1] > seq):
            his[i] = seq
            w.hi_locs[i] = loc
            if i + 1 < len(los) and los[i + 1] == seq + 1:
                his[i] = his[i + 1]
                w.hi_locs[i] = w.hi_locs[i + 1]
                del los[i + 1], his[i + 1], w.lo_locs[i + 1], w.hi_locs[i + 1]
            return True
        j = bisect.bisect_right(los, seq) - 1   # the interval starting at or before seq
        if j >= 0 and seq <= his[j]:
            self._find("SEQ_DUP", w.name, "possible",
                       f"writer {w.name} used seq {seq} twice; a line was repeated or two "
                       "processes share one writer name, so the log cannot be trusted as is; "
                       "the later copy was ignored",
                       [("note", w.name, f"seq {seq} again", loc)])
            return False
        if j >= 0 and his[j] + 1 == seq:
            his[j] = seq
            w.hi_locs[j] = loc
            if j + 1 < len(los) and los[j + 1] == seq + 1:
                his[j] = his[j + 1]
                w.hi_locs[j] = w.hi_locs[j + 1]
                del los[j + 1], his[j + 1], w.lo_locs[j + 1], w.hi_locs[j + 1]
            w.cur = j
            return True
        if j + 1 < len(los) and los[j + 1] == seq + 1:
            los[j + 1] = seq
            w.lo_locs[j + 1] = loc
            w.cur = j + 1
            return True
        los.insert(j + 1, seq)
        his.insert(j + 1, seq)
        w.lo_locs.insert(j + 1, loc)
        w.hi_locs.insert(j + 1, loc)
        w.cur = j + 1
        return True

    def _remember(self, ev: dict, loc: int) -> None:
        t = ev["type"]
        if t in ("crash", "restart"):
            for hist in self.focus.values():
                hist.append((t, ev["writer"], t, loc))
            return
        names = {ev.get("key"), ev.get("idempotency_key")}
        for name in names:
            if name in self.focus:
                self.focus[name].append(_describe(ev, loc))

    def _key(self, name: str) -> _Key:
        k = self.keys.get(name)
        if k is None:
            k = self.keys[name] = _Key(name)   # the one str object both dicts refer to
            k.chain = []
        elif type(k) is bytes:
            k = self._unpack(name, k)
        return k

    def _ent(self, digest: bytes) -> Optional[_Intent]:
        """The intent of `digest` as an object (unpacking it with its key if packed)."""
        e = self.intents.get(digest)
        if type(e) is str:
            self._unpack(e, self.keys[e])
            e = self.intents[digest]
        return e

    @property
    def open_keys(self) -> int:
        """How many keys are open (their transitions still buffered)."""
        return sum(1 for k in self.keys.values() if type(k) is _Key and k.chain is not None)

    def _pack(self, name: str, k: _Key) -> None:
        """Replace a closed key and its intent by `_PACK` bytes (and the intent's entry by
        the key's name) when nothing about them is unusual; else keep the objects."""
        digest = k.digest
        if digest is None or k.forks is not None:
            return
        e = self.intents.get(digest)
        if type(e) is not _Intent or e.more is not None or not e.recorded or e.key != name:
            return
        applies, dispatches, compensates = k.applies, k.dispatches, k.compensates
        apply_loc, dispatch_loc, accept_loc = k.apply_loc, k.dispatch_loc, k.accept_loc
        if e.applies != applies or e.dispatches != dispatches or e.compensates != compensates \
                or e.loc != accept_loc or applies > 1 or e.acked > 1 \
                or (dispatches >= 2 and not applies and not compensates):
            return
        al, dl = e.apply_locs, e.dispatch_locs
        if (al != [apply_loc] if applies else al is not None) \
                or (dl != [dispatch_loc] if dispatches and dispatch_loc else dl is not None):
            return
        w = self.writers.get(k.last_writer)
        if w is None or dispatches > 0xFFFFFFFF or compensates > 0xFFFFFFFF \
                or k.accepted > 0xFFFFFFFF \
                or (k.last_loc | dispatch_loc | apply_loc | accept_loc | k.min_apply_loc) >> 64:
            return
        max_fence, min_fence, apply_id, epoch = k.max_fence, k.min_apply_fence, k.apply_id, \
            e.epoch
        nones = ((_N_MAXF if max_fence is None else 0) | (_N_MINF if min_fence is None else 0)
                 | (_N_AID if apply_id is None else 0) | (_N_EPOCH if epoch is None else 0))
        name = k.name
        self.keys[name] = _PACK.pack(
            k.tip, k.visited, k.flags, nones, e.acked, dispatches, applies, compensates,
            k.accepted, w.idx, k.last_loc, dispatch_loc, apply_loc, accept_loc,
            k.min_apply_loc, max_fence or 0, min_fence or 0, apply_id or 0, epoch or 0, digest)
        self.intents[k.digest] = name

    def _unpack(self, name: str, rec: bytes) -> _Key:
        """The objects back from `_pack`; they stay objects from then on."""
        (tip, visited, flags, nones, acked, dispatches, applies, compensates, accepted, widx,
         last_loc, dispatch_loc, apply_loc, accept_loc, min_apply_loc, max_fence,
         min_apply_fence, apply_id, epoch, digest) = _PACK.unpack(rec)
        k = _Key(name)
        k.tip, k.visited, k.flags = tip, visited, flags
        k.dispatches, k.applies, k.compensates, k.accepted = dispatches, applies, compensates, \
            accepted
        k.last_writer = self._wnames[widx]
        k.last_loc, k.dispatch_loc, k.apply_loc, k.accept_loc = last_loc, dispatch_loc, \
            apply_loc, accept_loc
        k.min_apply_loc = min_apply_loc
        k.max_fence = None if nones & _N_MAXF else max_fence
        k.min_apply_fence = None if nones & _N_MINF else min_apply_fence
        k.apply_id = None if nones & _N_AID else apply_id
        k.digest = digest
        k.pending = None
        e = _Intent(name, None if nones & _N_EPOCH else epoch, accept_loc)
        e.recorded = True
        e.acked = acked
        if applies:
            e.applies, e.apply_locs = applies, [apply_loc]
        if compensates:
            e.compensates = compensates
        if dispatches:
            e.dispatches = dispatches
            if dispatch_loc:
                e.dispatch_locs = [dispatch_loc]
        self.keys[name] = k
        self.intents[digest] = e
        return k

    def _digest(self, ev: dict) -> bytes:
        """The canonical intent of the event's call. A bounded memo keyed by the exact
        sorted serialization of (tool, scope, args) spares the canonicalizer when an intent
        comes back (its effect, a duplicate proposal); on a miss, the canonicalizer's C fast
        path serves calls whose sorted serialization already is their v1 form."""
        tool, args, scope = ev["tool"], ev["args"], ev["scope"]
        dump = _sorted_dump(tool, args, scope)
        if dump is not None:
            d = self._memo.get(dump)
            if d is not None:
                return d
            form = _fast_form(tool, args, scope, dump)
            if form is not None:
                d = _digest_of_form(form)
        if dump is None or form is None:
            try:
                d = intent_digest(tool, args, scope)
            except CanonError as e:
                raise EventError(f"this call has no canonical form ({e}); the checker cannot "
                                 "tell which intent it is: fix the writer") from None
        if dump is not None:
            if len(self._memo) >= _MEMO_MAX:
                self._memo.clear()
            self._memo[dump] = d
        return d

    # ----- proposals -----------------------------------------------------------------------
    def _proposal(self, ev: dict, w: _Writer, loc: int) -> None:
        digest = self._digest(ev)
        if ev["decision"] != "accepted":
            return
        name = ev["key"]
        k = self._key(name)
        k.accepted += 1
        k.flags |= _F_RECORD
        epoch = ev.get("epoch")
        if k.accepted == 1:
            k.accept_loc = loc
        else:
            closed = k.chain is None
            self._find("LEGAL" if closed else "RACE", name, "certain",
                       ("the key was accepted again after it had settled: a second record "
                        "overwrote the first, so the intent can take effect twice") if closed else
                       ("two proposals were accepted for one key: the log inserted twice "
                        "(check-then-insert without a uniqueness constraint)"),
                       [("proposal", "", "key accepted (first proposal)", k.accept_loc),
                        ("proposal", ev["writer"], f"call {ev['call_id']}: accepted again", loc)])
        if k.digest is None:
            k.digest = digest
        ent = self._ent(digest)
        if ent is None:
            ent = self.intents[digest] = _Intent(name, epoch, loc)
            ent.recorded = True
            return
        if not ent.recorded:          # known from effects only, until now
            ent.recorded = True
            ent.key, ent.epoch, ent.loc = name, epoch, loc
            return
        if ent.key == name or (ent.more and any(m[0] == name for m in ent.more)):
            return
        same = [(kn, ep, lc) for kn, ep, lc in [(ent.key, ent.epoch, ent.loc)] + (ent.more or [])
                if ep == epoch]
        if ent.more is None:
            ent.more = []
        ent.more.append((name, epoch, loc))
        if same:
            first = same[0]
            self._find("CANON", name, "certain",
                       f"keys {first[0]} and {name} are one canonical intent (canonicalizer v1: "
                       f"{_form_hint(ev)}) in the same epoch, yet the log accepted both: the "
                       "implementation's canonicalization is too literal, so one intent can "
                       "take effect twice",
                       [("proposal", "", f"key {first[0]} accepted", first[2]),
                        ("proposal", ev["writer"],
                         f"call {ev['call_id']}: key {name} accepted", loc)])

    # ----- transitions ---------------------------------------------------------------------
    def _transition(self, ev: dict, w: _Writer, loc: int) -> None:
        name = ev["key"]
        k = self._key(name)
        k.flags |= _F_RECORD | _F_TRANSITIONS
        t = (w.name, ev["seq"], CODE[ev["from"]], CODE[ev["to"]], ev.get("fence"), loc)
        if k.chain is None:
            self._late(name, k, t)
            return
        if t[2] == k.tip and not k.pending:
            self._extend(name, k, t)
        else:
            if k.pending:
                k.pending.append(t)
            else:
                k.pending = [t]
            if t[2] == k.tip:          # only an arrival that chains can unblock others
                self._drain(name, k)
            elif len(k.pending) > _MAX_PENDING:   # hostile: classify now, stay bounded
                self._resolve(name, k)
        if k.tip in TERMINAL:
            self._close(name, k)

    def _legal(self, name: str, k: _Key, t, steps) -> None:
        frm, to = t[2], t[3]
        if (frm, to) in EDGES:
            return
        if frm == _UNKNOWN:
            self._find("P2", name, "certain",
                       f"after UNKNOWN the next transition must be one of "
                       f"{', '.join(sorted(STATES[s] for s in _AFTER_UNKNOWN))}, but {t[0]} moved "
                       f"the key to {STATES[to]}: a blind retry from memory, not a reconcile",
                       steps)
        else:
            self._find("LEGAL", name, "certain",
                       f"{STATES[frm]} -> {STATES[to]} is not an edge of the record lifecycle "
                       "in spec/protocol.json", steps)

    def _extend(self, name: str, k: _Key, t) -> None:
        w, seq, frm, to, fence, loc = t
        if (frm, to) not in EDGES:
            self._legal(name, k, t, self._chain_steps(k)[-3:] + [self._tstep(t)])
        if fence is not None:
            if k.max_fence is not None and fence < k.max_fence:
                self._find("FENCE", name, "certain",
                           f"the key's fence went backwards, from {k.max_fence} to {fence}: the "
                           f"log accepted a write from {w}, whose fence was already stale",
                           self._chain_steps(k)[-3:] + [self._tstep(t)])
            else:
                k.max_fence = fence
        if len(k.chain) < _MAX_CHAIN:   # a legal chain has at most 6 steps
            k.chain.append(t)
        k.tip = to
        k.visited |= 1 << to
        k.last_loc, k.last_writer = loc, w
        self._note_edge(k, frm, to, loc)

    def _note_edge(self, k: _Key, frm: int, to: int, loc: int) -> None:
        if to == _DISPATCHED:
            k.dispatches += 1
            if not k.dispatch_loc:
                k.dispatch_loc = loc
        elif frm == _RECORDED and to == _CANCELLED:
            k.flags |= _F_CANCELLED
        elif frm == _RECONCILING and to == _DEAD:
            k.flags |= _F_SEALED

    def _drain(self, name: str, k: _Key) -> None:
        """Extend the chain with buffered transitions that now chain, keeping each writer's
        own order; when two writers are ready from one state, the lower fence (then writer,
        then seq) goes first, so the result does not depend on arrival order."""
        while k.pending:
            heads: dict[str, tuple] = {}
            for t in k.pending:
                h = heads.get(t[0])
                if h is None or t[1] < h[1]:
                    heads[t[0]] = t
            ready = [t for t in heads.values() if t[2] == k.tip]
            if not ready:
                return
            t = min(ready, key=lambda t: (-1 if t[4] is None else t[4], t[0], t[1]))
            k.pending.remove(t)
            self._extend(name, k, t)

    def _crashed_between(self, writer: str, lo: int, hi: int) -> Optional[tuple]:
        """The last crash of `writer` with lo < seq < hi, as a step, or None."""
        w = self.writers.get(writer)
        if w is None or not w.crashes:
            return None
        i = bisect.bisect_left(w.crashes, hi) - 1
        if i >= 0 and w.crashes[i] > lo:
            return ("crash", writer, f"crash (seq {w.crashes[i]}): planner memory lost",
                    w.crash_locs[i])
        return None

    def _resolve(self, name: str, k: _Key) -> None:
        """Classify what is still buffered: forks (RACE / P4 / LEGAL) and unchained lines."""
        pending = sorted(k.pending, key=lambda t: (t[0], t[1]))
        k.pending = []
        branch: dict[str, tuple] = {}   # writer -> (state its fork branch is in, property)
        chain = k.chain
        for t in pending:
            w, seq, frm, to, fence, loc = t
            self._note_edge(k, frm, to, loc)    # a fork happened too: it dispatches, cancels
            br = branch.get(w)
            if br is not None and br[0] == frm:   # continues this writer's fork branch
                branch[w] = (to, br[1])
                self._legal(name, k, t, [self._tstep(t)])
                b = self._found.get((br[1], name))
                if b is not None and len(b.steps) < 40:
                    b.steps.append(self._tstep(t))
                    b.locs.append(loc)
                continue
            self._legal(name, k, t, [self._tstep(t)])
            if not (k.visited >> frm) & 1:
                self._find("LEGAL", name, "certain",
                           f"{w} moved the key from {STATES[frm]}, a state its chain never "
                           f"reached (it went {' -> '.join(_path(chain))}); unless lines were "
                           "lost, the writer skipped or invented a step",
                           self._chain_steps(k) + [self._tstep(t)])
                continue
            fork = next((i for i, c in enumerate(chain) if c[2] == frm), None)
            other = chain[fork] if fork is not None else None
            mine = [i for i, c in enumerate(chain) if c[0] == w and c[1] < seq]
            prev_seq = max([chain[i][1] for i in mine], default=-1)
            crash = self._crashed_between(w, prev_seq, seq)
            steps = self._chain_steps(k)[: (fork + 1 if fork is not None else None)]
            if crash is None and other is not None:
                # symmetric: the transition the chain took may be the one made from memory
                theirs = [c[1] for c in chain[:fork] if c[0] == other[0]]
                ocrash = self._crashed_between(other[0], max(theirs, default=-1), other[1])
                if ocrash is not None:
                    branch[w] = (to, "P4")
                    self._find("P4", name, "certain",
                               f"{other[0]} crashed and then moved the key from {STATES[frm]} "
                               f"to {STATES[other[3]]}, while {w} moved it from {STATES[frm]} to "
                               f"{STATES[to]}: after a crash the writer acted from memory or "
                               "chat history, not from the log",
                               steps[:-1] + [ocrash, steps[-1], self._tstep(t)])
                    continue
            moved = (f"{other[0]} had already moved it from {STATES[frm]} to "
                     f"{STATES[other[3]]}" if other else f"the chain had already left "
                     f"{STATES[frm]}")
            if crash is not None:
                branch[w] = (to, "P4")
                self._find("P4", name, "certain",
                           f"{w} crashed and then moved the key from {STATES[frm]}, but "
                           f"{moved}: after a crash the writer acted from memory or chat "
                           "history, not from the log", steps + [crash, self._tstep(t)])
            elif mine and fork is not None and max(mine) > fork:
                branch[w] = (to, "LEGAL")
                self._find("LEGAL", name, "certain",
                           f"{w} had itself moved the key past {STATES[frm]}, then wrote a "
                           f"transition from {STATES[frm]} again: a rewind (overwrite) the "
                           "lifecycle does not have", steps + [self._tstep(t)])
            else:
                branch[w] = (to, "RACE")
                self._find("RACE", name, "certain",
                           f"{w} moved the key out of {STATES[frm]}, but {moved}; a key's "
                           "transitions must form one chain, so two writers acted on the same "
                           "state without a compare-and-set", steps + [self._tstep(t)])
        if branch:
            k.forks = branch

    def _late(self, name: str, k: _Key, t) -> None:
        """A transition for a key that had already settled (closed)."""
        w, seq, frm, to, fence, loc = t
        last = ("note", k.last_writer,
                f"the key had settled at {STATES[k.tip]}", k.last_loc)
        step = self._tstep(t)
        self._legal(name, k, t, [last, step])
        flags = k.flags
        self._note_edge(k, frm, to, loc)
        if k.flags != flags and k.applies:
            self._check_effects(name, k, k.apply_loc)
        if to == _DISPATCHED:
            self._intent_of(k, lambda e: _add_dispatch(e, loc, 1))
            if k.flags & _F_CANCELLED and not k.applies:
                self._find("P3", name, "possible",
                           "the key was cancelled before dispatch, yet it was dispatched "
                           "later; no effect record shows whether the provider applied it",
                           [last, step])
        br = k.forks.get(w) if k.forks else None
        if br is not None and br[0] == frm:     # continues this writer's fork branch
            k.forks[w] = (to, br[1])
            b = self._found.get((br[1], name))
            if b is not None and len(b.steps) < 40:
                b.steps.append(step)
                b.locs.append(loc)
            return
        if frm == k.tip:
            return                       # already reported as LEGAL (out of a terminal state)
        if not (k.visited >> frm) & 1:
            self._find("LEGAL", name, "certain",
                       f"{w} moved the key from {STATES[frm]}, a state it never reached",
                       [last, step])
            return
        crash = self._crashed_between(w, -1, seq)
        if crash is not None:
            self._find("P4", name, "certain",
                       f"{w} crashed and then moved the key from {STATES[frm]}, but the log "
                       f"had settled it at {STATES[k.tip]}: after a crash the writer acted "
                       "from memory or chat history, not from the log", [last, crash, step])
        elif w == k.last_writer:
            self._find("LEGAL", name, "certain",
                       f"{w} had itself settled the key at {STATES[k.tip]}, then wrote a "
                       f"transition from {STATES[frm]}: a rewind (overwrite)", [last, step])
        else:
            self._find("RACE", name, "certain",
                       f"{w} moved the key out of {STATES[frm]}, which the chain had already "
                       f"left (it settled at {STATES[k.tip]}): two writers acted on one state",
                       [last, step])

    def _close(self, name: str, k: _Key) -> None:
        """The chain is terminal: classify leftovers, settle counts, drop the buffers, and
        pack the key with its intent when it is an ordinary one."""
        if k.pending:
            self._resolve(name, k)
        self._settle(name, k)
        k.chain = None
        k.pending = None
        if self._packing:
            self._pack(name, k)

    def _settle(self, name: str, k: _Key) -> None:
        if k.dispatches and k.digest is not None:
            e = self._ent(k.digest)
            if e is not None:
                _add_dispatch(e, k.dispatch_loc, k.dispatches)
                if k.tip == _ACKED:
                    e.acked += 1
        if k.applies or (k.flags & _F_CANCELLED and k.dispatches):
            self._check_effects(name, k)

    def _intent_of(self, k: _Key, fn) -> None:
        if k.digest is not None:
            e = self._ent(k.digest)
            if e is not None:
                fn(e)

    def _check_effects(self, name: str, k: _Key, loc: int = 0) -> None:
        """P3 and FENCE between the key's chain and the provider's apply records."""
        if not k.applies:
            if k.flags & _F_CANCELLED and k.dispatches and k.chain is not None:
                self._find("P3", name, "possible",
                           "the key was cancelled before dispatch, yet a dispatch was logged; no "
                           "effect record shows whether the provider applied it",
                           self._chain_steps(k))
            return
        sealed_stale = (k.flags & _F_SEALED and k.min_apply_fence is not None
                        and k.max_fence is not None and k.min_apply_fence < k.max_fence)
        if not (k.flags & _F_CANCELLED or sealed_stale):
            return
        applied = ("effect", "", "provider applied it", loc or k.apply_loc)
        story = self._chain_steps(k) if k.chain is not None else [
            ("note", k.last_writer, f"the key had settled at {STATES[k.tip]}", k.last_loc)]
        if k.flags & _F_CANCELLED:
            self._find("P3", name, "certain",
                       "the user cancelled the key before dispatch (RECORDED -> "
                       "REJECTED_CONFLICT), yet the provider applied its effect",
                       story + [applied], locs=[k.last_loc])
        if sealed_stale:
            self._find("FENCE", name, "certain",
                       f"reconciling at fence {k.max_fence} found no effect (DEAD_LETTER), yet "
                       f"the provider applied a request with the older fence "
                       f"{k.min_apply_fence}: a stale request landed after the seal",
                       story + [("effect", "", f"apply with fence "
                                                f"{k.min_apply_fence}", k.min_apply_loc)],
                       locs=[k.last_loc])

    # ----- effects -------------------------------------------------------------------------
    def _effect(self, ev: dict, w: _Writer, loc: int) -> None:
        name = self._effect_counts(ev, loc)
        if name is not None and self._packing:     # an effect after its key settled:
            k = self.keys.get(name)                # pack the key again
            if type(k) is _Key and k.chain is None:
                self._pack(name, k)

    def _effect_counts(self, ev: dict, loc: int) -> Optional[str]:
        digest = self._digest(ev)
        name = ev.get("key")
        if name is None:
            idem = ev.get("idempotency_key")
            if idem is not None and idem in self.keys:
                name = idem
        apply = ev["kind"] == "apply"
        fence = ev.get("fence")
        ent = self._ent(digest)
        if ent is None:
            ent = self.intents[digest] = _Intent(name or "", ev.get("epoch"), loc)
        k = None
        if name is not None:
            k = self._key(name)
            if k.digest is None:
                k.digest = digest
            if not apply:
                k.compensates += 1
            else:
                eid = ev.get("effect_id")
                if eid is not None and k.apply_id is not None and hash(eid) == k.apply_id:
                    return name                       # the same effect, exported twice
                k.applies += 1
                if k.applies == 1:
                    k.apply_loc = loc
                    k.apply_id = hash(eid) if eid is not None else None
                else:
                    self._find("P1", name, "certain",
                               f"the provider applied {k.applies} effects for the one key "
                               f"{name}: effects grouped by semantic key must number at most one",
                               [("effect", "", "apply", k.apply_loc),
                                ("effect", ev["writer"], _effect_text(ev), loc)], update=True)
                if fence is not None and (k.min_apply_fence is None or fence < k.min_apply_fence):
                    k.min_apply_fence, k.min_apply_loc = fence, loc
                if k.chain is None:
                    self._check_effects(name, k, loc)
        else:
            self.keyless_effects += 1
        if not apply:
            ent.compensates += 1
            return name
        ent.applies += 1
        if ent.apply_locs is None:
            ent.apply_locs = [loc]
        elif len(ent.apply_locs) < 8:
            ent.apply_locs.append(loc)
        if ent.applies >= 2:
            self._find("I1", self._intent_id(ent), "certain",
                       f"the provider applied {ent.applies} effects for one canonical intent "
                       f"({_form_hint(ev)}); an intent may take effect at most once, "
                       "compensated or not",
                       [("effect", "", "apply", x) for x in ent.apply_locs[:-1]]
                       + [("effect", ev["writer"], _effect_text(ev), loc)],
                       label=_intent_label(ent, name), update=True)
        return name

    # ----- lifecycle -----------------------------------------------------------------------
    def _crash(self, ev: dict, w: _Writer, loc: int) -> None:
        i = bisect.bisect(w.crashes, ev["seq"])
        w.crashes.insert(i, ev["seq"])
        w.crash_locs.insert(i, loc)

    def _restart(self, ev: dict, w: _Writer, loc: int) -> None:
        pass

    # ----- the end -------------------------------------------------------------------------
    def finish(self, warnings: Sequence[str] = ()) -> Report:
        """Resolve open keys, run the end-of-log checks and return the `Report`."""
        if self._finished:
            raise RuntimeError("finish() called twice")
        self._finished = True
        gaps = self._gaps()
        for name, k in self.keys.items():
            if type(k) is bytes or k.chain is None:
                continue
            self._drain(name, k)
            if k.pending:
                self._resolve(name, k)
            self._settle(name, k)
            if k.flags & _F_TRANSITIONS and k.tip not in TERMINAL:
                self._find("UNSETTLED", name, "possible",
                           f"the log ends with the key at {STATES[k.tip]}, not a settled state"
                           + ("; an effect may still land" if k.tip in _IN_DOUBT else
                              "; its intent is neither done nor given up"),
                           self._chain_steps(k))
        for name, k in self.keys.items():
            if type(k) is bytes:      # packed: closed by a transition, so recorded
                continue
            if (k.applies or k.compensates) and not k.flags & _F_RECORD:
                ent = self._ent(k.digest) if k.digest is not None else None
                if ent is None or not ent.recorded:
                    self._orphan(name, k.apply_loc or k.last_loc)
        self._intent_checks()
        self._unchained_certainty(gaps)
        findings = [self._freeze(b) for b in self._found.values()]
        findings.sort(key=lambda f: (f.certainty != "certain", f.property, f.key))
        if any(f.certainty == "certain" for f in findings):
            verdict = Verdict.VIOLATES
        elif findings:
            verdict = Verdict.INCONCLUSIVE
        else:
            verdict = Verdict.CONFORMS
        stats = dict(self.counts, keys=len(self.keys), intents=len(self.intents),
                     writers=len(self.writers), findings=len(findings))
        history = {k: tuple(self._step(s) for s in v) for k, v in self.focus.items()}
        return Report(verdict, tuple(findings), tuple(warnings), stats, self.dropped, history)

    def _intent_id(self, ent: _Intent) -> str:
        return ent.key or "(no key) intent at %s:%d" % self._where(ent.loc)

    def _orphan(self, name: str, loc: int) -> None:
        self._find("ORPHAN_EFFECT", name, "certain",
                   "the provider applied an effect that no proposal or transition in the log "
                   "accounts for: something reached the provider around the intent log",
                   [("effect", "", "apply", loc)])

    def _intent_checks(self) -> None:
        for ent in self.intents.values():
            if type(ent) is str:      # packed with its one key: recorded, and at most one
                continue              # dispatch unless an effect record decides
            if ent.applies and not ent.recorded and not ent.key:
                self._orphan(f"(no key) intent first applied at "
                             f"{':'.join(map(str, self._where(ent.apply_locs[0])))}",
                             ent.apply_locs[0])
            if ent.applies or ent.compensates:
                continue                        # the provider's records decide
            label, iid = _intent_label(ent, None), self._intent_id(ent)
            if ent.acked >= 2:
                self._find("I1", iid, "certain",
                           f"{ent.acked} keys of one canonical intent were acknowledged by the "
                           "provider (ACKED): one intent took effect more than once",
                           [("transition", "", "dispatched", x) for x in ent.dispatch_locs or ()],
                           label=label)
            elif ent.dispatches >= 2:
                self._find("I1", iid, "possible",
                           f"one canonical intent was dispatched {ent.dispatches} times and no "
                           "effect records say how many took effect: possibly more than one",
                           [("transition", "", "dispatched", x) for x in ent.dispatch_locs or ()],
                           label=label)
        for name, k in self.keys.items():
            if type(k) is not bytes and k.digest is None and k.dispatches >= 2 \
                    and not k.applies:
                self._find("I1", name, "possible",
                           f"the key was dispatched {k.dispatches} times and no effect records "
                           "say how many took effect: possibly more than one",
                           [("transition", "", "dispatched", k.dispatch_loc)])

    def _gaps(self) -> bool:
        any_gap = False
        for w in self.writers.values():
            self._sync(w)
            for i in range(len(w.los) - 1):
                any_gap = True
                a, b = w.his[i], w.los[i + 1]
                lost = f"seq {a + 1}" if b - a == 2 else f"seq {a + 1}..{b - 1}"
                self._find("SEQ_GAP", w.name, "possible",
                           f"writer {w.name} skips {lost}: lines were lost, so the log cannot "
                           "prove conformance (or a violation hidden in them)",
                           [("note", w.name, f"seq {a}", w.hi_locs[i]),
                            ("note", w.name, f"seq {b} ({lost} missing)", w.lo_locs[i + 1])])
        return any_gap

    def _unchained_certainty(self, gaps: bool) -> None:
        if not gaps:
            return
        for b in self._found.values():
            if b.property == "LEGAL" and "never reached" in b.explanation:
                b.certainty = "possible"
                b.explanation += " (lines were lost: see SEQ_GAP)"

    def _step(self, s: tuple) -> Step:
        kind, writer, text, loc = s
        if loc:
            f, n = self._where(loc)
            return Step(kind, writer, text, f, n)
        return Step(kind, writer, text)

    def _freeze(self, b: _Builder) -> Finding:
        locs = tuple(sorted({self._where(x) for x in b.locs}))
        steps = tuple(self._step(s) for s in b.steps)
        return Finding(b.property, b.key, b.certainty, tuple(sorted(b.writers)), locs, steps,
                       b.explanation, b.more)


# ----- small helpers -------------------------------------------------------------------
def _add_dispatch(e: _Intent, loc: int, n: int) -> None:
    e.dispatches += n
    if loc:
        if e.dispatch_locs is None:
            e.dispatch_locs = [loc]
        elif len(e.dispatch_locs) < 8 and loc not in e.dispatch_locs:
            e.dispatch_locs.append(loc)


def _path(chain) -> list[str]:
    if not chain:
        return [STATES[INITIAL]]
    return [STATES[chain[0][2]]] + [STATES[t[3]] for t in chain]


def _short(v, n: int = 60) -> str:
    try:
        s = json.dumps(v, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        s = "?"
    return s if len(s) <= n else s[: n - 1] + "…"


def _form_hint(ev: dict) -> str:
    return f"{_short(ev['tool'], 30)} {_short(ev['args'])} in scope {_short(ev['scope'], 40)}"


def _effect_text(ev: dict) -> str:
    fx = f" fence {ev['fence']}" if ev.get("fence") is not None else ""
    return f"{ev['kind']} {_short(ev['args'], 40)}{fx}"


def _intent_label(ent: _Intent, name: Optional[str]) -> str:
    keys = [ent.key] + [m[0] for m in ent.more or ()]
    keys = [k for k in keys if k]
    if name and name not in keys:
        keys.append(name)
    return " + ".join(keys) if keys else "(no key)"


def _describe(ev: dict, loc: int) -> tuple:
    t = ev["type"]
    if t == "proposal":
        return ("proposal", ev["writer"],
                f"call {ev['call_id']}: {_short(ev['tool'], 20)} {_short(ev['args'], 40)} "
                f"-> {ev['decision']}", loc)
    if t == "transition":
        fx = f" (fence {ev['fence']})" if ev.get("fence") is not None else ""
        return ("transition", ev["writer"], f"{ev['from']} -> {ev['to']}{fx}", loc)
    return ("effect", ev["writer"], _effect_text(ev), loc)


# ----- conveniences ----------------------------------------------------------------------
def check(events: Iterable[dict], name: str = "<events>", focus: Iterable[str] = (),
          pack: bool = True) -> Report:
    """Check a list of event dicts (line numbers are 1, 2, ... in one pseudo-file `name`).

    Each event is validated first (`toolcommit.checker.logs.read.problem`); a bad one raises
    `toolcommit.model.errors.InputError` naming its line.
    """
    from toolcommit.checker.logs.read import problem
    from toolcommit.model.errors import InputError

    c = Conformance([name], focus, pack)
    for i, ev in enumerate(events, 1):
        why = problem(ev)
        if why:
            raise InputError(why, name, i)
        try:
            c.feed(ev, 0, i)
        except EventError as e:
            raise InputError(str(e), name, i) from None
    return c.finish()


_ORDER = ("type", "writer", "seq", "ts", "call_id", "key", "idempotency_key", "from", "to",
          "decision", "kind", "tool", "args", "scope", "fence", "epoch", "effect_id", "reason")


def events_to_jsonl(events: Iterable[dict]) -> str:
    """Serialize events deterministically as JSON Lines (the format `toolcommit validate`
    reads): known fields in a fixed order, then any others sorted; UTF-8 text, one event
    per line, each line ending in a newline.

    >>> print(events_to_jsonl([{"seq": 1, "writer": "w1", "type": "crash"}]), end="")
    {"type":"crash","writer":"w1","seq":1}
    """
    out = []
    for ev in events:
        ordered = {k: ev[k] for k in _ORDER if k in ev}
        for k in sorted(ev):
            if k not in ordered:
                ordered[k] = ev[k]
        out.append(json.dumps(ordered, ensure_ascii=False, separators=(",", ":"),
                              allow_nan=False) + "\n")
    return "".join(out)
