"""`toolcommit recover DB` (or `--dsn CONNINFO [--schema S]`): settle the records of dead
writers in an intent log, SQLite or PostgreSQL, through its design's reconcile
(`toolcommit.runtime.recover_settle`).

Records whose lease expired (their writer died, or stalled past its lease) are taken over by
the writer ``--writer`` and settled as the design says: given up visibly where the provider
has no status read (email), else replayed or read through the tools ``--tools`` registers
(a module whose ``@effectful`` tools are imported). A record that needs a tool that is not
registered, or whose status read the design defers (a request may still land), is left in
doubt: exit 3, so a sweeper runs again. Exit 0: nothing of a dead writer is left open.
"""
from __future__ import annotations

import importlib
import os
import sys

from toolcommit.model.errors import UsageError


def add_parser(sub):
    p = sub.add_parser("recover", help="settle the records of dead writers in an intent log",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("db", metavar="DB", nargs="?",
                   help="the SQLite intent log (IntentLog.sqlite's file); or give --dsn")
    p.add_argument("--dsn", metavar="CONNINFO",
                   help="the PostgreSQL intent log (IntentLog.postgres's conninfo) instead of DB")
    p.add_argument("--schema", metavar="S",
                   help="with --dsn: the schema the log is in (default: public)")
    p.add_argument("--provider", required=True, metavar="NAME|FILE",
                   help="the design the log follows: ideal, stripe, email, fenced-store, or a "
                        "design file (`toolcommit design --write`); the same as the runtime's")
    p.add_argument("--writer", default="toolcommit-recover",
                   help="the name this sweeper writes under (default: toolcommit-recover)")
    p.add_argument("--tools", action="append", default=[], metavar="MODULE",
                   help="import MODULE (its @effectful tools) to replay and read; repeatable")
    return p


def _open(args):
    from toolcommit.checker.runtime.design import load

    if (args.db is None) == (args.dsn is None):
        raise UsageError("recover: give the SQLite file DB or --dsn CONNINFO (PostgreSQL), "
                         "one of them")
    if args.schema is not None and args.dsn is None:
        raise UsageError("--schema is for --dsn (a PostgreSQL log)")
    design = load(args.provider)            # before the store: a bad provider changes nothing
    return _postgres(args, design) if args.dsn else _sqlite(args, design)


def _postgres(args, design):
    """The log in `args.schema` of the database, refused unless it holds one already (a
    sweeper never creates a log)."""
    from toolcommit.checker.runtime import IntentLog, PostgresStore, StoreError
    try:
        import psycopg
    except ImportError:
        raise UsageError("--dsn needs psycopg 3: pip install 'toolcommit[postgres]'") from None
    where = args.schema or "public"
    try:
        with psycopg.connect(args.dsn, connect_timeout=10) as c:
            found = c.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = %s "
                              "AND table_name = 'tc_writers'", (where,)).fetchone()
    except psycopg.Error as e:
        raise UsageError(f"--dsn: cannot read the database: {str(e).strip().splitlines()[0]}"
                         ) from None
    if found is None:
        raise UsageError(f"--dsn: schema {where} holds no intent log (no tc_writers table); "
                         "give the schema the runtime writes to (--schema)")
    try:
        return IntentLog(PostgresStore(args.dsn, args.schema), args.writer, provider=design)
    except StoreError as e:
        raise UsageError(f"--dsn: {e}") from None


def _sqlite(args, design):
    from toolcommit.checker.runtime import IntentLog
    from toolcommit.checker.runtime.store import SqliteStore

    if not os.path.isfile(args.db):
        raise UsageError(f"{args.db}: no such file; give the intent log's SQLite file")
    store = SqliteStore(args.db)
    with store.read() as tx:
        if tx.one("SELECT name FROM sqlite_master WHERE name = 'tc_writers'") is None:
            store.close()
            raise UsageError(f"{args.db}: holds no intent log (no tc_writers table)")
    return IntentLog(store, args.writer, provider=design)


def run(args) -> int:
    from toolcommit.checker.runtime import recover_settle
    from toolcommit.checker.runtime.store import OPEN_STATES

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in args.tools:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise UsageError(f"--tools {name}: cannot import it ({e}); run from the directory "
                             "that holds it, or install it") from None
    log = _open(args)
    try:
        done = recover_settle(log, limit=10 ** 6)
    finally:
        log.close()
    by_state: dict[str, int] = {}
    for state in done.values():
        by_state[state] = by_state.get(state, 0) + 1
    open_left = sum(n for s, n in by_state.items() if s in OPEN_STATES)
    parts = ", ".join(f"{n} {s}" for s, n in sorted(by_state.items())) or "nothing to take over"
    print(f"recover {args.db or 'schema ' + (args.schema or 'public')}: {len(done)} record(s) of dead writers taken over: {parts}"
          + (f"; {open_left} left in doubt (a tool to register with --tools, or a status read "
             "the design defers): run again" if open_left else ""))
    return 3 if open_left else 0
