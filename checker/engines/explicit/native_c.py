"""Generate the C source of the native explicit engine from a compiled `System`.

The model half is generated here, the way Spin writes `pan.c`: the successor function is
the Python engine's decision tree (`codegen.split_on_shared`, the same conjunct keys, so
the successors come out in the same order and both engines number states alike), the
invariant and witness masks, the settled test and the symmetry candidates, all over a
128-bit packed state with the Python engine's bit layout. The search half (BFS, visited
table, symmetry memo, PROGRESS) is fixed C in `native_bfs.c`, appended verbatim.

The source is deterministic for a given model: `and`/`or` over 0/1 values are emitted
with their operands sorted (the model builds some of them from sets, whose order changes
with string hashing), so the compiled library can be cached by the source's hash.
"""
from __future__ import annotations

import itertools
import math
from importlib import resources
from typing import Callable, Optional

from toolcommit.model.expr import Const, Expr, Op, Var, variables

from toolcommit.checker.engines.explicit.codegen import Compiled, _Gen, commuting, split_on_shared

MAX_BITS = 128
MAX_PROPS = 64        # invariants and witnesses each: one 64-bit mask
MAX_ACTIONS = 1 << 30
MAX_ORBIT = 1 << 16   # the product of the groups' sizes: C enumerates it (on the stack) on a memo miss

_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "add": "+", "sub": "-"}


def refusal(c: Compiled) -> Optional[str]:
    """Why the native engine cannot take `c`, or None when it can."""
    if c.bits > MAX_BITS:
        return f"the state needs {c.bits} bits, more than the native engine's {MAX_BITS}"
    for what, names in (("invariants", c.invariant_names), ("witnesses", c.witness_names),
                        ("end predicates", c.end_names)):
        if len(names) > MAX_PROPS:
            return f"{len(names)} {what}, more than the native engine's {MAX_PROPS}"
    if not commuting(c.system.symmetries):
        return "symmetry groups that do not commute (the Python engine closes their orbits)"
    if orbit_size(c.system.symmetries) > MAX_ORBIT:
        return f"symmetry orbits of up to {orbit_size(c.system.symmetries)} states, more than {MAX_ORBIT}"
    if len(c.system.actions) > MAX_ACTIONS:
        return f"{len(c.system.actions)} actions, too many for the native engine"
    return None


def orbit_size(symmetries) -> int:
    """The size of the product of the symmetry groups (n! for n interchangeable slots)."""
    size = 1
    for sym in symmetries:
        size *= math.factorial(len(sym.slots))
    return size


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
        return "(" + f" {'&&' if op == 'and' else '||'} ".join(sorted(sub(a, True) for a in args)) + ")"
    if op == "and":        # the first falsy operand (0), else the last
        out = sub(args[-1])
        for a in reversed(args[:-1]):
            out = f"({sub(a, True)} ? {out} : 0)"
        return out
    if op == "or":         # the first truthy operand, else the last
        out = sub(args[-1])
        for a in reversed(args[:-1]):
            out = f"(({sub(a)}) ? ({sub(a)}) : ({out}))"
        return out
    if op == "not":
        return f"(!{sub(args[0], True)})"
    if op == "ite":
        return f"({sub(args[0], True)} ? {sub(args[1], truth)} : {sub(args[2], truth)})"
    return f"({sub(args[0])} {_CMP[op]} {sub(args[1])})"


def u128(value: int) -> str:
    """A C expression of type u128 for `value` (C has no 128-bit literals)."""
    hi, lo = value >> 64, value & ((1 << 64) - 1)
    return f"(((u128){hi:#x}ULL << 64) | {lo:#x}ULL)" if hi else f"((u128){lo:#x}ULL)"


class _CGen(_Gen):
    """The Python engine's generator, emitting C: same layout, same tree."""

    def __init__(self, c: Compiled):
        super().__init__(c.system, c.offsets, c.widths)
        self.flags = {v.name for v in c.system.variables if v.size <= 2}

    def c(self, e: Expr, truth: bool = False) -> str:
        return to_c(e, lambda n: self.names[n], self.flags, truth)

    def extract(self, only=None) -> list[str]:
        return [f"    {self.names[v.name]} = (val)((uint64_t)(s >> {self.off[v.name]}) & "
                f"{(1 << self.wid[v.name]) - 1}ULL);"
                for v in self.sys.variables if only is None or v.name in only]

    def decls(self, only=None) -> str:
        names = [self.names[v.name] for v in self.sys.variables if only is None or v.name in only]
        return f"    val {', '.join(names)};" if names else ""

    def open_if(self, conjuncts: list[str]) -> str:
        return f"if ({' && '.join(self.c(self.cond_expr[c], True) for c in conjuncts)}) {{"

    def close_if(self) -> list[str]:
        return ["}"]

    def body(self, i: int) -> list[str]:
        a = self.sys.actions[i]
        if a.cut:
            return ["*cut = 1;"]
        return ["t = s;"] + [f"t += SHIFTED({self.c(e)} - {self.names[n]}, {self.off[n]});"
                             for n, e in a.updates.items()] + [f"acts[k] = {i}; outs[k++] = t;"]

    def successors_src(self) -> str:
        items = self.guard_items()
        return "\n".join([
            "static int successors(u128 s, uint32_t *acts, u128 *outs, int *cut) {",
            self.decls(), "    int k = 0;", "    u128 t;", "    (void)t;",
            *self.tree(items, 1, set()), "    return k;", "}"])

    def mask_src(self, fname: str, exprs, negate: bool) -> str:
        used = set().union(*[variables(e) for e in exprs]) if exprs else set()
        lines = [f"static uint64_t {fname}(u128 s) {{", self.decls(used), *self.extract(used),
                 "    uint64_t m = 0;", "    (void)s;"]
        for bit, e in enumerate(exprs):
            cond = f"!{self.c(e, True)}" if negate else self.c(e, True)
            lines.append(f"    if ({cond}) m |= {1 << bit}ULL;")
        return "\n".join(lines + ["    return m;", "}"])

    def settled_src(self) -> str:
        used = variables(self.sys.done)
        return "\n".join(["static int settled(u128 s) {", self.decls(used), *self.extract(used),
                          "    (void)s;", f"    return {self.c(self.sys.done, True)} ? 1 : 0;", "}"])

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
                lines += [f"static u128 perm_{g}_{j}(u128 s) {{", self.decls(used), *self.extract(used),
                          f"    return {self.permuted(sym, perm)};", "}", ""]
        size = 1
        for k in groups[:-1]:
            size *= k + 1
        lines += ["static u128 canon_raw(u128 s) {",
                  f"    u128 orbit[{size}], best = s, t;", "    uint32_t n = 1, m, i;",
                  "    orbit[0] = s;", "    (void)t; (void)m;"]
        for g, k in enumerate(groups):
            last = g == len(groups) - 1
            step = ("t = perm_{g}_{j}(orbit[i]); if (t < best) best = t;" if last
                    else "orbit[n++] = perm_{g}_{j}(orbit[i]);")
            lines += ["    for (m = n, i = 0; i < m; i++) {",
                      *[f"        {step.format(g=g, j=j)}" for j in range(k)], "    }"]
        lines += ["    for (i = 0; i < n; i++) if (orbit[i] < best) best = orbit[i];",
                  "    return best;", "}"]
        return "\n".join(lines)

    def permuted(self, sym, perm) -> str:
        """`_Gen.permuted` in C."""
        moved = {}
        for i, slot in enumerate(sym.slots):
            for src, dst in zip(slot, sym.slots[perm[i]]):
                moved[dst] = self.names[src]
        table = "(const val[]){" + ", ".join(str(p) for p in perm) + "}"
        keep = (1 << sum(self.wid.values())) - 1
        parts = []
        for v in self.sys.variables:
            if v.name in moved:
                src = moved[v.name]
            elif v.name in sym.valued:
                loc = self.names[v.name]
                src = f"({loc} < {len(perm)} ? {table}[{loc}] : {loc})"
            else:
                continue
            keep &= ~(((1 << self.wid[v.name]) - 1) << self.off[v.name])
            parts.append(f"((u128)(uint64_t){src} << {self.off[v.name]})")
        return " | ".join([f"(s & {u128(keep)})"] + parts)


def runtime_source() -> str:
    """The fixed search half: `native_bfs.c`."""
    return resources.files("toolcommit.checker.engines.explicit").joinpath("native_bfs.c").read_text("utf-8")


def c_source(c: Compiled) -> str:
    """The whole C program for `c` (which `refusal` must accept)."""
    g = _CGen(c)
    sym = bool(c.system.symmetries)
    head = [
        "/* generated by toolcommit from one System: do not edit */",
        "#include <stdint.h>",
        "typedef unsigned __int128 u128;",
        "typedef int64_t val;",
        "#define SHIFTED(d, off) ((u128)(__int128)(val)(d) << (off))",
        f"#define NACTIONS {len(c.system.actions)}",
        f"#define NINV {len(c.invariant_names)}",
        f"#define NWIT {len(c.witness_names)}",
        f"#define NEND {len(c.end_names)}",
        "static const unsigned char FAULT[] = {"
        + ", ".join(str(int(a.fault)) for a in c.system.actions) + ", 0};",
        f"#define HAS_SYMMETRY {int(sym)}",
        f"#define SYM_MASK {u128(g.symmetric_mask()) if sym else '((u128)0)'}",
    ]
    parts = [g.successors_src(),
             g.mask_src("violations", [c.system.invariants[n] for n in c.invariant_names], True),
             g.mask_src("witnesses", [c.system.witnesses[n] for n in c.witness_names], False),
             g.mask_src("end_violations", [c.system.ends[n] for n in c.end_names], True),
             g.settled_src(), g.canon_src() if sym else "#define canon_raw(s) (s)"]
    return "\n".join(head) + "\n\n" + "\n\n".join(parts) + "\n\n" + runtime_source()
