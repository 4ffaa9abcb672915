"""Scenario restriction: a `System -> System` transform that forces an ordering of events.

A scenario is a list of event patterns (an action name, optional parameter values, and an
optional state condition). `restrict` adds one variable, `scenario` (values `0/n .. n/n`),
and conjoins guards so that

- an action matching pattern i (and whose condition holds) fires only when
  `scenario == i`, and then advances it to i + 1;
- an action matching a *later* pattern j (condition holding) cannot fire early, while
  `scenario <= j`;
- every other action, and every occurrence of a pattern's action after its turn, is free.

So the restricted system's traces are exactly the traces of the original in which the
pattern events happen in the given order and none happens before its turn; everything
else interleaves freely. The result is still plain guarded commands
(`toolcommit.model.expr`), so both engines consume it unchanged.

By default (`judge="complete"`) each invariant is judged only once the scenario has been
completed (`scenario == n/n`): a verdict then reads "for every interleaving that follows
the scenario to its end". The invariants are monotone or monitored by sticky `bad.*`
flags, except I1net (a later compensation can repair it), so a violation in the prefix is
reported as long as the scenario can still be completed after it. A witness `scenario`
(the scenario completed) guards against vacuous truth: if it is unreachable, no verdict on
the restricted system means anything.

Pattern occurrences that advance the scenario carry an extra parameter
`scenario="i/n"` so that each ground action stays unique (counterexamples replay by
name and parameters) and the scenario steps stand out in a counterexample.

Limitations: worker symmetry is dropped when a pattern names a worker or its condition
reads a worker-indexed variable (the restriction would not be symmetric).

Examples
--------
>>> from toolcommit.model.knobs import preset
>>> from toolcommit.model.instance import instance
>>> from toolcommit.model.semantics import build
>>> s = restrict(build(preset("recommended"), instance("ack_loss")),
...              [Pattern("lose_ack"), Pattern("timeout")])
>>> s.var("scenario").labels
('0/2', '1/2', '2/2')
>>> sorted({a.params.get("scenario", "-") for a in s.actions if a.name == "timeout"})
['-', '2/2']
>>> Pattern.parse({"action": "nope"}, s)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
toolcommit.model.errors.UsageError: scenario[0].action: unknown action 'nope'; valid actions: ...
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

# absolute imports, so that `python -m doctest model/scenario.py` runs the examples too
from toolcommit.model.errors import UsageError
from toolcommit.model.expr import TRUE, Const, Expr, Var, all_of, any_of, evaluate, in_, not_
from toolcommit.model.system import Action, System, VarDecl

SCENARIO = "scenario"
_ALIAS = re.compile(r"^(\w+)\((\w+)\)$")


@dataclass(frozen=True)
class Pattern:
    """One event of a scenario.

    `params` must all equal the action's parameters; `when` maps a variable name to the
    value labels (or numbers) it may have when the event happens. A variable may be named
    `family(proposal)`, e.g. `rec(t1)`: the variable of that family for the proposal's
    semantic key under the config being checked.
    """

    action: str
    params: Mapping[str, str] = field(default_factory=dict)
    when: Mapping[str, tuple] = field(default_factory=dict)

    def label(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.params.items())
        cond = " and ".join(f"{k} in {{{', '.join(map(str, v))}}}" for k, v in self.when.items())
        return f"{self.action}({inner})" + (f" when {cond}" if cond else "")

    @staticmethod
    def parse(raw, system: System | None = None, where: str = "scenario[0]") -> "Pattern":
        """A pattern from JSON-like data; with `system`, names are checked against it."""
        if not isinstance(raw, Mapping):
            raise UsageError(
                f"{where}: an event pattern is an object like "
                '{"action": "timeout", "params": {...}, "when": {...}}'
            )
        extra = sorted(set(raw) - {"action", "params", "when"})
        if extra:
            raise UsageError(
                f"{where}.{extra[0]}: unknown field; valid fields: action, params, when"
            )
        action = raw.get("action")
        if not isinstance(action, str) or not action:
            raise UsageError(f"{where}.action: required, the name of a spec action")
        params = raw.get("params", {})
        if not isinstance(params, Mapping) or not all(isinstance(v, str) for v in params.values()):
            raise UsageError(f"{where}.params: an object of parameter name -> string value")
        when = raw.get("when", {})
        if not isinstance(when, Mapping) or not all(
            isinstance(v, list) and v and all(isinstance(x, (str, int)) for x in v)
            for v in when.values()
        ):
            raise UsageError(f"{where}.when: an object of variable -> non-empty list of values")
        p = Pattern(action, dict(params), {k: tuple(v) for k, v in when.items()})
        if system is not None:
            p.check(system, where)
        return p

    def check(self, system: System, where: str = "scenario") -> None:
        """Raise `UsageError` naming the field if the pattern can never match `system`."""
        names = sorted({a.name for a in system.actions})
        if self.action not in names:
            raise UsageError(
                f"{where}.action: unknown action {self.action!r}; valid actions: "
                + ", ".join(names)
            )
        same = [a for a in system.actions if a.name == self.action]
        keys = sorted({k for a in same for k in a.params})
        for k, v in self.params.items():
            if k not in keys:
                raise UsageError(
                    f"{where}.params.{k}: action {self.action!r} has no parameter "
                    f"{k!r}; its parameters: {', '.join(keys) or 'none'}"
                )
            values = sorted({a.params[k] for a in same if k in a.params})
            if v not in values:
                raise UsageError(
                    f"{where}.params.{k}: no {self.action} action has {k}={v!r} "
                    f"in this model; values: {', '.join(values)}"
                )
        for name, values in self.when.items():
            decl = system.var(resolve(system, name, f"{where}.when"))
            for v in values:
                _value(decl, v, f"{where}.when.{name}")

    def matches(self, action: Action) -> bool:
        """Whether `action` is this pattern's event, ignoring the `when` condition."""
        return action.name == self.action and all(
            action.params.get(k) == v for k, v in self.params.items()
        )

    def condition(self, system: System) -> Expr:
        """The `when` condition as an expression over `system`'s variables."""
        parts = []
        for name, values in self.when.items():
            decl = system.var(resolve(system, name, "when"))
            parts.append(in_(Var(decl.name), [_value(decl, v, name) for v in values]))
        return all_of(*parts)


def resolve(system: System, name: str, where: str = "when") -> str:
    """The variable `name` stands for: itself, or `family(proposal)` -> `family.<key>`."""
    names = {v.name for v in system.variables}
    if name in names:
        return name
    m = _ALIAS.match(name)
    if m:
        family, prop = m.groups()
        key_of = system.meta.get("key_of", {})
        if prop not in key_of:
            raise UsageError(
                f"{where}.{name}: no proposal {prop!r} in this instance; "
                f"proposals: {', '.join(key_of) or 'none'}"
            )
        key = system.meta["keys"][key_of[prop]]["name"]
        if f"{family}.{key}" in names:
            return f"{family}.{key}"
        fams = sorted({v.family for v in system.variables if v.index and v.index[0] == key})
        raise UsageError(
            f"{where}.{name}: no variable family {family!r} per key; families: {', '.join(fams)}"
        )
    fams = sorted({v.family for v in system.variables})
    raise UsageError(
        f"{where}.{name}: unknown variable; write a variable name (e.g. rec.k0) or "
        f"family(proposal) (e.g. rec(t1)); families: {', '.join(fams)}"
    )


def _value(decl: VarDecl, v, where: str) -> int:
    if decl.labels:
        if v in decl.labels:
            return decl.labels.index(v)
        raise UsageError(
            f"{where}: {decl.name} has no value {v!r}; values: {', '.join(decl.labels)}"
        )
    if isinstance(v, int) and 0 <= v < decl.size:
        return v
    raise UsageError(f"{where}: {decl.name} takes numbers 0..{decl.size - 1}, got {v!r}")


def restrict(system: System, patterns: Sequence[Pattern], judge: str = "complete") -> System:
    """`system` restricted to the interleavings that follow `patterns` in order.

    Parameters
    ----------
    system : the system to restrict (unchanged).
    patterns : the scenario; an empty list returns `system` itself.
    judge : "complete" judges invariants only once the scenario is complete; "always"
        judges them in every state of the restricted system.

    Returns
    -------
    A new `System` with the variable `scenario`, the witness `scenario` (the scenario
    completed) and `meta["scenario"]` (the pattern labels).
    """
    if not patterns:
        return system
    if judge not in ("complete", "always"):
        raise UsageError(f"judge must be 'complete' or 'always', got {judge!r}")
    for i, p in enumerate(patterns):
        p.check(system, f"scenario[{i}]")
    n = len(patterns)
    sc = Var(SCENARIO)
    labels = tuple(f"{i}/{n}" for i in range(n + 1))
    conds = [p.condition(system) for p in patterns]
    actions = []
    for a in system.actions:
        hits = [i for i, p in enumerate(patterns) if p.matches(a)]
        if not hits:
            actions.append(a)
            continue
        # free: not the event of a pattern whose turn is now or still to come
        early = any_of(*[all_of(sc <= i, conds[i]) for i in hits])
        actions.append(replace(a, guard=all_of(a.guard, not_(early))))
        if a.cut:
            continue
        for i in hits:
            ups = dict(a.updates)
            ups[SCENARIO] = Const(i + 1)
            actions.append(
                Action(
                    a.name,
                    {**a.params, SCENARIO: labels[i + 1]},
                    all_of(a.guard, sc == i, conds[i]),
                    ups,
                    a.fault,
                    a.cut,
                )
            )
    done = sc == n
    invariants = dict(system.invariants)
    if judge == "complete":
        invariants = {k: any_of(not_(done), e) for k, e in invariants.items()}
    witnesses = {**system.witnesses, SCENARIO: done}
    sym = system.symmetries
    if any("worker" in p.params for p in patterns) or _reads_workers(system, patterns):
        sym = ()
    meta = {**system.meta, "scenario": [p.label() for p in patterns], "scenario_judge": judge}
    decl = VarDecl(SCENARIO, n + 1, labels, SCENARIO)
    ends = {k: any_of(not_(done), e) for k, e in system.ends.items()}  # judged once complete:
    #   then nothing is blocked, so an end state is one of the unrestricted system too
    return System(
        system.variables + (decl,),
        {**system.init, SCENARIO: 0},
        tuple(actions),
        invariants,
        witnesses,
        system.done,
        sym,
        meta,
        ends,
    )


def _reads_workers(system: System, patterns) -> bool:
    worker_vars = {n for s in system.symmetries for slot in s.slots for n in slot}
    worker_vars |= {n for s in system.symmetries for n in s.valued}
    return any(resolve(system, name) in worker_vars for p in patterns for name in p.when)


def follows(
    events: Sequence[tuple[str, Mapping[str, str]]],
    patterns: Sequence[Pattern],
    states: Sequence[Mapping[str, int]] | None = None,
    system: System | None = None,
):
    """How many patterns a trace has completed, or None if it breaks the scenario (a
    pattern's event happens before its turn).

    `events` are (action name, params); with conditional patterns, `states[k]` is the
    state *before* event k and `system` the system the conditions refer to. Pure and
    independent of `restrict`, for tests.
    """
    s = 0
    for k, (name, params) in enumerate(events):
        a = Action(name, {p: v for p, v in params.items() if p != SCENARIO}, TRUE, {})

        def holds(i):
            if not patterns[i].when:
                return True
            return bool(evaluate(patterns[i].condition(system), states[k]))

        hits = [i for i, p in enumerate(patterns) if p.matches(a) and holds(i)]
        if s in hits:
            s += 1
        elif any(i > s for i in hits):
            return None
    return s
