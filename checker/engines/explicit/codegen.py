"""Compile a `System` to Python functions over packed-integer states.

A state is one int: each variable owns a bit field. The successor function is generated
source (our own, never anything read from input): all fields are extracted once, then the
guards are tested as a decision tree over their shared conjuncts, so a state with 200
ground actions costs a few dozen comparisons.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from toolcommit.model.expr import Expr, Op, to_python, variables
from toolcommit.model.system import System


@dataclass
class Compiled:
    """Packed-state functions for one System."""

    system: System
    offsets: dict
    widths: dict
    init: int
    successors: Callable  # s -> (list[(action_index, s2)], truncated: bool)
    violations: Callable  # s -> bitmask over invariant_names
    witnesses: Callable  # s -> bitmask over witness_names
    settled: Callable  # s -> bool
    canon: Callable  # s -> least state of its orbit under the symmetries (exact)
    invariant_names: tuple
    witness_names: tuple
    end_violations: Callable = None  # s -> bitmask over end_names (end states only)
    end_names: tuple = ()

    def pack(self, values) -> int:
        s = 0
        for v in self.system.variables:
            s |= values[v.name] << self.offsets[v.name]
        return s

    def unpack(self, s: int) -> dict:
        return {
            v.name: (s >> self.offsets[v.name]) & ((1 << self.widths[v.name]) - 1)
            for v in self.system.variables
        }

    @property
    def bits(self) -> int:
        return sum(self.widths.values())

    def __getattr__(self, name: str):
        """The Python functions `compile_system` left to first use (`LAZY`), and `source`,
        their generated code."""
        loaders = self.__dict__.get("_loaders", {})
        for part, names in LAZY.items():
            if (name in names or name == "source") and part in loaders:
                loaders.pop(part)()
        if name in self.__dict__:
            return self.__dict__[name]
        raise AttributeError(name)


# generated and compiled on first use (a search by a native engine never calls them), in
# two parts: the canonical form (a counterexample needs it), and the rest
LAZY = {
    "canon": ("canon", "groups"),
    "rest": ("successors", "violations", "witnesses", "end_violations", "settled"),
}


def _layout(system: System):
    offsets, widths, off = {}, {}, 0
    for v in system.variables:
        widths[v.name] = max(1, (v.size - 1).bit_length())
        offsets[v.name] = off
        off += widths[v.name]
    return offsets, widths


def _local(name: str, table: dict) -> str:
    return table[name]


def _conjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, Op) and e.op == "and":
        out = []
        for a in e.args:
            out += _conjuncts(a)
        return out
    return [e]


def split_on_shared(items):
    """The conjunct most items share, the items with it (it removed) and those without.

    `items` are (action_index, [conjunct key]); ties go to the conjunct seen first, so the
    tree (and the successor order it fixes) does not depend on string hashing. Returns
    None when no conjunct is shared by two items. Both engines build their decision tree
    with it, so their successors come in the same order.
    """
    counts = Counter(c for _, cs in items for c in dict.fromkeys(cs))
    atom, n = counts.most_common(1)[0] if counts else (None, 0)
    if atom is None or n < 2:
        return None
    inside = [(i, [c for c in cs if c != atom]) for i, cs in items if atom in cs]
    return atom, inside, [(i, cs) for i, cs in items if atom not in cs]


class _Gen:
    def __init__(self, system: System, offsets, widths):
        self.sys, self.off, self.wid = system, offsets, widths
        self.names = {v.name: f"v{i}" for i, v in enumerate(system.variables)}

    def py(self, e: Expr) -> str:
        return to_python(e, lambda n: self.names[n])

    def extract(self, only=None) -> list[str]:
        """Lines binding each variable's local (all, or those named in `only`)."""
        return [
            f"    {self.names[v.name]} = (s >> {self.off[v.name]}) & {(1 << self.wid[v.name]) - 1}"
            for v in self.sys.variables
            if only is None or v.name in only
        ]

    def successor_expr(self, updates) -> str:
        parts = ["s"]
        for name, e in updates.items():
            local = self.names[name]
            parts.append(f"(({self.py(e)}) - {local}) * {1 << self.off[name]}")
        return " + ".join(parts)

    def tree(self, items, indent: int, have: set) -> list[str]:
        """Nested ifs over shared conjuncts; items are (action_index, [conjunct]).

        Variables are extracted lazily: just before the first line on a path that reads
        them (`have` is what the enclosing path has extracted already).
        """
        pad = "    " * indent
        lines: list[str] = []
        have = set(have)
        while items:
            split = split_on_shared(items)
            if split is None:
                for i, cs in items:
                    lines += self.leaf(i, cs, indent, have)
                break
            atom, inside, items = split
            lines += self.need(self.cond_vars[atom], have, indent)
            lines.append(pad + self.open_if([atom]))
            lines += self.tree(inside, indent + 1, have)
            lines += [pad + x for x in self.close_if()]
        return lines

    # the target language's syntax: the only part the C generator (native_c) overrides
    def open_if(self, conjuncts: list[str]) -> str:
        """The line opening a block run when every conjunct (by its source) holds."""
        return f"if {' and '.join(conjuncts)}:"

    def close_if(self) -> list[str]:
        return []

    def body(self, i: int) -> list[str]:
        """The statements of action `i`'s leaf: its successor, or the cut flag."""
        a = self.sys.actions[i]
        return ["trunc = True" if a.cut else f"out.append(({i}, {self.successor_expr(a.updates)}))"]

    def need(self, names, have: set, indent: int) -> list[str]:
        """Extraction lines, at `indent`, for the variables in `names` not yet in `have`."""
        missing = [v.name for v in self.sys.variables if v.name in names and v.name not in have]
        have.update(missing)
        return ["    " * (indent - 1) + line for line in self.extract(set(missing))]

    def leaf(self, i: int, cs: list[str], indent: int, have: set) -> list[str]:
        pad = "    " * indent
        a = self.sys.actions[i]
        lines = self.need(
            set().union(*[self.cond_vars[c] for c in cs]) if cs else set(), have, indent
        )
        inner = set(have)
        used = (
            set()
            if a.cut
            else set(a.updates) | set().union(*[variables(e) for e in a.updates.values()])
        )
        if not cs:
            return lines + self.need(used, have, indent) + [pad + x for x in self.body(i)]
        return lines + [
            pad + self.open_if(cs),
            *self.need(used, inner, indent + 1),
            *[pad + "    " + x for x in self.body(i)],
            *[pad + x for x in self.close_if()],
        ]

    def guard_items(self, with_vars: bool = True) -> list:
        """(action_index, [conjunct source]) for every action whose guard can hold; fills
        `cond_expr` (conjunct source -> its expression) and, `with_vars`, `cond_vars` (its
        variables: what the generated code extracts; the shared engine needs none)."""
        self.cond_vars: dict[str, set] = {}
        self.cond_expr: dict[str, Expr] = {}
        items = []
        for i, a in enumerate(self.sys.actions):
            cs = []
            for c in _conjuncts(a.guard):
                src = self.py(c)
                self.cond_expr[src] = c
                if with_vars:
                    self.cond_vars[src] = variables(c)
                cs.append(src)
            if "0" not in cs:
                items.append((i, [c for c in cs if c != "1"]))
        return items

    def successors_src(self) -> str:
        items = self.guard_items()
        return "\n".join(
            [
                "def successors(s):",
                "    out = []",
                "    trunc = False",
                *self.tree(items, 1, set()),
                "    return out, trunc",
            ]
        )

    def mask_src(self, fname: str, exprs, negate: bool) -> str:
        used = set().union(*[variables(e) for e in exprs]) if exprs else set()
        lines = [f"def {fname}(s):", *self.extract(used), "    m = 0"]
        for bit, e in enumerate(exprs):
            cond = f"not {self.py(e)}" if negate else self.py(e)
            lines.append(f"    if {cond}: m |= {1 << bit}")
        lines.append("    return m")
        return "\n".join(lines)

    def settled_src(self) -> str:
        return "\n".join(
            [
                "def settled(s):",
                *self.extract(variables(self.sys.done)),
                f"    return bool({self.py(self.sys.done)})",
            ]
        )

    def symmetric_vars(self) -> set:
        """Names of the variables some symmetry moves or renames."""
        used = {n for sym in self.sys.symmetries for slot in sym.slots for n in slot}
        return used | {n for sym in self.sys.symmetries for n in sym.valued}

    def symmetric_mask(self) -> int:
        """U: the bits of the variables some symmetry touches."""
        return sum(((1 << self.wid[n]) - 1) << self.off[n] for n in self.symmetric_vars())

    def canon_src(self) -> str:
        """`canon`: the least state of the orbit under the product of the groups.

        The groups commute (`commuting`), so the product is every g1 . g2 . ... . gk with
        gi in group i: the orbit is the initial state's images under group 1, their
        images under group 2, and so on, and its least element is canonical (two states
        get the same value iff a symmetry maps one to the other). When the groups do not
        commute, the images are closed under every permutation until nothing new comes.
        """
        if not commuting(self.sys.symmetries):
            return "\n".join(
                [
                    "def canon(s):",
                    "    orbit, todo = {s}, [s]",
                    "    while todo:",
                    "        t = todo.pop()",
                    "        for group in GROUPS:",
                    "            for p in group:",
                    "                u = p(t)",
                    "                if u not in orbit:",
                    "                    orbit.add(u)",
                    "                    todo.append(u)",
                    "    return min(orbit)",
                ]
            )
        return "\n".join(
            [
                "def canon(s):",
                "    orbit = [s]",
                "    for group in GROUPS:",
                "        orbit += [p(t) for t in orbit for p in group]",
                "    return min(orbit)",
            ]
        )

    def group_src(self) -> str:
        """`GROUPS`: per symmetry, one function per non-identity permutation."""
        used = {n for sym in self.sys.symmetries for slot in sym.slots for n in slot}
        used |= {n for sym in self.sys.symmetries for n in sym.valued}
        lines, groups = [], []
        for g, sym in enumerate(self.sys.symmetries):
            names = []
            for j, perm in enumerate(itertools.permutations(range(len(sym.slots)))):
                if list(perm) == list(range(len(perm))):
                    continue
                names.append(f"_perm_{g}_{j}")
                lines += [
                    f"def _perm_{g}_{j}(s):",
                    *self.extract(used),
                    f"    return {self.permuted(sym, perm)}",
                    "",
                ]
            groups.append("(" + "".join(f"{n}, " for n in names) + ")")
        lines.append("GROUPS = (" + "".join(f"{g}, " for g in groups) + ")")
        return "\n".join(lines)

    def permuted(self, sym, perm) -> str:
        """Source of the state with slot i moved to slot perm[i] and valued vars renamed."""
        moved = {}
        for i, slot in enumerate(sym.slots):
            for src, dst in zip(slot, sym.slots[perm[i]]):
                moved[dst] = self.names[src]
        table = "(" + ", ".join(str(perm[i]) for i in range(len(perm))) + ")"
        keep = (1 << sum(self.wid.values())) - 1
        parts = []
        for v in self.sys.variables:
            if v.name in moved:
                src = moved[v.name]
            elif v.name in sym.valued:
                loc = self.names[v.name]
                src = f"({table}[{loc}] if {loc} < {len(perm)} else {loc})"
            else:
                continue
            keep &= ~(((1 << self.wid[v.name]) - 1) << self.off[v.name])
            parts.append(f"({src} << {self.off[v.name]})")
        return " | ".join([f"(s & {keep})"] + parts)


def commuting(symmetries) -> bool:
    """Whether every two of `symmetries` commute, so their product is a group whose
    elements are one permutation of each taken in turn.

    Sufficient, checked on the variables: no variable is moved by two symmetries or
    renamed by two, and a symmetry renames either every variable of another's slot
    column (the same renaming in every slot, so moving and renaming commute) or none.

    >>> from toolcommit.model.system import Symmetry
    >>> calls = Symmetry("calls", (("p0", "c0"), ("p1", "c1")))
    >>> commuting([calls, Symmetry("workers", (("a0",), ("a1",)), ("c0", "c1"))])
    True
    >>> commuting([calls, Symmetry("workers", (("a0",), ("a1",)), ("c0",))])
    False
    """
    for a, b in itertools.permutations(symmetries, 2):
        moved_a = {n for slot in a.slots for n in slot}
        moved_b = {n for slot in b.slots for n in slot}
        if moved_a & moved_b or set(a.valued) & set(b.valued):
            return False
        for column in zip(*b.slots):
            if len(set(column) & set(a.valued)) not in (0, len(column)):
                return False
    return True


def compile_system(system: System) -> Compiled:
    """The packed-state layout of `system`, its canonical initial state (`least_image`),
    and its Python functions, generated and compiled on first use (`LAZY`):
    a native search (the shared engine, or the model's own C) never calls them."""
    offsets, widths = _layout(system)
    gen = _Gen(system, offsets, widths)
    inv_names = tuple(system.invariants)
    wit_names = tuple(system.witnesses)
    end_names = tuple(system.ends)
    namespace: dict = {}
    c = Compiled(
        system,
        offsets,
        widths,
        0,
        None,
        None,
        None,
        None,
        None,
        inv_names,
        wit_names,
        None,
        end_names,
    )
    for name in LAZY["canon"][:1] + LAZY["rest"]:
        del c.__dict__[name]
    sources: dict = {}

    def load(part: str, src: str) -> None:
        exec(compile(src, "<toolcommit-generated>", "exec"), namespace)  # our own code
        sources[part] = src
        if len(sources) == len(LAZY):
            c.source = "\n\n".join(sources[p] for p in ("rest", "canon"))

    def load_canon() -> None:
        load("canon", "\n\n".join([gen.canon_src(), gen.group_src()]))
        canon = namespace["canon"]
        if system.symmetries:
            canon = memoized_canon(canon, gen.symmetric_mask())
        c.__dict__.update(canon=canon, groups=namespace["GROUPS"])

    def load_rest() -> None:
        load(
            "rest",
            "\n\n".join(
                [
                    gen.successors_src(),
                    gen.mask_src("violations", [system.invariants[n] for n in inv_names], True),
                    gen.mask_src("witnesses", [system.witnesses[n] for n in wit_names], False),
                    gen.mask_src("end_violations", [system.ends[n] for n in end_names], True),
                    gen.settled_src(),
                ]
            ),
        )
        c.__dict__.update({name: namespace[name] for name in LAZY["rest"]})

    c._loaders = {"canon": load_canon, "rest": load_rest}
    c.init = least_image(c, c.pack(system.init))
    return c


def least_image(c: Compiled, s: int) -> int:
    """The least state of `s`'s orbit under the symmetries (what `c.canon(s)` gives),
    computed on the variables' values, without generating code: for the initial state."""
    syms = c.system.symmetries
    if not syms:
        return s
    seen, todo = {s}, [s]
    while todo:
        values = c.unpack(todo.pop())
        for sym in syms:
            for perm in itertools.permutations(range(len(sym.slots))):
                if list(perm) == list(range(len(perm))):
                    continue
                u = c.pack(permuted_values(values, sym, perm))
                if u not in seen:
                    seen.add(u)
                    todo.append(u)
    return min(seen)


def permuted_values(values: dict, sym, perm) -> dict:
    """`_Gen.permuted` on values: slot i moved to slot perm[i], valued variables renamed."""
    moved = {}
    for i, slot in enumerate(sym.slots):
        for src, dst in zip(slot, sym.slots[perm[i]]):
            moved[dst] = src
    out = dict(values)
    for name in values:
        if name in moved:
            out[name] = values[moved[name]]
        elif name in sym.valued:
            x = values[name]
            out[name] = perm[x] if x < len(perm) else x
    return out


def memoized_canon(canon: Callable, mask: int) -> Callable:
    """`canon` with an exact memo: canon(s) = (s & ~U) | canon(s & U), U = `mask`.

    Every symmetry candidate keeps the bits outside U, so candidates compare as their U
    bits do and the least one is found from s & U alone; the memo (a few hundred entries
    on the shipped instances) is keyed on s & U. Same values as `canon`, so the same
    exploration.

    >>> raw = lambda s: min(s, (s & ~3) | (s & 1) << 1 | (s >> 1) & 1)   # swap bits 0 and 1
    >>> fast = memoized_canon(raw, 0b11)
    >>> [fast(s) for s in (0b101, 0b110, 0b1001)] == [raw(s) for s in (0b101, 0b110, 0b1001)]
    True
    """
    memo: dict[int, int] = {}

    def canon_memo(s: int) -> int:
        u = s & mask
        r = memo.get(u)
        if r is None:
            r = memo[u] = canon(u)
        return (s ^ u) | r

    canon_memo.memo, canon_memo.raw = memo, canon  # type: ignore[attr-defined]
    return canon_memo
