"""Benchmark (not a test): where one intent's time goes, the library against the floor,
and the highest library / reference ratio that time allows.

One process, one orchestrator (P = 1), the intents of `bench_runtime.py` (`lib_intents`,
`ref_intents`), the two modes alternating `--repeat` times, `--n` intents a run; the
median of the runs is printed. Per intent: wall time, the client's CPU (this process), and
on PostgreSQL the CPU of the connection's backend (read from ``/proc``: a local server).

The ceiling: the library's client does `extra` = (its client CPU - the reference's) more
work per intent, all of it Python around the same two statements and two commits (the
protocol's canonical key, its log lines, stamps, the record read back; psycopg's own cost
per statement is in both). However little the store did beyond the floor's two commits,
an intent would take at least the reference's time plus `extra`:

- one orchestrator (P = 1, the time is wall): ratio <= ref_wall / (ref_wall + extra);
- CPU-bound (P = 8 and 32 on 2 cores, the time is CPU): ratio <= ref_cpu / (ref_cpu +
  extra), where ref_cpu is the reference's client + backend CPU.

On SQLite the store runs in the client, so `extra` is taken from the PostgreSQL run (the
same Python code) when both stores run; with SQLite alone it is an upper bound on `extra`.

    python benchmarks/bench_runtime_cpu.py [--n 3000] [--repeat 3] [--stores postgres,sqlite-full]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from bench_runtime import lib_intents, open_log, ref_db, ref_intents, ref_setup

_HZ = os.sysconf("SC_CLK_TCK")


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _HZ


def _backend(conn) -> int | None:
    """The PostgreSQL backend's pid of psycopg connection `conn`, None for SQLite."""
    if conn is None or not hasattr(conn, "info"):
        return None
    return conn.execute("SELECT pg_backend_pid()").fetchone()[0]


def _timed(run, first: int, n: int, backend: int | None) -> dict:
    """ms per intent of `run(first, n)`: wall, client CPU, backend CPU."""
    b0 = _cpu_of(backend) if backend else 0.0
    c0, t0 = time.process_time(), time.perf_counter()
    run(first, n)
    wall, client = time.perf_counter() - t0, time.process_time() - c0
    back = (_cpu_of(backend) - b0) if backend else 0.0
    return {"wall": wall / n * 1e3, "client": client / n * 1e3, "backend": back / n * 1e3}


def measure(store: str, where: str, n: int, repeat: int) -> dict:
    """{mode: {wall, client, backend}} medians (ms per intent) of `repeat` alternating runs."""
    log = open_log(store, where, "cpu")  # first: the log refuses a schema holding others'
    ref_setup(store, where)
    one, db = ref_db(store, where)
    pid_lib = _backend(getattr(log.store, "_db", None))
    pid_ref = _backend(db)
    runs = {
        "library": (lambda f, k: lib_intents(log, "cpu", f, k), pid_lib),
        "reference": (lambda f, k: ref_intents(one, "cpu", f, k), pid_ref),
    }
    got: dict = {m: [] for m in runs}
    for m, (run, _pid) in runs.items():  # warm up: caches, prepared statements
        run(0, min(n, 200))
    for r in range(repeat):
        for m, (run, pid) in runs.items():
            got[m].append(_timed(run, (r + 1) * n, n, pid))
    log.close()
    db.close()
    return {m: {k: statistics.median(x[k] for x in xs) for k in xs[0]} for m, xs in got.items()}


def ceilings(lib: dict, ref: dict, extra: float) -> tuple[float, float]:
    """(P = 1, CPU-bound): the highest library / reference the reference's time plus
    `extra` ms of client work per intent allows."""
    ref_cpu = ref["client"] + ref["backend"]
    return ref["wall"] / (ref["wall"] + extra), ref_cpu / (ref_cpu + extra)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3000, help="intents a run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stores", default="postgres,sqlite-full")
    a = ap.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(
        "| store | mode | wall ms | client CPU ms | backend CPU ms | measured ratio (P = 1) "
        "| ceiling P = 1 | ceiling CPU-bound |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    extra = None
    for store in a.stores.split(","):
        with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
            if store == "postgres":
                from toolcommit.checker.torture.pgserver import TempPostgres

                with TempPostgres(fsync=True) as pg:
                    got = measure(store, pg.dsn, a.n, a.repeat)
            else:
                got = measure(store, os.path.join(tmp, "intents.db"), a.n, a.repeat)
        lib, ref = got["library"], got["reference"]
        if extra is None:
            extra = lib["client"] - ref["client"]
        one, bound = ceilings(lib, ref, extra)
        for m in ("library", "reference"):
            x = got[m]
            tail = (
                f"{ref['wall'] / lib['wall']:.2f} | {one:.2f} | {bound:.2f}"
                if m == "library"
                else " | | "
            )
            print(
                f"| {store} | {m} | {x['wall']:.3f} | {x['client']:.3f} | "
                f"{x['backend']:.3f} | {tail} |"
            )
    print(f"extra client CPU of the library per intent: {extra:.3f} ms")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
