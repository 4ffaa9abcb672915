"""The reachable graph: PROGRESS by backward search from the settled states.

Two implementations that must agree (a test compares them on every shipped instance):
networkx on graphs up to `NX_LIMIT` states, where its memory is affordable, and a compact
one over 4-byte arrays (reverse CSR) beyond. `reachable_graph` hands the graph to users as
a networkx DiGraph (strongly connected components, condensation, drawing). networkx is
imported on first use (0.2 s a command that searches only natively does not pay).
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import networkx as nx

NX_LIMIT = 100_000


def reachable_graph(n: int, eoff: array, edst: array) -> nx.DiGraph:
    """The explored graph as a networkx DiGraph over state ids 0..n-1."""
    import networkx as nx  # here, not at import: a native search never needs it

    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from((s, edst[e]) for s in range(n) for e in range(eoff[s], eoff[s + 1]))
    return g


def first_stuck(
    n: int, eoff: array, edst: array, goals: list, use_networkx: Optional[bool] = None
) -> Optional[int]:
    """Least state id from which no goal (settled or truncated) state is reachable, or
    None. `use_networkx` picks the implementation (default: networkx up to NX_LIMIT)."""
    if use_networkx is None:
        use_networkx = n <= NX_LIMIT
    return (first_stuck_networkx if use_networkx else first_stuck_arrays)(n, eoff, edst, goals)


def first_stuck_networkx(n: int, eoff: array, edst: array, goals: list) -> Optional[int]:
    g = reachable_graph(n, eoff, edst)
    sink = n  # one extra node every goal leads to
    g.add_edges_from((t, sink) for t in goals)
    import networkx as nx

    good = nx.ancestors(g, sink) if goals else set()
    return next((s for s in range(n) if s not in good), None)


def first_stuck_arrays(n: int, eoff: array, edst: array, goals: list) -> Optional[int]:
    """Least state id from which no goal (settled or truncated) state is reachable."""
    start = array("I", [0]) * (n + 1)  # reverse CSR: count predecessors per target
    for t in edst:
        start[t + 1] += 1
    for i in range(n):
        start[i + 1] += start[i]
    fill = array("I", start)
    preds = array("I", [0]) * len(edst)
    for s in range(n):
        for e in range(eoff[s], eoff[s + 1]):
            t = edst[e]
            preds[fill[t]] = s
            fill[t] += 1
    good = bytearray(n)
    stack = array("I", goals)  # ids as 4-byte items, not Python ints
    for sid in stack:
        good[sid] = 1
    while stack:
        t = stack.pop()
        for i in range(start[t], start[t + 1]):
            s = preds[i]
            if not good[s]:
                good[s] = 1
                stack.append(s)
    bad = good.find(0)
    return None if bad < 0 else bad
