"""Benchmark of the explicit engine (not a test): states per second and bytes per state.

Each run is a fresh subprocess, so peak memory is that run's own: peak RSS minus the RSS
after building and compiling the model (the interpreter, z3 and the model itself excluded).

    python benchmarks/bench_explicit.py            # the table in the README
    python benchmarks/bench_explicit.py naive default workers=3
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

RUNS = [
    ("recommended", "default", ""),
    ("seed", "default", ""),
    ("naive", "default", ""),
    (
        "recommended",
        "default",
        "workers=4,crashes=3,max_fence=5,delays=3,ack_losses=3,lease_expiries=3",
    ),
]


def child(preset_name: str, inst_name: str, bounds: str) -> dict:
    from toolcommit.checker.engines.explicit.codegen import compile_system
    from toolcommit.checker.engines.explicit.explore import explore
    from toolcommit.model.instance import instance, parse_bounds
    from toolcommit.model.knobs import preset
    from toolcommit.model.semantics import build

    c = compile_system(
        build(preset(preset_name), instance(inst_name).with_bounds(parse_bounds(bounds)))
    )
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0, c0 = time.perf_counter(), time.process_time()
    ex = explore(c)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "preset": preset_name,
        "instance": inst_name + (f" ({bounds})" if bounds else ""),
        "states": ex.state_count,
        "transitions": ex.transitions,
        "depth": ex.depth,
        "bits": c.bits,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "states_per_cpu_s": round(ex.state_count / cpu),
        "bytes_per_state": round((peak - base) / ex.state_count),
    }


def main(argv) -> int:
    if argv and argv[0] == "--child":
        print(json.dumps(child(*argv[1:4])))
        return 0
    runs = [tuple(argv[:2]) + (argv[2] if len(argv) > 2 else "",)] if argv else RUNS
    print(
        "| preset | instance | states | transitions | depth | state bits | wall s | states/CPU-s | bytes/state |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for p, i, b in runs:
        out = subprocess.run(
            [sys.executable, __file__, "--child", p, i, b],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        r = json.loads(out)
        print(
            f"| {r['preset']} | {r['instance']} | {r['states']:,} | {r['transitions']:,} | {r['depth']} | "
            f"{r['bits']} | {r['wall_s']} | {r['states_per_cpu_s']:,} | {r['bytes_per_state']} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
