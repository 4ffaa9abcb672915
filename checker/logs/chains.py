"""Key chains: each key's transitions ordered without clocks. LEGAL, P2, RACE, P4, FENCE.

Within a writer, events are ordered by ``seq``; across writers a key's transitions are
ordered by chaining: each one leaves the state the previous one entered. Transitions that do
not chain yet wait in the key's buffer; a key is *closed* (its buffer dropped, a compact
summary kept) once its chain reaches a terminal state. What is still buffered then, or at
the end of the stream, is classified: a second transition out of a state the chain already
left is a ``RACE`` (another writer acted on the same state), a ``P4`` finding (its writer
crashed since its previous action on the key, so it acted from memory) or ``LEGAL`` (its
writer rewound a key it had itself moved on); one that starts from a state the key never
reached is ``LEGAL`` (``possible`` when lines were lost).

The driver extends an open chain itself in the common case (see
`toolcommit.checker.logs.conformance.Conformance.feed`); `transition` takes the rest.

Limitations
-----------
- When two writers race out of one state, which branch the chain follows depends on the
  order the lines arrive in; the race itself, and so the verdict, does not.
- A transition that arrives after its key closed is compared with the key's summary, not
  its full history: its finding names the key's last transition, not the one it forks from.
"""
from __future__ import annotations

from typing import Iterable

from toolcommit.checker.logs.findings import Findings
from toolcommit.checker.logs.store import (AFTER_UNKNOWN, CANCELLED, CODE, DEAD_LETTER,
                                           DISPATCHED, EDGES, F_CANCELLED, F_RECORD, F_SEALED,
                                           F_TRANSITIONS, IN_DOUBT, INITIAL, RECONCILING,
                                           RECORDED, STATES, TERMINAL, UNKNOWN, ACKED, Key,
                                           Store)
from toolcommit.checker.logs.writers import Writer, crashed_between

MAX_PENDING = 4096   # buffered transitions per key before they are classified at once
MAX_CHAIN = 256      # transitions kept per key's chain for stories (longer is illegal anyway)


def tstep(t) -> tuple:
    """A chain tuple (writer, seq, from, to, fence, loc) as a story step."""
    w, seq, frm, to, fence, loc = t
    fx = f" (fence {fence})" if fence is not None else ""
    return ("transition", w, f"{STATES[frm]} -> {STATES[to]}{fx}", loc)


def chain_steps(k: Key) -> list:
    return [tstep(t) for t in (k.chain or ())]


def transition(st: Store, ev: dict, w: Writer, loc: int) -> None:
    """Every transition the driver's fast path did not take (see the module docstring)."""
    name = ev["key"]
    k = st.key(name)
    k.flags |= F_RECORD | F_TRANSITIONS
    t = (w.name, ev["seq"], CODE[ev["from"]], CODE[ev["to"]], ev.get("fence"), loc)
    if k.chain is None:
        _late(st, name, k, t)
        return
    if t[2] == k.tip and not k.pending:
        extend(st, name, k, t)
    else:
        if k.pending:
            k.pending.append(t)
        else:
            k.pending = [t]
        if t[2] == k.tip:          # only an arrival that chains can unblock others
            drain(st, name, k)
        elif len(k.pending) > MAX_PENDING:   # hostile: classify now, stay bounded
            _resolve(st, name, k)
    if k.tip in TERMINAL:
        close(st, name, k)


def _legal(found: Findings, name: str, t, steps) -> None:
    """LEGAL (or P2, out of UNKNOWN) if `t` is not an edge of the record lifecycle."""
    frm, to = t[2], t[3]
    if (frm, to) in EDGES:
        return
    if frm == UNKNOWN:
        found.add("P2", name, "certain",
                  f"after UNKNOWN the next transition must be one of "
                  f"{', '.join(sorted(STATES[s] for s in AFTER_UNKNOWN))}, but {t[0]} moved "
                  f"the key to {STATES[to]}: a blind retry from memory, not a reconcile",
                  steps)
    else:
        found.add("LEGAL", name, "certain",
                  f"{STATES[frm]} -> {STATES[to]} is not an edge of the record lifecycle "
                  "in spec/protocol.json", steps)


def extend(st: Store, name: str, k: Key, t) -> None:
    """Append `t` (which leaves the chain's tip) to the chain: LEGAL / P2, FENCE backwards."""
    w, seq, frm, to, fence, loc = t
    if (frm, to) not in EDGES:
        _legal(st.found, name, t, chain_steps(k)[-3:] + [tstep(t)])
    if fence is not None:
        if k.max_fence is not None and fence < k.max_fence:
            st.found.add("FENCE", name, "certain",
                         f"the key's fence went backwards, from {k.max_fence} to {fence}: the "
                         f"log accepted a write from {w}, whose fence was already stale",
                         chain_steps(k)[-3:] + [tstep(t)])
        else:
            k.max_fence = fence
    if len(k.chain) < MAX_CHAIN:   # a legal chain has at most 6 steps
        k.chain.append(t)
    k.tip = to
    k.visited |= 1 << to
    k.last_loc, k.last_writer = loc, w
    note_edge(k, frm, to, loc)


def note_edge(k: Key, frm: int, to: int, loc: int) -> None:
    """What an edge means for effects: a dispatch, a cancel before dispatch, a seal."""
    if to == DISPATCHED:
        k.dispatches += 1
        if not k.dispatch_loc:
            k.dispatch_loc = loc
    elif frm == RECORDED and to == CANCELLED:
        k.flags |= F_CANCELLED
    elif frm == RECONCILING and to == DEAD_LETTER:
        k.flags |= F_SEALED


def drain(st: Store, name: str, k: Key) -> None:
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
        extend(st, name, k, t)


def _resolve(st: Store, name: str, k: Key) -> None:
    """Classify what is still buffered: forks (RACE / P4 / LEGAL) and unchained lines."""
    found = st.found
    pending = sorted(k.pending, key=lambda t: (t[0], t[1]))
    k.pending = []
    branch: dict[str, tuple] = {}   # writer -> (state its fork branch is in, property)
    chain = k.chain
    for t in pending:
        w, seq, frm, to, fence, loc = t
        note_edge(k, frm, to, loc)    # a fork happened too: it dispatches, cancels
        br = branch.get(w)
        if br is not None and br[0] == frm:   # continues this writer's fork branch
            branch[w] = (to, br[1])
            _legal(found, name, t, [tstep(t)])
            b = found.get(br[1], name)
            if b is not None:
                b.extend(tstep(t))
            continue
        _legal(found, name, t, [tstep(t)])
        if not (k.visited >> frm) & 1:
            found.add("LEGAL", name, "certain",
                      f"{w} moved the key from {STATES[frm]}, a state its chain never "
                      f"reached (it went {' -> '.join(_path(chain))}); unless lines were "
                      "lost, the writer skipped or invented a step",
                      chain_steps(k) + [tstep(t)], soft=True)
            continue
        fork = next((i for i, c in enumerate(chain) if c[2] == frm), None)
        other = chain[fork] if fork is not None else None
        mine = [i for i, c in enumerate(chain) if c[0] == w and c[1] < seq]
        prev_seq = max([chain[i][1] for i in mine], default=-1)
        crash = crashed_between(st.writers.get(w), prev_seq, seq)
        steps = chain_steps(k)[: (fork + 1 if fork is not None else None)]
        if crash is None and other is not None:
            # symmetric: the transition the chain took may be the one made from memory
            theirs = [c[1] for c in chain[:fork] if c[0] == other[0]]
            ocrash = crashed_between(st.writers.get(other[0]), max(theirs, default=-1),
                                     other[1])
            if ocrash is not None:
                branch[w] = (to, "P4")
                found.add("P4", name, "certain",
                          f"{other[0]} crashed and then moved the key from {STATES[frm]} "
                          f"to {STATES[other[3]]}, while {w} moved it from {STATES[frm]} to "
                          f"{STATES[to]}: after a crash the writer acted from memory or "
                          "chat history, not from the log",
                          steps[:-1] + [ocrash, steps[-1], tstep(t)])
                continue
        moved = (f"{other[0]} had already moved it from {STATES[frm]} to "
                 f"{STATES[other[3]]}" if other else f"the chain had already left "
                 f"{STATES[frm]}")
        if crash is not None:
            branch[w] = (to, "P4")
            found.add("P4", name, "certain",
                      f"{w} crashed and then moved the key from {STATES[frm]}, but "
                      f"{moved}: after a crash the writer acted from memory or chat "
                      "history, not from the log", steps + [crash, tstep(t)])
        elif mine and fork is not None and max(mine) > fork:
            branch[w] = (to, "LEGAL")
            found.add("LEGAL", name, "certain",
                      f"{w} had itself moved the key past {STATES[frm]}, then wrote a "
                      f"transition from {STATES[frm]} again: a rewind (overwrite) the "
                      "lifecycle does not have", steps + [tstep(t)])
        else:
            branch[w] = (to, "RACE")
            found.add("RACE", name, "certain",
                      f"{w} moved the key out of {STATES[frm]}, but {moved}; a key's "
                      "transitions must form one chain, so two writers acted on the same "
                      "state without a compare-and-set", steps + [tstep(t)])
    if branch:
        k.forks = branch


def _late(st: Store, name: str, k: Key, t) -> None:
    """A transition for a key that had already settled (closed)."""
    found = st.found
    w, seq, frm, to, fence, loc = t
    last = ("note", k.last_writer, f"the key had settled at {STATES[k.tip]}", k.last_loc)
    step = tstep(t)
    _legal(found, name, t, [last, step])
    flags = k.flags
    note_edge(k, frm, to, loc)
    if k.flags != flags and k.applies:
        check_effects(st, name, k, k.apply_loc)
    if to == DISPATCHED:
        if k.digest is not None:
            e = st.ent(k.digest)
            if e is not None:
                e.add_dispatch(loc, 1)
        if k.flags & F_CANCELLED and not k.applies:
            found.add("P3", name, "possible",
                      "the key was cancelled before dispatch, yet it was dispatched "
                      "later; no effect record shows whether the provider applied it",
                      [last, step])
    br = k.forks.get(w) if k.forks else None
    if br is not None and br[0] == frm:     # continues this writer's fork branch
        k.forks[w] = (to, br[1])
        b = found.get(br[1], name)
        if b is not None:
            b.extend(step)
        return
    if frm == k.tip:
        return                       # already reported as LEGAL (out of a terminal state)
    if not (k.visited >> frm) & 1:
        found.add("LEGAL", name, "certain",
                  f"{w} moved the key from {STATES[frm]}, a state it never reached",
                  [last, step], soft=True)
        return
    crash = crashed_between(st.writers.get(w), -1, seq)
    if crash is not None:
        found.add("P4", name, "certain",
                  f"{w} crashed and then moved the key from {STATES[frm]}, but the log "
                  f"had settled it at {STATES[k.tip]}: after a crash the writer acted "
                  "from memory or chat history, not from the log", [last, crash, step])
    elif w == k.last_writer:
        found.add("LEGAL", name, "certain",
                  f"{w} had itself settled the key at {STATES[k.tip]}, then wrote a "
                  f"transition from {STATES[frm]}: a rewind (overwrite)", [last, step])
    else:
        found.add("RACE", name, "certain",
                  f"{w} moved the key out of {STATES[frm]}, which the chain had already "
                  f"left (it settled at {STATES[k.tip]}): two writers acted on one state",
                  [last, step])


def close(st: Store, name: str, k: Key) -> None:
    """The chain is terminal: classify leftovers, settle counts, drop the buffers, and
    pack the key with its intent when it is an ordinary one."""
    if k.pending:
        _resolve(st, name, k)
    _settle(st, name, k)
    k.chain = None
    k.pending = None
    if st.packing:
        st.pack(name, k)


def _settle(st: Store, name: str, k: Key) -> None:
    """Hand the key's dispatches (and ACKED) to its intent; check its effects."""
    if k.dispatches and k.digest is not None:
        e = st.ent(k.digest)
        if e is not None:
            e.add_dispatch(k.dispatch_loc, k.dispatches)
            if k.tip == ACKED:
                e.acked += 1
    if k.applies or (k.flags & F_CANCELLED and k.dispatches):
        check_effects(st, name, k)


def check_effects(st: Store, name: str, k: Key, loc: int = 0) -> None:
    """P3 and FENCE between the key's chain and the provider's apply records."""
    found = st.found
    if not k.applies:
        if k.flags & F_CANCELLED and k.dispatches and k.chain is not None:
            found.add("P3", name, "possible",
                      "the key was cancelled before dispatch, yet a dispatch was logged; no "
                      "effect record shows whether the provider applied it",
                      chain_steps(k))
        return
    sealed_stale = (k.flags & F_SEALED and k.min_apply_fence is not None
                    and k.max_fence is not None and k.min_apply_fence < k.max_fence)
    if not (k.flags & F_CANCELLED or sealed_stale):
        return
    applied = ("effect", "", "provider applied it", loc or k.apply_loc)
    story = chain_steps(k) if k.chain is not None else [
        ("note", k.last_writer, f"the key had settled at {STATES[k.tip]}", k.last_loc)]
    if k.flags & F_CANCELLED:
        found.add("P3", name, "certain",
                  "the user cancelled the key before dispatch (RECORDED -> "
                  "REJECTED_CONFLICT), yet the provider applied its effect",
                  story + [applied], locs=[k.last_loc])
    if sealed_stale:
        found.add("FENCE", name, "certain",
                  f"reconciling at fence {k.max_fence} found no effect (DEAD_LETTER), yet "
                  f"the provider applied a request with the older fence "
                  f"{k.min_apply_fence}: a stale request landed after the seal",
                  story + [("effect", "", f"apply with fence {k.min_apply_fence}",
                            k.min_apply_loc)],
                  locs=[k.last_loc])


def finish_open(st: Store) -> None:
    """At the end of the log: classify every open key's buffer, settle it, and report the
    keys left outside a terminal state (UNSETTLED)."""
    for name, k in st.keys.items():
        if type(k) is bytes or k.chain is None:
            continue
        drain(st, name, k)
        if k.pending:
            _resolve(st, name, k)
        _settle(st, name, k)
        if k.flags & F_TRANSITIONS and k.tip not in TERMINAL:
            st.found.add("UNSETTLED", name, "possible",
                         f"the log ends with the key at {STATES[k.tip]}, not a settled state"
                         + ("; an effect may still land" if k.tip in IN_DOUBT else
                            "; its intent is neither done nor given up"),
                         chain_steps(k))


def _path(chain: Iterable) -> list[str]:
    chain = list(chain)
    if not chain:
        return [STATES[INITIAL]]
    return [STATES[chain[0][2]]] + [STATES[t[3]] for t in chain]
