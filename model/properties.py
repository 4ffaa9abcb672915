"""The property table: every property once, with its kind, meaning, witness and reading.

Engines, renderers, `prove`, `ask` and the docs read this table; no other module branches
on a property's name. The data lives in `spec/protocol.json` (`properties`); this module
gives it types and the few readings that need the model's variable families.

Kinds
-----
invariant : a predicate every reachable state must satisfy (I1, I1net, P1).
monitor   : a transition property, kept as a sticky flag variable (`flag`) that the step
            breaking it sets; judged like an invariant over that flag (P2, P3, FENCE, LEGAL).
graph     : judged on the reachable graph (DEADLOCK, PROGRESS, and FULFIL at the end
            states: where only faults could still fire); `stuck` explains the last state
            of a counterexample.
adversary : every property that holds still holds with an adversary added to the model
            (P4: planner memory wiped at any time).
hyper     : compares several models (P5: every model personality reaches the same outcomes).

Examples
--------
>>> [p.name for p in table() if p.state_predicate]
['I1', 'I1net', 'P1', 'P2', 'P3', 'OWN', 'FENCE', 'LEGAL']
>>> prop("P2").flag, prop("DEADLOCK").kind
('bad.P2', 'graph')
>>> outcomes(), headline().name
(('I1', 'FULFIL', 'I1net', 'P1', 'P3', 'OWN'), 'I1')
>>> names(["P9"])
Traceback (most recent call last):
...
toolcommit.model.errors.UsageError: unknown property 'P9'; valid properties: I1, FULFIL, VISIBLE, ALO, I1net, P1, P2, P3, OWN, P4, P5, FENCE, LEGAL, DEADLOCK, PROGRESS
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Mapping, Optional

from toolcommit.spec import protocol

from .errors import UsageError

KINDS = ("invariant", "monitor", "graph", "adversary", "hyper")
# what an end-state predicate reads: FULFIL, VISIBLE (at-most-once), ALO (at-least-once)
END_READS = ("unfulfilled_end", "invisible_end", "unapplied_end")


@dataclass(frozen=True)
class Property:
    """One row of the table (see the module docstring for the kinds)."""

    name: str
    kind: str
    meaning: str
    witness: str
    flag: str = ""  # monitor: the sticky variable the breaking step sets
    reads: str = ""  # what a violation reads: "effects" (counted per key), or for a
    #                         graph property "dead_end" / "no_way_to_settle" or one of END_READS
    stuck: str = ""  # graph: what is wrong with a counterexample's last state
    adversary: Optional[Mapping[str, str]] = None  # adversary: its action, name, and
    #                                                 how a violation under it is phrased
    outcome: bool = False  # judges what the world sees (effects, the user's cancel,
    #                         fulfilment), not the mechanism (lifecycle edges, fences)
    headline: bool = False  # the invariant the tool exists for (I1)
    on_request: bool = False  # judged only when asked for (a guarantee's weaker reading)

    @property
    def state_predicate(self) -> bool:
        """Judged state by state (every engine can): invariants and monitors."""
        return self.kind in ("invariant", "monitor")

    @property
    def graph(self) -> bool:
        return self.kind == "graph"

    @property
    def end_predicate(self) -> bool:
        """A graph property judged at every end state (FULFIL, VISIBLE, ALO)."""
        return self.kind == "graph" and self.reads in END_READS


@lru_cache(maxsize=1)
def _rows() -> tuple[Property, ...]:
    rows = []
    for name, raw in protocol().properties.items():
        if raw["kind"] not in KINDS:
            raise ValueError(
                f"spec/protocol.json: property {name} has unknown kind {raw['kind']!r}"
            )
        rows.append(
            Property(
                name,
                raw["kind"],
                raw["meaning"],
                raw["witness"],
                raw.get("flag", ""),
                raw.get("reads", ""),
                raw.get("stuck", ""),
                raw.get("adversary"),
                bool(raw.get("outcome")),
                bool(raw.get("headline")),
                bool(raw.get("on_request")),
            )
        )
    return tuple(rows)


def table() -> tuple[Property, ...]:
    """Every property, in spec order."""
    return _rows()


def prop(name: str) -> Property:
    """The row of `name`; KeyError if there is none."""
    for p in _rows():
        if p.name == name:
            return p
    raise KeyError(name)


def all_names() -> tuple[str, ...]:
    return tuple(p.name for p in _rows())


def default_names() -> tuple[str, ...]:
    """What a check judges when asked for nothing: every property but those judged only
    on request (VISIBLE, ALO: a weaker guarantee's readings)."""
    return tuple(p.name for p in _rows() if not p.on_request)


def of_kind(*kinds: str) -> tuple[str, ...]:
    """Names of the properties of the given kinds, in spec order."""
    return tuple(p.name for p in _rows() if p.kind in kinds)


def outcomes() -> tuple[str, ...]:
    """The properties that judge the outcome the world sees, in spec order."""
    return tuple(p.name for p in _rows() if p.outcome)


def headline() -> Property:
    """The one headline invariant (I1)."""
    (row,) = [p for p in _rows() if p.headline]
    return row


def state_predicates() -> tuple[str, ...]:
    """Invariants and monitors: what BMC, induction and simulation can judge."""
    return of_kind("invariant", "monitor")


def monitors() -> tuple[Property, ...]:
    return tuple(p for p in _rows() if p.kind == "monitor")


def names(
    requested: Optional[Iterable[str]] = None,
    allowed: Optional[Iterable[str]] = None,
    what: str = "properties",
) -> tuple[str, ...]:
    """`requested` (default: every allowed one, or every default one), each checked to be an
    allowed name.

    Raises UsageError naming the first unknown name and the valid ones.
    """
    default = tuple(allowed) if allowed is not None else default_names()
    allowed = tuple(allowed) if allowed is not None else all_names()
    out = tuple(dict.fromkeys(requested)) if requested else default
    bad = [n for n in out if n not in allowed]
    if bad:
        raise UsageError(f"unknown property {bad[0]!r}; valid {what}: {', '.join(allowed)}")
    return out


def effects(families: Mapping[str, str], state: Mapping[str, int]) -> tuple[dict, int]:
    """({key: applied count} for keys with an effect, compensated total) in `state`.

    `families` maps each variable name to its family (`applied`, `comp`, ...), as the
    model declares them; how an effect is read is written here once.
    """
    applied = {
        n.split(".", 1)[1]: v for n, v in state.items() if families.get(n) == "applied" and v
    }
    comp = sum(v for n, v in state.items() if families.get(n) == "comp")
    return applied, comp
