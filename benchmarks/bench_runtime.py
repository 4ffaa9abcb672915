"""Benchmark the intent-log library (not a test): intents per second on SQLite and PostgreSQL.

One intent is the happy path of the protocol, three decisions, each one transaction that
also writes its log lines: propose (atomic insert, accepted), dispatch (compare-and-set,
fence 1), ack. No provider is called: this measures the log, the part a runtime adds to
each effectful call. `P` processes (each its own writer, distinct intents) start together
behind a barrier; the rate is all intents over the wall time from the barrier to the last
process's end. A second figure is the duplicate path, run separately: re-proposals (a
paraphrase under a new call id) of intents recorded before the barrier (one transaction,
one line each).

Stores:
- sqlite-full: WAL, synchronous=FULL (a commit survives power loss);
- sqlite-normal: WAL, synchronous=NORMAL (survives a process crash, which is what the
  harness kills; the last commits may be lost on power loss);
- postgres: a throwaway local server (`TempPostgres(fsync=True)`: fsync and
  synchronous_commit on), over a Unix socket.

Each configuration runs `--repeat` times and the fastest run counts (the machine is shared).

Usage::

    python benchmarks/bench_runtime.py [--intents 2000] [--procs 1,4] [--repeat 3]
        [--stores sqlite-full,sqlite-normal,postgres]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from toolcommit.runtime import IntentLog


def _open(store: str, where: str, writer: str) -> IntentLog:
    if store == "postgres":
        return IntentLog.postgres(where, writer, schema="bench", provider="ideal")
    return IntentLog.sqlite(where, writer, synchronous=store.split("-")[1].upper(), provider="ideal")


def _work(store: str, where: str, writer: str, n: int, go_fd: int, ready_fd: int,
          mode: str) -> None:
    log = _open(store, where, writer)
    calls = [(f"user:{writer}:checkout:{i}", {"amount": i, "order": writer}) for i in range(n)]
    if mode == "duplicate":                       # before the barrier: record them once
        for i, (scope, args) in enumerate(calls):
            log.ack(log.dispatch(log.propose(f"t{i}", "refund", args, scope).key), {})
    os.write(ready_fd, b"r")                      # opened (and recorded): ready
    os.read(go_fd, 1)
    for i, (scope, args) in enumerate(calls):
        if mode == "duplicate":
            log.propose(f"r{i}", "refund", {**args, "amount": float(i)}, scope)
        else:
            d = log.propose(f"t{i}", "refund", args, scope)
            log.ack(log.dispatch(d.key), {"id": f"e{i}"})
    log.close()


def run(store: str, where: str, procs: int, n: int, mode: str) -> float:
    """Calls per second of one run with `procs` processes: intents (propose, dispatch,
    ack) or duplicate proposals, per `mode`."""
    _open(store, where, "setup").close()
    go_r, go_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pids = []
    tag = f"{time.monotonic_ns()}"
    for p in range(procs):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(go_w)
                _work(store, where, f"w{p}-{tag}", n, go_r, ready_w, mode)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(go_r)
    os.close(ready_w)
    for _ in range(procs):
        os.read(ready_r, 1)
    start = time.monotonic()
    os.write(go_w, b"g" * procs)
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        if status != 0:
            raise RuntimeError(f"a benchmark process failed ({status})")
    total = time.monotonic() - start
    os.close(go_w)
    os.close(ready_r)
    return procs * n / total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--intents", type=int, default=2000, help="intents per process")
    ap.add_argument("--procs", default="1,4", help="process counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stores", default="sqlite-full,sqlite-normal,postgres")
    a = ap.parse_args()
    print("| store | processes | intents/s (propose+dispatch+ack) | duplicates/s | "
          "intents |\n|---|---:|---:|---:|---:|")
    for store in a.stores.split(","):
        pg = None
        if store == "postgres":
            from toolcommit.checker.torture.pgserver import TempPostgres
            pg = TempPostgres(fsync=True).__enter__()
        try:
            for procs in [int(x) for x in a.procs.split(",")]:
                best = {"intent": 0.0, "duplicate": 0.0}
                for _ in range(a.repeat):
                    for mode in best:
                        tmp = tempfile.mkdtemp(prefix="bench-runtime-")
                        where = pg.dsn if pg else os.path.join(tmp, "intents.db")
                        try:
                            if pg:
                                _drop(pg.dsn)
                            best[mode] = max(best[mode], run(store, where, procs, a.intents,
                                                             mode))
                        finally:
                            shutil.rmtree(tmp, ignore_errors=True)
                print(f"| {store} | {procs} | {best['intent']:,.0f} | "
                      f"{best['duplicate']:,.0f} | {procs * a.intents:,} |", flush=True)
        finally:
            if pg:
                pg.__exit__(None, None, None)


def _drop(dsn: str) -> None:
    import psycopg
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS bench CASCADE")


if __name__ == "__main__":
    main()
