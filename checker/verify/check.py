"""Judge the properties of one config on one instance, by kind, with any engine.

This is the pure layer between the property table (`toolcommit.model.properties`) and the
engines: no printing, no files. State predicates and graph properties go to the engine as
they are; an *adversary* property (P4) re-runs the engine on the model with its adversary
added (`build(..., wipe=True)`), re-judging what held without it; a *hyper* property (P5)
compares the settled outcomes of several models (`toolcommit.checker.verify.hyper`). Every
counterexample has been replayed by the engine that found it.

With the explicit engine on several threads (`--jobs`), an adversary's search runs beside
the main one rather than after it (`beside`): it is explored before what it re-judges is
known, keeping its edges when a graph property might be re-judged (PROGRESS's backward
search left until one is), and judged once the main search is done: the same verdicts and
counterexamples as one after the other, since a search does not depend on what is asked of
it (except an early stop, `--first`, which keeps them in turn).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

from toolcommit.checker.engines.base import Engine, Limits, Progress
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.engine import Explicit, needs_edges
from toolcommit.checker.engines.trace import assumes
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.checker.verify.beside import beside
from toolcommit.model.errors import InternalError
from toolcommit.model.instance import Instance
from toolcommit.model.knobs import Config
from toolcommit.model.properties import all_names, names, of_kind, prop
from toolcommit.model.semantics import build


@dataclass
class InstanceResult:
    """Verdicts for one instance plus the search statistics that back them."""

    instance: Instance
    config: Config
    verdicts: list
    stats: dict = field(default_factory=dict)
    coverage: dict = field(default_factory=dict)
    witnesses: dict = field(default_factory=dict)
    engine: str = "explicit"
    assumes: tuple = ()  # the timing orders the model used (PROTOCOL.md, Time)


def run_instance(
    config: Config,
    inst: Instance,
    limits: Limits = Limits(),
    wipe: bool = False,
    progress: Optional[Progress] = None,
    graph: bool = True,
):
    """The compiled system and the explicit engine's exploration of `inst` under `config`."""
    return Explicit().explore(build(config, inst, wipe=wipe), limits, graph, progress)


def check_instance(
    config: Config,
    inst: Instance,
    props=None,
    limits: Limits = Limits(),
    progress: Optional[Progress] = None,
    engine: Engine = Explicit(),
) -> InstanceResult:
    """Judge `props` (default: all but the hyper ones) on `inst` under `config` with `engine`."""
    props = names(props)
    adversaries = [p for p in props if prop(p).kind == "adversary"]
    direct = [p for p in props if engine.judges(p)]
    base = [p for p in names(None) if engine.judges(p)] if adversaries else direct
    system = build(config, inst)
    if adversaries and side_by_side(engine, limits):
        result, explored = _beside(
            system, config, inst, base, adversaries, engine, limits, progress
        )
    else:
        result, explored = engine.run(system, base, limits, progress), [None] * len(adversaries)
    verdicts = list(result.verdicts)
    for p, done in zip(adversaries, explored):
        verdicts.append(
            check_adversary(p, config, inst, verdicts, engine, limits, labelled(progress, p), done)
        )
    order = all_names()
    chosen = sorted(
        (v for v in verdicts if v.property in props), key=lambda v: order.index(v.property)
    )
    return InstanceResult(
        inst,
        config,
        chosen,
        result.stats,
        result.coverage,
        result.witnesses,
        result.engine,
        assumes(system),
    )


def side_by_side(engine: Engine, limits: Limits) -> bool:
    """Whether an instance's searches may run side by side: the explicit engine with
    threads to share, and no early stop (which depends on what each search is asked)."""
    return isinstance(engine, Explicit) and engine.jobs > 1 and not limits.first


def _beside(
    system,
    config: Config,
    inst: Instance,
    base: list,
    adversaries: list,
    engine: Explicit,
    limits: Limits,
    progress: Optional[Progress],
):
    """The main search's result and each adversary's (compiled, exploration; None: it is
    searched after, by `check_adversary`). Where the native engine searches the main model
    they are searched at once, the threads shared out (the main search takes any left
    over); where the Python engine answers (`first_try`), two searches at once would only
    take turns on the GIL, so the adversaries' come after it."""
    c = compile_system(system)
    done, left = engine.first_try(c, base, limits, progress)
    if done is not None:
        return done, [None] * len(adversaries)
    share = max(1, engine.jobs // (1 + len(adversaries)))
    main = replace(engine, jobs=max(1, engine.jobs - share * len(adversaries)), quick=False)
    side = replace(engine, jobs=share, quick=False)  # its model is the larger one
    graph = needs_edges(base)
    calls = [lambda tick: main.run_compiled(c, base, left, tick)]
    calls += [
        lambda tick, p=p: side.explore(
            build(config, inst, wipe=True), left, graph, labelled(tick, p), later=True
        )
        for p in adversaries
    ]
    result, *explored = beside(calls, progress)
    return result, explored


def labelled(progress: Optional[Progress], name: str) -> Optional[Progress]:
    """`progress` with its ticks' phase named `name` (the search of property `name`)."""
    return None if progress is None else (lambda t: progress(replace(t, phase=name)))


def check_adversary(
    name: str,
    config: Config,
    inst: Instance,
    base: list,
    engine: Engine,
    limits: Limits,
    progress: Optional[Progress] = None,
    explored: Optional[tuple] = None,
) -> Verdict:
    """An adversary property: every property that holds on `inst` still holds with the
    adversary added; judged through the first one that then breaks. `explored`: the
    adversary's model already searched (compiled, exploration; see `_beside`)."""
    adv = prop(name).adversary
    held = [v.property for v in base if v.status is Status.HOLDS]
    if not held:
        unknown = [v for v in base if v.status is Status.UNKNOWN]
        if unknown:
            names_ = ", ".join(v.property for v in unknown)
            return Verdict(
                name,
                Status.UNKNOWN,
                reason=f"the properties {name} re-checks are "
                f"unknown here ({names_}: {unknown[0].reason}), so it has nothing to judge",
            )
        return Verdict(
            name,
            Status.UNKNOWN,
            reason=f"every other property already fails without "
            f"{adv['name']}, so {name} has nothing to judge on this instance",
        )
    result = (
        engine.run(build(config, inst, wipe=True), held, limits, progress)
        if explored is None
        else engine.result(*explored, held)
    )
    for v in result.verdicts:
        if v.status is Status.VIOLATED:
            meaning = prop(v.property).meaning
            cx = replace(
                v.counterexample,
                property=name,
                note=(
                    f"{adv['under']}, {v.property} breaks: {meaning}. {v.counterexample.note}"
                ).strip(),
            )
            return Verdict(
                name,
                Status.VIOLATED,
                reason=f"through {v.property}",
                counterexample=cx,
                extra={"through": v.property},
            )
    unknown = [v for v in result.verdicts if v.status is Status.UNKNOWN]
    if unknown:
        return Verdict(name, Status.UNKNOWN, reason=unknown[0].reason)
    if result.coverage and not result.coverage.get(adv["action"]):
        raise InternalError(f"{name} is vacuous: the {adv['action']} adversary never fired")
    every = [p for p in names(None) if engine.judges(p)]
    return Verdict(
        name,
        Status.HOLDS,
        result.verdicts[0].scope,
        reason=""
        if len(held) == len(every)
        else f"judged on the properties that hold without {adv['short']}: " + ", ".join(held),
    )


def hyper_properties() -> tuple[str, ...]:
    return of_kind("hyper")
