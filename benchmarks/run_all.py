"""Run the benchmarks of benchmarks/ in one sitting and write their tables, each with the
machine's load (the 1-, 5- and 15-minute load averages before and after it) stated.

Not a test. The machine is shared: ratios are taken within one table (the same minutes),
never across tables. Writes benchmarks/RESULTS-current.md (every table of the run, in run
order, with the machine, the commit and the loads); bench_engines.py also rewrites
RESULTS-engines.md as it always did.

    python benchmarks/run_all.py [--logs DIR] [--skip NAME ...]

DIR keeps the generated logs (1M and 10M lines, 1M writers) between runs.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def steps(logs: Path) -> list[tuple[str, str, list[str]]]:
    """(name, what it measures, command) in run order."""
    py = sys.executable
    return [
        (
            "native",
            "explicit engines: Python, C (one thread), Spin; first-use compile",
            [py, str(HERE / "bench_native.py")],
        ),
        (
            "jobs",
            "check --jobs 1 against --jobs 2, and the search alone on one and two threads",
            [py, str(HERE / "bench_jobs.py"), "--repeat", "2"],
        ),
        (
            "validate-1m",
            "validate on 1,000,172 lines: bare parse, reader, one process, two shards",
            [
                py,
                str(HERE / "bench_validate.py"),
                "--lines",
                "1000000",
                "--keep",
                str(logs / "1m.jsonl"),
                "--repeat",
                "3",
            ],
        ),
        (
            "validate-10m",
            "validate on 10,000,141 lines, once",
            [
                py,
                str(HERE / "bench_validate.py"),
                "--lines",
                "10000000",
                "--keep",
                str(logs / "10m.jsonl"),
                "--only",
                "parse",
                "validate-1",
                "validate-N",
                "validate-N-old",
            ],
        ),
        (
            "validate-writers",
            "validate with a writer per intent (memory held per writer)",
            [
                py,
                str(HERE / "bench_validate.py"),
                "--lines",
                "5300000",
                "--distinct-writers",
                "--keep",
                str(logs / "writers.jsonl"),
                "--only",
                "validate-1",
                "validate-N",
                "validate-N-old",
            ],
        ),
        (
            "engines",
            "every engine on growing instances (also writes RESULTS-engines.md)",
            [py, str(HERE / "bench_engines.py")],
        ),
        ("runtime", "the intent-log library's throughput", [py, str(HERE / "bench_runtime.py")]),
    ]


def load() -> str:
    return "%.2f, %.2f, %.2f" % os.getloadavg()


def machine() -> list[str]:
    def version(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            return "not installed"

    commit = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return [
        f"- commit {commit}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- {platform.machine()}, {len(os.sched_getaffinity(0))} CPUs shared with other "
        f"jobs, Python {platform.python_version()}, {version(['gcc', '--version'])}, "
        f"Spin: {version(['spin', '-V']) if shutil.which('spin') else 'not installed'}",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", default="/tmp/toolcommit-bench")
    ap.add_argument("--skip", nargs="*", default=[])
    a = ap.parse_args()
    logs = Path(a.logs)
    logs.mkdir(parents=True, exist_ok=True)
    out = [
        "# Benchmarks: one run of `python benchmarks/run_all.py`",
        "",
        "Every table below comes from the same run, in this order; each states the load "
        "averages (1, 5, 15 minutes) before and after it. The machine is shared with other "
        "engineers' jobs: wall clock includes waiting for a core, so compare within a table.",
        "",
        *machine(),
        "",
    ]
    target = HERE / "RESULTS-current.md"
    for name, what, cmd in steps(logs):
        if name in a.skip:
            continue
        before, t0 = load(), time.perf_counter()
        print(f"[{name}] {what} (load {before})", file=sys.stderr, flush=True)
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
        took = time.perf_counter() - t0
        out += [
            f"## {name}: {what}",
            "",
            f"`{' '.join(Path(c).name if c.endswith('.py') else c for c in cmd[1:])}`"
            f" -- load before {before}, after {load()}, {took:.0f} s",
            "",
        ]
        out += [done.stdout.rstrip(), ""]
        if done.returncode:
            out += ["(exit code %d) %s" % (done.returncode, done.stderr.strip()[-2000:]), ""]
        target.write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
