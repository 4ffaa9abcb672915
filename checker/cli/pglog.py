"""`--dsn CONNINFO [--schema S]`: the library's intent log on PostgreSQL, for the commands
that read one (`status`, `recover`, `export`). One home for the two flags, for the choice
between them and a SQLite file, and for the refusals, each one line with what to do.

`reading` opens one read-only transaction at REPEATABLE READ (`runtime.store.pg_snapshot`,
as the runtime's own exports do): every statement in it sees
the log as of one moment, while the runtime's orchestrators go on writing it. Nothing is
created or changed in the database (the runtime's `PostgresStore` would create the tables).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

from toolcommit.model.errors import UsageError
from toolcommit.runtime.store import StoreError, Tx, pg_schema, pg_snapshot

_HAS_TABLE = "SELECT 1 FROM information_schema.tables WHERE table_schema = %s AND table_name = %s"


def add_dsn_options(p) -> None:
    """Add `--dsn` and `--schema` to the parser `p` (beside its SQLite file argument)."""
    p.add_argument(
        "--dsn",
        metavar="CONNINFO",
        help="the PostgreSQL intent log (IntentLog.postgres's conninfo) instead of DB",
    )
    p.add_argument(
        "--schema",
        metavar="S",
        help="with --dsn: the schema the log is in (default: public; folded to lower "
        "case, as PostgreSQL folds an unquoted name)",
    )


def one_source(command: str, db: Optional[str], dsn: Optional[str], schema) -> None:
    """Refuse (`UsageError`) unless exactly one of the SQLite file `db` and `dsn` is given,
    and `schema` only with `dsn`."""
    if (db is None) == (dsn is None):
        raise UsageError(
            f"{command}: give the SQLite file DB or --dsn CONNINFO (PostgreSQL), one of them"
        )
    if schema is not None and dsn is None:
        raise UsageError("--schema is for --dsn (a PostgreSQL log)")


@contextmanager
def reading(dsn: str, schema: Optional[str], table: str) -> Iterator[Tx]:
    """A read-only REPEATABLE READ transaction on the intent log in `schema` (default
    ``public``, folded as PostgreSQL folds it) of the database `dsn`, once it is known to
    hold `table`; its search path is that schema. Rolled back at the end. A `UsageError`
    (exit 2) when psycopg is missing, the schema's name is not one, the server cannot be
    reached or refuses, or the schema holds no intent log."""
    try:
        import psycopg
    except ImportError:
        raise UsageError("--dsn needs psycopg 3: pip install 'toolcommit[postgres]'") from None
    try:
        where = pg_schema(schema)
    except StoreError as e:
        raise UsageError(f"--schema: {e}") from None
    try:
        with pg_snapshot(dsn, where, connect_timeout=10) as cur:
            if cur.execute(_HAS_TABLE, (where, table)).fetchone() is None:
                raise UsageError(
                    f"--dsn: schema {where} holds no intent log (no {table} table); "
                    "give the schema the runtime writes to (--schema)"
                )
            yield Tx(cur, True)
    except psycopg.Error as e:
        raise UsageError(
            f"--dsn: cannot read the database: {str(e).strip().splitlines()[0]}; check "
            f"the conninfo, that the server is up and that this role may read schema {where}"
        ) from None


def database(tx: Tx, dsn: str) -> tuple[str, str]:
    """The name of the database `tx` reads, and the conninfo `dsn` without its password
    (what a printed command may show)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = str(tx.first("SELECT current_database()")[0])
    shown = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password"}
    return name, make_conninfo(**{k: str(v) for k, v in shown.items()})
