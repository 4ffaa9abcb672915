"""The model's encoding as SMT terms: a `System` unrolled over steps, for z3.

Nothing here restates the protocol. Every term comes from the `System` that
`toolcommit.model.semantics.build` returns: its variables and their domains, its initial
state, its ground actions (guard and updates) and its invariants, translated by `to_z3`.
A z3 constant carries its step in its name: `rec.k0@3` is `rec.k0` after 3 steps, and
`act@3` is the index (into `Encoding.actions`, the non-cut actions) of the action taken
from step 3 to step 4, so a model decodes to the ground action sequence.

Two sorts are offered. `"bv"` (the default) gives each variable a bit-vector of its own
width (`rec.k0` with 9 values: 4 bits, plus `v < 9`) and evaluates expressions at one
common signed width wide enough for any sum of variables; z3 bit-blasts these small
problems to SAT
(`z3.SolverFor("QF_BV")`). `"int"` uses unbounded integers with `0 <= v < size`. Measured
(2 CPUs, BMC of all seven invariants): recommended on `default` to depth 10, 1.25 s with
"bv" against 7.0 s with "int"; naive on `reorder` to depth 10, 1.2 s against 5.8 s. Spacer
(PDR) is the exception: it proved recommended I1 and FENCE on `default` over Ints in 51 s
and timed out at 120 s over bit-vectors, so `checker.induction` uses "int" for PDR. Both
are kept; agreeing on the differential tests is a cheap check of the translation itself.

The transition relation is the disjunction over the non-cut actions of
``guard@i and updates and frame``, written in the action-choice form: ``act@i`` picks one
action, ``act@i == j`` implies guard j, and each variable's next value is an `If` chain
over the actions that write it, falling through to "unchanged". That is the same relation
(exactly one disjunct holds, selected by `act@i`) with one frame condition per variable
instead of one per (action, variable) pair. `style="disjunction"` builds the literal
disjunction instead, for comparison.

Limitations: a `cut` action (a move past the fence bound) never fires, here as in the
explicit engine; the encoding does not mark truncated states.

Examples
--------
>>> from toolcommit.model.knobs import preset
>>> from toolcommit.model.instance import instance
>>> from toolcommit.model.semantics import build
>>> enc = Encoding(build(preset("recommended"), instance("cancel")))
>>> str(enc.vars_at(3)["rec.k0"])
'rec.k0@3'
>>> import z3
>>> s = z3.Solver(); s.add(enc.init(0), z3.Not(enc.invariant("I1", 0))); s.check()
unsat
"""

from __future__ import annotations

from typing import Mapping

import z3

from toolcommit.model.expr import Const, Expr, Op, Var
from toolcommit.model.system import Action, System

SORTS = ("bv", "int")
STYLES = ("choice", "disjunction")


def _bits(n: int) -> int:
    """Bits needed for the values 0 .. n-1 (at least 1)."""
    return max(1, (n - 1).bit_length())


class _Translator:
    """Expr -> z3 over one frame; booleans stay z3 Bool where they can."""

    def __init__(self, frame: Mapping[str, z3.ExprRef], sort: str, width: int):
        self.frame, self.sort, self.width = frame, sort, width
        self.memo: dict[int, z3.ExprRef] = {}

    def num(self, value: int) -> z3.ExprRef:
        return z3.BitVecVal(value, self.width) if self.sort == "bv" else z3.IntVal(value)

    def as_num(self, t: z3.ExprRef) -> z3.ExprRef:
        return z3.If(t, self.num(1), self.num(0)) if z3.is_bool(t) else t

    def as_bool(self, t: z3.ExprRef) -> z3.ExprRef:
        return t if z3.is_bool(t) else t != self.num(0)

    def __call__(self, e: Expr) -> z3.ExprRef:
        key = id(e)
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self._tr(e)
        return hit

    def _tr(self, e: Expr) -> z3.ExprRef:
        if isinstance(e, Const):
            return self.num(e.value)
        if isinstance(e, Var):
            return self.frame[e.name]
        assert isinstance(e, Op), e
        op, args = e.op, [self(a) for a in e.args]
        if op == "and":
            return z3.And([self.as_bool(a) for a in args])
        if op == "or":
            return z3.Or([self.as_bool(a) for a in args])
        if op == "not":
            return z3.Not(self.as_bool(args[0]))
        if op == "ite":
            c, t, o = self.as_bool(args[0]), args[1], args[2]
            if not (z3.is_bool(t) and z3.is_bool(o)):
                t, o = self.as_num(t), self.as_num(o)
            return z3.If(c, t, o)
        a, b = args
        if op in ("eq", "ne") and z3.is_bool(a) and z3.is_bool(b):
            return a == b if op == "eq" else a != b
        a, b = self.as_num(a), self.as_num(b)
        if op == "eq":
            return a == b
        if op == "ne":
            return a != b
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        # for bit-vectors z3's `<` and `<=` are the signed comparisons, as wanted: a
        # difference may be negative in a branch the guard does not take
        return a < b if op == "lt" else a <= b


def to_z3(
    expr: Expr, frame: Mapping[str, z3.ExprRef], sort: str = "int", width: int = 0
) -> z3.ExprRef:
    """Translate `expr` to a z3 term over `frame` (variable name -> z3 term of one step).

    With `sort="int"` the frame holds Ints; with `sort="bv"` it holds bit-vectors of
    `width` bits (signed arithmetic). The result is a Bool for comparisons and connectives,
    else a number; `Encoding.boolean` and `Encoding.number` convert.

    Examples
    --------
    >>> import z3
    >>> from toolcommit.model.expr import Var, ite
    >>> x = Var("x")
    >>> t = to_z3(ite(x == 2, x + 1, 0), {"x": z3.Int("x@0")})
    >>> z3.simplify(z3.substitute(t, (z3.Int("x@0"), z3.IntVal(2))))
    3
    """
    if sort == "bv" and width <= 0:
        raise ValueError("to_z3 with sort='bv' needs the common width")
    return _Translator(frame, sort, width)(expr)


class Encoding:
    """`system` unrolled over steps: variables per step, init, transition, invariants.

    Parameters
    ----------
    system : the transition system (`toolcommit.model.semantics.build`).
    sort : "bv" (bit-vectors, default) or "int".
    style : "choice" (action-choice variable with per-variable `If` chains, default) or
        "disjunction" (one disjunct per action with an explicit frame).
    """

    def __init__(self, system: System, sort: str = "bv", style: str = "choice"):
        if sort not in SORTS:
            raise ValueError(f"sort must be one of {SORTS}, got {sort!r}")
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        self.system, self.sort, self.style = system, sort, style
        self.actions: tuple[Action, ...] = tuple(a for a in system.actions if not a.cut)
        total = sum(v.size - 1 for v in system.variables) + len(system.variables)
        self.width = _bits(total + 1) + 1  # one sign bit: differences stay exact
        self.act_bits = _bits(max(1, len(self.actions)))
        self._frames: dict[int, dict[str, z3.ExprRef]] = {}
        self._raw: dict[int, dict[str, z3.ExprRef]] = {}
        self._acts: dict[int, z3.ExprRef] = {}
        self._writers: dict[str, list[int]] = {}
        for j, a in enumerate(self.actions):
            for name in a.updates:
                self._writers.setdefault(name, []).append(j)

    # ----- variables ------------------------------------------------------------------
    def vars_at(self, i: int) -> dict[str, z3.ExprRef]:
        """Variable name -> its z3 constant after `i` steps (`rec.k0@3`)."""
        self.frame_at(i)
        return self._raw[i]

    def frame_at(self, i: int) -> dict[str, z3.ExprRef]:
        """Variable name -> its z3 term after `i` steps, as expressions use it (for "bv",
        zero-extended to the common width)."""
        if i not in self._frames:
            raw, frame = {}, {}
            for v in self.system.variables:
                name = f"{v.name}@{i}"
                if self.sort == "int":
                    raw[v.name] = frame[v.name] = z3.Int(name)
                else:
                    raw[v.name] = z3.BitVec(name, _bits(v.size))
                    frame[v.name] = z3.ZeroExt(self.width - _bits(v.size), raw[v.name])
            self._raw[i], self._frames[i] = raw, frame
        return self._frames[i]

    def act_at(self, i: int) -> z3.ExprRef:
        """The action-choice variable of step i -> i+1."""
        if i not in self._acts:
            self._acts[i] = (
                z3.Int(f"act@{i}") if self.sort == "int" else z3.BitVec(f"act@{i}", self.act_bits)
            )
        return self._acts[i]

    def _act_is(self, i: int, j: int) -> z3.ExprRef:
        act = self.act_at(i)
        return act == (j if self.sort == "int" else z3.BitVecVal(j, self.act_bits))

    def domain(self, i: int) -> z3.ExprRef:
        """Every variable of step i lies in its declared range."""
        self.frame_at(i)
        parts = []
        for v in self.system.variables:
            x = self._raw[i][v.name]
            if self.sort == "int":
                parts += [x >= 0, x < v.size]
            elif v.size < (1 << _bits(v.size)):
                parts.append(z3.ULT(x, z3.BitVecVal(v.size, _bits(v.size))))
        return z3.And(parts)

    # ----- formulas ---------------------------------------------------------------------
    def term(self, e: Expr, i: int) -> z3.ExprRef:
        return _Translator(self.frame_at(i), self.sort, self.width)(e)

    def boolean(self, e: Expr, i: int) -> z3.ExprRef:
        """`e` at step i as a z3 Bool (nonzero is true)."""
        return _Translator(self.frame_at(i), self.sort, self.width).as_bool(self.term(e, i))

    def init(self, i: int = 0) -> z3.ExprRef:
        """Step i is the initial state (and in range)."""
        f = self.frame_at(i)
        t = _Translator(f, self.sort, self.width)
        return z3.And([f[n] == t.num(v) for n, v in self.system.init.items()] + [self.domain(i)])

    def trans(self, i: int) -> z3.ExprRef:
        """One step from i to i+1 by one non-cut action chosen by `act@i`; includes the
        range constraints of step i+1."""
        cur, nxt = self.frame_at(i), self.frame_at(i + 1)
        t = _Translator(cur, self.sort, self.width)
        act = self.act_at(i)
        n = len(self.actions)
        if n == 0:
            return z3.BoolVal(False)
        if self.sort == "int":
            rng = z3.And(act >= 0, act < n)
        else:
            rng = (
                z3.ULT(act, z3.BitVecVal(n, self.act_bits))
                if n < (1 << self.act_bits)
                else z3.BoolVal(True)
            )
        if self.style == "disjunction":
            names = [v.name for v in self.system.variables]
            alts = []
            for j, a in enumerate(self.actions):
                eqs = [
                    nxt[v] == t.as_num(t(a.updates[v])) if v in a.updates else nxt[v] == cur[v]
                    for v in names
                ]
                alts.append(z3.And([self._act_is(i, j), t.as_bool(t(a.guard))] + eqs))
            return z3.And(rng, z3.Or(alts), self.domain(i + 1))
        parts = [rng]
        for j, a in enumerate(self.actions):
            parts.append(z3.Implies(self._act_is(i, j), t.as_bool(t(a.guard))))
        for v in self.system.variables:
            value = cur[v.name]
            for j in reversed(self._writers.get(v.name, [])):
                value = z3.If(
                    self._act_is(i, j), t.as_num(t(self.actions[j].updates[v.name])), value
                )
            parts.append(nxt[v.name] == value)
        parts.append(self.domain(i + 1))
        return z3.And(parts)

    def invariant(self, prop: str, i: int) -> z3.ExprRef:
        """Invariant `prop` holds at step i."""
        return self.boolean(self.system.invariants[prop], i)

    # ----- decoding ---------------------------------------------------------------------
    def decode_actions(self, model: z3.ModelRef, k: int) -> list[Action]:
        """The ground actions a model takes in its first k steps."""
        out = []
        for i in range(k):
            j = model.eval(self.act_at(i), model_completion=True).as_long()
            out.append(self.actions[j])
        return out

    def decode_state(self, model: z3.ModelRef, i: int) -> dict[str, int]:
        """The state of step i in a model."""
        self.frame_at(i)
        return {n: model.eval(x, model_completion=True).as_long() for n, x in self._raw[i].items()}
