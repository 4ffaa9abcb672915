"""Benchmark the intent-log library (not a test): intents per second on SQLite and PostgreSQL.

One intent is the happy path of the protocol, as `guard` runs it: two decisions, each one
transaction that also writes its log lines: propose accepted and dispatched at once
(``propose(..., dispatch=True)``: the atomic insert, fence 1), then ack. `library-3` is the
same intent as three transactions (propose, dispatch, ack apart: the path before the
dispatch joined the proposal's commit). `reference` is the physical floor on the same store
and settings: a bare INSERT committed, then a bare UPDATE of that row committed (two
statements, two commits, no log lines, no reads). No provider is called: this measures the
log, the part a runtime adds to each effectful call. `P` processes (each its own writer,
distinct intents) start together behind a barrier; the rate is all intents over the wall
time from the barrier to the last process's end. A last figure is the duplicate path:
re-proposals (a paraphrase under a new call id) of intents recorded before the barrier (one
transaction, one line each).

Stores:
- sqlite-full: WAL, synchronous=FULL (a commit survives power loss);
- sqlite-normal: WAL, synchronous=NORMAL (survives a process crash, which is what the
  harness kills; the last commits may be lost on power loss);
- postgres: a throwaway local server (`TempPostgres(fsync=True)`: fsync and
  synchronous_commit on), over a Unix socket.

Each configuration runs `--repeat` times, the modes alternating within a repeat; the
fastest run of each mode is printed, and each ratio to the reference is the median over the
repeats of the ratio within one repeat (runs seconds apart: the shared disk's fsync time
drifts by several times over minutes, which a ratio of two best-ofs would pick up). The
load average is printed.

Usage::

    python benchmarks/bench_runtime.py [--total 1600] [--procs 1,8,32] [--repeat 3]
        [--stores sqlite-full,sqlite-normal,postgres] [--modes library,library-3,reference]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time

from toolcommit.runtime import IntentLog


def open_log(store: str, where: str, writer: str) -> IntentLog:
    if store == "postgres":
        return IntentLog.postgres(where, writer, schema="bench", provider="ideal")
    return IntentLog.sqlite(
        where, writer, synchronous=store.split("-")[1].upper(), provider="ideal"
    )


def ref_db(store: str, where: str):
    """The reference's connection: (its statement runner, the connection); each statement
    its own commit."""
    if store == "postgres":
        import psycopg

        db = psycopg.connect(where, autocommit=True)
        db.execute("SET search_path TO bench")

        def one(sql, params):
            db.execute(sql.replace("?", "%s"), params)

        return one, db
    db = sqlite3.connect(where, timeout=30.0, isolation_level=None)
    db.execute(f"PRAGMA synchronous={store.split('-')[1].upper()}")

    def one_tx(sql, params):
        db.execute("BEGIN IMMEDIATE")
        db.execute(sql, params)
        db.execute("COMMIT")

    return one_tx, db


def ref_intents(one, writer: str, first: int, n: int) -> None:
    """The floor for intents `first` .. `first + n - 1`: per intent an INSERT committed,
    then an UPDATE of its row committed."""
    for i in range(first, first + n):
        key = f"{writer}:{i}"
        one(
            "INSERT INTO ref (key, state, fence, lease) VALUES (?, 'DISPATCHED', 1, ?)",
            (key, time.time() + 30),
        )
        one(
            "UPDATE ref SET state = 'ACKED', result = ? WHERE key = ? AND state = 'DISPATCHED' "
            "AND fence = 1",
            (f'{{"id": "e{i}"}}', key),
        )


def lib_intents(log: IntentLog, writer: str, first: int, n: int) -> None:
    """The library's happy path for intents `first` .. `first + n - 1`, as `guard` runs
    it: propose accepted and dispatched in one commit, then the ack in a second."""
    for i in range(first, first + n):
        args = {"amount": i, "order": writer}
        d = log.propose(
            f"t{i}",
            "refund",
            args,
            f"user:{writer}:checkout:{i}",
            dispatch=True,
            principal="user:1",
        )
        log.ack(d.ticket, {"id": f"e{i}"})


def _reference(store: str, where: str, writer: str, n: int, go_fd: int, ready_fd: int) -> None:
    one, db = ref_db(store, where)
    os.write(ready_fd, b"r")
    os.read(go_fd, 1)
    ref_intents(one, writer, 0, n)
    db.close()


def ref_setup(store: str, where: str) -> None:
    ddl = (
        "CREATE TABLE IF NOT EXISTS ref (key TEXT PRIMARY KEY, state TEXT NOT NULL, "
        "fence INTEGER NOT NULL, lease {real} NOT NULL, result TEXT)"
    )
    if store == "postgres":
        import psycopg

        with psycopg.connect(where, autocommit=True) as c:
            c.execute("CREATE SCHEMA IF NOT EXISTS bench")
            c.execute("SET search_path TO bench")
            c.execute(ddl.format(real="DOUBLE PRECISION"))
    else:
        with sqlite3.connect(where, isolation_level=None) as c:
            c.execute("PRAGMA journal_mode=WAL")
            c.execute(ddl.format(real="REAL"))
        c.close()


def _work(
    store: str, where: str, writer: str, n: int, go_fd: int, ready_fd: int, mode: str
) -> None:
    if mode == "reference":
        return _reference(store, where, writer, n, go_fd, ready_fd)
    log = open_log(store, where, writer)
    calls = [(f"user:{writer}:checkout:{i}", {"amount": i, "order": writer}) for i in range(n)]
    if mode == "duplicate":  # before the barrier: record them once
        for i, (scope, args) in enumerate(calls):
            log.ack(
                log.propose(
                    f"t{i}", "refund", args, scope, dispatch=True, principal="user:1"
                ).ticket,
                {},
            )
    os.write(ready_fd, b"r")  # opened (and recorded): ready
    os.read(go_fd, 1)
    if mode == "library":
        lib_intents(log, writer, 0, n)
    for i, (scope, args) in enumerate(calls if mode != "library" else ()):
        if mode == "duplicate":
            log.propose(f"r{i}", "refund", {**args, "amount": float(i)}, scope, principal="user:1")
        else:  # library-3
            d = log.propose(f"t{i}", "refund", args, scope, principal="user:1")
            log.ack(log.dispatch(d.key), {"id": f"e{i}"})
    log.close()


def run(store: str, where: str, procs: int, n: int, mode: str) -> float:
    """Calls per second of one run with `procs` processes: intents (two commits, three, or
    the bare reference's two) or duplicate proposals, per `mode`."""
    if mode == "reference":
        ref_setup(store, where)
    else:
        open_log(store, where, "setup").close()
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
    ap.add_argument(
        "--total", type=int, default=1600, help="intents per run, split among the processes"
    )
    ap.add_argument("--procs", default="1,8,32", help="process counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--stores", default="sqlite-full,sqlite-normal,postgres")
    ap.add_argument("--modes", default="library,library-3,reference,duplicate")
    a = ap.parse_args()
    modes = a.modes.split(",")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    print(
        "| store | processes | "
        + " | ".join(f"{m}/s" for m in modes)
        + " | library / reference (median) | library-3 / reference (median) | intents |"
    )
    print("|---|---:|" + "---:|" * (len(modes) + 3))
    for store in a.stores.split(","):
        pg = None
        if store == "postgres":
            from toolcommit.checker.torture.pgserver import TempPostgres

            pg = TempPostgres(fsync=True).__enter__()
        try:
            for procs in [int(x) for x in a.procs.split(",")]:
                n = max(1, a.total // procs)
                rates = {m: [] for m in modes}
                for _ in range(a.repeat):
                    for mode in modes:
                        tmp = tempfile.mkdtemp(prefix="bench-runtime-")
                        where = pg.dsn if pg else os.path.join(tmp, "intents.db")
                        try:
                            if pg:
                                _drop(pg.dsn)
                            rates[mode].append(run(store, where, procs, n, mode))
                        finally:
                            shutil.rmtree(tmp, ignore_errors=True)
                print(
                    f"| {store} | {procs} | "
                    + " | ".join(f"{max(rates[m]):,.0f}" for m in modes)
                    + f" | {_ratio(rates, 'library')} | {_ratio(rates, 'library-3')} "
                    f"| {procs * n:,} |",
                    flush=True,
                )
        finally:
            if pg:
                pg.__exit__(None, None, None)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def _ratio(rates: dict, mode: str) -> str:
    """The median over the repeats of `mode`'s rate over the reference's in that repeat."""
    if mode not in rates or "reference" not in rates:
        return "-"
    return f"{statistics.median(x / r for x, r in zip(rates[mode], rates['reference'])):.2f}"


def _drop(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS bench CASCADE")


if __name__ == "__main__":
    main()
