"""Benchmark (not a test): the commands users wait for, today's code against the base's.

- `ask`: `toolcommit ask late-replay`, cold (each run an empty native cache), the old code
  (the tree of `--base`, by default where this branch left main) and the new alternating;
  their outputs must be the same bytes.
- `design`: `toolcommit design --env email --write F`, the same alternation, on the user's
  native cache (the old code's per-model libraries built by earlier runs; the new code's
  one shared engine); the two design files must be the same bytes as spec/designs/email.json.
- `jobs`: `check --jobs 1` against `--jobs 2` on bench_jobs.py's 13-million-state instance,
  new code, alternating; the outputs must be the same bytes.

Each run is a fresh process; wall clock and the CPU seconds of the process and everything
it waited for (compilers, workers) are recorded, with the load before each run; the median
of `--repeat` runs counts. Writes benchmarks/RESULTS-users.json and appends a table to
benchmarks/RESULTS-current.md.

    python benchmarks/bench_users.py [--repeat 3] [--design-repeat N] [--only ask,design,jobs]
                                     [--base REV]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_jobs import big_argv  # noqa: E402

SPEC_DESIGN = ROOT / "spec" / "designs" / "email.json"
BOUND = 3600  # seconds: no run waits longer


def _load() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


def timed(argv: list[str], env: dict) -> dict:
    """One run of `argv`: wall and CPU seconds (its and its waited-for children's), output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = _load()
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, timeout=BOUND)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return {"wall": wall, "cpu": cpu, "load": load, "out": done.stdout}


def old_tree(rev: str, folder: Path) -> Path:
    """The package as of `rev`, importable from the returned folder (git archive)."""
    pkg = folder / "toolcommit"
    pkg.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True, timeout=120
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(pkg)], input=archive, check=True, timeout=120)
    return folder


def env_for(old: bool, base: Path, cache: str | None) -> dict:
    env = dict(os.environ)
    env.pop("TOOLCOMMIT_ENGINE", None)
    env.pop("TOOLCOMMIT_SHARED", None)
    env.pop("PYTHONPATH", None)
    if old:
        env["PYTHONPATH"] = str(base)
    if cache is None:
        env.pop("XDG_CACHE_HOME", None)
    else:
        env["XDG_CACHE_HOME"] = cache
    return env


def summary(runs: list[dict]) -> dict:
    return {
        "wall": statistics.median(r["wall"] for r in runs),
        "cpu": statistics.median(r["cpu"] for r in runs),
        "walls": [round(r["wall"], 2) for r in runs],
        "cpus": [round(r["cpu"], 2) for r in runs],
        "loads": [r["load"] for r in runs],
    }


def bench_ask(base: Path, repeat: int, tmp: Path) -> dict:
    cli = [sys.executable, "-m", "toolcommit.checker.cli", "ask", "late-replay"]
    runs: dict = {"old": [], "new": []}
    for i in range(repeat):
        for which in ("old", "new"):
            cache = tmp / f"ask-{which}-{i}"
            cache.mkdir()
            runs[which].append(timed(cli, env_for(which == "old", base, str(cache))))
            shutil.rmtree(cache, ignore_errors=True)
    outs = {r["out"] for rs in runs.values() for r in rs}
    if len(outs) != 1:
        raise SystemExit("ask late-replay: the old and the new output differ")
    return {w: summary(rs) for w, rs in runs.items()}


def bench_design(base: Path, repeat: int, tmp: Path) -> dict:
    runs: dict = {"old": [], "new": []}
    want = SPEC_DESIGN.read_bytes()
    for i in range(repeat):
        for which in ("old", "new"):
            target = tmp / f"email-{which}-{i}.json"
            cli = [
                sys.executable,
                "-m",
                "toolcommit.checker.cli",
                "design",
                "--env",
                "email",
                "--write",
                str(target),
            ]
            runs[which].append(timed(cli, env_for(which == "old", base, None)))
            if target.read_bytes() != want:
                raise SystemExit(f"design --env email ({which}) differs from {SPEC_DESIGN}")
    return {w: summary(rs) for w, rs in runs.items()}


def bench_jobs(repeat: int) -> dict:
    runs: dict = {1: [], 2: []}
    for _ in range(repeat):
        for jobs in (1, 2):
            argv = big_argv(jobs)
            runs[jobs].append(
                timed(argv, {**env_for(False, ROOT, None), "TOOLCOMMIT_ENGINE": "native"})
            )
    if len({r["out"] for rs in runs.values() for r in rs}) != 1:
        raise SystemExit("check --jobs 1 and --jobs 2 print different outputs")
    return {str(j): summary(rs) for j, rs in runs.items()}


def table(results: dict, argv: str, base_rev: str, load0: str, load1: str, secs: float) -> str:
    lines = [
        f"\n## users: the commands users wait for, base {base_rev} against this tree\n",
        f"`bench_users.py {argv}` -- load before {load0}, after {load1}, "
        f"{secs:.0f} s. Median of the alternating runs; CPU s counts the process and "
        "what it waited for (compilers, workers); wall clock includes waiting for a core "
        "on this shared machine.\n",
        "| command | code | wall s | CPU s | runs (wall s) | load (1 min) at each run | wall ratio |",
        "|---|---|---:|---:|---|---|---:|",
    ]
    names = {"ask": "ask late-replay (cold cache)", "design": "design --env email (warm cache)"}
    for key in ("ask", "design"):
        if key not in results:
            continue
        r = results[key]
        for which in ("old", "new"):
            ratio = f"{r['old']['wall'] / r['new']['wall']:.1f}x" if which == "new" else ""
            lines.append(
                f"| {names[key]} | {which} | {r[which]['wall']:.2f} | {r[which]['cpu']:.2f} "
                f"| {', '.join(map(str, r[which]['walls']))} | "
                f"{', '.join(x.split()[0] for x in r[which]['loads'])} | {ratio} |"
            )
    if "jobs" in results:
        r = results["jobs"]
        for j in ("1", "2"):
            ratio = f"{r['1']['wall'] / r['2']['wall']:.2f}x" if j == "2" else ""
            lines.append(
                f"| check --jobs {j} (13M states) | new | {r[j]['wall']:.2f} | "
                f"{r[j]['cpu']:.2f} | {', '.join(map(str, r[j]['walls']))} | "
                f"{', '.join(x.split()[0] for x in r[j]['loads'])} | {ratio} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--design-repeat",
        type=int,
        default=0,
        help="repeats of design (default: --repeat); an old run takes minutes",
    )
    ap.add_argument("--only", default="ask,design,jobs")
    ap.add_argument(
        "--base",
        default="",
        help="the old code's revision (default: where HEAD left main, git merge-base HEAD main)",
    )
    ap.add_argument("--no-append", action="store_true", help="do not append to RESULTS-current.md")
    a = ap.parse_args()
    only = set(a.only.split(","))
    rev = (
        a.base
        or subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    short = rev[:7]
    load0, t0 = _load(), time.perf_counter()
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-users-") as tmp_:
        tmp = Path(tmp_)
        base = old_tree(rev, tmp / "old")
        if "ask" in only:
            results["ask"] = bench_ask(base, a.repeat, tmp)
            print(json.dumps(results["ask"]), flush=True)
        if "design" in only:
            results["design"] = bench_design(base, a.design_repeat or a.repeat, tmp)
            print(json.dumps(results["design"]), flush=True)
    if "jobs" in only:
        results["jobs"] = bench_jobs(a.repeat)
        print(json.dumps(results["jobs"]), flush=True)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    md = table(results, " ".join(sys.argv[1:]), short, load0, _load(), time.perf_counter() - t0)
    print(md)
    (HERE / "RESULTS-users.json").write_text(
        json.dumps({"base": rev, "head": head, "repeat": a.repeat, "results": results}, indent=1)
        + "\n"
    )
    if not a.no_append:
        with open(HERE / "RESULTS-current.md", "a", encoding="utf-8") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
