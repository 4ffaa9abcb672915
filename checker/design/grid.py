"""The grid of a question: each cell's merged settings, its model, and the typed results.

A cell's settings are the question's, then the row's, the column's and the row's
`cells[column]`, later ones winning (`cell_settings`); `cell_model` turns them into a
configuration and an instance, `cell_system` into the (scenario-restricted) system the
engines judge. `Cell` and `Answer` are the typed grid that `toolcommit.checker.design.run`
fills and `toolcommit.checker.design.explain` and the renderers read.

Pure: no engine runs here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping, Optional

from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.model.environment import configure, instance_in, profile
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import Instance, proposal
from toolcommit.model.instance import instance as named_instance
from toolcommit.model.knobs import Config, preset
from toolcommit.model.scenario import restrict
from toolcommit.model.semantics import build
from toolcommit.model.system import System
from toolcommit.model.values import ENV_FAULTS
from toolcommit.spec import protocol

if TYPE_CHECKING:  # the question types import this module to cross-check cells
    from .question import Question, Variant


def cell_settings(q: "Question", r: "Variant", c: "Variant") -> dict:
    """The merged settings of cell (r, c): question (with its `env_set` for the question's
    environment), row, column, row.cells[column]."""
    layers = [r, c] + ([r.cells[c.name]] if c.name in r.cells else [])
    out = {
        "set": {**q.set, **q.env_set.get(q.env, {})},
        "instance": q.instance,
        "properties": q.properties,
        "expect": "",
        "article": "",
        "not_modelled": "",
        "note": "",
        "changed": {},
    }
    for v in layers:
        out["set"].update(v.set)
        for k in ("instance", "properties"):
            if getattr(v, k) is not None:
                out[k] = getattr(v, k)
        for k in ("expect", "article", "not_modelled", "note"):
            if getattr(v, k):
                out[k] = getattr(v, k)
    if c.name in r.cells:
        out["changed"] = dict(r.cells[c.name].set)
    return out


def _instance(raw, qname: str) -> Instance:
    """A named instance, or an inline one (already validated by the schema)."""
    if isinstance(raw, str):
        return named_instance(raw)
    faults = {f: int(raw.get("faults", {}).get(f, 0)) for f in protocol().faults}
    return Instance(
        raw.get("name", qname),
        raw.get("meaning", f"the {qname} question's instance"),
        tuple(proposal(p) for p in raw["proposals"]),
        raw.get("workers", 1),
        raw.get("max_fence", 3),
        faults,
        dict(raw.get("assumptions", {})),
    )


def cell_model(q: "Question", r: "Variant", c: "Variant") -> tuple[Config, Instance]:
    """The configuration and instance of cell (r, c).

    An instance that fixes an assumption (a failure class such as provider_non_idempotent)
    must not contradict the cell's explicit setting of it: `UsageError` otherwise.
    """
    s = cell_settings(q, r, c)
    inst = _instance(s["instance"], q.name)
    for a, val in inst.assumptions.items():
        if a in s["set"] and s["set"][a] != val:
            raise UsageError(
                f"instance {inst.name} fixes {a}={val}, but the cell sets "
                f"{a}={s['set'][a]}; use another instance or drop the setting"
            )
    budgets = {k: v for k, v in s["set"].items() if k in ENV_FAULTS}
    settings = {k: v for k, v in s["set"].items() if k not in ENV_FAULTS}
    inst = instance_in(inst, q.env).with_bounds(budgets)
    cfg = configure(preset(q.preset), q.env).with_knobs({**settings, **inst.assumptions})
    return cfg, inst


def outside(q: "Question", r: "Variant", c: "Variant") -> str:
    """Why cell (r, c) is not a world of the question's profile: the settings it assumes
    (its own, or its instance's) that the profile sets otherwise; "" if none.

    Examples: under `stripe` (no fences) a column that assumes `provider_fences=yes` is not
    Stripe; under `ideal`, which sets nothing, every cell is in.
    """
    p = profile(q.env)
    fixed = {**p.assumptions, **p.budgets}
    s = cell_settings(q, r, c)
    own = {**s["set"], **_instance(s["instance"], q.name).assumptions}
    clash = [f"{k}={v}" for k, v in own.items() if k in fixed and fixed[k] != v]
    if not clash:
        return ""
    theirs = ", ".join(f"{k}={fixed[k]}" for k in own if k in fixed and fixed[k] != own[k])
    return f"not in {q.env}: it assumes {', '.join(clash)}; {q.env} has {theirs}"


def cell_system(q: "Question", row: str, column: str, wipe: bool = False) -> System:
    """The (scenario-restricted) system of a cell, as the engines saw it; for replays."""
    r = next(v for v in q.rows if v.name == row)
    c = next(v for v in q.columns if v.name == column)
    cfg, inst = cell_model(q, r, c)
    return restrict(build(cfg, inst, wipe=wipe), q.scenario)


def slug(name: str) -> str:
    """A file-name form of a row or column name: `idem- comp+` -> `idem-no_comp-yes`.

    Examples
    --------
    >>> slug("idem- comp+ read+")
    'idem-no_comp-yes_read-yes'
    """
    s = re.sub(r"(\w)\+", r"\1-yes", name)
    s = re.sub(r"(\w)-(?=\s|$)", r"\1-no", s)
    s = re.sub(r"\s+", "_", s.strip())
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", s).strip("-") or "x"


# ----- the typed grid -------------------------------------------------------------------------
@dataclass(eq=False)
class Cell:
    """One configuration on one instance, and what the engines said about it."""

    row: str
    column: str
    config: Optional[Config]
    instance: Optional[Instance]
    properties: tuple
    verdicts: list = field(default_factory=list)
    engine: str = ""
    states: int = 0
    expect: str = ""
    article: str = ""
    not_modelled: str = ""
    outside: str = ""  # not a world of the question's profile (`outside`)
    note: str = ""
    changed: Mapping[str, str] = field(default_factory=dict)  # the row-cell's own settings
    reached: bool = True
    timing: tuple = ()  # the timing orders its model assumes (each one's relation)

    @property
    def stem(self) -> str:
        return f"{slug(self.row)}__{slug(self.column)}"

    @property
    def judged(self) -> bool:
        return not self.not_modelled and not self.outside

    @property
    def status(self) -> Optional[Status]:
        """VIOLATED if any verdict is, else UNKNOWN if any is, else HOLDS; None if not judged."""
        if not self.judged:
            return None
        statuses = {v.status for v in self.verdicts}
        for s in (Status.VIOLATED, Status.UNKNOWN):
            if s in statuses:
                return s
        return Status.HOLDS

    @property
    def violated(self) -> list:
        return [v for v in self.verdicts if v.status is Status.VIOLATED]

    @property
    def headline(self) -> Optional[Verdict]:
        """The first violated verdict in the question's property order (its cx is stored)."""
        return self.violated[0] if self.violated else None

    @property
    def agrees(self) -> Optional[bool]:
        """Whether the engines' HOLDS or VIOLATED matches the claim (None: no claim or UNKNOWN)."""
        if not self.expect or self.status not in (Status.HOLDS, Status.VIOLATED):
            return None
        return self.status.value == self.expect


@dataclass
class Answer:
    """A question and its judged cells, keyed (row name, column name)."""

    question: "Question"
    cells: dict
    changes: Optional[tuple] = None  # under a profile: the cells that differ from ideal

    def cell(self, row: str, column: str) -> Cell:
        return self.cells[(row, column)]

    @property
    def status(self) -> Status:
        """UNKNOWN if any judged cell is unknown, else HOLDS (the question was answered)."""
        if any(c.status is Status.UNKNOWN for c in self.cells.values()):
            return Status.UNKNOWN
        return Status.HOLDS

    def violated_cells(self) -> list:
        """The VIOLATED cells, row-major in the question's order."""
        q = self.question
        return [
            self.cells[(r.name, c.name)]
            for r in q.rows
            for c in q.columns
            if self.cells[(r.name, c.name)].status is Status.VIOLATED
        ]
