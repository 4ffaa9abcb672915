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

from toolcommit.checker.logs.findings import Findings
from toolcommit.checker.logs.writers import Writer
from toolcommit.spec import protocol

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

# Key.flags bits: recorded (a proposal or transition names it), cancelled before dispatch,
# sealed (RECONCILING -> DEAD_LETTER), has transitions, closed, to be judged (a transition
# took the slow path since the key was last judged), its digest is an accepted proposal's
F_RECORD, F_CANCELLED, F_SEALED, F_TRANSITIONS, F_CLOSED, F_JUDGE, F_PROPOSED = (
    1,
    2,
    4,
    8,
    16,
    32,
    64,
)


class Key:
    """One implementation key.

    `chain` holds its transitions in chain order as tuples (writer, seq, from, to, fence,
    loc); `pending` those that do not chain yet (an empty tuple when none). A closed key
    (`F_CLOSED`: terminal, nothing pending) keeps its chain, so a late transition can
    reopen it; it is usually packed into bytes (see `Store.pack`).
    """

    __slots__ = (
        "tip",
        "visited",
        "chain",
        "pending",
        "max_fence",
        "last_loc",
        "last_writer",
        "flags",
        "dispatches",
        "dispatch_loc",
        "applies",
        "apply_loc",
        "apply_id",
        "compensates",
        "min_apply_fence",
        "min_apply_loc",
        "accepted",
        "accept_loc",
        "accept_seq",
        "reaccepts",
        "digest",
        "forks",
        "name",
    )

    def __init__(self, name: str = ""):
        self.name = name
        self.tip = INITIAL
        self.visited = 1 << INITIAL
        self.chain: list = []
        self.pending = ()
        self.max_fence = None  # the highest fence of any of its transitions
        self.last_loc = 0
        self.last_writer = ""
        self.flags = 0  # F_* bits
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
        self.accept_seq = 0
        self.reaccepts = None  # further accepted proposals: (writer, seq, loc, call_id)
        self.digest = None  # its intent: the least digest of its accepted proposals,
        self.forks = None  # else of its effects (the same whatever the line order)        # writer -> (state, property) of its fork branch, if any


class Intent:
    """One canonical intent: its first accepted key (`key`, `epoch`, `loc`, `seq`), every
    later one (`more`), the keys only its effects name, and effect counts."""

    __slots__ = (
        "key",
        "epoch",
        "loc",
        "seq",
        "more",
        "effect_keys",
        "hint",
        "applies",
        "apply_locs",
        "compensates",
        "recorded",
    )

    def __init__(self, key: str, epoch, loc: int, seq: int = 0):
        self.key, self.epoch, self.loc, self.seq = key, epoch, loc, seq
        self.more: Optional[list] = None  # (key, epoch, loc, seq) of further accepted keys
        self.effect_keys: Optional[set] = None  # keys its effects name, no proposal accepted
        self.hint = ""  # the call, for messages (set at a second key)
        self.applies = 0
        self.apply_locs: Optional[list] = None
        self.compensates = 0
        self.recorded = False

    def keys(self) -> list[tuple]:
        """Every accepted key as (key, epoch, loc, seq)."""
        first = [(self.key, self.epoch, self.loc, self.seq)] if self.recorded else []
        return first + list(self.more or ())


# A closed key and its intent, packed (the common case: the intent has this one key, at
# most one apply), then the key's chain, from which its tip, visited states, last writer
# and location, and first dispatch come back. Fields: flags, nones, chain length,
# dispatches, applies, compensates, accepted, apply_loc, accept_loc, min_apply_loc,
# accept_seq, max_fence, min_apply_fence, apply_id, intent epoch, digest; per chain
# transition: seq, from << 4 | to, fence (_NO_FENCE: none), loc. `nones` bits say which
# of max_fence, min_apply_fence, apply_id, epoch are None.
_PACK = struct.Struct("<BBBIIII4Q3qq16s")
_EDGES = [struct.Struct("<" + "IBIQ" * n) for n in range(8)]
_RECORD = [struct.Struct(_PACK.format + "IBIQ" * n) for n in range(8)]  # the two at once
_N_MAXF, _N_MINF, _N_AID, _N_EPOCH = 1, 2, 4, 8
_U32 = 0xFFFFFFFF
_NO_FENCE = _U32
_PACKABLE = F_RECORD | F_CANCELLED | F_SEALED | F_TRANSITIONS | F_CLOSED | F_PROPOSED


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
    complete_effects : bool
        The effect lines are the provider's whole ledger (see `Conformance`).
    """

    def __init__(
        self,
        files: Sequence[str] = ("<events>",),
        focus: Iterable[str] = (),
        pack: bool = True,
        complete_effects: bool = False,
    ):
        focus = list(focus)
        self.complete_effects = complete_effects
        self.files = list(files)
        self.wnames: list[str] = []  # writer index -> name (packed keys keep indexes)
        self.found = Findings(self.files, self.wnames, focus)
        self.writers: dict[str, Writer] = {}
        self.keys: dict[str, object] = {}  # name -> Key, or its packed bytes
        self.intents: dict[bytes, object] = {}  # digest -> Intent, or its packed key's name
        self.memo: dict[bytes, bytes] = {}  # sorted call serialization -> digest
        self.counts = {"proposal": 0, "transition": 0, "effect": 0, "crash": 0, "restart": 0}
        self.focus: dict[str, list] = {k: [] for k in focus}
        self.packing = pack
        self.lane = None  # the native lane, if the driver loaded it

    def objects(self, d: dict, packed: type):
        """The items of `d` (`keys` or `intents`) that are objects, not `packed` (bytes or
        str), in order, as ``((k, v) for k, v in d.items() if type(v) is not packed)``
        yields them: each value looked at when reached (a loop may unpack later ones)."""
        if self.lane is not None:
            return self.lane.iter_objects(d, packed)
        return ((k, v) for k, v in d.items() if type(v) is not packed)

    def writer(self, name: str) -> Writer:
        w = self.writers.get(name)
        if w is None:
            w = self.writers[name] = Writer(name, len(self.wnames))
            w.base = self.found.writer_base(w.idx)
            self.wnames.append(name)
        return w

    def key(self, name: str) -> Key:
        """The key as an object: created if new, unpacked if packed."""
        k = self.keys.get(name)
        if k is None:
            k = self.keys[name] = Key(name)  # the one str object both dicts refer to
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
        """How many keys are open (their transitions still buffered or unsettled)."""
        return sum(1 for k in self.keys.values() if type(k) is Key and not k.flags & F_CLOSED)

    def pack(self, name: str, k: Key) -> None:
        """Replace a closed key and its intent by `_PACK` bytes (and the intent's entry by
        the key's name) when nothing about them is unusual; else keep the objects. The
        native lane (logs/lane.c) writes the same bytes: change both."""
        digest = k.digest
        chain = k.chain
        if (
            digest is None
            or k.forks is not None
            or k.reaccepts is not None
            or k.pending
            or k.flags & ~_PACKABLE
            or not k.flags & F_CLOSED
            or not chain
            or len(chain) >= len(_EDGES)
        ):
            return
        e = self.intents.get(digest)
        if (
            type(e) is not Intent
            or e.more is not None
            or e.effect_keys is not None
            or not e.recorded
            or e.key != name
        ):
            return
        applies, dispatches, compensates = k.applies, k.dispatches, k.compensates
        apply_loc, accept_loc = k.apply_loc, k.accept_loc
        if (
            e.applies != applies
            or e.compensates != compensates
            or e.loc != accept_loc
            or e.seq != k.accept_seq
            or applies > 1
            or (dispatches >= 2 and not applies and not compensates)
            or (e.apply_locs != [apply_loc] if applies else e.apply_locs is not None)
        ):
            return
        max_fence, min_fence, apply_id, epoch = k.max_fence, k.min_apply_fence, k.apply_id, e.epoch
        if max_fence is not None and max_fence >= _NO_FENCE:  # no chain fence is above it
            return
        nones = (
            (_N_MAXF if max_fence is None else 0)
            | (_N_MINF if min_fence is None else 0)
            | (_N_AID if apply_id is None else 0)
            | (_N_EPOCH if epoch is None else 0)
        )
        try:  # a count, seq or location too large for its field raises: keep the objects
            rec = _RECORD[len(chain)].pack(
                k.flags,
                nones,
                len(chain),
                dispatches,
                applies,
                compensates,
                k.accepted,
                apply_loc,
                accept_loc,
                k.min_apply_loc,
                k.accept_seq,
                max_fence or 0,
                min_fence or 0,
                apply_id or 0,
                epoch or 0,
                digest,
                *[
                    x
                    for _, seq, frm, to, fence, loc in chain
                    for x in (seq, frm << 4 | to, _NO_FENCE if fence is None else fence, loc)
                ],
            )
        except struct.error:
            return
        self.keys[name] = rec
        self.intents[digest] = k.name

    def unpack(self, name: str, rec: bytes) -> Key:
        """The objects back from `pack`; they stay objects from then on."""
        (
            flags,
            nones,
            n,
            dispatches,
            applies,
            compensates,
            accepted,
            apply_loc,
            accept_loc,
            min_apply_loc,
            accept_seq,
            max_fence,
            min_apply_fence,
            apply_id,
            epoch,
            digest,
        ) = _PACK.unpack_from(rec)
        edges = _EDGES[n].unpack_from(rec, _PACK.size)
        writer_of = self.found.writer_of
        k = Key(name)
        k.chain = [
            (
                writer_of(edges[i + 3]),
                edges[i],
                edges[i + 1] >> 4,
                edges[i + 1] & 15,
                None if edges[i + 2] == _NO_FENCE else edges[i + 2],
                edges[i + 3],
            )
            for i in range(0, 4 * n, 4)
        ]
        for _, _, _, to, _, loc in k.chain:
            k.visited |= 1 << to
            if to == DISPATCHED and not k.dispatch_loc:
                k.dispatch_loc = loc
        k.last_writer, _, _, k.tip, _, k.last_loc = k.chain[-1]
        k.flags = flags
        k.dispatches, k.applies, k.compensates, k.accepted = (
            dispatches,
            applies,
            compensates,
            accepted,
        )
        k.apply_loc, k.accept_loc, k.min_apply_loc, k.accept_seq = (
            apply_loc,
            accept_loc,
            min_apply_loc,
            accept_seq,
        )
        k.max_fence = None if nones & _N_MAXF else max_fence
        k.min_apply_fence = None if nones & _N_MINF else min_apply_fence
        k.apply_id = None if nones & _N_AID else apply_id
        k.digest = digest
        e = Intent(name, None if nones & _N_EPOCH else epoch, accept_loc, accept_seq)
        e.recorded = True
        if applies:
            e.applies, e.apply_locs = applies, [apply_loc]
        if compensates:
            e.compensates = compensates
        self.keys[name] = k
        self.intents[digest] = e
        return k
