"""Spin, run on the model (the benchmarks' outside reference): the Promela program of
`toolcommit export --format promela` (`toolcommit.checker.render.promela`), compiled with
-DBFS -DSAFETY and run; pan's own statistics.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import tempfile
import time

from toolcommit.checker.render.promela import promela
from toolcommit.model.system import System

MEMORY_MB = 4096  # pan's memory bound (-DMEMLIM)
TIME_LIMIT = 300.0  # seconds per pan run; past it pan is stopped and the run is incomplete


def spin_run(system: System, stop_at: str = "") -> dict:
    """Spin on `system` (with a monitor of invariant `stop_at`, if named): `run_promela`."""
    return run_promela(promela(system, stop_at), stop_at=bool(stop_at))


def run_promela(program: str, stop_at: bool = False) -> dict:
    """Compile (-DBFS -DSAFETY) and run pan on a Promela `program`; its own statistics.

    pan runs twice: first to count the states, then with a hash table of about twice that
    many slots (-w), which is the run reported (once only when the program asserts an
    invariant, `stop_at`: the search stops at its first violation).
    """
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "model.pml"), "w") as f:
            f.write(program)
        subprocess.run(["spin", "-a", "model.pml"], cwd=tmp, check=True, capture_output=True)
        subprocess.run(
            [
                "cc",
                "-O2",
                "-DBFS",
                "-DSAFETY",
                "-DNOBOUNDCHECK",
                f"-DMEMLIM={MEMORY_MB}",
                "-o",
                "pan",
                "pan.c",
            ],
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        first = _pan(tmp, 18)
        if not first["complete"] or stop_at:
            return first
        return _pan(tmp, max(18, first["states"].bit_length() + 1))


def _pan(folder: str, w: int) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        out = subprocess.run(
            ["./pan", f"-w{w}"], cwd=folder, capture_output=True, text=True, timeout=TIME_LIMIT
        ).stdout
    except subprocess.TimeoutExpired:
        return {"error": f"spin: no result within {TIME_LIMIT:g} s", "complete": False}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)

    def num(pattern: str) -> float:
        return float(re.search(pattern, out).group(1))

    states = int(num(r"(\d+) states, stored"))
    return {
        "states": states,
        "transitions": int(num(r"(\d+) transitions")),
        "depth": int(num(r"depth reached (\d+)")),
        "wall_s": wall,
        "complete": "MEMLIM" not in out and "out of memory" not in out,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "bytes_per_state": num(r"([\d.]+)\s+total actual memory usage") * 1048576 / states,
        "errors": int(num(r"errors: (\d+)")),
        "w": w,
    }
