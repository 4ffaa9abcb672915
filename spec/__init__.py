"""The protocol as data: states, edges, properties, knobs, instances, environments.

`spec/protocol.json` and `spec/instances.json` are the single source of truth for names,
semantics and each action's one-line sentence; everything else (both engines, the log
checker, renderers, docs) reads them through this module.

Examples
--------
>>> p = protocol()
>>> p.record.initial
'PROPOSED'
>>> ("UNKNOWN", "RECONCILING") in p.record.edge_set
True
>>> sorted(p.properties)[:3]
['ALO', 'DEADLOCK', 'FENCE']
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:  # networkx is imported where a graph is built: reading names needs none
    import networkx as nx


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    event: str
    meaning: str


@dataclass(frozen=True)
class Lifecycle:
    """One state machine of the spec (the proposal's or the record's)."""

    name: str
    meaning: str
    initial: str
    states: Mapping[str, str]
    terminal: tuple[str, ...]
    edges: tuple[Edge, ...]

    @property
    def edge_set(self) -> frozenset[tuple[str, str]]:
        return frozenset((e.source, e.target) for e in self.edges)

    def graph(self) -> nx.DiGraph:
        """The lifecycle as a networkx DiGraph; edges carry `event` and `meaning`."""
        import networkx as nx

        g = nx.DiGraph(name=self.name, initial=self.initial)
        for state, meaning in self.states.items():
            g.add_node(state, meaning=meaning, terminal=state in self.terminal)
        for e in self.edges:
            g.add_edge(e.source, e.target, event=e.event, meaning=e.meaning)
        return g


@dataclass(frozen=True)
class Knob:
    """A policy knob. `implied` is set on a knob added after records were first stored: the
    option every design had before the knob existed, which stored records leave unwritten."""

    name: str
    meaning: str
    options: Mapping[str, str]
    presets: Mapping[str, str]
    implied: str | None = None
    not_searched: Mapping[str, str] = field(default_factory=dict)  # option -> why `design`
    #                                        never proposes it (the model flatters it)


@dataclass(frozen=True)
class Protocol:
    proposal: Lifecycle
    record: Lifecycle
    properties: Mapping[str, Mapping[str, str]]
    actors: Mapping[str, str]
    actions: Mapping[str, Mapping]
    faults: Mapping[str, str]
    knobs: Mapping[str, Knob]
    assumptions: Mapping[str, Mapping]
    raw: Mapping

    @property
    def presets(self) -> tuple[str, ...]:
        return ("naive", "seed", "recommended")

    def sentence(self, action: str) -> str:
        """The one-line sentence template of `action` (a `str.format` template over the
        action's parameters), or of "init", a trace's initial step; "" if there is none.

        >>> protocol().sentence("restart")
        'worker {worker} restarts with empty memory'
        >>> protocol().sentence("init")
        'nothing has happened yet'
        """
        if action == "init":
            return self.raw["init"]["sentence"]
        return self.actions.get(action, {}).get("sentence", "")


#: the shipped designs, ``spec/designs/NAME.json``, in the order messages list them
SHIPPED_DESIGNS = ("ideal", "stripe", "email", "fenced-store")


def _read(name: str) -> dict:
    return json.loads(resources.files(__package__).joinpath(name).read_text("utf-8"))


def _lifecycle(name: str, raw: Mapping) -> Lifecycle:
    edges = tuple(Edge(e["from"], e["to"], e["event"], e["meaning"]) for e in raw["edges"])
    return Lifecycle(
        name, raw["meaning"], raw["initial"], dict(raw["states"]), tuple(raw["terminal"]), edges
    )


@lru_cache(maxsize=1)
def protocol() -> Protocol:
    """The parsed `spec/protocol.json` (cached; treat as read-only)."""
    raw = _read("protocol.json")
    knobs = {
        name: Knob(
            name,
            k["meaning"],
            dict(k["options"]),
            {p: k[p] for p in ("naive", "seed", "recommended")},
            k.get("implied"),
            dict(k.get("not_searched", {})),
        )
        for name, k in raw["knobs"].items()
    }
    return Protocol(
        proposal=_lifecycle("proposal", raw["lifecycles"]["proposal"]),
        record=_lifecycle("record", raw["lifecycles"]["record"]),
        properties=raw["properties"],
        actors=raw["actors"],
        actions=raw["actions"],
        faults=raw["faults"],
        knobs=knobs,
        assumptions=raw["assumptions"],
        raw=raw,
    )


@lru_cache(maxsize=1)
def instances() -> dict:
    """The parsed `spec/instances.json` (cached; treat as read-only)."""
    return _read("instances.json")


@lru_cache(maxsize=1)
def environments() -> dict:
    """The parsed `spec/environments.json` (cached; treat as read-only)."""
    return _read("environments.json")


def spec_graph() -> nx.DiGraph:
    """Both lifecycles in one DiGraph; nodes are `(lifecycle, state)` pairs."""
    import networkx as nx

    g = nx.DiGraph()
    for life in (protocol().proposal, protocol().record):
        g.update(nx.relabel_nodes(life.graph(), lambda s, n=life.name: (n, s)))
    return g
