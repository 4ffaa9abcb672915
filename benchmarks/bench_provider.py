"""Benchmark (not a test): a never-seen provider's answers, cold, the base's code against
this tree's (issue 40: `design --env FILE` under 30 s wall, `ask late-replay` under 15 s).

- `design`: this tree's `toolcommit design --env FILE` on spec/providers/example-payments.json
  against the base's `design --env stripe` (the same promises: the base takes no file), each
  with an empty native cache (nothing compiled for it before: a provider never seen); the
  two designs' knobs must be equal.
- `ask`: `toolcommit ask late-replay`, cold, old and new; the outputs must be the same bytes.

Old and new alternate; each run is a fresh process; wall clock, the CPU seconds of the
process and everything it waited for (compilers, workers), and /proc/loadavg before each run
are recorded (the machine is shared: CPU seconds are the number to compare). Prints a
markdown table; `--append` adds it to benchmarks/RESULTS-current.md.

    python benchmarks/bench_provider.py [--repeat 1] [--base REV] [--append]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_users import ROOT, _load, env_for, old_tree, summary, timed  # noqa: E402

EXAMPLE = ROOT / "spec" / "providers" / "example-payments.json"
CLI = [sys.executable, "-m", "toolcommit.checker.cli"]


def bench(base: Path, repeat: int, tmp: Path) -> dict:
    out: dict = {"design": {"old": [], "new": []}, "ask": {"old": [], "new": []}}
    knobs = {}
    for i in range(repeat):
        for which in ("old", "new"):
            env_arg = "stripe" if which == "old" else str(EXAMPLE)
            target = tmp / f"design-{which}-{i}.json"
            cache = tmp / f"cache-design-{which}-{i}"
            argv = [*CLI, "design", "--env", env_arg, "--explain", "none", "-o", str(target)]
            out["design"][which].append(timed(argv, env_for(which == "old", base, str(cache))))
            knobs[which] = json.loads(target.read_text())["knobs"]
            cache = tmp / f"cache-ask-{which}-{i}"
            argv = [*CLI, "ask", "late-replay"]
            out["ask"][which].append(timed(argv, env_for(which == "old", base, str(cache))))
    if knobs["old"] != knobs["new"]:
        raise SystemExit("the file's design and the base's stripe design differ")
    if len({r["out"] for r in out["ask"]["old"] + out["ask"]["new"]}) != 1:
        raise SystemExit("ask late-replay: the old and the new output differ")
    return {k: {w: summary(rs) for w, rs in v.items()} for k, v in out.items()}


def table(r: dict, rev: str, load0: str, load1: str, secs: float) -> str:
    names = {
        "design": ("design, cold", "design --env stripe", "design --env FILE"),
        "ask": ("ask late-replay, cold", "ask late-replay", "ask late-replay"),
    }
    lines = [
        f"\n## provider: a never-seen provider, cold, base {rev} against this tree\n",
        f"`bench_provider.py` -- load before {load0}, after {load1}, {secs:.0f} s; 2 cores "
        "shared with other jobs. Median of the alternating runs; CPU s counts the process and "
        "what it waited for.\n",
        "| what | code | command | wall s | CPU s | load (1 min) at each run |",
        "|---|---|---|---:|---:|---|",
    ]
    for key, (what, old, new) in names.items():
        for which, cmd in (("old", old), ("new", new)):
            s = r[key][which]
            loads = ", ".join(x.split()[0] for x in s["loads"])
            lines.append(
                f"| {what} | {which} | `{cmd}` | {s['wall']:.1f} | {s['cpu']:.1f} | {loads} |"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--base", default="", help="the old code (default: git merge-base HEAD main)")
    ap.add_argument("--append", action="store_true", help="append to RESULTS-current.md")
    a = ap.parse_args()
    rev = (
        a.base
        or subprocess.run(
            ["git", "-C", str(ROOT), "merge-base", "HEAD", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    load0, t0 = _load(), time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-provider-") as tmp_:
        tmp = Path(tmp_)
        results = bench(old_tree(rev, tmp / "old"), a.repeat, tmp)
    md = table(results, rev[:7], load0, _load(), time.perf_counter() - t0)
    print(json.dumps(results))
    print(md)
    if a.append:
        with open(HERE / "RESULTS-current.md", "a", encoding="utf-8") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
