"""The model as Promela, and a Spin BFS of it: the benchmark's outside reference.

The same `System` both our engines compile: one global per variable (same domains and
initial values), one `d_step` option per ground action (the guard, then the updates,
which are simultaneous: ordered so none reads a variable already assigned, or else
through temporaries), in one process's `do` loop marked as a valid end state. Spin has no
symmetry reduction, so it stores every state our engines fold together; invariants are
not asserted (Spin would stop at the first violation), so Spin explores the whole graph,
as our engines do; `spin_run(system, stop_at="I1")` asserts one (a monitor process that
fails when it breaks), and Spin's BFS stops at the first violation, like `check --first`.
"""
from __future__ import annotations

import os
import re
import resource
import subprocess
import tempfile
import time

from toolcommit.model.expr import Const, Expr, Var, variables
from toolcommit.model.system import System
from toolcommit.checker.engines.explicit.native_c import is_boolean

MEMORY_MB = 4096      # pan's memory bound (-DMEMLIM)
TIME_LIMIT = 300.0    # seconds per pan run; past it pan is stopped and the run is incomplete
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
    lines = [f"{'byte' if v.size <= 256 else 'int'} {_name(v.name)} = {system.init[v.name]};"
             for v in system.variables]
    width = max((len(a.updates) for a in system.actions), default=0)
    lines += ["", "active proctype model() {", *[f"int t{i} = 0;" for i in range(width)], "end: do"]
    for a in system.actions:
        if not a.cut:
            body = "; ".join([f"({to_promela(a.guard, flags, True)})", *_assignments(a.updates, flags)])
            lines.append(f"  :: d_step {{ {body} }}")
    lines += ["od", "}", ""]
    if assert_invariant:
        holds = to_promela(system.invariants[assert_invariant], flags, True)
        lines += ["active proctype monitor() {", f"  atomic {{ !({holds}) -> assert(false) }}", "}", ""]
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
    return ([f"t{i} = {to_promela(updates[n], flags)}" for i, n in enumerate(names)]
            + [f"{_name(n)} = t{i}" for i, n in enumerate(names)] + [f"t{i} = 0" for i in range(len(names))])


def spin_run(system: System, stop_at: str = "") -> dict:
    """Generate, compile (-DBFS -DSAFETY) and run pan on `system`; its own statistics.

    pan runs twice: first to count the states, then with a hash table of about twice that
    many slots (-w), which is the run reported.
    """
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "model.pml"), "w") as f:
            f.write(promela(system, stop_at))
        subprocess.run(["spin", "-a", "model.pml"], cwd=tmp, check=True, capture_output=True)
        subprocess.run(["cc", "-O2", "-DBFS", "-DSAFETY", "-DNOBOUNDCHECK", f"-DMEMLIM={MEMORY_MB}",
                        "-o", "pan", "pan.c"], cwd=tmp, check=True, capture_output=True)
        first = _pan(tmp, 18)
        if not first["complete"] or stop_at:
            return first
        return _pan(tmp, max(18, first["states"].bit_length() + 1))


def _pan(folder: str, w: int) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        out = subprocess.run(["./pan", f"-w{w}"], cwd=folder, capture_output=True, text=True,
                             timeout=TIME_LIMIT).stdout
    except subprocess.TimeoutExpired:
        return {"error": f"spin: no result within {TIME_LIMIT:g} s", "complete": False}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)

    def num(pattern: str) -> float:
        return float(re.search(pattern, out).group(1))

    states = int(num(r"(\d+) states, stored"))
    return {"states": states, "transitions": int(num(r"(\d+) transitions")),
            "depth": int(num(r"depth reached (\d+)")), "wall_s": wall,
            "complete": "MEMLIM" not in out and "out of memory" not in out,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "bytes_per_state": num(r"([\d.]+)\s+total actual memory usage") * 1048576 / states,
            "errors": int(num(r"errors: (\d+)")), "w": w}
