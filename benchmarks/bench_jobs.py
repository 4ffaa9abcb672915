"""Benchmark (not a test): the native engine on one thread and on two (`check --jobs`).

- `check`: the whole command (model, search, P4's second search, P5, counterexamples) on
  the 12-million-state instance of issue 22, `--jobs 1` against `--jobs 2`, alternating,
  each run a fresh process, the fastest of `--repeat` counting; the two outputs must be
  the same bytes (the run stops otherwise). Wall clock is the measure; the CPU seconds of
  the process (all its threads) are beside it.
- `explore`: the search alone (`explore_native`, the graph kept) on instances of several
  sizes and widths, the same alternation; with two threads, also the "critical path": per
  parallel step the CPU seconds of the busier thread, summed, plus the CPU seconds outside
  the search (handing the result to Python): what two threads would take on two idle
  cores (on a shared machine a thread also waits for a core). Its ratio is one thread's
  CPU seconds over it.

    python benchmarks/bench_jobs.py [--repeat 2] [--only check|explore]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

BIG = (
    "seed",
    ["on_restart=replay_chat", "on_ack=record", "cancel_api=log", "lease=expiring"],
    "default",
    "workers=3,crashes=2,max_fence=4,delays=2",
)
EXPLORE = [
    ("naive", "default", ""),
    ("seed", "default", ""),
    (
        "recommended",
        "default",
        "workers=5,crashes=4,max_fence=6,delays=4,ack_losses=4,lease_expiries=4,cancels=2",
    ),
    ("naive", "default", "workers=3,max_fence=4,crashes=2"),
    (
        "seed+on_restart=replay_chat+on_ack=record+cancel_api=log+lease=expiring",
        "default",
        "workers=3,crashes=2,max_fence=4,delays=2",
    ),
]


def big_argv(jobs: int) -> list[str]:
    """The command line that checks BIG with `jobs` workers."""
    preset, sets, inst, bounds = BIG
    return [
        sys.executable,
        "-m",
        "toolcommit.checker.cli",
        "check",
        "--preset",
        preset,
        *[x for s in sets for x in ("--set", s)],
        "--instance",
        inst,
        "--bounds",
        bounds,
        "--jobs",
        str(jobs),
        "--explain",
        "none",
    ]


def check_once(jobs: int) -> tuple[float, float, bytes, int]:
    argv = big_argv(jobs)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, env=dict(os.environ, TOOLCOMMIT_ENGINE="native")
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout, done.returncode


def explore_child(label: str, inst: str, bounds: str, jobs: int) -> dict:
    from toolcommit.checker.engines.explicit.codegen import compile_system
    from toolcommit.checker.engines.explicit.native import explore_native, library
    from toolcommit.model.environment import from_label
    from toolcommit.model.instance import instance, parse_bounds
    from toolcommit.model.semantics import build

    c = compile_system(build(from_label(label), instance(inst).with_bounds(parse_bounds(bounds))))
    lib, why = library(c)
    if lib is None:
        return {"error": why}
    t0, c0 = time.perf_counter(), time.process_time()
    ex = explore_native(c, lib=lib, jobs=jobs)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    # on idle cores: the parallel steps' busiest threads, plus what is not the search
    # (handing the result to Python), which one thread and two do alike
    return {
        "states": ex.state_count,
        "depth": ex.depth,
        "bits": c.bits,
        "wall": wall,
        "cpu": cpu,
        "critical": sum(ex.phase_seconds) + (cpu - ex.search_cpu),
    }


def _explore(label, inst, bounds, jobs) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", label, inst, bounds, str(jobs)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _load() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", choices=("check", "explore"))
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(explore_child(a.child[0], a.child[1], a.child[2], int(a.child[3]))))
        return 0
    if a.only in (None, "check"):
        best: dict = {}
        outputs = set()
        for _ in range(a.repeat):
            for jobs in (1, 2):
                wall, cpu, out, rc = check_once(jobs)
                outputs.add((out, rc))
                if jobs not in best or wall < best[jobs][0]:
                    best[jobs] = (wall, cpu, _load())
        if len(outputs) != 1:
            print("the outputs of --jobs 1 and --jobs 2 differ", file=sys.stderr)
            return 1
        states = next(
            line
            for line in next(iter(outputs))[0].decode().splitlines()
            if line.startswith("default")
        )
        print(
            f"check {BIG[0]}+{'+'.join(BIG[1])} --instance {BIG[2]} --bounds {BIG[3]}: "
            f"{' '.join(states.split()[1:3])} (states, depth); outputs identical\n"
        )
        print("| --jobs | wall s | CPU s | load (1 min) |\n|---:|---:|---:|---|")
        for jobs, (wall, cpu, load) in sorted(best.items()):
            print(f"| {jobs} | {wall:.2f} | {cpu:.2f} | {load} |")
        print(f"\n--jobs 2 is {best[1][0] / best[2][0]:.2f}x --jobs 1 (wall clock)\n", flush=True)
    if a.only in (None, "explore"):
        print(
            "| preset | instance | bits | states | depth | 1 thread: wall s | CPU s | "
            "2 threads: wall s | CPU s | critical path s | wall ratio | critical ratio |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for label, inst, bounds in EXPLORE:
            runs: dict = {}
            for _ in range(a.repeat):
                for jobs in (1, 2):
                    r = _explore(label, inst, bounds, jobs)
                    if "error" in r:
                        print(f"| {label} | {inst} | {r['error']} |")
                        break
                    if jobs not in runs or r["wall"] < runs[jobs]["wall"]:
                        runs[jobs] = r
            if len(runs) < 2:
                continue
            one, two = runs[1], runs[2]
            name = f"{inst}" + (f" ({bounds})" if bounds else "")
            print(
                f"| {label} | {name} | {one['bits']} | {one['states']:,} | {one['depth']} | "
                f"{one['wall']:.2f} | {one['cpu']:.2f} | {two['wall']:.2f} | {two['cpu']:.2f} | "
                f"{two['critical']:.2f} | {one['wall'] / two['wall']:.2f} | "
                f"{one['cpu'] / two['critical']:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
