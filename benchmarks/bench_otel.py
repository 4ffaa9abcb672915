"""Benchmark what the guard's OpenTelemetry costs (not a test): guarded calls per second.

One guarded call is `guard` on a fresh intent (design ``ideal``, SQLite WAL with
synchronous=NORMAL in a temporary directory) whose effect returns at once: propose,
dispatch, ack, and the guard's span and metrics. Modes, each in a fresh process:

- absent: opentelemetry blocked by a meta-path finder (as if the extra were not installed);
- api: opentelemetry importable, no provider configured (the API's no-op default);
- sdk: the SDK's TracerProvider with a SimpleSpanProcessor into an InMemorySpanExporter,
  and a MeterProvider with an InMemoryMetricReader (every span recorded and kept).

The rate is calls per second of the process's CPU time (SQLite with synchronous=NORMAL
waits for no disk on a commit, so a call is CPU), which a shared machine disturbs less
than the wall clock. Modes alternate within each round; the figure is the median of
`--repeat` rounds, and the ratio to ``absent`` of the same round, median over rounds.

Usage::

    python benchmarks/bench_otel.py [--calls 2000] [--repeat 5] [--modes absent,api,sdk]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import os, sys, tempfile, time
mode, n = sys.argv[1], int(sys.argv[2])
if mode == "absent":
    class Block:
        def find_spec(self, name, path=None, target=None):
            if name == "opentelemetry" or name.startswith("opentelemetry."):
                raise ImportError(name)
    sys.meta_path.insert(0, Block())
from toolcommit.runtime import IntentLog, guard
if mode == "sdk":
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from toolcommit.runtime import otel
    tp, exporter = TracerProvider(), InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    otel.configure(tp, MeterProvider(metric_readers=[InMemoryMetricReader()]))
log = IntentLog.sqlite(os.path.join(tempfile.mkdtemp(), "i.db"), "bench",
                       synchronous="NORMAL", provider="ideal", settler=False)
effect, status = (lambda t: {"ok": 1}), (lambda t: None)
for i in range(50):                                   # warm up
    guard(log, f"w{i}", "refund", {"amount": i}, f"warm:{i}", effect, status, principal="user:1")
t0 = time.process_time()
for i in range(n):
    guard(log, f"t{i}", "refund", {"amount": i}, f"request:{i}", effect, status, principal="user:1")
dt = time.process_time() - t0
if mode == "sdk":
    guards = [s for s in exporter.get_finished_spans()
              if s.attributes.get("toolcommit.span") == "guard"]
    assert len(guards) == n + 50, len(guards)
print(n / dt)
"""


def run(mode: str, calls: int) -> float:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(calls)], capture_output=True, text=True, timeout=600
    )
    if out.returncode:
        raise SystemExit(f"mode {mode} failed:\n{out.stderr}")
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--modes", default="absent,api,sdk")
    args = ap.parse_args()
    modes = args.modes.split(",")
    rates: dict = {m: [] for m in modes}
    for _ in range(args.repeat):
        for m in modes:
            rates[m].append(run(m, args.calls))
    base = rates.get("absent")
    out = {}
    for m in modes:
        ratio = statistics.median(r / b for r, b in zip(rates[m], base)) if base else None
        out[m] = {
            "calls_per_s": round(statistics.median(rates[m]), 1),
            "ratio_to_absent": None if ratio is None else round(ratio, 3),
        }
    print(
        json.dumps(
            {"calls": args.calls, "repeat": args.repeat, "load": os.getloadavg(), "modes": out},
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
