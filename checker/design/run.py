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

from dataclasses import dataclass, replace
from typing import Callable, Optional

from toolcommit.model.expr import not_
from toolcommit.model.instance import Instance
from toolcommit.model.knobs import Config
from toolcommit.model.scenario import SCENARIO, restrict
from toolcommit.model.semantics import build
from toolcommit.model.system import System

from toolcommit.checker.verify.check import check_adversary
from toolcommit.checker.engines.base import Limits as EngineLimits, Result
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.engine import judge
from toolcommit.checker.engines.explicit.explore import explore
from toolcommit.checker.engines.verdict import Status, Verdict

from .grid import Answer, Cell, cell_model, cell_settings
from .schema import ADVERSARIES, GRAPH, INVARIANTS, Limits, Question, Variant


def answer(q: Question, progress: Optional[Callable] = None) -> Answer:
    """Run every cell of `q` and return the typed grid.

    `progress`, if given, is called as `progress("row / column", info)` while a search runs.
    """
    cells = {}
    for r in q.rows:
        for c in q.columns:
            cells[(r.name, c.name)] = run_cell(q, r, c, progress)
    return Answer(q, cells)


def run_cell(q: Question, r: Variant, c: Variant, progress: Optional[Callable] = None) -> Cell:
    """Judge cell (r, c) of `q`: its properties in the question's order; an adversary
    property (P4) re-judges, with its adversary, every property that held without it."""
    s = cell_settings(q, r, c)
    cfg, inst = cell_model(q, r, c)
    cell = Cell(r.name, c.name, cfg, inst, tuple(s["properties"]), expect=s["expect"],
                article=s["article"], not_modelled=s["not_modelled"], note=s["note"],
                changed=s["changed"])
    if cell.not_modelled:
        return cell
    props = cell.properties
    graph = [p for p in props if p in GRAPH]
    adversaries = [p for p in props if p in ADVERSARIES]
    base = list(INVARIANTS) + graph if adversaries else list(props)
    system = restrict(build(cfg, inst), q.scenario)
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
    cell.verdicts = sorted([v for v in verdicts if v.property in order], key=lambda v: order[v.property])
    return cell


# ===== engine calls ============================================================================
# Everything below runs an engine; nothing above does. `_judge` is "explicit, then SMT for
# what it leaves open, with the scenario's reachability probed" (re-point it at the engine
# portfolio once that can probe a scenario); `_judge_adversary` hands `_judge`, as an engine,
# to the adversary check `toolcommit check` uses.
@dataclass
class Judged:
    """What the engines said about a list of properties on one system."""

    verdicts: list
    engine: str          # "explicit" or "explicit+smt"
    states: int          # states the explicit search reached
    reached: bool        # the scenario (if any) can be completed
    fired: dict          # adversary moves the explicit search fired (fault -> count)


_NO_FALLBACK = ("; bounded SMT was not run past the state or time limit you set (give a "
                "depth, --bmc-depth K or limits.bmc_depth, to run it)")


def _bmc():
    try:
        from toolcommit.checker.engines.smt import bmc
    except ImportError:
        return None
    return bmc if hasattr(bmc, "check") else None


def _judge(system: System, props: list, limits: Limits, scenario: bool, graph: bool,
           progress: Optional[Callable]) -> Judged:
    """Verdicts for `props` on `system`: explicit first, BMC for what it leaves open."""
    c = compile_system(system)
    ex = explore(c, limits.max_states, limits.timeout, graph=graph, progress=progress)
    if ex.complete:
        reached = not scenario or SCENARIO in ex.first_witness
        if not reached:
            why = ("vacuous: the scenario cannot be completed under this configuration "
                   f"(no reachable state completes it; {ex.state_count} states searched)")
            return Judged([Verdict(p, Status.UNKNOWN, reason=why) for p in props], "explicit",
                          ex.state_count, False, ex.fired)
        verdicts = judge(c, ex, props)
        if scenario:
            verdicts = [replace(v, scope="for every interleaving that follows the scenario, "
                                + v.scope) if v.status is Status.HOLDS else v for v in verdicts]
        return Judged(verdicts, "explicit", ex.state_count, True, ex.fired)
    judged = judge(c, ex, props)
    if not limits.smt_fallback:
        return Judged([replace(v, reason=v.reason + _NO_FALLBACK) if v.status is Status.UNKNOWN
                       and v.property in INVARIANTS else v for v in judged], "explicit",
                      ex.state_count, True, ex.fired)
    found = {v.property: v for v in judged if v.status is Status.VIOLATED}
    bmc = _bmc()
    open_props = [p for p in props if p not in found and p in INVARIANTS]
    if bmc is None or not open_props:
        return Judged([found.get(p) or Verdict(p, Status.UNKNOWN, reason=ex.stop_reason +
                       "; the SMT engine is not available" if bmc is None else ex.stop_reason)
                       for p in props], "explicit", ex.state_count, True, ex.fired)
    reached = True
    probe = dict(system.invariants)
    if scenario:
        probe["scenario_unreached"] = not_(system.witnesses[SCENARIO])
    sys2 = replace(system, invariants=probe)
    asked = open_props + (["scenario_unreached"] if scenario else [])
    got = {v.property: v for v in bmc.check(sys2, asked, limits.bmc_depth, limits.smt_timeout)}
    if scenario and got["scenario_unreached"].status is not Status.VIOLATED:
        reached = False
    out = []
    for p in props:
        if p in found:
            out.append(found[p])
        elif p in got:
            v = got[p]
            if not reached and v.status is not Status.VIOLATED:
                v = Verdict(p, Status.UNKNOWN, reason=f"the explicit search stopped ({ex.stop_reason}) "
                            f"and no run completing the scenario was found up to depth {limits.bmc_depth}")
            elif v.status is Status.HOLDS:
                v = replace(v, scope=f"up to depth {limits.bmc_depth} (bounded, SMT; the explicit "
                            f"search stopped: {ex.stop_reason})")
            out.append(v)
        else:
            out.append(Verdict(p, Status.UNKNOWN, reason=f"{ex.stop_reason}; the SMT engine judges invariants only"))
    return Judged(out, "explicit+smt", ex.state_count, reached, ex.fired)


def _judge_adversary(name: str, q: Question, cfg: Config, inst: Instance, base: list,
                     tick) -> tuple[Verdict, str]:
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
        run = _judge(self.system, list(props), self.q.limits, bool(self.q.scenario),
                     any(p in GRAPH for p in props), self.tick)
        self.label = run.engine
        # the adversary's coverage is counted by the explicit search only
        return Result(run.engine, run.verdicts, coverage=run.fired if run.engine == "explicit" else {})
