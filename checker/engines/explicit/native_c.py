"""Generate the C source of the native explicit engine from a compiled `System`.

The model half is generated here, the way Spin writes `pan.c`: the successor function is
the Python engine's decision tree (`codegen.split_on_shared`, the same conjunct keys, so
the successors come out in the same order and both engines number states alike), the
invariant and witness masks, the settled test and the symmetry candidates, all over a
packed state with the Python engine's bit layout: one 128-bit integer when the fields fit
in two 64-bit words (the common case), else as many words as they need (`native_state.c`,
put first). The search half (BFS on one or several threads, visited table, symmetry memo,
PROGRESS) is fixed C in `native_bfs.c`, appended verbatim.

The source is deterministic for a given model: `and`/`or` over 0/1 values are emitted
with their operands sorted (the model builds some of them from sets, whose order changes
with string hashing), so the compiled library can be cached by the source's hash.
"""

from __future__ import annotations

import itertools
import math
import sys
from importlib import resources
from typing import Callable, Optional

from toolcommit.checker.engines.explicit.codegen import Compiled, _Gen, commuting
from toolcommit.model.expr import (  # noqa: F401 (Op: doctests)
    Const,
    Expr,
    Op,
    Var,
    is_boolean,
    variables,
)

MAX_FIELD_BITS = 62  # a variable's values are computed in int64 arithmetic
MAX_PROPS = 64  # invariants and witnesses each: one 64-bit mask
MAX_ACTIONS = 1 << 30
MAX_ORBIT = (
    1 << 16
)  # the product of the groups' sizes: C enumerates it (on the stack) on a memo miss

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "add": "+", "sub": "-"}


def refusal(c: Compiled) -> Optional[str]:
    """Why the native engine cannot take `c`, or None when it can."""
    wide = max(c.widths.values(), default=0)
    if wide > MAX_FIELD_BITS:
        name = next(n for n, w in c.widths.items() if w == wide)
        return f"variable {name} needs {wide} bits, more than the native engine's {MAX_FIELD_BITS}"
    if state_words(c.bits) > 2 and sys.byteorder != "little":
        return "states wider than 128 bits on a big-endian machine"
    for what, names in (
        ("invariants", c.invariant_names),
        ("witnesses", c.witness_names),
        ("end predicates", c.end_names),
    ):
        if len(names) > MAX_PROPS:
            return f"{len(names)} {what}, more than the native engine's {MAX_PROPS}"
    if not commuting(c.system.symmetries):
        return "symmetry groups that do not commute (the Python engine closes their orbits)"
    if orbit_size(c.system.symmetries) > MAX_ORBIT:
        return f"symmetry orbits of up to {orbit_size(c.system.symmetries)} states, more than {MAX_ORBIT}"
    if len(c.system.actions) > MAX_ACTIONS:
        return f"{len(c.system.actions)} actions, too many for the native engine"
    return None


def state_words(bits: int) -> int:
    """The 64-bit words of a native state: two (one 128-bit integer) up to 128 bits, else
    as many as the bits need.

    >>> state_words(85), state_words(128), state_words(130), state_words(193)
    (2, 2, 3, 4)
    """
    return max(2, -(-bits // 64))


def orbit_size(symmetries) -> int:
    """The size of the product of the symmetry groups (n! for n interchangeable slots)."""
    size = 1
    for sym in symmetries:
        size *= math.factorial(len(sym.slots))
    return size


def to_c(e: Expr, name: Callable[[str], str], flags: set, truth: bool = False) -> str:
    """C source (int64 arithmetic) for `e`, with Python's value semantics.

    `truth`: only the truth of the result matters (a condition). Python's `a and b` is a
    value (`a` when falsy, else `b`), so over values that are not all 0/1 it becomes a
    conditional expression; over 0/1 values it is `&&`, operands sorted.

    >>> x, y = Var("x"), Var("y")
    >>> to_c(((y == 2) | (x == 1)) & (x < 3), lambda n: n, set(), truth=True)
    '(((x == 1) || (y == 2)) && (x < 3))'
    >>> to_c(Op("or", (x, y)), lambda n: n, set())
    '((x) ? (x) : (y))'
    """

    def sub(a: Expr, t: bool = False) -> str:
        return to_c(a, name, flags, t)

    if isinstance(e, Const):
        return str(e.value) if -(1 << 31) < e.value < (1 << 31) else f"{e.value}LL"
    if isinstance(e, Var):
        return name(e.name)
    op, args = e.op, e.args
    if op in ("and", "or") and (truth or all(is_boolean(a, flags) for a in args)):
        return (
            "("
            + f" {'&&' if op == 'and' else '||'} ".join(sorted(sub(a, True) for a in args))
            + ")"
        )
    if op == "and":  # the first falsy operand (0), else the last
        out = sub(args[-1])
        for a in reversed(args[:-1]):
            out = f"({sub(a, True)} ? {out} : 0)"
        return out
    if op == "or":  # the first truthy operand, else the last
        out = sub(args[-1])
        for a in reversed(args[:-1]):
            out = f"(({sub(a)}) ? ({sub(a)}) : ({out}))"
        return out
    if op == "not":
        return f"(!{sub(args[0], True)})"
    if op == "ite":
        return f"({sub(args[0], True)} ? {sub(args[1], truth)} : {sub(args[2], truth)})"
    return f"({sub(args[0])} {_CMP[op]} {sub(args[1])})"


def st_const(value: int, words: int) -> str:
    """A C expression of the state type for `value` (C has no 128-bit literals).

    >>> st_const(5, 2), st_const(1 << 64 | 3, 2)
    ('((st)0x5ULL)', '(((st)0x1ULL << 64) | 0x3ULL)')
    >>> st_const(1 << 128 | 7, 3)
    '((st){{0x7ULL, 0x0ULL, 0x1ULL}})'
    """
    if words <= 2:
        hi, lo = value >> 64, value & ((1 << 64) - 1)
        return f"(((st){hi:#x}ULL << 64) | {lo:#x}ULL)" if hi else f"((st){lo:#x}ULL)"
    parts = [f"{(value >> (64 * i)) & ((1 << 64) - 1):#x}ULL" for i in range(words)]
    return "((st){{" + ", ".join(parts) + "}})"


class _CGen(_Gen):
    """The Python engine's generator, emitting C: same layout, same tree."""

    def __init__(self, c: Compiled):
        super().__init__(c.system, c.offsets, c.widths)
        self.flags = {v.name for v in c.system.variables if v.size <= 2}
        self.words = state_words(c.bits)
        self.wide = self.words > 2

    def c(self, e: Expr, truth: bool = False) -> str:
        return to_c(e, lambda n: self.names[n], self.flags, truth)

    def const(self, value: int) -> str:
        return st_const(value, self.words)

    def field(self, name: str) -> str:
        """C source of variable `name`'s value in state `s`."""
        off, mask = self.off[name], (1 << self.wid[name]) - 1
        if not self.wide:
            return f"(val)((uint64_t)(s >> {off}) & {mask}ULL)"
        i, b = divmod(off, 64)
        if b + self.wid[name] <= 64:
            return f"(val)((s.w[{i}] >> {b}) & {mask}ULL)"
        return f"(val)(((s.w[{i}] >> {b}) | (s.w[{i + 1}] << {64 - b})) & {mask}ULL)"

    def extract(self, only=None) -> list[str]:
        return [
            f"    {self.names[v.name]} = {self.field(v.name)};"
            for v in self.sys.variables
            if only is None or v.name in only
        ]

    def decls(self, only=None) -> str:
        names = [self.names[v.name] for v in self.sys.variables if only is None or v.name in only]
        # unused: a state's variables are all declared, and an action reads only some
        return f"    __attribute__((unused)) val {', '.join(names)};" if names else ""

    def open_if(self, conjuncts: list[str]) -> str:
        return f"if ({' && '.join(self.c(self.cond_expr[c], True) for c in conjuncts)}) {{"

    def close_if(self) -> list[str]:
        return ["}"]

    def add(self, target: str, name: str, delta: str) -> str:
        """The statement adding `delta` to variable `name`'s field of state `target`."""
        off = self.off[name]
        if not self.wide:
            return f"{target} += SHIFTED({delta}, {off});"
        return f"st_add_at(&{target}, {off // 64}, {off % 64}, {delta});"

    def body(self, i: int) -> list[str]:
        a = self.sys.actions[i]
        if a.cut:
            return ["*cut = 1;"]
        return (
            ["t = s;"]
            + [self.add("t", n, f"{self.c(e)} - {self.names[n]}") for n, e in a.updates.items()]
            + [f"acts[k] = {i}; outs[k++] = t;"]
        )

    def successors_src(self) -> str:
        items = self.guard_items()
        return "\n".join(
            [
                "static int successors(st s, uint32_t *acts, st *outs, int *cut) {",
                self.decls(),
                "    int k = 0;",
                "    st t;",
                "    (void)t;",
                *self.tree(items, 1, set()),
                "    return k;",
                "}",
            ]
        )

    def mask_src(self, fname: str, exprs, negate: bool) -> str:
        used = set().union(*[variables(e) for e in exprs]) if exprs else set()
        lines = [
            f"static uint64_t {fname}(st s) {{",
            self.decls(used),
            *self.extract(used),
            "    uint64_t m = 0;",
            "    (void)s;",
        ]
        for bit, e in enumerate(exprs):
            cond = f"!{self.c(e, True)}" if negate else self.c(e, True)
            lines.append(f"    if ({cond}) m |= {1 << bit}ULL;")
        return "\n".join(lines + ["    return m;", "}"])

    def settled_src(self) -> str:
        used = variables(self.sys.done)
        return "\n".join(
            [
                "static int settled(st s) {",
                self.decls(used),
                *self.extract(used),
                "    (void)s;",
                f"    return {self.c(self.sys.done, True)} ? 1 : 0;",
                "}",
            ]
        )

    def canon_src(self) -> str:
        """`_Gen.canon_src` in C: the least image under the product of the groups (which
        `refusal` has checked commute), one group after another; the memo is in C."""
        used = self.symmetric_vars()
        lines, groups = [], []
        for g, sym in enumerate(self.sys.symmetries):
            n = len(sym.slots)
            perms = [p for p in itertools.permutations(range(n)) if list(p) != list(range(n))]
            groups.append(len(perms))
            for j, perm in enumerate(perms):
                lines += [
                    f"static st perm_{g}_{j}(st s) {{",
                    self.decls(used),
                    *self.extract(used),
                    *self.permuted(sym, perm),
                    "}",
                    "",
                ]
        size = 1
        for k in groups[:-1]:
            size *= k + 1
        lines += [
            "static st canon_raw(st s) {",
            f"    st orbit[{size}], best = s, t;",
            "    uint32_t n = 1, m, i;",
            "    orbit[0] = s;",
            "    (void)t; (void)m;",
        ]
        for g, k in enumerate(groups):
            last = g == len(groups) - 1
            step = (
                "t = perm_{g}_{j}(orbit[i]); if (st_lt(t, best)) best = t;"
                if last
                else "orbit[n++] = perm_{g}_{j}(orbit[i]);"
            )
            lines += [
                "    for (m = n, i = 0; i < m; i++) {",
                *[f"        {step.format(g=g, j=j)}" for j in range(k)],
                "    }",
            ]
        lines += [
            "    for (i = 0; i < n; i++) if (st_lt(orbit[i], best)) best = orbit[i];",
            "    return best;",
            "}",
        ]
        return "\n".join(lines)

    def permuted(self, sym, perm) -> list[str]:
        """`_Gen.permuted` in C: the statements returning the permuted state."""
        moved = {}
        for i, slot in enumerate(sym.slots):
            for src, dst in zip(slot, sym.slots[perm[i]]):
                moved[dst] = self.names[src]
        table = "(const val[]){" + ", ".join(str(p) for p in perm) + "}"
        keep = (1 << sum(self.wid.values())) - 1
        placed = []
        for v in self.sys.variables:
            if v.name in moved:
                src = moved[v.name]
            elif v.name in sym.valued:
                loc = self.names[v.name]
                src = f"({loc} < {len(perm)} ? {table}[{loc}] : {loc})"
            else:
                continue
            keep &= ~(((1 << self.wid[v.name]) - 1) << self.off[v.name])
            placed.append((v.name, src))
        if not self.wide:
            parts = [f"((st)(uint64_t){src} << {self.off[n]})" for n, src in placed]
            return [f"    return {' | '.join([f'(s & {self.const(keep)})'] + parts)};"]
        lines = [f"    st t = st_and(s, {self.const(keep)});"]
        for n, src in placed:
            i, b = divmod(self.off[n], 64)
            lines.append(f"    t.w[{i}] |= (uint64_t){src} << {b};")
            if b + self.wid[n] > 64:
                lines.append(f"    t.w[{i + 1}] |= (uint64_t){src} >> {64 - b};")
        return lines + ["    return t;"]


def _fixed(name: str) -> str:
    return resources.files("toolcommit.checker.engines.explicit").joinpath(name).read_text("utf-8")


def c_source(c: Compiled) -> str:
    """The whole C program for `c` (which `refusal` must accept)."""
    g = _CGen(c)
    sym = bool(c.system.symmetries)
    head = [
        "/* generated by toolcommit from one System: do not edit */",
        f"#define ST_WORDS {g.words}",
        _fixed("native_state.c"),
        f"#define NACTIONS {len(c.system.actions)}",
        f"#define NINV {len(c.invariant_names)}",
        f"#define NWIT {len(c.witness_names)}",
        f"#define NEND {len(c.end_names)}",
        "static const unsigned char FAULT[] = {"
        + ", ".join(str(int(a.fault)) for a in c.system.actions)
        + ", 0};",
        f"#define HAS_SYMMETRY {int(sym)}",
        f"#define SYM_MASK {g.const(g.symmetric_mask() if sym else 0)}",
    ]
    parts = [
        g.successors_src(),
        g.mask_src("violations", [c.system.invariants[n] for n in c.invariant_names], True),
        g.mask_src("witnesses", [c.system.witnesses[n] for n in c.witness_names], False),
        g.mask_src("end_violations", [c.system.ends[n] for n in c.end_names], True),
        g.settled_src(),
        g.canon_src() if sym else "#define canon_raw(s) (s)",
    ]
    return "\n".join(head) + "\n\n" + "\n\n".join(parts) + "\n\n" + _fixed("native_bfs.c")
