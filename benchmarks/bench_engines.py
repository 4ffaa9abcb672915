"""Engines on growing instances: time to the first I1 counterexample (naive) and to a proof
or clean pass of I1 and FENCE (recommended), per engine, in one run: the explicit search
by the native (C) engine and by the Python engine (its oracle), Spin on the same model
where `spin` is on PATH (`spin.py`: the Promela of `toolcommit export --format promela`),
bounded SMT, k-induction, PDR and simulation.
Not a test: timings depend on the machine. Writes benchmarks/RESULTS-engines.md.

    python benchmarks/bench_engines.py            # every size (about 10 minutes)
    python benchmarks/bench_engines.py --quick    # the two smallest sizes

Times are CPU seconds of the search (our engines: this process; Spin: pan's own, its
compile excluded; ours exclude building the model and loading the compiled engine). The
explicit engines stop at the first I1 violation on naive (`Limits(first=True)`, as
`check --first`), and Spin's BFS stops at its first assertion failure. An engine that hits
its limit on one size is not run on the larger ones ("stops scaling").
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from toolcommit.checker.engines import simulate
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.engine import stop_when
from toolcommit.checker.engines.explicit.explore import explore
from toolcommit.checker.engines.explicit.native import explore_native, library
from toolcommit.checker.engines.smt import bmc, induction
from toolcommit.checker.engines.verdict import Status
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build

sys.path.insert(0, str(Path(__file__).parent))
from spin import spin_run  # noqa: E402

SIZES = [
    ("S1 default", {}),
    ("S2 w3 f4 c2", {"workers": 3, "crashes": 2, "max_fence": 4}),
    (
        "S3 w3 f4 faults2",
        {
            "workers": 3,
            "crashes": 2,
            "max_fence": 4,
            "delays": 2,
            "ack_losses": 2,
            "lease_expiries": 2,
        },
    ),
    (
        "S4 w4 f5 faults3",
        {
            "workers": 4,
            "crashes": 3,
            "max_fence": 5,
            "delays": 3,
            "ack_losses": 3,
            "lease_expiries": 3,
        },
    ),
]
LIMIT = {
    "native": 60.0,
    "python": 60.0,
    "spin": 120.0,
    "bmc": 60.0,
    "kind": 60.0,
    "pdr": 90.0,
    "random": 60.0,
}
PROPS = ["I1", "FENCE"]


def timed(fn):
    t0 = time.process_time()
    out = fn()
    return out, time.process_time() - t0


def explicit_run(engine: str, system, first: bool, graph: bool = False, limit: bool = True):
    """(exploration, CPU s) or (reason it did not run, None)."""
    c = compile_system(system)
    stop = stop_when(c, ["I1"]) if first else None
    if engine == "python":
        return timed(lambda: explore(c, timeout=LIMIT["python"] * limit, graph=graph, stop=stop))
    lib, why = library(c)
    if lib is None:
        return why, None
    return timed(
        lambda: explore_native(c, timeout=LIMIT["native"] * limit, graph=graph, lib=lib, stop=stop)
    )


def cell_explicit(engine, system, want_violation):
    ex, s = explicit_run(engine, system, want_violation)
    if s is None:
        return f"refused ({ex})", False, None
    rate = ex.state_count / max(s, 1e-6)
    if not ex.complete and not ex.early:
        return f"limit ({ex.state_count:,} states, depth {ex.depth})", False, None
    if want_violation:
        sid = ex.first_violation.get("I1")
        return (
            (
                f"{s:.2f}s, x{ex.depth_of(sid)} ({ex.state_count:,} states)"
                if sid is not None
                else f"{s:.2f}s, no violation"
            ),
            True,
            s,
        )
    ok = not any(p in ex.first_violation for p in PROPS)
    return (
        (
            f"{s:.2f}s {'exhaustive' if ok else 'VIOLATED'} ({ex.state_count:,} states, "
            f"{rate:,.0f}/s)"
        ),
        True,
        s,
    )


def cell_spin(system, want_violation):
    r = spin_run(system, "I1" if want_violation else "")
    if "error" in r:
        return r["error"], False, None
    s = r["cpu_s"]
    if not r["complete"]:
        return f"limit ({r['states']:,} states)", False, None
    if want_violation:
        return (
            (
                f"{s:.2f}s, x{r['depth']} ({r['states']:,} states)"
                if r["errors"]
                else f"{s:.2f}s, no violation"
            ),
            True,
            s,
        )
    return f"{s:.2f}s exhaustive ({r['states']:,} states, no symmetry)", True, s


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
    engines = [e for e in LIMIT if e != "spin" or shutil.which("spin")]
    rows = []
    alive = {(g, e): True for g in ("naive", "recommended") for e in engines}
    for label, bounds in sizes:
        inst = instance("default").with_bounds(bounds)
        for goal in ("naive", "recommended"):
            system = build(preset(goal), inst)
            cells, secs = {}, {}
            for engine in engines:
                if not alive[(goal, engine)] or (goal == "naive" and engine == "pdr"):
                    cells[engine] = "-" if goal == "naive" and engine == "pdr" else "skipped"
                    continue
                print(f"{label} {goal} {engine} ...", flush=True)
                want = goal == "naive"
                props = ["I1"] if want else PROPS
                if engine in ("native", "python"):
                    text, ok, secs[engine] = cell_explicit(engine, system, want)
                elif engine == "spin":
                    text, ok, secs[engine] = cell_spin(system, want)
                elif engine == "bmc":
                    vs, s = timed(
                        lambda: bmc.check(system, props, 12 if want else 20, LIMIT["bmc"])
                    )
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
            rows.append(
                (
                    label,
                    len(system.variables),
                    len([a for a in system.actions if not a.cut]),
                    goal,
                    cells,
                    secs,
                )
            )
    full = full_bfs(engines)
    write(rows, engines, full)


def ratio(a, b) -> str:
    return (
        f"{b / a:.0f}x"
        if a and b and a > 0.005
        else ("-" if not (a and b) else "(too fast to time)")
    )


def full_bfs(engines) -> list:
    """naive default explored to the end (no assertion) against stopping at the first I1."""
    system = build(preset("naive"), instance("default"))
    out = []
    for engine in [e for e in ("native", "python", "spin") if e in engines]:
        print(f"full BFS naive default {engine} ...", flush=True)
        if engine == "spin":
            r = spin_run(system)
            out.append((engine, r["states"], r["cpu_s"], r["complete"]))
        else:
            ex, s = explicit_run(engine, system, False, graph=True, limit=False)
            out.append((engine, ex.state_count, s, ex.complete))
    return out


def write(rows, engines, full) -> None:
    out = [
        "# Engines on growing instances",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs shared with other jobs while this "
        f"ran, Python {platform.python_version()}; one run of `python benchmarks/bench_engines.py`. "
        f"Limits per cell: "
        + ", ".join(f"{e} {s:g}s" for e, s in LIMIT.items() if e in engines)
        + ".",
        "",
        "Times are CPU seconds of the search alone (read them as orders of magnitude: other jobs "
        "shared the two cores). naive: time to the first I1 counterexample (xN = its length), "
        "each explicit engine stopping there (`check --first`) and Spin's BFS at its first "
        "assertion failure. recommended: time to a proof (kind, pdr) or a clean pass of I1 and "
        "FENCE (native, python, spin: exhaustive; bmc: up to depth 20; random: 1000 runs of up "
        "to 60 steps, not a proof). Our engines reduce by symmetry (orbits of interchangeable "
        "workers and calls); Spin has no symmetry reduction, so it stores more states. "
        "'skipped' = the engine hit its limit, or was refused, on a smaller size; 'refused' = the native engine "
        "cannot take the instance (the Python engine answers it, as `check` does).",
        "",
        "Sizes are `default` with `--bounds`: S2 = workers=3,crashes=2,max_fence=4; S3 = S2 plus "
        "delays=2,ack_losses=2,lease_expiries=2; S4 = workers=4,crashes=3,max_fence=5 and 3 of "
        "each of those faults.",
        "",
        "| size | vars | actions | preset | " + " | ".join(engines) + " |",
        "|---|---|---|---|" + "---|" * len(engines),
    ]
    for label, nv, na, goal, cells, _ in rows:
        out.append(
            f"| {label} | {nv} | {na} | {goal} | " + " | ".join(cells[e] for e in engines) + " |"
        )
    out += [
        "",
        "Ratios in this run (CPU seconds; a time under 5 ms is not timed): native over "
        "Python, and native over Spin.",
        "",
        "| size | preset | native vs python | native vs spin |",
        "|---|---|---:|---:|",
    ]
    for label, _, _, goal, _, secs in rows:
        n = secs.get("native")
        out.append(
            f"| {label} | {goal} | {ratio(n, secs.get('python'))} | {ratio(n, secs.get('spin'))} |"
        )
    first = next(
        (c for label, _, _, goal, c, _ in rows if label == "S1 default" and goal == "naive"), {}
    )
    out += [
        "",
        "Stopping at the first I1 violation against the whole BFS, naive `default` "
        "(the whole search keeps the edge list for DEADLOCK and PROGRESS; Spin's asserts nothing):",
        "",
        "| engine | first I1 (stops) | whole BFS |",
        "|---|---|---|",
    ]
    for engine, states, s, complete in full:
        out.append(
            f"| {engine} | {first.get(engine, '-')} | {s:.2f}s, {states:,} states"
            + ("" if complete else " (incomplete: limit)")
            + " |"
        )
    Path(__file__).with_name("RESULTS-engines.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
