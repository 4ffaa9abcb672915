"""Run the properties of one config over instances and return typed verdicts.

This is the pure orchestration layer between the model and the engines: no printing, no
files. `check_instance` judges the invariants and graph properties on one instance with
the explicit engine, P4 with the memory-wipe adversary, and `check_p5` compares model
personalities. Every counterexample is concretized (symmetry undone), rebuilt through the
interpreter and replayed before it is returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from toolcommit.model.errors import InternalError, UsageError
from toolcommit.model.instance import Instance, instance, proposal
from toolcommit.model.knobs import Config
from toolcommit.model.semantics import build
from toolcommit.model.system import System
from toolcommit.spec import instances, protocol

from toolcommit.checker.engines.explicit.codegen import Compiled, compile_system
from toolcommit.checker.engines.explicit.explore import Exploration, explore
from toolcommit.checker.engines.trace import Counterexample, breaks, from_actions, replay
from toolcommit.checker.engines.verdict import Status, Verdict

ALL = tuple(protocol().properties)   # spec order
INVARIANTS = tuple(p for p in ALL if protocol().properties[p]["kind"] == "invariant")
GRAPH = tuple(p for p in ALL if protocol().properties[p]["kind"] == "graph")


@dataclass
class Limits:
    max_states: int = 0
    timeout: float = 0.0


@dataclass
class InstanceResult:
    """Verdicts for one instance plus the search statistics that back them."""

    instance: Instance
    config: Config
    verdicts: list
    stats: dict = field(default_factory=dict)
    coverage: dict = field(default_factory=dict)
    witnesses: dict = field(default_factory=dict)


def validate_properties(names) -> tuple[str, ...]:
    """`names` (default: all), checked against the property names; UsageError otherwise."""
    names = tuple(names or ALL)
    bad = [n for n in names if n not in ALL]
    if bad:
        raise UsageError(f"unknown property {bad[0]!r}; valid properties: {', '.join(ALL)}")
    return names


def concretize(c: Compiled, ex: Exploration, sid: int, prop: str, note: str = "") -> Counterexample:
    """The concrete, replayed counterexample for the BFS path to state `sid`."""
    path = ex.path(sid)
    system = c.system
    state = c.pack(system.init)
    actions = []
    for _, target in path[1:]:
        for a, t in c.successors(state)[0]:
            if c.canon(t) == target:
                actions.append(system.actions[a])
                state = t
                break
        else:
            raise InternalError("BFS path does not concretize")
    cx = from_actions(system, actions, prop, "explicit", note)
    problem = replay(system, cx)
    if problem is not None or not breaks(system, cx):
        raise InternalError(f"counterexample for {prop} does not replay: {problem or 'no violation'}")
    return cx


def _stats(ex: Exploration) -> dict:
    return {"states": ex.state_count, "transitions": ex.transitions, "depth": ex.depth,
            "complete": ex.complete, "truncated": ex.truncated, "seconds": round(ex.seconds, 3),
            "settled": len(ex.settled_ids)}


def _scope(ex: Exploration) -> str:
    if not ex.complete:
        return f"up to depth {ex.depth - 1}"
    return "exhaustively" + (" (within the fence bound)" if ex.truncated else "")


def judge(c: Compiled, ex: Exploration, props) -> list[Verdict]:
    """Verdicts for invariants and graph properties from one exploration."""
    out = []
    for p in props:
        if p in INVARIANTS:
            sid = ex.first_violation.get(p)
        elif p == "DEADLOCK":
            sid = ex.deadlock
        elif p == "PROGRESS":
            sid = ex.stuck
        else:
            continue
        if sid is not None:
            note = {"DEADLOCK": "nothing can happen in the last state, yet it is not settled",
                    "PROGRESS": "from the last state no settled state is reachable"}.get(p, "")
            out.append(Verdict(p, Status.VIOLATED, counterexample=concretize(c, ex, sid, p, note)))
        elif not ex.complete:
            out.append(Verdict(p, Status.UNKNOWN, reason=ex.stop_reason + f"; no violation up to depth {ex.depth - 1}"))
        else:
            out.append(Verdict(p, Status.HOLDS, _scope(ex)))
    return out


def run_instance(config: Config, inst: Instance, limits: Limits, wipe: bool = False,
                 progress: Optional[Callable] = None, graph: bool = True):
    system = build(config, inst, wipe=wipe)
    c = compile_system(system)
    ex = explore(c, limits.max_states, limits.timeout, graph=graph, progress=progress)
    return c, ex


def check_instance(config: Config, inst: Instance, props=ALL, limits: Limits = Limits(),
                   progress: Optional[Callable] = None) -> InstanceResult:
    """Judge `props` (except P5) on `inst` under `config`."""
    props = validate_properties(props)
    base_props = [p for p in props if p in INVARIANTS + GRAPH]
    if "P4" in props:
        base_props = list(INVARIANTS + GRAPH)
    c, ex = run_instance(config, inst, limits, progress=progress)
    verdicts = judge(c, ex, base_props)
    result = InstanceResult(inst, config, [], _stats(ex), ex.fired,
                            {w: ex.depth_of(s) for w, s in ex.first_witness.items()})
    if "P4" in props:
        verdicts.append(check_p4(config, inst, verdicts, limits, progress))
    result.verdicts = [v for v in verdicts if v.property in props]
    result.verdicts.sort(key=lambda v: ALL.index(v.property))
    return result


def check_p4(config: Config, inst: Instance, base: list, limits: Limits,
             progress: Optional[Callable] = None) -> Verdict:
    """P4: every property that holds on `inst` still holds with memory wiped at any time."""
    held = [v.property for v in base if v.status is Status.HOLDS]
    if not held:
        return Verdict("P4", Status.UNKNOWN, reason="every other property already fails without "
                       "memory wipes, so P4 has nothing to judge on this instance")
    c, ex = run_instance(config, inst, limits, wipe=True, progress=progress)
    for v in judge(c, ex, held):
        if v.status is Status.VIOLATED:
            cx = replace(v.counterexample, property="P4",
                         note=(f"with planner memory wiped, {v.property} breaks: "
                               f"{protocol().properties[v.property]['meaning']}. {v.counterexample.note}").strip())
            return Verdict("P4", Status.VIOLATED, reason=f"through {v.property}", counterexample=cx,
                           extra={"through": v.property})
    if not ex.complete:
        return Verdict("P4", Status.UNKNOWN, reason=ex.stop_reason)
    if not ex.fired.get("wipe"):
        raise InternalError("P4 is vacuous: the wipe adversary never fired")
    return Verdict("P4", Status.HOLDS, _scope(ex),
                   reason="" if len(held) == len(INVARIANTS + GRAPH) else
                   "judged on the properties that hold without wipes: " + ", ".join(held))


def outcome(system: System, state: dict) -> tuple:
    """What a settled state means to the user: effects (gross, net), record and proposal
    decisions, with call ids and key names left out."""
    applied = sum(v for n, v in state.items() if n.startswith("applied."))
    comp = sum(v for n, v in state.items() if n.startswith("comp."))
    recs = sorted(system.var(n).show(v) for n, v in state.items() if n.startswith("rec.") and v)
    props = sorted(system.var(n).show(v) for n, v in state.items()
                   if n.startswith("prop.") and v)
    return (f"effects={applied}", f"net={applied - comp}", "records=" + ",".join(recs),
            "decisions=" + ",".join(props))


def personalities() -> tuple[str, dict]:
    raw = instances()["personalities"]
    return raw["base"], raw["variants"]


def personality_instance(name: str) -> Instance:
    """The P5 base instance with the proposals of personality `name`."""
    base_name, variants = personalities()
    return replace(instance(base_name), name=f"{base_name}/{name}",
                   proposals=tuple(proposal(p) for p in variants[name]))


def check_p5(config: Config, limits: Limits = Limits(), progress=None) -> Verdict:
    """P5: every model personality reaches the same set of settled outcomes."""
    _, variants = personalities()
    seen: dict[str, dict] = {}
    runs = {}
    for name in variants:
        inst = personality_instance(name)
        c, ex = run_instance(config, inst, limits, progress=progress, graph=False)
        if not ex.complete:
            return Verdict("P5", Status.UNKNOWN, reason=f"{name}: {ex.stop_reason}")
        outs: dict = {}
        for sid in ex.settled_ids:
            o = outcome(c.system, c.unpack(ex.states[sid]))
            outs.setdefault(o, sid)
        if not outs:
            raise InternalError(f"P5 is vacuous: personality {name} never settles")
        seen[name], runs[name] = outs, (c, ex)
    names = list(variants)
    ref = names[0]
    for name in names[1:]:
        for a, b in ((name, ref), (ref, name)):
            extra = sorted(set(seen[a]) - set(seen[b]), key=lambda o: runs[a][1].depth_of(seen[a][o]))
            if extra:
                o = extra[0]
                c, ex = runs[a]
                note = (f"personality {a} reaches outcome [{'; '.join(o)}], "
                        f"which personality {b} never reaches")
                cx = concretize(c, ex, seen[a][o], "P5", note)
                return Verdict("P5", Status.VIOLATED, reason=f"{a} vs {b}", counterexample=cx,
                               extra={"personalities": [a, b]})
    return Verdict("P5", Status.HOLDS, "exhaustively",
                   reason=f"{len(names)} personalities, {len(seen[ref])} outcomes each",
                   extra={"outcomes": [list(o) for o in sorted(seen[ref])]})
