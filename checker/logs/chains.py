"""Key chains: each key's transitions ordered without clocks. LEGAL, P2, RACE, P4, FENCE.

Within a writer, events are ordered by ``seq``; across writers a key's transitions are
ordered by chaining: each one leaves the state the previous one entered. Transitions that
do not chain yet wait in the key's buffer (`Key.pending`). A key whose chain reaches a
terminal state with nothing buffered is *closed*: judged (`_judge`), settled, and usually
packed (its chain kept compact). Anything else is judged once, at the end of the log, from
every transition the key has (`finish_open`):

- the chain is rebuilt from the initial state, taking at each state the transition that
  leaves it first by (fence, writer, seq), each writer's own order kept, so the chain is
  the same whatever order the lines arrived in;
- what is left over is classified: a second transition out of a state the chain already
  left is a ``RACE`` (another writer acted on the same state), a ``P4`` finding (one of
  the two writers crashed since its previous action on the key, so it acted from memory)
  or ``LEGAL`` (its writer rewound a key it had itself moved on); one that starts from a
  state no logged transition entered is a possible ``LEGAL``: the line that entered it
  may be lost (a writer's last lines can be lost without a gap in its seq numbers);
- a transition that arrives after its key closed reopens the key: what judging it found
  is forgotten, and it is judged with the rest at the end, exactly as if the transition
  had arrived earlier.

So a key's findings depend on its transitions and each writer's order, never on how the
writers' lines interleave. The driver extends an open chain itself in the common case (see
`toolcommit.checker.logs.conformance.Conformance.feed`); `transition` takes the rest.

Limitations
-----------
A key with more than `MAX_PENDING` buffered transitions (hostile input) has them
classified at once against the chain it has then, to stay bounded; a chain longer than
`MAX_CHAIN` (illegal anyway) is judged as it arrived, not rebuilt.
"""

from __future__ import annotations

from typing import Iterable

from toolcommit.checker.logs.findings import Findings
from toolcommit.checker.logs.store import (
    ACKED,
    AFTER_UNKNOWN,
    CANCELLED,
    CODE,
    DEAD_LETTER,
    DISPATCHED,
    EDGES,
    F_CANCELLED,
    F_CLOSED,
    F_JUDGE,
    F_RECORD,
    F_SEALED,
    F_TRANSITIONS,
    IN_DOUBT,
    INITIAL,
    NEXT,
    RECONCILING,
    RECORDED,
    STATES,
    TERMINAL,
    UNKNOWN,
    Key,
    Store,
)
from toolcommit.checker.logs.writers import Writer, crashed_between

MAX_PENDING = 4096  # buffered transitions per key before they are classified at once
MAX_CHAIN = 256  # transitions kept per key's chain (a legal chain has at most 5)
MAX_SEARCH = 24  # transitions per key up to which the chain is the longest one
_JUDGED = ("LEGAL", "P2", "FENCE", "P3")  # what judging a closed key may have found


def tstep(t) -> tuple:
    """A chain tuple (writer, seq, from, to, fence, loc) as a story step."""
    w, seq, frm, to, fence, loc = t
    fx = f" (fence {fence})" if fence is not None else ""
    return ("transition", w, f"{STATES[frm]} -> {STATES[to]}{fx}", loc)


def chain_steps(k: Key) -> list:
    return [tstep(t) for t in (k.chain or ())]


def transition(st: Store, ev, w: Writer, loc: int) -> None:
    """A transition line (see the module docstring). The common case first, where nothing
    is left to judge: an open key (not packed), the chain's tip left along a spec edge with
    nothing buffered, the fence not going backwards; the chain is extended at once and the
    key closed if it reached a terminal state (no edge leaves one, so a closed key never
    takes this path). The native lane (lane.c, `transition`) runs this same case in C and
    hands every other one to this function: change both."""
    name = ev.key
    frm, to = CODE[ev.from_], CODE[ev.to]
    k = st.keys.get(name)
    if type(k) is Key and frm == k.tip and not k.pending and (NEXT[frm] >> to) & 1:
        fence = ev.fence
        if fence is None or k.max_fence is None or fence >= k.max_fence:
            if fence is not None:
                k.max_fence = fence
            k.flags |= F_RECORD | F_TRANSITIONS
            chain = k.chain
            if len(chain) < MAX_CHAIN:
                chain.append((w.name, ev.seq, frm, to, fence, loc))
            k.tip = to
            k.visited |= 1 << to
            k.last_loc = loc
            k.last_writer = w.name
            note_edge(k, frm, to, None, loc)  # the fence is noted above
            if to in TERMINAL:
                close(st, name, k)
            return
    k = st.key(name)
    t = (w.name, ev.seq, frm, to, ev.fence, loc)
    note_edge(k, frm, to, t[4], loc)
    k.flags |= F_RECORD | F_TRANSITIONS | F_JUDGE
    if k.flags & F_CLOSED:  # late: reopen; judged again with the rest at the end
        k.flags &= ~F_CLOSED
        k.pending = [t]
        st.found.retract(name, _JUDGED)
        return
    if frm == k.tip and not k.pending:
        extend(k, t)
    else:
        if k.pending:
            k.pending.append(t)
        else:
            k.pending = [t]
        if frm == k.tip:  # only an arrival that chains can unblock others
            drain(k)
        elif len(k.pending) > MAX_PENDING:  # hostile: classify now, stay bounded
            _resolve(st, name, k)
    if k.tip in TERMINAL and not k.pending:
        close(st, name, k)


def note_edge(k: Key, frm: int, to: int, fence, loc: int) -> None:
    """What a transition means for effects, noted once per transition on arrival, on the
    chain or not: the key's highest fence, a dispatch, a cancel before dispatch, a seal."""
    if fence is not None and (k.max_fence is None or fence > k.max_fence):
        k.max_fence = fence
    if to == DISPATCHED:
        k.dispatches += 1
        if not k.dispatch_loc:
            k.dispatch_loc = loc
    elif frm == RECORDED and to == CANCELLED:
        k.flags |= F_CANCELLED
    elif frm == RECONCILING and to == DEAD_LETTER:
        k.flags |= F_SEALED


def extend(k: Key, t) -> None:
    """Append `t` (which leaves the chain's tip) to the chain; `_judge` judges it later."""
    w, seq, frm, to, fence, loc = t
    if len(k.chain) < MAX_CHAIN:
        k.chain.append(t)
    k.tip = to
    k.visited |= 1 << to
    k.last_loc, k.last_writer = loc, w


def drain(k: Key) -> None:
    """Extend the chain with buffered transitions that now chain, keeping each writer's
    own order; when two writers are ready from one state, the lower fence (then writer,
    then seq) goes first."""
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
        extend(k, t)


def _rebuild(k: Key) -> None:
    """The chain again from the initial state, from every transition the key has: the
    longest chain that keeps each writer's own order (ties: the lower fence, then writer,
    then seq, first), the rest left buffered. The same chain whatever order the
    transitions arrived in. Past `MAX_SEARCH` transitions (hostile), `drain`'s greedy rule
    builds it instead."""
    if len(k.chain) >= MAX_CHAIN:
        return
    everything = k.chain + list(k.pending or ())
    k.chain, k.pending = [], everything
    k.tip, k.visited = INITIAL, 1 << INITIAL
    k.last_loc, k.last_writer = 0, ""
    if len(everything) > MAX_SEARCH:
        drain(k)
        return
    for t in _longest(everything):
        k.pending.remove(t)
        extend(k, t)


def _longest(transitions: list) -> list:
    """The longest chain of `transitions` from the initial state in which each writer's
    transitions keep their seq order (see `_rebuild`)."""
    per: dict[str, list] = {}
    for t in transitions:
        per.setdefault(t[0], []).append(t)
    lanes = [sorted(per[w], key=lambda t: t[1]) for w in sorted(per)]
    memo: dict[tuple, tuple] = {}

    def best(tip: int, pos: tuple) -> tuple:  # -> (length, lanes taken in order)
        got = memo.get((tip, pos))
        if got is not None:
            return got
        ready = sorted(
            (-1 if lane[i][4] is None else lane[i][4], lane[i][0], lane[i][1], j)
            for j, (lane, i) in enumerate(zip(lanes, pos))
            if i < len(lane) and lane[i][2] == tip
        )
        out: tuple = (0, ())
        for *_, j in ready:
            n, path = best(lanes[j][pos[j]][3], pos[:j] + (pos[j] + 1,) + pos[j + 1 :])
            if n + 1 > out[0]:
                out = (n + 1, (j,) + path)
        memo[(tip, pos)] = out
        return out

    pos = [0] * len(lanes)
    chain = []
    for j in best(INITIAL, tuple(pos))[1]:
        chain.append(lanes[j][pos[j]])
        pos[j] += 1
    return chain


def _judge(found: Findings, name: str, k: Key) -> None:
    """LEGAL / P2 for every chain transition that is not an edge, FENCE where the chain's
    fence goes backwards."""
    chain, top = k.chain, None
    for i, t in enumerate(chain):
        fence = t[4]
        if (t[2], t[3]) not in EDGES:
            _legal(found, name, t, [tstep(c) for c in chain[max(0, i - 3) : i + 1]])
        if fence is not None:
            if top is not None and fence < top:
                found.add(
                    "FENCE",
                    name,
                    "certain",
                    f"the key's fence went backwards, from {top} to {fence}: the "
                    f"log accepted a write from {t[0]}, whose fence was already stale",
                    [tstep(c) for c in chain[max(0, i - 3) : i + 1]],
                )
            else:
                top = fence


def _legal(found: Findings, name: str, t, steps) -> None:
    """LEGAL (or P2, out of UNKNOWN) if `t` is not an edge of the record lifecycle."""
    frm, to = t[2], t[3]
    if (frm, to) in EDGES:
        return
    if frm == UNKNOWN:
        found.add(
            "P2",
            name,
            "certain",
            f"after UNKNOWN the next transition must be one of "
            f"{', '.join(sorted(STATES[s] for s in AFTER_UNKNOWN))}, but {t[0]} moved "
            f"the key to {STATES[to]}: a blind retry from memory, not a reconcile",
            steps,
        )
    else:
        found.add(
            "LEGAL",
            name,
            "certain",
            f"{STATES[frm]} -> {STATES[to]} is not an edge of the record lifecycle "
            "in spec/protocol.json",
            steps,
        )


def _resolve(st: Store, name: str, k: Key) -> None:
    """Classify what is still buffered: forks (RACE / P4 / LEGAL) and unchained lines."""
    found = st.found
    pending = sorted(k.pending, key=lambda t: (t[0], t[1]))
    k.pending = []
    branch: dict[str, tuple] = dict(k.forks or {})  # writer -> (its branch's state, property)
    chain = k.chain
    for t in pending:
        w, seq, frm, to, fence, loc = t
        br = branch.get(w)
        if br is not None and br[0] == frm:  # continues this writer's fork branch
            branch[w] = (to, br[1])
            _legal(found, name, t, [tstep(t)])
            b = found.get(br[1], name)
            if b is not None:
                b.extend(tstep(t))
            continue
        _legal(found, name, t, [tstep(t)])
        if not (k.visited >> frm) & 1:
            found.add(
                "LEGAL",
                name,
                "possible",
                f"{w} moved the key from {STATES[frm]}, a state its chain never "
                f"reached (it went {' -> '.join(_path(chain))}): a line that entered "
                f"{STATES[frm]} was lost, or the writer skipped or invented a step",
                chain_steps(k) + [tstep(t)],
            )
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
            ocrash = crashed_between(st.writers.get(other[0]), max(theirs, default=-1), other[1])
            if ocrash is not None:
                branch[w] = (to, "P4")
                found.add(
                    "P4",
                    name,
                    "certain",
                    f"{other[0]} crashed and then moved the key from {STATES[frm]} "
                    f"to {STATES[other[3]]}, while {w} moved it from {STATES[frm]} to "
                    f"{STATES[to]}: after a crash the writer acted from memory or "
                    "chat history, not from the log",
                    steps[:-1] + [ocrash, steps[-1], tstep(t)],
                )
                continue
        moved = (
            f"{other[0]} had already moved it from {STATES[frm]} to {STATES[other[3]]}"
            if other
            else f"the chain had already left {STATES[frm]}"
        )
        if crash is not None:
            branch[w] = (to, "P4")
            found.add(
                "P4",
                name,
                "certain",
                f"{w} crashed and then moved the key from {STATES[frm]}, but "
                f"{moved}: after a crash the writer acted from memory or chat "
                "history, not from the log",
                steps + [crash, tstep(t)],
            )
        elif mine and fork is not None and max(mine) >= fork:
            branch[w] = (to, "LEGAL")
            found.add(
                "LEGAL",
                name,
                "certain",
                f"{w} had itself moved the key past {STATES[frm]}, then wrote a "
                f"transition from {STATES[frm]} again: a rewind (overwrite) the "
                "lifecycle does not have",
                steps + [tstep(t)],
            )
        else:
            branch[w] = (to, "RACE")
            found.add(
                "RACE",
                name,
                "certain",
                f"{w} moved the key out of {STATES[frm]}, but {moved}; a key's "
                "transitions must form one chain, so two writers acted on the same "
                "state without a compare-and-set",
                steps + [tstep(t)],
            )
    if branch:
        k.forks = branch


def close(st: Store, name: str, k: Key) -> None:
    """The chain is terminal and nothing is buffered: judge it, check its effects, and
    pack the key with its intent when it is an ordinary one. A chain that took the slow
    path is rebuilt first (the order its lines arrived in must not matter); if that leaves
    anything over, the key stays open, judged at the end. The native lane (logs/lane.c)
    mirrors the path without judging: change both."""
    if k.flags & F_JUDGE:
        _rebuild(k)
        if k.pending or k.tip not in TERMINAL:
            return
        _judge(st.found, name, k)
    k.flags = (k.flags & ~F_JUDGE) | F_CLOSED
    if k.flags & (F_CANCELLED | F_SEALED):  # else `check_effects` has nothing to find
        check_effects(st, name, k)
    if st.packing:
        st.pack(name, k)


def check_effects(st: Store, name: str, k: Key, loc: int = 0) -> None:
    """P3 and FENCE between the key's chain and the provider's records; run when the key
    is judged and again for each effect arriving after (findings only accumulate)."""
    found = st.found
    if not k.applies:
        if k.flags & F_CANCELLED and k.dispatches:
            found.add(
                "P3",
                name,
                "possible",
                "the key was cancelled before dispatch, yet a dispatch was logged; no "
                "effect record shows whether the provider applied it",
                chain_steps(k),
            )
        return
    sealed_stale = (
        k.flags & F_SEALED
        and k.min_apply_fence is not None
        and k.max_fence is not None
        and k.min_apply_fence < k.max_fence
    )
    if not (k.flags & F_CANCELLED or sealed_stale):
        return
    story = chain_steps(k) or [
        ("note", k.last_writer, f"the key is at {STATES[k.tip]}", k.last_loc)
    ]
    if k.flags & F_CANCELLED:
        found.add(
            "P3",
            name,
            "certain",
            "the user cancelled the key before dispatch (RECORDED -> "
            "REJECTED_CONFLICT), yet the provider applied its effect",
            story + [("effect", "", "provider applied it", loc or k.apply_loc)],
            locs=[k.last_loc],
        )
    if sealed_stale:
        found.add(
            "FENCE",
            name,
            "certain",
            f"reconciling at fence {k.max_fence} found no effect (DEAD_LETTER), yet "
            f"the provider applied a request with the older fence "
            f"{k.min_apply_fence}: a stale request landed after the seal",
            story + [("effect", "", f"apply with fence {k.min_apply_fence}", k.min_apply_loc)],
            locs=[k.last_loc],
        )


def finish_open(st: Store) -> None:
    """At the end of the log: judge every key not closed from all its transitions (see
    the module docstring), and report the keys left outside a terminal state."""
    for name, k in st.objects(st.keys, bytes):
        if k.reaccepts:
            _reaccepted(st, name, k)
        if k.flags & F_CLOSED:
            continue
        if k.pending or k.forks or k.flags & F_JUDGE:
            _rebuild(k)
        _judge(st.found, name, k)
        if k.pending:
            _resolve(st, name, k)
        check_effects(st, name, k)
        if k.flags & F_TRANSITIONS and k.tip not in TERMINAL:
            st.found.add(
                "UNSETTLED",
                name,
                "possible",
                f"the log ends with the key at {STATES[k.tip]}, not a settled state"
                + (
                    "; an effect may still land"
                    if k.tip in IN_DOUBT
                    else "; its intent is neither done nor given up"
                ),
                chain_steps(k),
            )


def _reaccepted(st: Store, name: str, k: Key) -> None:
    """A key accepted more than once. An acceptance whose writer had itself settled the key
    before it (its own order proves it) overwrote a settled record: LEGAL. Two or more
    acceptances left over inserted one key twice: RACE. Judged from every acceptance and
    every transition of the key, so the order they arrived in does not matter."""
    moves = k.chain + list(k.pending or ())
    everyone = [(st.found.writer_of(k.accept_loc), k.accept_seq, k.accept_loc, "")]
    others = []
    for writer, seq, loc, call in everyone + k.reaccepts:
        step = ("proposal", writer, f"call {call}: key accepted" if call else "key accepted", loc)
        if any(t[0] == writer and t[3] in TERMINAL and t[1] < seq for t in moves):
            st.found.add(
                "LEGAL",
                name,
                "certain",
                "the key was accepted again after it had settled: a second record "
                "overwrote the first, so the intent can take effect twice",
                chain_steps(k)[-1:] + [step],
            )
        else:
            others.append(step)
    if len(others) >= 2:
        st.found.add(
            "RACE",
            name,
            "certain",
            "two proposals were accepted for one key: the log inserted twice "
            "(check-then-insert without a uniqueness constraint)",
            others[:2],
        )


def acked(k: Key) -> bool:
    return k.tip == ACKED


def _path(chain: Iterable) -> list[str]:
    chain = list(chain)
    if not chain:
        return [STATES[INITIAL]]
    return [STATES[chain[0][2]]] + [STATES[t[3]] for t in chain]
