"""Engines on growing instances: time to the first I1 counterexample (naive) and to a proof
or clean pass of I1 and FENCE (recommended), per engine. Not a test: timings depend on the
machine. Writes benchmarks/RESULTS-engines.md.

    python benchmarks/bench_engines.py            # every size (about 10 minutes)
    python benchmarks/bench_engines.py --quick    # the two smallest sizes

An engine that hits its limit on one size is not run on the larger ones ("stops scaling").
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from toolcommit.checker.engines import simulate
from toolcommit.checker.engines.smt import bmc, induction
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.explore import explore
from toolcommit.checker.engines.verdict import Status
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build

SIZES = [
    ("S1 default", {}),
    ("S2 w3 f4 c2", {"workers": 3, "crashes": 2, "max_fence": 4}),
    ("S3 w3 f4 faults2", {"workers": 3, "crashes": 2, "max_fence": 4, "delays": 2,
                          "ack_losses": 2, "lease_expiries": 2}),
    ("S4 w4 f5 faults3", {"workers": 4, "crashes": 3, "max_fence": 5, "delays": 3,
                          "ack_losses": 3, "lease_expiries": 3}),
]
LIMIT = {"explicit": 60.0, "bmc": 60.0, "kind": 60.0, "pdr": 90.0, "random": 60.0}
PROPS = ["I1", "FENCE"]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def explicit_run(system):
    c = compile_system(system)
    ex = explore(c, timeout=LIMIT["explicit"], graph=False)
    return ex


def cell_explicit(system, want_violation):
    ex, s = timed(lambda: explicit_run(system))
    if not ex.complete:
        return f"limit ({ex.state_count:,} states, depth {ex.depth})", False
    if want_violation:
        sid = ex.first_violation.get("I1")
        return (f"{s:.1f}s, x{ex.depth_of(sid)} ({ex.state_count:,} states, full BFS)" if sid is not None
                else f"{s:.1f}s, no violation"), True
    ok = not any(p in ex.first_violation for p in PROPS)
    return f"{s:.1f}s {'exhaustive' if ok else 'VIOLATED'} ({ex.state_count:,} states)", True


def cell_verdicts(vs, s, limit):
    if any(v.status is Status.UNKNOWN for v in vs):
        return f"limit ({[v.reason for v in vs if v.status is Status.UNKNOWN][0][:60]})", False
    v = next((v for v in vs if v.status is Status.VIOLATED), None)
    if v is not None:
        return f"{s:.1f}s, x{v.counterexample.length}", True
    return f"{s:.1f}s {vs[0].scope}", s < limit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    sizes = SIZES[:2] if args.quick else SIZES
    rows = []
    alive = {(g, e): True for g in ("naive", "recommended") for e in LIMIT}
    for label, bounds in sizes:
        inst = instance("default").with_bounds(bounds)
        for goal in ("naive", "recommended"):
            system = build(preset(goal), inst)
            cells = {}
            for engine in LIMIT:
                if not alive[(goal, engine)] or (goal == "naive" and engine == "pdr"):
                    cells[engine] = "-" if goal == "naive" and engine == "pdr" else "skipped"
                    continue
                print(f"{label} {goal} {engine} ...", flush=True)
                want = goal == "naive"
                props = ["I1"] if want else PROPS
                if engine == "explicit":
                    text, ok = cell_explicit(system, want)
                elif engine == "bmc":
                    vs, s = timed(lambda: bmc.check(system, props, 12 if want else 20, LIMIT["bmc"]))
                    text, ok = cell_verdicts(vs, s, LIMIT["bmc"])
                elif engine in ("kind", "pdr"):
                    vs, s = timed(lambda: induction.prove(system, props, engine, 12, LIMIT[engine]))
                    text, ok = cell_verdicts(vs, s, LIMIT[engine])
                else:
                    (vs, stats), s = timed(lambda: simulate.check(system, props, 1000, 0, 60))
                    text, ok = cell_verdicts(vs, s, LIMIT["random"])
                    if want and vs[0].status is Status.VIOLATED:
                        text += f" (run {vs[0].extra['first_run'] + 1})"
                    elif not want:
                        text = f"{s:.1f}s, 1000 runs clean (not a proof)"
                alive[(goal, engine)] = ok
                cells[engine] = text
                print("   ", text, flush=True)
            rows.append((label, len(system.variables), len([a for a in system.actions if not a.cut]),
                         goal, cells))
    out = ["# Engines on growing instances", "",
           f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
           f"limits per cell: " + ", ".join(f"{e} {s:g}s" for e, s in LIMIT.items()) + ".",
           "naive: time to the first I1 counterexample (xN = its length). recommended: time to a "
           "proof (kind, pdr) or a bounded/clean pass of I1 and FENCE (explicit: exhaustive; bmc: "
           "up to depth 20; random: 1000 runs of up to 60 steps, not a proof). The explicit engine "
           "always finishes its BFS before reporting, so its naive time is the full exploration. "
           "'skipped' = the engine hit its limit on a smaller size.", "",
           "Sizes are `default` with `--bounds`: S2 = workers=3,crashes=2,max_fence=4; S3 = S2 plus "
           "delays=2,ack_losses=2,lease_expiries=2; S4 = workers=4,crashes=3,max_fence=5 and 3 of "
           "each of those faults.", "",
           "| size | vars | actions | preset | explicit | bmc | kind | pdr | random |",
           "|---|---|---|---|---|---|---|---|---|"]
    for label, nv, na, goal, cells in rows:
        out.append(f"| {label} | {nv} | {na} | {goal} | " + " | ".join(cells[e] for e in LIMIT) + " |")
    Path(__file__).with_name("RESULTS-engines.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
