"""The shared native engine: one compiled library per state width serves every model.

The native engine (`native`) compiles each model to C, about a second of the C compiler per
model; a design question (`ask`) judges dozens of models and `design` hundreds, each small.
Here the model half is not generated C but data: `encode` turns a `Compiled` into a program
(an array of int64: the same decision tree over the same guard conjuncts as `native_c`,
expressions as postfix code), and `native_vm.c` interprets it, put before the unchanged
search half (`native_bfs.c`). The library is built once per (state words, symmetry) and
cached like the others (`cbuild`), so a search starts without compiling.

It gives the same exploration as `native` and the Python engine, state for state (a test
compares them field by field); it runs the search slower than a model's own C (the tree
and the expressions are interpreted), so it serves many small searches (`Explicit.shared`),
and `check`, one model searched long, keeps its own compiled C.
"""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import platform
from array import array
from importlib import resources
from typing import Optional

from toolcommit.checker.cbuild import cache_dir, compiler, verified
from toolcommit.model.expr import Const, Expr, Var

from .codegen import Compiled, _Gen, split_on_shared
from .native import ABI, _configure
from .native_c import refusal, state_words

FLAGS = ("-O2", "-shared", "-fPIC", "-pthread", "-w")  # built once: the fastest search
VM_VARS = 1024  # native_vm.c: the most variables a model may have
VM_STACK = 256  # native_vm.c: the deepest expression stack
_E = {
    name: i
    for i, name in enumerate(
        (
            "end",
            "const",
            "var",
            "eq",
            "ne",
            "lt",
            "le",
            "add",
            "sub",
            "not",
            "and",
            "or",
            "ite",
            "var_eq",
            "var_ne",
        )
    )
}
_CONST, _VAR, _VAR_EQ, _VAR_NE = _E["const"], _E["var"], _E["var_eq"], _E["var_ne"]
_T_END, _T_IF, _T_EMIT, _T_CUT, _T_IF_EQ, _T_IF_NE = range(6)
_HEADER = 18  # native_vm.c: H_LEN
_loaded: dict[str, tuple] = {}


class Program:
    """A model encoded for `native_vm.c`: `words` (int64 each), held as a ctypes array."""

    def __init__(self, words: list[int]):
        self.words = array("q", words)
        self.array = (ctypes.c_int64 * len(words)).from_buffer(self.words)


def _expr_code(e: Expr, index: dict, out: list, memo: dict) -> int:
    """Append `e`'s postfix code to `out`; the deepest stack it needs. A subexpression met
    before (the same object: a model shares some) is copied from where `memo` says it was
    put, id -> (start, end, depth) in `out`: postfix code does not depend on its place."""
    if isinstance(e, Const):
        out += [_E["const"], int(e.value)]
        return 1
    if isinstance(e, Var):
        out += [_E["var"], index[e.name]]
        return 1
    if e.op in ("eq", "ne") and isinstance(e.args[0], Var) and isinstance(e.args[1], Const):
        out += [_E["var_" + e.op], index[e.args[0].name], int(e.args[1].value)]
        return 1
    hit = memo.get(id(e))
    if hit is not None:
        out += out[hit[0] : hit[1]]
        return hit[2]
    start, depth = len(out), 0
    for k, a in enumerate(e.args):
        # the leaves inline (most arguments are one): the same code as the cases above
        if isinstance(a, Const):
            out += (_CONST, int(a.value))
            d = 1
        elif isinstance(a, Var):
            out += (_VAR, index[a.name])
            d = 1
        else:
            x = a.args
            if (a.op == "eq" or a.op == "ne") and isinstance(x[0], Var) and isinstance(x[1], Const):
                out += (_VAR_EQ if a.op == "eq" else _VAR_NE, index[x[0].name], int(x[1].value))
                d = 1
            else:
                d = _expr_code(a, index, out, memo)
        if k + d > depth:
            depth = k + d
    if e.op in ("and", "or"):
        out += [_E[e.op], len(e.args)]
    elif e.op in _E:
        out.append(_E[e.op])
    else:
        raise ValueError(f"operator {e.op} is not in the shared engine")
    memo[id(e)] = (start, len(out), depth)
    return depth


def encode(c: Compiled) -> Optional[Program]:
    """`c` as a program for `native_vm.c`, or None when it cannot take `c` (too many
    variables, an expression too deep; the model's own C serves it then)."""
    system = c.system
    names = [v.name for v in system.variables]
    if len(names) > VM_VARS:
        return None
    index = {n: i for i, n in enumerate(names)}
    expr: list[int] = []
    seen: dict[int, int] = {}  # id of an expression (all alive: the system holds them)
    memo: dict[int, tuple] = {}  # the same, for `_expr_code` (where its code is in `expr`)
    deepest = [0]
    gen = _Gen(system, c.offsets, c.widths)

    def code(e: Expr) -> int:  # each expression object encoded once
        key = id(e)
        if key not in seen:
            seen[key] = len(expr)
            deepest[0] = max(deepest[0], _expr_code(e, index, expr, memo))
            expr.append(_E["end"])
        return seen[key]

    items = gen.guard_items(with_vars=False)
    tree: list[int] = []

    def test(e: Expr) -> int:
        """Append the jump on `e` being false; the index of its target, to fill in."""
        if e.op in ("eq", "ne") and isinstance(e.args[0], Var) and isinstance(e.args[1], Const):
            tree.extend(
                [
                    _T_IF_EQ if e.op == "eq" else _T_IF_NE,
                    index[e.args[0].name],
                    int(e.args[1].value),
                    -1,
                ]
            )
        else:
            tree.extend([_T_IF, code(e), -1])
        return len(tree) - 1

    def emit_tree(items) -> None:  # codegen._Gen.tree, as jumps
        while items:
            split = split_on_shared(items)
            if split is None:
                for i, cs in items:
                    holes = []
                    for conj in cs:
                        holes.append(test(gen.cond_expr[conj]))
                    tree.extend([_T_CUT] if system.actions[i].cut else [_T_EMIT, i])
                    for h in holes:
                        tree[h] = len(tree)
                break
            atom, inside, items = split
            hole = test(gen.cond_expr[atom])
            emit_tree(inside)
            tree[hole] = len(tree)

    emit_tree(items)
    tree.append(_T_END)
    acts: list[int] = []
    updates: list[int] = []
    for a in system.actions:
        acts.append(len(updates))
        pairs = [] if a.cut else list(a.updates.items())
        updates.append(len(pairs))
        for n, e in pairs:
            updates += [index[n], code(e)]
    inv = [len(c.invariant_names)] + [code(system.invariants[n]) for n in c.invariant_names]
    wit = [len(c.witness_names)] + [code(system.witnesses[n]) for n in c.witness_names]
    end = [len(c.end_names)] + [code(system.ends[n]) for n in c.end_names]
    settled = code(system.done)
    if deepest[0] > VM_STACK:
        return None
    words = max(2, state_words(c.bits))
    groups, orbit = [], 1
    for g, sym in enumerate(system.symmetries):
        ps = [
            p
            for p in itertools.permutations(range(len(sym.slots)))
            if list(p) != list(range(len(p)))
        ]
        groups.append(ps)
        if g < len(system.symmetries) - 1:
            orbit *= len(ps) + 1
    body = [0] * _HEADER
    sections: dict[str, int] = {}

    def section(name: str, data: list[int]) -> None:
        sections[name] = len(body)
        body.extend(data)

    section("vars", [x for n in names for x in (c.offsets[n], c.widths[n])])
    section("fault", [int(a.fault) for a in system.actions])
    section("updates", updates)
    section("acts", [sections["updates"] + x for x in acts])
    section("tree", tree)
    section("expr", expr)
    section("inv", inv)
    section("wit", wit)
    section("end", end)
    perm_at = []
    for g, sym in enumerate(system.symmetries):
        at = []
        for perm in groups[g]:
            at.append(len(body))
            body.extend(_perm_code(gen, sym, perm, index, words))
        perm_at.append(at)
    section("sym", [x for at in perm_at for x in [len(at), *at]])
    mask = gen.symmetric_mask() if system.symmetries else 0
    section("symmask", [_signed((mask >> (64 * i)) & ((1 << 64) - 1)) for i in range(words)])
    header = [
        len(names),
        len(system.actions),
        len(c.invariant_names),
        len(c.witness_names),
        len(c.end_names),
        orbit,
        len(system.symmetries),
        sections["vars"],
        sections["fault"],
        sections["acts"],
        sections["tree"],
        sections["expr"],
        sections["inv"],
        sections["wit"],
        sections["end"],
        settled,
        sections["sym"],
        sections["symmask"],
    ]
    body[:_HEADER] = header
    return Program(body)


def _perm_code(gen: _Gen, sym, perm, index: dict, words: int) -> list[int]:
    """`native_c._CGen.permuted` as data: the keep mask, then per placed variable its
    target, kind (0 moved from `src`; 1 its own value renamed), src, table."""
    moved = {}
    for i, slot in enumerate(sym.slots):
        for src, dst in zip(slot, sym.slots[perm[i]]):
            moved[dst] = src
    keep = (1 << sum(gen.wid.values())) - 1
    placed = []
    for v in gen.sys.variables:
        if v.name in moved:
            placed += [index[v.name], 0, index[moved[v.name]], 0]
        elif v.name in sym.valued:
            placed += [index[v.name], 1, index[v.name], len(perm), *perm]
        else:
            continue
        keep &= ~(((1 << gen.wid[v.name]) - 1) << gen.off[v.name])
    count = sum(1 for v in gen.sys.variables if v.name in moved or v.name in sym.valued)
    return [_signed(keep >> (64 * i)) for i in range(words)] + [count] + placed


def _signed(x: int) -> int:
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >> 63 else x


def _fixed(name: str) -> str:
    return resources.files("toolcommit.checker.engines.explicit").joinpath(name).read_text("utf-8")


def vm_source(words: int, symmetry: bool) -> str:
    """The shared engine's C for states of `words` 64-bit words."""
    return "\n".join(
        [
            "/* the shared native engine of toolcommit: do not edit */",
            f"#define ST_WORDS {words}",
            f"#define HAS_SYMMETRY {int(symmetry)}",
            _fixed("native_state.c"),
            _fixed("native_vm.c"),
            _fixed("native_bfs.c"),
            "int tc_vm_explore(const int64_t *prog, const uint64_t *init_words, uint64_t max_states,",
            "                  double timeout, int graph, int jobs, uint64_t chunk, tc_tick tick,",
            "                  const struct tc_stop *stop, struct tc_out *out) {",
            "    int rc = 1;",
            "    pthread_mutex_lock(&vm_lock);",
            "    if (vm_set(prog))",
            "        rc = tc_explore(init_words, max_states, timeout, graph, jobs, chunk, tick, stop, out);",
            "    pthread_mutex_unlock(&vm_lock);",
            "    return rc;",
            "}",
            "/* the successors of one state (for a counterexample's concrete path): how many, their",
            " * actions in `acts` and their words in `outs` (ST_WORDS each, word 0 first), -1 if the",
            " * program is refused; `cut` set when a cut action is enabled */",
            "int tc_vm_successors(const int64_t *prog, const uint64_t *words, uint32_t *acts,",
            "                     uint64_t *outs, int *cut) {",
            "    int k = -1;",
            "    pthread_mutex_lock(&vm_lock);",
            "    if (vm_set(prog)) {",
            "        st *t = malloc((NACTIONS + 1) * sizeof(st));",
            "        if (t) {",
            "            k = successors(st_from_words(words), acts, t, cut);",
            "            for (int i = 0; i < k; i++) {",
            "#if ST_WORDS <= 2",
            "                outs[2 * i] = (uint64_t)t[i]; outs[2 * i + 1] = (uint64_t)(t[i] >> 64);",
            "#else",
            "                memcpy(outs + ST_WORDS * i, t[i].w, sizeof t[i].w);",
            "#endif",
            "            }",
            "            free(t);",
            "        }",
            "    }",
            "    pthread_mutex_unlock(&vm_lock);",
            "    return k;",
            "}",
            "",
        ]
    )


class Bound:
    """The shared library with one model's program bound: what `native.explore_native`
    calls (`tc_explore` runs the search on the bound model)."""

    def __init__(self, lib, program: Program):
        self.lib, self.program = lib, program

    def __getattr__(self, name):
        return getattr(self.lib, name)

    def tc_explore(self, *args):
        return self.lib.tc_vm_explore(self.program.array, *args)

    def successors(self, c: Compiled, state: int) -> list[tuple[int, int]]:
        """`c.successors(state)`'s moves, [(action, state)], by the shared engine (so a
        counterexample of its search is made concrete without the Python functions)."""
        words, n = max(2, state_words(c.bits)), len(c.system.actions) + 1
        mask = (1 << 64) - 1
        init = (ctypes.c_uint64 * words)(*[(state >> (64 * i)) & mask for i in range(words)])
        acts, outs, cut = (
            (ctypes.c_uint32 * n)(),
            (ctypes.c_uint64 * (n * words))(),
            ctypes.c_int(0),
        )
        k = self.lib.tc_vm_successors(self.program.array, init, acts, outs, ctypes.byref(cut))
        if k < 0:
            raise MemoryError("the shared native engine could not take the model's successors")
        return [
            (acts[i], sum(outs[words * i + j] << (64 * j) for j in range(words))) for i in range(k)
        ]


def library(c: Compiled) -> tuple[Optional[Bound], str]:
    """The shared engine with `c` bound, or (None, why it cannot serve `c`)."""
    why = refusal(c)
    if why:
        return None, why
    program = c.__dict__.get("vm_program")
    if program is None:
        program = c.vm_program = encode(c) or False
    if program is False:
        return None, "the model is too large for the shared engine"
    cc = compiler()
    if cc is None:
        return None, "no C compiler (set CC or install cc)"
    words, sym = max(2, state_words(c.bits)), bool(c.system.symmetries)
    source = vm_source(words, sym)
    key = hashlib.sha256(
        "\0".join([source, *cc, *FLAGS, platform.machine(), str(ABI)]).encode()
    ).hexdigest()[:32]
    if key not in _loaded:
        target = cache_dir() / f"engine-vm-{key}.so"
        with verified(target, source, cc, FLAGS) as (path, why):
            if path is None:
                _loaded[key] = (None, why)
            else:
                try:
                    lib, why = _configure(ctypes.CDLL(path), target)
                except OSError as e:
                    lib, why = None, f"cannot load {target}: {e}"
                if lib is not None:
                    lib.tc_vm_explore.argtypes = [ctypes.c_void_p] + lib.tc_explore.argtypes
                    lib.tc_vm_explore.restype = ctypes.c_int
                    lib.tc_vm_successors.argtypes = [ctypes.c_void_p] * 5
                    lib.tc_vm_successors.restype = ctypes.c_int
                _loaded[key] = (lib, why)
    lib, why = _loaded[key]
    return (None, why) if lib is None else (Bound(lib, program), "")
