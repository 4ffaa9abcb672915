"""Running a question: every cell judged by the engines (the only design module that runs one).

Every cell is one configuration on one instance, judged by the explicit engine; if the
explicit search hits its state or time limit and the SMT engine is present, the open
invariants are judged by bounded model checking, and the cell says so (engine
`explicit+smt`, scope "up to depth k"). P4 judges, on the system with planner memory
wiped, the properties that hold without wipes (`toolcommit.checker.verify.check.check_adversary`,
the same P4 as `toolcommit check`).

The engine calls sit in one marked section below (`_judge`, `_judge_adversary`): the rest of the
module only merges their verdicts into `Cell`s.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Optional

from toolcommit.checker.engines.base import Limits as EngineLimits
from toolcommit.checker.engines.base import Result, within
from toolcommit.checker.engines.explicit.engine import needs_edges
from toolcommit.checker.engines.portfolio import for_ask
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.checker.verify.check import check_adversary
from toolcommit.model.environment import IDEAL
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import Instance
from toolcommit.model.knobs import Config
from toolcommit.model.properties import prop
from toolcommit.model.scenario import SCENARIO, restrict
from toolcommit.model.semantics import build
from toolcommit.model.system import System

from .changes import compare
from .cores import fork_map
from .grid import Answer, Cell, cell_model, cell_settings, outside
from .question import ADVERSARIES, GRAPH, INVARIANTS, Limits, Question, Variant


def answer(q: Question, progress: Optional[Callable] = None, deadline: float = 0.0) -> Answer:
    """Run every cell of `q` and return the typed grid. Under a profile other than `ideal`
    the question is answered under `ideal` too, and `Answer.changes` says which cells
    differ and why (`toolcommit.checker.design.changes`).

    `progress`, if given, is called as `progress("row / column", info)` while a search runs.
    `deadline` (a `time.monotonic()` instant; 0: none) bounds the whole answer: every run's
    time limits are cut to the time left, and a run cut so is UNKNOWN.
    """
    q = in_profile(q)
    a = Answer(q, _cells(q, progress, deadline))
    if q.env != IDEAL:
        base = replace(q, env=IDEAL, name=q.name.split("@")[0])
        a.changes = compare(a, Answer(base, _cells(base, progress, deadline)))
    return a


def in_profile(q: Question) -> Question:
    """`q` without the columns none of whose cells is a world of its profile (a sweep of
    `provider_fences` under `stripe` keeps only `no`); UsageError if no column is left."""
    cols = tuple(c for c in q.columns if any(not outside(q, r, c) for r in q.rows))
    if not cols:
        why = outside(q, q.rows[0], q.columns[0])
        raise UsageError(
            f"question {q.name}: no cell is a world of environment {q.env} ({why}); "
            "answer it under another --env"
        )
    return q if len(cols) == len(q.columns) else replace(q, columns=cols)


def _cells(q: Question, progress: Optional[Callable], deadline: float = 0.0) -> dict:
    """Every cell judged; `progress` also hears of each cell done (as "k of n cells").

    The first cell is judged here (it loads the shared engine), the others on every core
    this process may use (`cores.fork_map`), each in a forked worker: a cell depends on
    nothing but the question, so the grid is the same in any order. Each run's time limits
    are cut to what is left before `deadline` (0: none) when it starts. Within a worker a
    search reports no progress; the cells done are still counted."""
    pairs = [(r, c) for r in q.rows for c in q.columns]
    out, n = {}, len(pairs)
    first = [run_cell(_within(q, deadline), *pairs[0], progress)] if pairs else []
    for (r, c), cell in zip(pairs, itertools.chain(first, _map_cells(q, pairs[1:], deadline))):
        out[(r.name, c.name)] = cell
        if progress:
            progress(
                f"{q.name}: {len(out)} of {n} cells",
                {"states": cell.states, "depth": 0, "seconds": 0.0},
            )
    return out


def _within(q: Question, deadline: float) -> Question:
    """`q` with each run's time limits (explicit and SMT) cut to the time left before
    `deadline` (0: none); the limits the user set stay as they were marked."""
    if not deadline:
        return q
    cut = lambda t: within(EngineLimits(0, t), deadline).timeout  # noqa: E731
    return replace(
        q,
        limits=replace(
            q.limits, timeout=cut(q.limits.timeout), bmc_timeout=cut(q.limits.bmc_timeout)
        ),
    )


def _map_cells(q: Question, pairs: list, deadline: float = 0.0) -> Iterator[Cell]:
    """`run_cell` of each pair, in order, on every core (`cores.fork_map`)."""
    # each run is bounded by the question's limits; the wait for all of them is too
    per = (q.limits.timeout + q.limits.smt_timeout) * 4
    bound = per * len(pairs) if q.limits.timeout and q.limits.smt_timeout else None
    return fork_map(_run_pair, [(q, r, c, deadline) for r, c in pairs], bound)


def _run_pair(job: tuple) -> Cell:
    q, r, c, deadline = job
    return run_cell(_within(q, deadline), r, c)


def run_cell(q: Question, r: Variant, c: Variant, progress: Optional[Callable] = None) -> Cell:
    """Judge cell (r, c) of `q`: its properties in the question's order; an adversary
    property (P4) re-judges, with its adversary, every property that held without it."""
    s = cell_settings(q, r, c)
    away = outside(q, r, c)
    if away:
        return Cell(
            r.name,
            c.name,
            None,
            None,
            tuple(s["properties"]),
            expect=s["expect"],
            article=s["article"],
            outside=away,
            note=s["note"],
            changed=s["changed"],
        )
    cfg, inst = cell_model(q, r, c)
    cell = Cell(
        r.name,
        c.name,
        cfg,
        inst,
        tuple(s["properties"]),
        expect=s["expect"],
        article=s["article"],
        not_modelled=s["not_modelled"],
        note=s["note"],
        changed=s["changed"],
    )
    built = build(cfg, inst)
    cell.timing = tuple(t["relation"] for t in built.meta.get("timing", ()))
    if cell.not_modelled:
        return cell
    props = cell.properties
    graph = [p for p in props if p in GRAPH]
    adversaries = [p for p in props if p in ADVERSARIES]
    base = list(INVARIANTS) + graph if adversaries else list(props)
    system = restrict(built, q.scenario)
    tick = (lambda info: progress(f"{r.name} / {c.name}", info)) if progress else None
    run = _judge(system, base, q.limits, bool(q.scenario), bool(graph), tick)
    verdicts = list(run.verdicts)
    cell.engine, cell.states, cell.reached = run.engine, run.states, run.reached
    for name in adversaries:
        verdict, engine = _judge_adversary(name, q, cfg, inst, run.verdicts, tick)
        verdicts.append(verdict)
        if engine != cell.engine and engine:
            cell.engine = "explicit+smt"
    order = {p: i for i, p in enumerate(props)}
    cell.verdicts = sorted(
        [v for v in verdicts if v.property in order], key=lambda v: order[v.property]
    )
    return cell


# ===== engine calls ============================================================================
# Everything below runs an engine; nothing above does. The engines are the portfolio's
# (`toolcommit.checker.engines.portfolio.for_ask`): explicit, then bounded SMT for what a
# limit left open, with the scenario required to be reachable.
@dataclass
class Judged:
    """What the engines said about a list of properties on one system."""

    verdicts: list
    engine: str  # "explicit" or "explicit+smt"
    states: int  # states the explicit search reached
    reached: bool  # the scenario (if any) can be completed
    fired: dict  # adversary moves the explicit search fired (fault -> count)


_NO_FALLBACK = (
    "; bounded SMT was not run past the state or time limit you set (give a "
    "depth, --bmc-depth K or limits.bmc_depth, to run it)"
)
_FOLLOWS = "for every interleaving that follows the scenario, "


def _judge(
    system: System,
    props: list,
    limits: Limits,
    scenario: bool,
    graph: bool,
    progress: Optional[Callable],
) -> Judged:
    """Verdicts for `props` on `system`: the portfolio's, in the design questions' words."""
    engine = for_ask(limits.bmc_depth, limits.smt_fallback, EngineLimits(0, limits.smt_timeout))
    tick = (
        (lambda t: progress({"states": t.states, "depth": t.depth, "seconds": t.seconds}))
        if progress
        else None
    )
    r = engine.run(
        system,
        props,
        EngineLimits(limits.max_states, limits.timeout),
        tick,
        require=SCENARIO if scenario else "",
    )
    verdicts = r.verdicts
    if r.engine == "explicit" and scenario and r.stats["reached"]:
        verdicts = [
            replace(v, scope=_FOLLOWS + v.scope) if v.status is Status.HOLDS else v
            for v in verdicts
        ]
    if not r.stats["complete"] and not limits.smt_fallback:
        verdicts = [
            replace(v, reason=v.reason + _NO_FALLBACK)
            if v.status is Status.UNKNOWN and prop(v.property).state_predicate
            else v
            for v in verdicts
        ]
    return Judged(verdicts, r.engine, r.stats["states"], r.stats["reached"], r.coverage)


def _judge_adversary(
    name: str, q: Question, cfg: Config, inst: Instance, base: list, tick
) -> tuple[Verdict, str]:
    """An adversary property (P4) on a cell: the shared check of `toolcommit check`
    (`check_adversary`), judged by `_judge` on the cell's scenario-restricted system with the
    adversary; returns the verdict and the engine label of that run ("" if none ran)."""
    engine = _CellEngine(q, tuple(v.property for v in base), tick)
    verdict = check_adversary(name, cfg, inst, base, engine, EngineLimits())
    return verdict, engine.label


@dataclass
class _CellEngine:
    """The engine interface over `_judge` for one cell: every system it is given is first
    restricted to the question's scenario, and it judges the cell's base properties only."""

    q: Question
    props: tuple
    tick: Optional[Callable]
    name: str = "explicit"
    label: str = ""
    system: Optional[System] = None

    def judges(self, name: str) -> bool:
        return name in self.props

    def run(self, system: System, props, limits=None, progress=None) -> Result:
        self.system = restrict(system, self.q.scenario)
        run = _judge(
            self.system,
            list(props),
            self.q.limits,
            bool(self.q.scenario),
            needs_edges(props),
            self.tick,
        )
        self.label = run.engine
        # the adversary's coverage is counted by the explicit search only
        return Result(
            run.engine, run.verdicts, coverage=run.fired if run.engine == "explicit" else {}
        )
