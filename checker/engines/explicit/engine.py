"""The explicit engine: exhaustive BFS, shortest counterexamples, every kind of property
the reachable graph can judge (state predicates and graph properties).

`Explicit().run(system, props, limits)` compiles the system (`codegen`), explores it
(`explore`), and turns the exploration into verdicts: a state predicate is violated at the
first BFS state breaking it; DEADLOCK at the first state with no move that is not settled;
PROGRESS at the first state from which no settled state is reachable; FULFIL at the first
end state (only faults could still fire) where the intent is not fulfilled. Each counterexample
is the BFS path to that state, concretized (symmetry undone) and replayed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional, Sequence

from toolcommit.checker.engines.base import Limits, Progress, Result, Scope, Tick
from toolcommit.checker.engines.trace import Counterexample, from_actions, verified
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.model.errors import InternalError
from toolcommit.model.properties import prop
from toolcommit.model.system import System

from .codegen import Compiled, compile_system
from .explore import Exploration, StopWhen
from .native import (
    check_limits,
    engine_choice,
    explore_any,
    explore_native,
    find_stuck,
    library,
    quick_try,
    shared_enabled,
)
from .native_vm import Bound
from .native_vm import library as shared_library


@dataclass(frozen=True)
class Explicit:
    """Exhaustive breadth-first search, natively on `jobs` threads where the native engine
    answers (the same states, ids and verdicts for any `jobs`); the edge list (and the graph
    properties) only when a property asked for needs it."""

    name: str = "explicit"
    jobs: int = 1
    quick: bool = True  # 'auto' tries the Python engine first (False: `first_try` did)
    shared: bool = False  # many small searches (ask's cells, design's candidates): the
    #                         shared engine (`native_vm`, compiled once for every model, no
    #                         first try in Python) where it takes the model, unless
    #                         TOOLCOMMIT_ENGINE=python or TOOLCOMMIT_SHARED=0

    def judges(self, name: str) -> bool:
        p = prop(name)
        return p.state_predicate or p.graph

    def explore(
        self,
        system: System,
        limits: Limits = Limits(),
        graph: bool = True,
        progress: Optional[Progress] = None,
        props: Sequence[str] = (),
        require: str = "",
        later: bool = False,
    ) -> tuple[Compiled, Exploration]:
        """The compiled system and its exploration (for callers that read the graph), by
        the native or the Python engine (`native.explore_any`: same result either way).

        With `limits.first`, the search stops once every one of `props` is violated (and
        the witness `require`, if any, reached), when all of them can stop it (`stop_when`).
        With `later`, PROGRESS's backward search waits until a verdict needs it (`judge`).
        """
        return self.explore_compiled(
            compile_system(system), limits, graph, progress, props, require, later
        )

    def explore_compiled(
        self,
        c: Compiled,
        limits: Limits = Limits(),
        graph: bool = True,
        progress: Optional[Progress] = None,
        props: Sequence[str] = (),
        require: str = "",
        later: bool = False,
    ) -> tuple[Compiled, Exploration]:
        """`explore` of a system already compiled."""
        stop = stop_when(c, props, require) if limits.first else None
        if self.shared and shared_enabled() and engine_choice() != "python":
            lib = shared_library(c)[0]  # None: the model's own C, or Python, as below
            if lib is not None:
                check_limits(limits.max_states, limits.timeout)
                return c, explore_native(
                    c,
                    limits.max_states,
                    limits.timeout,
                    graph,
                    _ticks(progress),
                    lib=lib,
                    stop=stop,
                    jobs=self.jobs,
                    later=later,
                )
        return c, explore_any(
            c,
            limits.max_states,
            limits.timeout,
            graph,
            _ticks(progress),
            stop=stop,
            jobs=self.jobs,
            later=later,
            quick=self.quick,
        )

    def run(
        self,
        system: System,
        props: Sequence[str],
        limits: Limits = Limits(),
        progress: Optional[Progress] = None,
    ) -> Result:
        return self.run_compiled(compile_system(system), props, limits, progress)

    def run_compiled(
        self,
        c: Compiled,
        props: Sequence[str],
        limits: Limits = Limits(),
        progress: Optional[Progress] = None,
    ) -> Result:
        """`run` of a system already compiled."""
        return self.result(
            *self.explore_compiled(c, limits, needs_edges(props), progress, props), props
        )

    def first_try(
        self,
        c: Compiled,
        props: Sequence[str],
        limits: Limits = Limits(),
        progress: Optional[Progress] = None,
    ) -> tuple[Optional[Result], Limits]:
        """`run_compiled`'s result where the Python engine answers `c` (chosen by
        TOOLCOMMIT_ENGINE, or 'auto' within its first try, or with no native engine to go
        on); else None and the limits left for the native search, which then must not try
        again (`quick=False`): the first try's seconds are off the timeout."""
        want = engine_choice()
        if want == "native":
            return None, limits
        if want == "python":
            return self.run_compiled(c, props, limits, progress), limits
        stop = stop_when(c, props) if limits.first else None
        ex, timeout = quick_try(
            c, limits.max_states, limits.timeout, needs_edges(props), _ticks(progress), stop
        )
        if ex is not None:
            return self.result(c, ex, props), limits
        left = replace(limits, timeout=timeout)
        if library(c)[0] is None:  # the Python engine goes on, from the start
            return replace(self, quick=False).run_compiled(c, props, left, progress), limits
        return None, left

    def result(self, c: Compiled, ex: Exploration, props: Sequence[str]) -> Result:
        """The verdicts on `props` of an exploration of `c` (one that kept its edges when
        a graph property is among them)."""
        return Result(
            self.name,
            judge(c, ex, props),
            scope_of(ex),
            stats_of(ex),
            ex.fired,
            {w: ex.depth_of(s) for w, s in ex.first_witness.items()},
        )


def needs_edges(props: Sequence[str]) -> bool:
    """Whether a search judging `props` keeps its edges: only where a graph property reads
    them."""
    return any(prop(p).graph for p in props)


def _ticks(progress: Optional[Progress]) -> Optional[Callable[[dict], None]]:
    """The engines' progress counters as `Tick`s for `progress`."""
    if progress is None:
        return None
    return lambda info: progress(Tick("bfs", info["states"], info["depth"], info["seconds"]))


def stop_when(c: Compiled, props: Sequence[str], require: str = "") -> Optional[StopWhen]:
    """What stops the search once every one of `props` is violated, or None when one
    cannot stop it. A state predicate, DEADLOCK (the least deadlocked id: found when that
    state is expanded) and an end predicate (FULFIL, likewise) are settled by the first
    one found; PROGRESS needs the whole graph (a state is stuck only if no settled state
    is reachable from it), and a property this engine does not judge is not settled here.
    """
    stop = StopWhen(witnesses=1 << c.witness_names.index(require) if require else 0)
    for name in props:
        p = prop(name)
        if p.state_predicate and name in c.invariant_names:
            stop = replace(stop, invariants=stop.invariants | 1 << c.invariant_names.index(name))
        elif p.graph and p.reads == "dead_end":
            stop = replace(stop, deadlock=True)
        elif p.end_predicate and name in c.end_names:
            stop = replace(stop, ends=stop.ends | 1 << c.end_names.index(name))
        else:
            return None
    return stop if props else None


def stats_of(ex: Exploration) -> dict:
    return {
        "states": ex.state_count,
        "transitions": ex.transitions,
        "depth": ex.depth,
        "complete": ex.complete,
        "truncated": ex.truncated,
        "seconds": round(ex.seconds, 3),
        "settled": len(ex.settled_ids),
        **({"early": True} if ex.early else {}),
        **({"engine_note": ex.engine_note} if ex.engine_note else {}),
    }


def scope_of(ex: Exploration) -> Scope:
    if ex.early:
        return Scope(
            "early", f"{ex.stop_reason} (at depth {ex.depth}, {ex.state_count} states searched)"
        )
    if not ex.complete:
        return Scope("depth", f"up to depth {ex.depth - 1}")
    return Scope(
        "exhaustive", "exhaustively" + (" (within the fence bound)" if ex.truncated else "")
    )


def judge(c: Compiled, ex: Exploration, props: Sequence[str]) -> list[Verdict]:
    """Verdicts for the state predicates and graph properties among `props`."""
    out = []
    for name in props:
        p = prop(name)
        if p.state_predicate:
            sid = ex.first_violation.get(name)
        elif p.graph:
            if p.reads == "no_way_to_settle":
                find_stuck(ex)
            sid = (
                ex.first_bad_end.get(name)
                if p.end_predicate
                else {"dead_end": ex.deadlock, "no_way_to_settle": ex.stuck}[p.reads]
            )
        else:
            continue
        if sid is not None:
            cx = concretize(c, ex, sid, name, p.stuck)
            out.append(Verdict(name, Status.VIOLATED, counterexample=cx))
        elif not ex.complete:
            out.append(
                Verdict(
                    name,
                    Status.UNKNOWN,
                    reason=ex.stop_reason + f"; no violation up to depth {ex.depth - 1}",
                )
            )
        elif p.graph and ex.truncated:
            out.append(
                Verdict(
                    name, Status.UNKNOWN, reason=cut_reason(c, ex), extra={"cut": "fence bound"}
                )
            )
        else:
            out.append(Verdict(name, Status.HOLDS, scope_of(ex).text))
    return out


def cut_reason(c: Compiled, ex: Exploration) -> str:
    """Why a graph property is UNKNOWN on a complete search the fence bound cut: what lies
    past the bound (a run that never settles, say) is not in the graph it judged."""
    bound = c.system.meta["instance"].max_fence
    return (
        f"the fence bound (max_fence={bound}) cut {ex.truncated} state(s): a run past it, "
        f"such as one that never settles, is not in the graph; raise max_fence (--bounds "
        f"max_fence={bound + 1}) to see further"
    )


def concretize(
    c: Compiled, ex: Exploration, sid: int, prop_name: str, note: str = "", engine: str = "explicit"
) -> Counterexample:
    """The concrete, replayed counterexample for the BFS path to state `sid`.

    Stored states are orbit representatives (`Compiled.canon`, exact): the concrete path
    follows, at each step, the first action whose successor lies in the stored state's
    orbit, which always exists because symmetries map transitions to transitions.
    """
    system = c.system
    state = c.pack(system.init)
    actions = []
    lib = getattr(ex, "lib", None)
    shared = lib.successors if isinstance(lib, Bound) else None  # no Python functions needed
    for _, target in ex.path(sid)[1:]:
        moves = shared(c, state) if shared else c.successors(state)[0]
        hit = next(((a, t) for a, t in moves if c.canon(t) == target), None)
        if hit is None:
            raise InternalError(f"BFS path to a {prop_name} violation does not concretize")
        actions.append(system.actions[hit[0]])
        state = hit[1]
    return verified(system, from_actions(system, actions, prop_name, engine, note))
