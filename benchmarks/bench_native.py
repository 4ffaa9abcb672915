"""Benchmark (not a test): the native explicit engine against the Python engine, and Spin.

Each run is a fresh subprocess, so peak memory is that run's own: peak RSS minus the RSS
after building the model and loading the compiled engine (the interpreter, z3 and the
model excluded; the compile is measured separately, in an empty cache). Where Spin is
installed (`apt-get install spin`), the same model goes through it too (`spin.py` on the
Promela of `toolcommit export --format promela`: the same variables and guarded commands,
no symmetry reduction, Spin's BFS).

    python benchmarks/bench_native.py                 # the table in RESULTS-native.md
    python benchmarks/bench_native.py naive default workers=3
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

W4 = "workers=4,crashes=3,max_fence=5,delays=3,ack_losses=3,lease_expiries=3"
W5 = "workers=5,crashes=4,max_fence=6,delays=4,ack_losses=4,lease_expiries=4,cancels=2"
W3 = "workers=3,max_fence=4,crashes=2"  # naive: 131-bit states (the C engine's wide state)
RUNS = [
    ("naive", "default", ""),
    ("seed", "default", ""),
    ("recommended", "default", ""),
    ("recommended", "default", W4),
    ("recommended", "default", W5),
    ("naive", "default", W3),
]
NO_SPIN = {("naive", "default", W3)}  # unreduced, its three workers' orbits: past Spin's limit
PYTHON_LIMIT = 600.0  # seconds; the Python engine stops there, incomplete


def _compiled(preset_name: str, inst_name: str, bounds: str):
    from toolcommit.checker.engines.explicit.codegen import compile_system
    from toolcommit.model.instance import instance, parse_bounds
    from toolcommit.model.knobs import preset
    from toolcommit.model.semantics import build

    return compile_system(
        build(preset(preset_name), instance(inst_name).with_bounds(parse_bounds(bounds)))
    )


def child(engine: str, preset_name: str, inst_name: str, bounds: str) -> dict:
    from toolcommit.checker.engines.explicit.explore import explore
    from toolcommit.checker.engines.explicit.native import explore_native, library

    c = _compiled(preset_name, inst_name, bounds)
    if engine == "native":
        lib, why = library(c)
        if lib is None:
            return {"error": why}
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0, c0 = time.perf_counter(), time.process_time()
    ex = explore_native(c, lib=lib) if engine == "native" else explore(c, timeout=PYTHON_LIMIT)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "states": ex.state_count,
        "transitions": ex.transitions,
        "depth": ex.depth,
        "complete": ex.complete,
        "bits": c.bits,
        "wall_s": wall,
        "cpu_s": cpu,
        "bytes_per_state": (peak - base) / ex.state_count,
    }


def compile_child(preset_name: str, inst_name: str, bounds: str) -> dict:
    """Generate and compile the engine into an empty cache: the first-use cost."""
    from toolcommit.checker.engines.explicit.native import library

    c = _compiled(preset_name, inst_name, bounds)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = tmp
        t0 = time.perf_counter()
        lib, why = library(c)
        wall = time.perf_counter() - t0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"compile_wall_s": wall, "compile_cpu_s": kids.ru_utime + kids.ru_stime, "error": why}


def _run(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def _row(p, i, b, engine, r, ref) -> str:
    if "error" in r:
        return f"| {p} | {i}{f' ({b})' if b else ''} | {engine} | {r['error']} |"
    rate = r["states"] / r["cpu_s"]
    speed = f"{rate / ref:.0f}x" if ref and engine != "python" else ""
    done = "" if r["complete"] else " (incomplete: limit)"
    return (
        f"| {p} | {i}{f' ({b})' if b else ''} | {engine} | {r['states']:,}{done} | "
        f"{r['transitions']:,} | {r['depth']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
        f"{rate:,.0f} | {r['bytes_per_state']:.0f} | {speed} |"
    )


def main(argv) -> int:
    if argv and argv[0] == "--child":
        print(json.dumps(child(*argv[1:5])))
        return 0
    if argv and argv[0] == "--compile":
        print(json.dumps(compile_child(*argv[1:4])))
        return 0
    if argv and argv[0] == "--spin":
        from spin import spin_run

        print(json.dumps(spin_run(_compiled(*argv[1:4]).system)))
        return 0
    runs = [tuple(argv[:2]) + (argv[2] if len(argv) > 2 else "",)] if argv else RUNS
    spin = shutil.which("spin") is not None
    print(
        "| preset | instance | engine | states | transitions | depth | wall s | CPU s | "
        "states/CPU-s | bytes/state | vs Python |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    compiles = []
    for p, i, b in runs:
        py = _run("--child", "python", p, i, b)
        ref = py["states"] / py["cpu_s"]
        print(_row(p, i, b, "python", py, None), flush=True)
        compiles.append((p, i, b, _run("--compile", p, i, b)))
        print(_row(p, i, b, "native", _run("--child", "native", p, i, b), ref), flush=True)
        if spin and (p, i, b) not in NO_SPIN:
            print(_row(p, i, b, "spin", _run("--spin", p, i, b), ref), flush=True)
    print("\nFirst use (generate and compile into an empty cache):\n")
    print("| preset | instance | compile wall s | compiler CPU s |")
    print("|---|---|---:|---:|")
    for p, i, b, r in compiles:
        print(
            f"| {p} | {i}{f' ({b})' if b else ''} | {r['compile_wall_s']:.2f} | {r['compile_cpu_s']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
