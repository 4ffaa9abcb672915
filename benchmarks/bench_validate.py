"""Benchmark `toolcommit validate` (not a test): lines per second beside bare parsing.

Generates a conforming multi-writer log (proposals, transitions, provider effects, some
ack losses reconciled, duplicate proposals, crashes; a small window of keys open at once),
then measures, each in a fresh subprocess so peak memory is its own:

- parse: read the same file line by line and decode each line with the fastest decoder
  available (orjson if importable, else the standard library json), nothing else;
- read: the validate reader alone (chunked reads, decoding, every field check), no
  conformance: the difference to parse is the reader's cost, the rest is the core's;
- validate: the full `toolcommit validate` pipeline (reader, field checks, conformance).

Each mode runs `--repeat` times, alternating, and the fastest run counts (the machine is
shared; the slower runs measure the neighbours). Peak memory is the largest of the runs.

Usage::

    python benchmarks/bench_validate.py --lines 1000000 [--keep FILE] [--only validate]
        [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time


def generate(path: str, lines: int, seed: int = 7, window: int = 64) -> int:
    """Write a conforming log of about `lines` lines; return the number written."""
    rng = random.Random(seed)
    seq: dict[str, int] = {}
    out = open(path, "w", buffering=1 << 20)
    n = 0
    workers = [f"worker-{i}" for i in range(8)]

    def emit(d: dict) -> None:
        nonlocal n
        w = d["writer"]
        seq[w] = seq.get(w, 0) + 1
        d["seq"] = seq[w]
        d["ts"] = "2024-05-01T12:%02d:%02d.%06dZ" % (n // 60000 % 60, n // 1000 % 60, n % 1000000)
        out.write(json.dumps(d, separators=(",", ":")) + "\n")
        n += 1

    # each intent is a small script of events; `window` intents progress interleaved
    def script(i: int):
        w = rng.choice(workers)
        key = "k-%016x" % rng.getrandbits(64)
        args = {"amount": rng.randint(1, 10 ** 6), "currency": rng.choice(("USD", "EUR")),
                "order": f"o-{i}"}
        scope = f"user:{rng.randint(1, 10 ** 5)}:checkout:{i}"
        base = {"tool": "refund", "args": args, "scope": scope}
        yield {"type": "proposal", "writer": w, "call_id": f"t{i}", "key": key,
               "decision": "accepted", **base}
        yield {"type": "transition", "writer": w, "key": key, "from": "PROPOSED", "to": "RECORDED"}
        yield {"type": "transition", "writer": w, "key": key, "from": "RECORDED",
               "to": "DISPATCHED", "fence": 1}
        yield {"type": "effect", "writer": "provider", "key": key, "kind": "apply", "fence": 1,
               "effect_id": f"e{i}", **base}
        r = rng.random()
        if r < 0.1:   # ack lost: reconcile, possibly by another worker
            w2 = rng.choice(workers)
            yield {"type": "transition", "writer": w, "key": key, "from": "DISPATCHED", "to": "UNKNOWN"}
            yield {"type": "proposal", "writer": w, "call_id": f"t{i}r", "key": key,
                   "decision": "duplicate", **base}
            yield {"type": "transition", "writer": w2, "key": key, "from": "UNKNOWN",
                   "to": "RECONCILING", "fence": 2}
            yield {"type": "transition", "writer": w2, "key": key, "from": "RECONCILING",
                   "to": "ACKED", "fence": 2}
        else:
            yield {"type": "transition", "writer": w, "key": key, "from": "DISPATCHED",
                   "to": "ACKED", "fence": 1}

    active: list = []
    i = 0
    while n < lines:
        while len(active) < window:
            active.append(script(i))
            i += 1
        j = rng.randrange(len(active))
        try:
            emit(next(active[j]))
        except StopIteration:
            active[j] = active[-1]
            active.pop()
        if n % 100000 == 0 and rng.random() < 0.5:
            emit({"type": "crash", "writer": "worker-crashy"})
            emit({"type": "restart", "writer": "worker-crashy"})
    for a in active:     # finish what is open so the log conforms
        for ev in a:
            emit(ev)
    out.close()
    return n


def parse_only(path: str) -> tuple[int, float]:
    from toolcommit.checker.logs.read import loads
    t = time.perf_counter()
    n = 0
    with open(path, "rb") as f:
        for line in f:
            loads(line)
            n += 1
    return n, time.perf_counter() - t


def read_only(path: str) -> tuple[int, float]:
    from toolcommit.checker.logs.read import read_lines
    t = time.perf_counter()
    n = 0
    for _n, _ev in read_lines(path):
        n += 1
    return n, time.perf_counter() - t


def validate_only(path: str) -> tuple[int, float, str]:
    from toolcommit.checker.cli.validate import validate
    t = time.perf_counter()
    report = validate([path])
    dt = time.perf_counter() - t
    s = report.stats
    n = sum(s[k] for k in ("proposal", "transition", "effect", "crash", "restart"))
    return n, dt, report.verdict.value


def _child(mode: str, path: str) -> None:
    if mode == "parse":
        n, dt = parse_only(path)
        verdict = ""
    elif mode == "read":
        n, dt = read_only(path)
        verdict = ""
    else:
        n, dt, verdict = validate_only(path)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    helper_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the check-ahead helper
    print(json.dumps({"mode": mode, "lines": n, "seconds": dt, "peak_mib": peak_kib / 1024,
                      "helper_mib": helper_kib / 1024, "verdict": verdict}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--keep", help="write the generated log here (and reuse it if present)")
    ap.add_argument("--only", choices=("parse", "read", "validate"))
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode; the fastest counts")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(*a.child)
        return
    path = a.keep or os.path.join(tempfile.mkdtemp(), "bench.jsonl")
    if not os.path.exists(path):
        t = time.perf_counter()
        n = generate(path, a.lines)
        print(f"generated {n} lines ({os.path.getsize(path) / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t:.0f}s: {path}", file=sys.stderr)
    from toolcommit.checker.logs.read import DECODER
    results: dict = {}
    modes = [m for m in ("parse", "read", "validate") if not a.only or a.only == m]
    for _ in range(a.repeat):
        for mode in modes:
            out = subprocess.run([sys.executable, __file__, "--child", mode, path],
                                 capture_output=True, text=True, check=True).stdout
            r = json.loads(out)
            best = results.get(mode)
            if best is not None:
                r["peak_mib"] = max(r["peak_mib"], best["peak_mib"])
                r["helper_mib"] = max(r["helper_mib"], best["helper_mib"])
                if best["seconds"] < r["seconds"]:
                    r["seconds"] = best["seconds"]
            results[mode] = r
    for mode in modes:
        r = results[mode]
        print(f"{mode:9s} {r['lines']:>11,d} lines  {r['seconds']:7.1f} s  "
              f"{r['lines'] / r['seconds']:>10,.0f} lines/s  peak {r['peak_mib']:7.0f} MiB  "
              + (f"(helper process {r['helper_mib']:.0f} MiB)  " if r["helper_mib"] else "")
              + r["verdict"])
    if "parse" in results and "validate" in results:
        ratio = (results["validate"]["lines"] / results["validate"]["seconds"]) / \
            (results["parse"]["lines"] / results["parse"]["seconds"])
        print(f"decoder {DECODER}; validate runs at {ratio:.0%} of bare parse speed "
              f"(goal: at least 50%)")
    if not a.keep:
        os.unlink(path)


if __name__ == "__main__":
    main()
