"""What an environment profile changed in a question's answer, and why.

An answer under a profile (`toolcommit ask Q --env stripe`) is compared with the same
question under `ideal`, cell by cell. For a cell whose status differs, the profile's settings
that make the difference are found by replaying counterexamples, not by a new search:

- VIOLATED here, HOLDS under ideal: a setting is a cause when the counterexample found here
  no longer runs to its violation with that one setting put back to its ideal value;
- HOLDS here, VIOLATED under ideal: a setting is a cause when the ideal counterexample no
  longer runs to its violation with that one setting added.

When no single setting is a cause, the settings act together (`joint`): every one of them is
listed. Each cause cites the profile's behaviours that set it, with their documents.
Replays only: no engine runs here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from toolcommit.checker.engines.trace import transfers
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.model.environment import Behaviour, profile
from toolcommit.model.properties import prop
from toolcommit.model.scenario import restrict
from toolcommit.model.semantics import build
from toolcommit.model.values import ENV_FAULTS
from toolcommit.spec import protocol

from .grid import Answer, Cell


@dataclass(frozen=True)
class Cause:
    """One setting of the profile (`errors_after=1`) and the behaviours that set it."""

    setting: str
    value: object
    behaviours: tuple[Behaviour, ...]

    def label(self) -> str:
        return f"{self.setting}={self.value}"


@dataclass(frozen=True)
class Change:
    """A cell whose status differs from ideal, and the settings that make the difference."""

    row: str
    column: str
    ideal: Optional[Verdict]  # the ideal cell's headline verdict (None: it held)
    here: Optional[Verdict]  # this environment's headline verdict (None: it held)
    ideal_status: Status
    here_status: Status
    causes: tuple[Cause, ...]
    joint: bool  # no single setting is a cause: they act together


def compare(here: Answer, ideal: Answer) -> tuple[Change, ...]:
    """The cells of `here` (answered under a profile) whose status differs from `ideal` (the
    same question under `ideal`), row-major, each with its causes."""
    q = here.question
    out = []
    for r in q.rows:
        for c in q.columns:
            a, b = here.cell(r.name, c.name), ideal.cell(r.name, c.name)
            if a.judged and a.status is not b.status:
                out.append(_change(here, ideal, a, b))
    return tuple(out)


def _change(here: Answer, ideal: Answer, a: Cell, b: Cell) -> Change:
    diffs = _differences(a, b)
    env = here.question.env
    causes, joint = (), False
    if a.status is Status.VIOLATED and b.status is not Status.UNKNOWN:
        causes, joint = _causes(
            here, a, a.headline, env, {s: v0 for s, (v0, _) in diffs.items()}, diffs
        )
    elif b.status is Status.VIOLATED and a.status is Status.HOLDS:
        causes, joint = _causes(
            ideal, b, b.headline, env, {s: v1 for s, (_, v1) in diffs.items()}, diffs
        )
    return Change(a.row, a.column, b.headline, a.headline, b.status, a.status, causes, joint)


def _differences(a: Cell, b: Cell) -> dict:
    """Setting -> (ideal value, value here), for every assumption and environment budget on
    which the two cells' models differ."""
    out = {}
    for name in protocol().assumptions:
        if b.config.assumptions[name] != a.config.assumptions[name]:
            out[name] = (b.config.assumptions[name], a.config.assumptions[name])
    for f in ENV_FAULTS:
        if b.instance.faults.get(f, 0) != a.instance.faults.get(f, 0):
            out[f] = (b.instance.faults.get(f, 0), a.instance.faults.get(f, 0))
    return out


def _causes(answer: Answer, cell: Cell, verdict: Verdict, env: str, flip: dict, diffs: dict):
    """The settings of `flip` whose one change stops `verdict`'s counterexample (found on
    `cell` of `answer`) from running to its violation; all of them, jointly, if none does.
    Each cites the behaviours of profile `env` that set it."""
    cx, inner = verdict.counterexample, verdict.extra.get("through", verdict.property)
    wipe = prop(verdict.property).kind == "adversary"
    needed = [
        s for s, v in flip.items() if not transfers(_system(answer, cell, s, v, wipe), cx, inner)
    ]
    names = needed or list(flip)
    causes = tuple(Cause(s, diffs[s][1], _behaviours(env, s)) for s in names)
    return causes, not needed and bool(flip)


def _system(answer: Answer, cell: Cell, setting: str, value, wipe: bool):
    """The cell's system with one setting changed."""
    cfg, inst = cell.config, cell.instance
    if setting in ENV_FAULTS:
        inst = inst.with_bounds({setting: value})
    else:
        cfg = cfg.with_knobs({setting: value})
    return restrict(build(cfg, inst, wipe=wipe), answer.question.scenario)


def _behaviours(env: str, setting: str) -> tuple[Behaviour, ...]:
    return tuple(b for b in profile(env).behaviours if setting in b.sets)
