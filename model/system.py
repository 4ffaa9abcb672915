"""The finite transition system both engines consume: variables, initial state, actions.

A `System` is plain data built by `toolcommit.model.semantics.build`. Each `Action` is a
ground guarded command: `guard` over the current state, `updates` giving the next value of
the variables it changes (all other variables keep their value).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .expr import Expr, evaluate


@dataclass(frozen=True)
class VarDecl:
    """A state variable with values `0 .. size-1`; `labels[v]` names value v."""

    name: str
    size: int
    labels: tuple[str, ...] = ()
    family: str = ""
    index: tuple[str, ...] = ()

    def show(self, value: int) -> str:
        return self.labels[value] if self.labels else str(value)


@dataclass(frozen=True)
class Action:
    """A ground action: spec name, parameters, guard and updates.

    A `cut` action stands for moves the finite instance forbids (past the fence budget):
    it never fires, but a state where its guard holds is *truncated*, and the graph
    properties (DEADLOCK, PROGRESS) do not judge it.
    """

    name: str
    params: Mapping[str, str]
    guard: Expr
    updates: Mapping[str, Expr]
    fault: bool = False
    cut: bool = False

    def label(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.name}({inner})"


@dataclass(frozen=True)
class Symmetry:
    """Interchangeable indices: permuting `slots` (aligned lists of variable names) and
    renaming the values of `valued` variables (value i <-> slot i) maps reachable states
    to reachable states with the same property verdicts."""

    name: str
    slots: tuple[tuple[str, ...], ...]
    valued: tuple[str, ...] = ()


@dataclass(frozen=True)
class System:
    """A finite transition system plus its properties, all as expressions."""

    variables: tuple[VarDecl, ...]
    init: Mapping[str, int]
    actions: tuple[Action, ...]
    invariants: Mapping[str, Expr]
    witnesses: Mapping[str, Expr]
    done: Expr
    symmetries: tuple[Symmetry, ...] = ()
    meta: Mapping = field(default_factory=dict)
    ends: Mapping[str, Expr] = field(default_factory=dict)  # predicates every end state
    #   (no move but faults, not truncated) must satisfy, judged on the reachable graph

    def fault_only(self, state: Mapping[str, int]) -> bool:
        """Whether `state` is an end state: no action but faults may fire."""
        return not any(self.enabled(a, state) for a in self.actions if not a.fault)

    def var(self, name: str) -> VarDecl:
        return self._by_name()[name]

    def _by_name(self) -> dict[str, VarDecl]:
        cache = self.__dict__.get("_vars")
        if cache is None:
            cache = {v.name: v for v in self.variables}
            object.__setattr__(self, "_vars", cache)
        return cache

    def enabled(self, action: Action, state: Mapping[str, int]) -> bool:
        """Whether `action` may fire in `state`."""
        return not action.cut and bool(evaluate(action.guard, state))

    def step(self, action: Action, state: Mapping[str, int]) -> dict[str, int]:
        """The successor of `state` under `action` (which must be enabled)."""
        nxt = dict(state)
        for name, e in action.updates.items():
            nxt[name] = evaluate(e, state)
        return nxt

    def invariant_props(self, props, engine: str) -> list[str]:
        """`props` (default: every invariant), checked to be invariants of this system.

        Raises UsageError naming `engine` and the valid names otherwise.
        """
        from .errors import UsageError

        props = list(props or self.invariants)
        bad = [p for p in props if p not in self.invariants]
        if bad:
            raise UsageError(
                f"{engine} checks invariants only; {bad[0]!r} is not one; "
                f"valid: {', '.join(self.invariants)}"
            )
        return props

    def violated(self, state: Mapping[str, int]) -> list[str]:
        """Names of the invariants `state` breaks."""
        return [p for p, e in self.invariants.items() if not evaluate(e, state)]
