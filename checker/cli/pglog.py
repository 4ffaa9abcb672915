"""`--dsn CONNINFO [--schema S]`: the library's intent log on PostgreSQL, for the commands
that read one (`status`, `recover`, `export`). One home for the two flags, for the choice
between them and a SQLite file, and for the refusals, each one line with what to do.

`reading` opens the library's public reader (`toolcommit.runtime.store.LogReader`) on either:
one read-only transaction, the log as of one moment, while its writers go on. Nothing is
created or changed where the log lies.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

from toolcommit.model.errors import InputError, UsageError
from toolcommit.runtime.store import LogReader, ReadError, StoreError


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
    if dsn is not None and not dsn.strip():
        raise UsageError("--dsn is empty: give a conninfo (host=... dbname=...) or a URI")


@contextmanager
def reading(db: Optional[str], dsn: Optional[str], schema, part: str) -> Iterator[LogReader]:
    """The public reader (`toolcommit.runtime.store.LogReader`) of the SQLite log `db` or
    the PostgreSQL log in `schema` of the database `dsn`, once it is known to hold `part` (``records``, ``lines``, ``writers``);
    its refusals as `UsageError` (a wrong argument) or `InputError` (not a log), one line
    each, exit 2."""
    try:
        with (
            LogReader.postgres(dsn, schema, part)
            if dsn is not None
            else LogReader.sqlite(str(db), part)
        ) as log:
            yield log
    except ReadError as e:
        raise (UsageError if e.usage else InputError)(str(e)) from None
    except StoreError as e:  # a damaged record (its args not JSON)
        raise InputError(f"{db or 'the log'}: {e}") from None
