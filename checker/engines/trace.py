"""Counterexamples as data, and their replay through the model's own semantics.

A `Counterexample` is the property, the config and instance it was found on, and a list of
`Step`s: the action taken (its spec name and parameters, which are also its sentence's
parameters) and the full state after it. It is self-contained: it carries the variable
declarations that name its values, the instance's keys and workers and whether the
memory-wipe adversary ran, so renderers (text, ITF JSON, Mermaid, Python) read it alone
and never rebuild the model. `replay` re-executes the steps with
the expression interpreter (`toolcommit.model.expr.evaluate`), independent of the compiled
code or the SMT encoding that found them: a counterexample that does not replay is an
`InternalError`, never a report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from toolcommit.model.errors import InternalError
from toolcommit.model.expr import evaluate
from toolcommit.model.knobs import bearing
from toolcommit.model.system import Action, System, VarDecl


@dataclass(frozen=True)
class Step:
    """One step: `action` is the spec action name ("init" for step 0)."""

    action: str
    params: Mapping[str, str]
    state: Mapping[str, int]
    fault: bool = False

    def label(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.action}({inner})"


@dataclass(frozen=True)
class KeyInfo:
    """A semantic key of the instance: its name (`k0`), its identity (`call/t1`) and the
    call ids that map to it."""

    name: str
    ident: str
    callers: tuple[str, ...]


@dataclass(frozen=True)
class Counterexample:
    """A finite trace breaking `property`; `note` explains graph properties (DEADLOCK,
    PROGRESS: the last state is stuck) and P4/P5 (which underlying property broke).

    `variables` are the model's declarations in model order (every step's state has exactly
    these names), `keys` and `workers` the instance's actors, `wipe` whether the trace ran
    with P4's memory-wipe adversary: what a renderer needs besides the steps.
    """

    property: str
    config: str
    instance: str
    bounds: Mapping[str, int]
    knobs: Mapping[str, str]
    assumptions: Mapping[str, str]
    steps: tuple[Step, ...]
    variables: tuple[VarDecl, ...]
    keys: tuple[KeyInfo, ...] = ()
    workers: tuple[str, ...] = ()
    wipe: bool = False
    engine: str = "explicit"
    note: str = ""
    meta: Mapping = field(default_factory=dict)
    assumes: tuple[str, ...] = ()  # the timing orders the model used (its ASSUME)

    @property
    def length(self) -> int:
        return len(self.steps) - 1

    def var(self, name: str) -> VarDecl:
        """The declaration of variable `name` (KeyError if the trace has none)."""
        by = self.__dict__.get("_vars")
        if by is None:
            by = {v.name: v for v in self.variables}
            object.__setattr__(self, "_vars", by)
        return by[name]


def context(system: System) -> dict:
    """The facts about `system` a counterexample carries, as `Counterexample` keywords:
    `variables`, `keys`, `workers` and `wipe`."""
    meta = system.meta
    keys = tuple(KeyInfo(k["name"], k["ident"], tuple(k["callers"])) for k in meta.get("keys", ()))
    return {
        "variables": tuple(system.variables),
        "keys": keys,
        "workers": tuple(meta.get("workers", ())),
        "wipe": bool(meta.get("wipe")),
    }


def assumes(system: System) -> tuple[str, ...]:
    """The timing orders `system` rests on, one line each (PROTOCOL.md, Time)."""
    return tuple(t["relation"] for t in system.meta.get("timing", ()))


def find_action(system: System, name: str, params: Mapping[str, str]) -> Action:
    for a in system.actions:
        if a.name == name and dict(a.params) == dict(params):
            return a
    raise InternalError(f"no action {name}{dict(params)} in the model")


def from_actions(
    system: System, actions: list[Action], prop: str, engine: str, note: str = ""
) -> Counterexample:
    """Build a counterexample by executing `actions` from the initial state (interpreter)."""
    state = dict(system.init)
    steps = [Step("init", {}, dict(state))]
    for a in actions:
        if not system.enabled(a, state):
            raise InternalError(f"{engine} engine produced a step that is not enabled: {a.label()}")
        state = system.step(a, state)
        steps.append(Step(a.name, dict(a.params), dict(state), a.fault))
    cfg, inst = system.meta["config"], system.meta["instance"]
    return Counterexample(
        prop,
        cfg.label(),
        inst.name,
        inst.bounds(),
        bearing(cfg.knobs, [inst]),
        dict(cfg.assumptions),
        tuple(steps),
        engine=engine,
        note=note,
        assumes=assumes(system),
        **context(system),
    )


def replay(system: System, cx: Counterexample) -> Optional[str]:
    """Re-execute `cx` in `system`; None if every step is enabled and every state matches,
    else what went wrong."""
    state = dict(system.init)
    if dict(cx.steps[0].state) != state:
        return "initial state differs"
    for i, step in enumerate(cx.steps[1:], start=1):
        try:
            a = find_action(system, step.action, step.params)
        except InternalError as e:
            return f"step {i}: {e}"
        if not system.enabled(a, state):
            return f"step {i}: {a.label()} is not enabled"
        state = system.step(a, state)
        if dict(step.state) != state:
            return f"step {i}: state after {a.label()} differs"
    return None


def breaks(system: System, cx: Counterexample) -> bool:
    """Whether the last state of `cx` breaks its invariant (for invariant properties)."""
    return _ends_broken(system, cx.property, cx.steps[-1].state)


def _ends_broken(system: System, prop: str, last) -> bool:
    """Whether a run ending in state `last` breaks `prop`: an end-state property at an end
    state, a state predicate at `last`; True for a graph property (a replay cannot judge
    being stuck, a fact about every continuation)."""
    if prop in system.ends:
        return system.fault_only(last) and not evaluate(system.ends[prop], last)
    if prop not in system.invariants:
        return True
    return prop in system.violated(last)


def verified(system: System, cx: Counterexample) -> Counterexample:
    """`cx`, after replaying it through the interpreter; the one replay-and-verify.

    Raises InternalError naming the engine if a step is not enabled, a state differs, or
    (for a state predicate) the last state does not break the property.
    """
    problem = replay(system, cx)
    if problem is None and not breaks(system, cx):
        problem = "the last state does not break the property"
    if problem is not None:
        raise InternalError(
            f"{cx.engine} counterexample for {cx.property} does not replay: {problem}"
        )
    return cx


def replay_program(
    config_label: str,
    instance_name: str,
    steps,
    wipe: bool = False,
    bounds: Optional[Mapping[str, int]] = None,
) -> dict:
    """Run `steps` ([(action, params), ...]) from the initial state of the named model (the
    instance in the label's environment, with `bounds` when given) and return the final
    state; raises InternalError if a step is not enabled. This is what a counterexample
    printed with `--format python` calls."""
    from toolcommit.model.environment import from_label, instance_in
    from toolcommit.model.instance import instance, personality
    from toolcommit.model.semantics import build

    config = from_label(config_label)
    if "/" in instance_name:  # a model personality of P5: "<base>/<personality>"
        inst = instance_in(personality(instance_name.split("/", 1)[1]), config.env)
    else:
        inst = instance_in(instance(instance_name), config.env)
    if bounds is not None:
        inst = inst.with_bounds(dict(bounds))
    system = build(config, inst, wipe=wipe)
    cx = from_actions(system, [find_action(system, a, p) for a, p in steps], "replay", "program")
    last = cx.steps[-1].state
    return {
        "state": dict(last),
        "violated": system.violated(last),
        "enabled": sum(system.enabled(a, last) for a in system.actions),
        "settled": bool(evaluate(system.done, last)),
    }


def transfers(system: System, cx: Counterexample, prop: str) -> bool:
    """Whether `cx`'s actions, matched by name and parameters, all run in `system` (the same
    instance under other settings) and the last state there breaks `prop`.

    For a state predicate or an end-state property the last state must break it; for a
    property judged on the graph (DEADLOCK, PROGRESS) the run must only be possible, since
    being stuck is a fact about every continuation, which a replay does not see.
    """
    state = dict(system.init)
    for step in cx.steps[1:]:
        try:
            a = find_action(system, step.action, step.params)
        except InternalError:
            return False
        if not system.enabled(a, state):
            return False
        state = system.step(a, state)
    return _ends_broken(system, prop, state)
