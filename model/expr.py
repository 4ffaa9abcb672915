"""A tiny expression language over finite integer state variables.

The protocol's semantics is written once in these terms (`toolcommit.model.semantics`);
the explicit engine compiles it to Python and the SMT engine to z3, so neither engine
holds a second copy of the rules.

Every value is a small non-negative integer; booleans are 0/1.

Examples
--------
>>> x = Var("x")
>>> e = ite(x == 2, x + 1, 0)
>>> evaluate(e, {"x": 2})
3
>>> str(e)
'ite((x == 2), (x + 1), 0)'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Union


class Expr:
    """Base of all expressions; operators build new expressions."""

    __slots__ = ()

    def __eq__(self, other):  # type: ignore[override]
        return _binary("eq", self, lift(other))

    def __ne__(self, other):  # type: ignore[override]
        return _binary("ne", self, lift(other))

    def __lt__(self, other):
        return _binary("lt", self, lift(other))

    def __le__(self, other):
        return _binary("le", self, lift(other))

    def __gt__(self, other):
        return _binary("lt", lift(other), self)

    def __ge__(self, other):
        return _binary("le", lift(other), self)

    def __add__(self, other):
        return _binary("add", self, lift(other))

    def __sub__(self, other):
        return _binary("sub", self, lift(other))

    def __and__(self, other):
        return all_of(self, lift(other))

    def __or__(self, other):
        return any_of(self, lift(other))

    def __invert__(self):
        return not_(self)

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True, eq=False)
class Var(Expr):
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class Op(Expr):
    op: str
    args: tuple

    def __str__(self) -> str:
        if self.op in _INFIX:
            return "(" + f" {_INFIX[self.op]} ".join(map(str, self.args)) + ")"
        return f"{self.op}(" + ", ".join(map(str, self.args)) + ")"


_INFIX = {
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "add": "+",
    "sub": "-",
    "and": "and",
    "or": "or",
}


def _binary(op: str, a: "Expr", b: "Expr") -> "Expr":
    """Build a binary Op, folding it when both sides are constants."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(int(_PY[op](a.value, b.value)))
    if op == "eq" and a is b:
        return Const(1)
    return Op(op, (a, b))


TRUE = Const(1)
FALSE = Const(0)
ExprLike = Union[Expr, int, bool]


def lift(value: ExprLike) -> Expr:
    """Turn an int or bool into a Const; leave expressions alone."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Const(int(value))
    if isinstance(value, int):
        return Const(value)
    raise TypeError(f"not an expression: {value!r}")


def all_of(*args: ExprLike) -> Expr:
    """Conjunction; constants are folded, the empty conjunction is TRUE."""
    parts, false = [], False
    for a in args:  # one pass (a hot path of every build), each argument lifted
        p = a if isinstance(a, Expr) else lift(a)
        if not isinstance(p, Const):
            parts.append(p)
        elif p.value == 0:
            false = True
    if false:
        return FALSE
    return TRUE if not parts else parts[0] if len(parts) == 1 else Op("and", tuple(parts))


def any_of(*args: ExprLike) -> Expr:
    """Disjunction; constants are folded, the empty disjunction is FALSE."""
    parts, true = [], False
    for a in args:
        p = a if isinstance(a, Expr) else lift(a)
        if not isinstance(p, Const):
            parts.append(p)
        elif p.value != 0:
            true = True
    if true:
        return TRUE
    return FALSE if not parts else parts[0] if len(parts) == 1 else Op("or", tuple(parts))


def not_(arg: ExprLike) -> Expr:
    a = lift(arg)
    if isinstance(a, Const):
        return Const(int(not a.value))
    return Op("not", (a,))


def implies(a: ExprLike, b: ExprLike) -> Expr:
    return any_of(not_(a), b)


def ite(cond: ExprLike, then: ExprLike, other: ExprLike) -> Expr:
    c, t, o = lift(cond), lift(then), lift(other)
    if isinstance(c, Const):
        return t if c.value else o
    if t is o or (isinstance(t, Const) and isinstance(o, Const) and t.value == o.value):
        return t
    return Op("ite", (c, t, o))


def min_(a: ExprLike, b: ExprLike) -> Expr:
    return ite(lift(a) <= lift(b), a, b)


def max_(a: ExprLike, b: ExprLike) -> Expr:
    return ite(lift(a) <= lift(b), b, a)


def in_(e: Expr, values) -> Expr:
    """`e` equals one of `values` (ints)."""
    return any_of(*[e == v for v in values])


def sum_(items) -> Expr:
    items = [lift(i) for i in items]
    if not items:
        return Const(0)
    total = items[0]
    for item in items[1:]:
        total = total + item
    return total


def structure(e: Expr):
    """A hashable value that two expressions share exactly when they are the same tree."""
    if isinstance(e, Op):
        return (e.op, *[structure(a) for a in e.args])
    return e.value if isinstance(e, Const) else ("var", e.name)


def variables(e: Expr) -> set[str]:
    """Names of the variables `e` reads."""
    if isinstance(e, Var):
        return {e.name}
    if isinstance(e, Op):
        out: set[str] = set()
        for a in e.args:
            out |= variables(a)
        return out
    return set()


_PY = {
    "eq": lambda a, b: int(a == b),
    "ne": lambda a, b: int(a != b),
    "lt": lambda a, b: int(a < b),
    "le": lambda a, b: int(a <= b),
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
}


def evaluate(e: Expr, env: Mapping[str, int]) -> int:
    """Value of `e` under `env` (a mapping from variable name to int)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    op, args = e.op, e.args
    if op == "and":
        return int(all(evaluate(a, env) for a in args))
    if op == "or":
        return int(any(evaluate(a, env) for a in args))
    if op == "not":
        return int(not evaluate(args[0], env))
    if op == "ite":
        return evaluate(args[1] if evaluate(args[0], env) else args[2], env)
    return _PY[op](evaluate(args[0], env), evaluate(args[1], env))


def to_python(e: Expr, name: Callable[[str], str]) -> str:
    """Python source for `e`; `name` maps a variable to the local that holds it."""
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Var):
        return name(e.name)
    op, args = e.op, [to_python(a, name) for a in e.args]
    if op == "and":
        return "(" + " and ".join(args) + ")"
    if op == "or":
        return "(" + " or ".join(args) + ")"
    if op == "not":
        return f"(not {args[0]})"
    if op == "ite":
        return f"({args[1]} if {args[0]} else {args[2]})"
    return f"({args[0]} {_INFIX[op]} {args[1]})"


def is_boolean(e: Expr, flags: set) -> bool:
    """Whether `e` only ever takes the values 0 and 1 (`flags`: variables of size <= 2).

    >>> x, b = Var("x"), Var("b")
    >>> is_boolean((x == 1) & b, {"b"}), is_boolean(x + 1, {"b"})
    (True, False)
    """
    if isinstance(e, Const):
        return e.value in (0, 1)
    if isinstance(e, Var):
        return e.name in flags
    if e.op in ("eq", "ne", "lt", "le", "not"):
        return True
    if e.op in ("and", "or"):
        return all(is_boolean(a, flags) for a in e.args)
    if e.op == "ite":
        return is_boolean(e.args[1], flags) and is_boolean(e.args[2], flags)
    return False
