"""What the checker remembers between lines: writers, one `Key` per implementation key, one
`Intent` per canonical intent, and the findings so far. Closed keys are packed into bytes.

The spec's record states are small integers here (`CODE`), so the per-line path compares
ints, and the legal successors of a state are one bit mask (`NEXT`).

Memory grows with the keys still open (their buffered transitions) plus one summary per
distinct key and per distinct canonical intent; never with the number of lines. A closed key
whose intent has only that key is packed with its intent into one 114-byte record
(`_PACK`), its intent's entry pointing at the key's name, and its writer kept as an index:
with the two dict entries, the key's name and the 16-byte digest that is about 390 bytes
per intent in CPython (measured: 10M lines, 1.9M intents, under 800 MiB peak; see
benchmarks/RESULTS-validate.md). Keys or intents that are unusual (forks, several keys per
intent, several effects) stay objects, and a packed key touched again is unpacked for good.
"""
from __future__ import annotations

import struct
from typing import Iterable, Optional, Sequence

from toolcommit.spec import protocol

from toolcommit.checker.logs.findings import Findings
from toolcommit.checker.logs.writers import Writer

# ----- the spec's names, as small integers for the hot path ------------------------------
_REC = protocol().record
STATES: tuple[str, ...] = tuple(_REC.states)
CODE: dict[str, int] = {s: i for i, s in enumerate(STATES)}
EDGES: frozenset[tuple[int, int]] = frozenset((CODE[a], CODE[b]) for a, b in _REC.edge_set)
TERMINAL: frozenset[int] = frozenset(CODE[s] for s in _REC.terminal)
INITIAL = CODE[_REC.initial]
RECORDED, DISPATCHED, UNKNOWN = CODE["RECORDED"], CODE["DISPATCHED"], CODE["UNKNOWN"]
RECONCILING, DEAD_LETTER, ACKED = CODE["RECONCILING"], CODE["DEAD_LETTER"], CODE["ACKED"]
CANCELLED = CODE["REJECTED_CONFLICT"]
IN_DOUBT = frozenset((DISPATCHED, UNKNOWN, RECONCILING))
AFTER_UNKNOWN = frozenset(b for a, b in EDGES if a == UNKNOWN)
NEXT: tuple[int, ...] = tuple(sum(1 << b for a, b in EDGES if a == s) for s in range(len(STATES)))

# Key.flags bits
F_RECORD, F_CANCELLED, F_SEALED, F_TRANSITIONS = 1, 2, 4, 8


class Key:
    """One implementation key while it is open (or after a closed key was touched again).

    `chain` holds its transitions as tuples (writer, seq, from, to, fence, loc); `pending`
    those that do not chain yet (an empty tuple when none). Closing drops both (None), and a
    closed key is then usually packed into `_PACK` bytes (see `Store.pack`).
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
        self.flags = 0           # F_* bits
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


class Intent:
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

    def add_dispatch(self, loc: int, n: int) -> None:
        """Count `n` dispatches, remembering up to 8 distinct locations."""
        self.dispatches += n
        if loc:
            if self.dispatch_locs is None:
                self.dispatch_locs = [loc]
            elif len(self.dispatch_locs) < 8 and loc not in self.dispatch_locs:
                self.dispatch_locs.append(loc)


# A closed key and its intent, packed (the common case: the intent has this one key, at
# most one apply, one dispatch location). Fields: tip, visited, flags, nones, acked,
# dispatches, applies, compensates, accepted, last writer index, last_loc, dispatch_loc,
# apply_loc, accept_loc, min_apply_loc, max_fence, min_apply_fence, apply_id, intent epoch,
# digest. `nones` bits say which of max_fence, min_apply_fence, apply_id, epoch are None.
_PACK = struct.Struct("<BHBBBIIIII5Q3qq16s")
_N_MAXF, _N_MINF, _N_AID, _N_EPOCH = 1, 2, 4, 8
_U32 = 0xFFFFFFFF


class Store:
    """The checker's memory (see the module docstring); stages read and update it.

    Parameters
    ----------
    files : sequence of str
        Display names; an event's location is ``(file index, line)``.
    focus : iterable of str
        Keys whose full history is kept (`history`).
    pack : bool
        Pack closed keys and their intents into bytes (a test checks that the report does
        not depend on it).
    """

    def __init__(self, files: Sequence[str] = ("<events>",), focus: Iterable[str] = (),
                 pack: bool = True):
        focus = list(focus)
        self.files = list(files)
        self.wnames: list[str] = []          # writer index -> name (packed keys keep indexes)
        self.found = Findings(self.files, self.wnames, focus)
        self.writers: dict[str, Writer] = {}
        self.keys: dict[str, object] = {}    # name -> Key, or its packed bytes
        self.intents: dict[bytes, object] = {}   # digest -> Intent, or its packed key's name
        self.memo: dict[bytes, bytes] = {}   # sorted call serialization -> digest
        self.counts = {"proposal": 0, "transition": 0, "effect": 0, "crash": 0, "restart": 0}
        self.focus: dict[str, list] = {k: [] for k in focus}
        self.packing = pack

    def writer(self, name: str) -> Writer:
        w = self.writers.get(name)
        if w is None:
            w = self.writers[name] = Writer(name, len(self.wnames))
            w.base = self.found.writer_base(w.idx)
            self.wnames.append(name)
        return w

    def key(self, name: str) -> Key:
        """The key as an object: created open if new, unpacked if packed."""
        k = self.keys.get(name)
        if k is None:
            k = self.keys[name] = Key(name)   # the one str object both dicts refer to
            k.chain = []
        elif type(k) is bytes:
            k = self.unpack(name, k)
        return k  # type: ignore[return-value]

    def ent(self, digest: bytes) -> Optional[Intent]:
        """The intent of `digest` as an object (unpacking it with its key if packed)."""
        e = self.intents.get(digest)
        if type(e) is str:
            self.unpack(e, self.keys[e])  # type: ignore[arg-type]
            e = self.intents[digest]
        return e  # type: ignore[return-value]

    @property
    def open_keys(self) -> int:
        """How many keys are open (their transitions still buffered)."""
        return sum(1 for k in self.keys.values() if type(k) is Key and k.chain is not None)

    def pack(self, name: str, k: Key) -> None:
        """Replace a closed key and its intent by `_PACK` bytes (and the intent's entry by
        the key's name) when nothing about them is unusual; else keep the objects."""
        digest = k.digest
        if digest is None or k.forks is not None:
            return
        e = self.intents.get(digest)
        if type(e) is not Intent or e.more is not None or not e.recorded or e.key != name:
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
        if w is None or dispatches > _U32 or compensates > _U32 or k.accepted > _U32 \
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
        self.intents[digest] = name

    def unpack(self, name: str, rec: bytes) -> Key:
        """The objects back from `pack`; they stay objects from then on."""
        (tip, visited, flags, nones, acked, dispatches, applies, compensates, accepted, widx,
         last_loc, dispatch_loc, apply_loc, accept_loc, min_apply_loc, max_fence,
         min_apply_fence, apply_id, epoch, digest) = _PACK.unpack(rec)
        k = Key(name)
        k.tip, k.visited, k.flags = tip, visited, flags
        k.dispatches, k.applies, k.compensates, k.accepted = dispatches, applies, compensates, \
            accepted
        k.last_writer = self.wnames[widx]
        k.last_loc, k.dispatch_loc, k.apply_loc, k.accept_loc = last_loc, dispatch_loc, \
            apply_loc, accept_loc
        k.min_apply_loc = min_apply_loc
        k.max_fence = None if nones & _N_MAXF else max_fence
        k.min_apply_fence = None if nones & _N_MINF else min_apply_fence
        k.apply_id = None if nones & _N_AID else apply_id
        k.digest = digest
        k.pending = None
        e = Intent(name, None if nones & _N_EPOCH else epoch, accept_loc)
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
