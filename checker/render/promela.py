"""The model as Promela, for Spin: the same `System` both our engines compile, written as a
Promela program (`toolcommit export --format promela`).

One global per variable (the same domains and initial values), one `d_step` option per
ground action (the guard, then the updates, which are simultaneous: ordered so none reads a
variable already assigned, or else through temporaries), in one process's `do` loop marked
as a valid end state. Spin has no symmetry reduction, so it stores every state our engines
fold together (on a `System` without symmetries its state count and depth are ours: a slow
test checks). Invariants are not asserted unless one is named: `promela(system, "I1")`
adds a monitor process that fails when I1 breaks, so Spin's BFS stops at the first
violation, like `check --first`.

Examples
--------
>>> from toolcommit.model.system import System, VarDecl, Action
>>> from toolcommit.model.expr import Var, Const
>>> x = Var("x")
>>> s = System((VarDecl("x", 3),), {"x": 0}, (Action("inc", {}, x < 2, {"x": x + 1}),), {}, {}, Const(1))
>>> print(promela(s))
byte x_x = 0;
<BLANKLINE>
active proctype model() {
int t0 = 0;
end: do
  :: d_step { ((x_x < 2)); x_x = (x_x + 1) }
od
}
<BLANKLINE>
"""

from __future__ import annotations

import re

from toolcommit.model.expr import Const, Expr, Var, is_boolean, variables
from toolcommit.model.system import System

_OPS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "add": "+", "sub": "-"}


def to_promela(e: Expr, flags: set, truth: bool = False) -> str:
    """Promela for `e` with Python's value semantics (as `native_c.to_c`)."""

    def sub(a: Expr, t: bool = False) -> str:
        return to_promela(a, flags, t)

    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Var):
        return _name(e.name)
    op, args = e.op, e.args
    if op in ("and", "or") and (truth or all(is_boolean(a, flags) for a in args)):
        return "(" + f" {'&&' if op == 'and' else '||'} ".join(sub(a, True) for a in args) + ")"
    if op == "and":
        out = sub(args[-1])
        for a in reversed(args[:-1]):
            out = f"({sub(a, True)} -> {out} : 0)"
        return out
    if op == "or":
        out = sub(args[-1])
        for a in reversed(args[:-1]):
            out = f"(({sub(a)} != 0) -> {sub(a)} : {out})"
        return out
    if op == "not":
        return f"(!{sub(args[0], True)})"
    if op == "ite":
        return f"({sub(args[0], True)} -> {sub(args[1])} : {sub(args[2])})"
    return f"({sub(args[0])} {_OPS[op]} {sub(args[1])})"


def _name(var: str) -> str:
    return "x_" + re.sub(r"[^A-Za-z0-9]", "_", var)


def promela(system: System, assert_invariant: str = "") -> str:
    """The Promela program of `system` (see the module docstring), with a monitor that
    fails when `assert_invariant` breaks when one is named."""
    flags = {v.name for v in system.variables if v.size <= 2}
    lines = [
        f"{'byte' if v.size <= 256 else 'int'} {_name(v.name)} = {system.init[v.name]};"
        for v in system.variables
    ]
    width = max((len(a.updates) for a in system.actions), default=0)
    lines += ["", "active proctype model() {", *[f"int t{i} = 0;" for i in range(width)], "end: do"]
    for a in system.actions:
        if not a.cut:
            body = "; ".join(
                [f"({to_promela(a.guard, flags, True)})", *_assignments(a.updates, flags)]
            )
            lines.append(f"  :: d_step {{ {body} }}")
    lines += ["od", "}", ""]
    if assert_invariant:
        holds = to_promela(system.invariants[assert_invariant], flags, True)
        lines += [
            "active proctype monitor() {",
            f"  atomic {{ !({holds}) -> assert(false) }}",
            "}",
            "",
        ]
    return "\n".join(lines)


def _assignments(updates, flags) -> list[str]:
    """Simultaneous updates as a sequence: each variable assigned after every other update
    that reads it; on a cycle, all through temporaries (reset, so they store as 0)."""
    order, left = [], dict(updates)
    while left:
        free = [n for n in left if not any(n in variables(e) for m, e in left.items() if m != n)]
        if not free:
            break
        order += free
        for n in free:
            del left[n]
    if not left:
        return [f"{_name(n)} = {to_promela(updates[n], flags)}" for n in order]
    names = list(updates)
    return (
        [f"t{i} = {to_promela(updates[n], flags)}" for i, n in enumerate(names)]
        + [f"{_name(n)} = t{i}" for i, n in enumerate(names)]
        + [f"t{i} = 0" for i in range(len(names))]
    )
