"""The library's intent log as JSON Lines, for `toolcommit export DB` (or `--dsn CONNINFO
[--schema S]`), read through the library's public reader (`toolcommit.runtime.store.LogReader`,
opened by `pglog.reading`).

The log is only read: an SQLite file is opened read-only and nothing is left beside it, and
the export works while a gateway or a runtime writes it. The lines come out in the order
they were written, as ``IntentLog.export`` writes them: the log contract of
`spec/log.schema.json`, for ``toolcommit validate``.
"""

from __future__ import annotations

from typing import Optional

from toolcommit.checker.cli.pglog import reading
from toolcommit.runtime.store.reader import WHAT

__all__ = ["WHAT", "log_text", "pg_log_text"]


def log_text(db: str) -> str:
    """The whole log in the SQLite file `db` as JSON Lines text, as of one moment."""
    with reading(db, None, None, "lines") as log:
        return "".join(line + "\n" for line in log.lines())


def pg_log_text(dsn: str, schema: Optional[str]) -> str:
    """The whole log in `schema` of the database `dsn` as JSON Lines text, as of one moment."""
    with reading(None, dsn, schema, "lines") as log:
        return "".join(line + "\n" for line in log.lines())
