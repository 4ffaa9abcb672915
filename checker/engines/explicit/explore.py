"""Explicit-state breadth-first search: exhaustive for an instance, shortest counterexamples.

`explore` visits every reachable state (up to symmetry) once, in BFS order, so the first
state found breaking an invariant lies at the least depth: its path is a shortest
counterexample. States are packed ints (`toolcommit.checker.engines.explicit.codegen`); per state we keep
its parent id and the action that reached it (8 bytes in two arrays), and for the graph
properties the edge list (8 bytes per edge).

Graph properties are judged on the reachable graph: DEADLOCK (no move while unsettled),
PROGRESS (a settled state stays reachable, by backward search from the settled states; see
`toolcommit.checker.engines.explicit.graph`), and the end-state predicates (FULFIL: at every
state where only faults could still fire, the intent is fulfilled).
A *truncated* state (a move was cut by the fence bound) counts as able to progress.

With a `StopWhen`, the search stops once everything it names is found (Spin's stop at
the first error, for every property asked for): checked after each state is expanded, so
both engines stop at the same state. Every first violation is then the full search's
(BFS finds states in id order), so its counterexample is still a shortest one; the counts
are those of the part searched, and the exploration is incomplete (`early`).
"""

from __future__ import annotations

import time
import tracemalloc
from array import array
from dataclasses import dataclass, field
from typing import Callable, Optional

from toolcommit.checker.engines.explicit.codegen import Compiled
from toolcommit.checker.engines.explicit.graph import first_stuck

EARLY = "stopped early: every property asked for is violated"


@dataclass(frozen=True)
class StopWhen:
    """What ends a search early: every invariant in `invariants` violated, every witness
    in `witnesses` reached and every end predicate in `ends` broken (bit masks over the
    compiled names), and with `deadlock` a deadlock found. Graph properties that need the
    whole graph (PROGRESS) cannot be among them."""

    invariants: int = 0
    witnesses: int = 0
    ends: int = 0
    deadlock: bool = False

    def met(self, seen_v: int, seen_w: int, seen_e: int, deadlock) -> bool:
        return (
            seen_v & self.invariants == self.invariants
            and seen_w & self.witnesses == self.witnesses
            and seen_e & self.ends == self.ends
            and (deadlock is not None or not self.deadlock)
        )


@dataclass
class Exploration:
    """Everything one BFS learned; state ids are BFS order (id 0 is the initial state)."""

    compiled: Compiled
    states: list
    parent: array
    via: array
    level_ends: list
    complete: bool
    stop_reason: str = ""
    first_violation: dict = field(default_factory=dict)  # invariant -> state id
    first_witness: dict = field(default_factory=dict)  # witness -> state id
    first_bad_end: dict = field(default_factory=dict)  # end predicate -> state id
    deadlock: Optional[int] = None
    stuck: Optional[int] = None  # first state from which no settled state is reachable
    stuck_later: bool = False  # `stuck` not searched yet (native.find_stuck searches it)
    settled_ids: list = field(default_factory=list)
    truncated: int = 0
    truncated_ids: list = field(default_factory=list)
    edges: Optional[tuple] = None  # (offsets, targets): state i's successors are
    #                                 targets[offsets[i]:offsets[i+1]] (graph runs only)
    transitions: int = 0
    fired: dict = field(default_factory=dict)  # action name -> count
    seconds: float = 0.0
    peak_bytes: int = 0
    engine: str = "python"  # which engine explored: python or native
    engine_note: str = ""  # why not the native engine, when it was wanted
    early: bool = False  # stopped by a `StopWhen` (so not complete)

    @property
    def state_count(self) -> int:
        return len(self.states)

    @property
    def depth(self) -> int:
        return len(self.level_ends) - 1

    def depth_of(self, sid: int) -> int:
        """The BFS depth of state `sid`: the steps of its shortest path from the initial
        state, by its parent links, so also right for the unexpanded frontier of a search
        a limit stopped (which no level of `level_ends` covers)."""
        d = 0
        parent = self.parent
        while sid != 0:
            sid = parent[sid]
            d += 1
        return d

    def path(self, sid: int) -> list[tuple[int, int]]:
        """[(action index or -1, canonical state)] from the initial state to `sid`."""
        out = []
        while sid != 0:
            out.append((self.via[sid], self.states[sid]))
            sid = self.parent[sid]
        out.append((-1, self.states[0]))
        return out[::-1]


def explore(
    c: Compiled,
    max_states: int = 0,
    timeout: float = 0.0,
    graph: bool = True,
    progress: Optional[Callable[[dict], None]] = None,
    measure_memory: bool = False,
    stop: Optional[StopWhen] = None,
) -> Exploration:
    """Breadth-first search of `c` from its initial state.

    Parameters
    ----------
    max_states, timeout : stop early (0 = no limit); the result is then `complete=False`.
    graph : keep edges and judge DEADLOCK and PROGRESS.
    progress : called about once a second with a dict of counters.
    stop : end the search once what it names is found (`complete=False`, `early=True`);
        the level ends then cover every state found (its last level is the unexpanded
        frontier), so `depth_of` is exact for every stored state.
    """
    if measure_memory:
        tracemalloc.start()
    t0 = time.perf_counter()
    succ, viol, wit, settled, canon = c.successors, c.violations, c.witnesses, c.settled, c.canon
    init = c.init
    index = {init: 0}
    states, parent, via = [init], array("I", [0]), array("i", [-1])
    eoff, edst = array("I", [0]), array("I")  # edges of state i: edst[eoff[i]:eoff[i+1]]
    found_v: dict[int, int] = {}
    found_w: dict[int, int] = {}
    settled_ids, level_ends = [], []
    deadlock, truncated, transitions = None, [], 0
    fired = [0] * len(c.system.actions)
    ends, found_e = (c.end_violations if graph and c.end_names else None), {}
    fault = [a.fault for a in c.system.actions]
    all_v = (1 << len(c.invariant_names)) - 1
    all_w = (1 << len(c.witness_names)) - 1
    _record(viol(init), 0, found_v)
    _record(wit(init), 0, found_w)
    seen_v, seen_w = _masks(found_v), _masks(found_w)
    head, complete, reason, next_tick, early = 0, True, "", t0 + 1.0, False
    level_end = 1
    while head < len(states):
        if head == level_end:
            level_ends.append(level_end)
            level_end = len(states)
        s = states[head]
        moves, trunc = succ(s)
        if trunc:
            truncated.append(head)
        if settled(s):
            settled_ids.append(head)
        elif not moves and not trunc and deadlock is None:
            deadlock = head
        if (
            ends is not None
            and not trunc
            and len(found_e) < len(c.end_names)
            and all(fault[a] for a, _ in moves)
        ):
            _record(ends(s), head, found_e)
        for a, t in moves:
            fired[a] += 1
            j = index.get(t)
            if j is None:
                t = canon(t)
                j = index.get(t)
            if j is None:
                j = len(states)
                index[t] = j
                states.append(t)
                parent.append(head)
                via.append(a)
                if seen_v != all_v:
                    m = viol(t) & ~seen_v
                    if m:
                        _record(m, j, found_v)
                        seen_v |= m
                if seen_w != all_w:
                    m = wit(t) & ~seen_w
                    if m:
                        _record(m, j, found_w)
                        seen_w |= m
            if graph:
                edst.append(j)
        if graph:
            eoff.append(len(edst))
        transitions += len(moves)
        head += 1
        if stop is not None and stop.met(seen_v, seen_w, _masks(found_e), deadlock):
            complete, reason, early = False, EARLY, True
            break
        if max_states and len(states) >= max_states and head < len(states):
            complete, reason = False, f"state limit {max_states} reached"
            break  # checked every state: the limit is overshot by one state's successors at most
        if (head & 1023) == 0:
            now = time.perf_counter()
            if progress is not None and now >= next_tick:
                next_tick = now + 1.0
                progress(
                    {
                        "states": len(states),
                        "explored": head,
                        "depth": len(level_ends),
                        "seconds": now - t0,
                    }
                )
            if timeout and now - t0 >= timeout:
                complete, reason = False, f"time limit {timeout:g}s reached"
                break
    if early:  # the level being expanded, then the states found from it
        level_ends += [level_end] + ([len(states)] if len(states) > level_end else [])
    else:
        level_ends.append(len(states) if complete else head)
    ex = Exploration(c, states, parent, via, level_ends, complete, reason)
    ex.early = early
    ex.first_violation = {c.invariant_names[b]: sid for b, sid in found_v.items()}
    ex.first_witness = {c.witness_names[b]: sid for b, sid in found_w.items()}
    ex.first_bad_end = {c.end_names[b]: sid for b, sid in found_e.items()}
    ex.deadlock, ex.truncated, ex.transitions = deadlock, len(truncated), transitions
    ex.truncated_ids = truncated
    if graph and complete:
        ex.edges = (eoff, edst)
    ex.settled_ids = settled_ids
    ex.fired = _fired_by_name(c, fired)
    del index  # the state -> id map is not needed past the search: free it before the
    #            reverse graph is built, so the two never weigh on memory at once
    if graph and complete:
        ex.stuck = first_stuck(len(states), eoff, edst, settled_ids + truncated)
    ex.seconds = time.perf_counter() - t0
    if measure_memory:
        ex.peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return ex


def _masks(found: dict) -> int:
    m = 0
    for b in found:
        m |= 1 << b
    return m


def _record(mask: int, sid: int, found: dict) -> None:
    b = 0
    while mask:
        if mask & 1 and b not in found:
            found[b] = sid
        mask >>= 1
        b += 1


def _fired_by_name(c: Compiled, fired: list) -> dict:
    out: dict[str, int] = {}
    for a, n in zip(c.system.actions, fired):
        if not a.cut:
            out[a.name] = out.get(a.name, 0) + n
    return out
