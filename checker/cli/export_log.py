"""The library's intent log, read from its SQLite file for `toolcommit export DB` (or from
its PostgreSQL schema, `--dsn CONNINFO [--schema S]`, through `pglog.reading`).

The file is opened read-only (``mode=ro``): exporting changes nothing in it, not even the
writer table an `IntentLog` would open, and works while a gateway or a runtime writes it
(WAL). The lines come out in the order they were written (`toolcommit.runtime.store`'s
`page_lines`), as ``IntentLog.export`` writes them: the log contract of
`spec/log.schema.json`, for ``toolcommit validate``.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from toolcommit.checker.cli.pglog import reading
from toolcommit.model.errors import InputError, UsageError
from toolcommit.runtime.store import Tx, page_lines

WHAT = "the intent log's SQLite file (toolcommit gateway --db, or IntentLog.sqlite's path)"


class _ReadOnly:
    """A read-only view of an SQLite intent log, enough for `read_lines`.

    A log in WAL mode needs its ``-shm`` file to be read while others may write it; on a
    read-only file system no one can write it, so it is opened ``immutable`` there (what
    SQLite documents for read-only media), unless a non-empty ``-wal`` file holds writes an
    immutable open would silently skip: that, and elsewhere a folder that cannot take the
    ``-shm`` file, is a clear `InputError`."""

    def __init__(self, path: str):
        uri = Path(os.path.abspath(path)).as_uri()
        self._db = sqlite3.connect(uri + "?mode=ro", uri=True, isolation_level=None)
        try:
            self._db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as e:
            self._db.close()
            if not _read_only_fs(path):
                raise InputError(
                    f"{path}:1: cannot open it read-only ({e}): SQLite needs to "
                    "read or create its -shm file beside it; export it where "
                    "that folder can be written, or copy it together with its "
                    "-wal and -shm files"
                ) from None
            if _size(path + "-wal"):
                raise InputError(
                    f"{path}:1: cannot read it on this read-only volume: its last "
                    "writes are in its -wal file, which SQLite reads only with "
                    "its -shm file, and that cannot be created here; copy it "
                    "with its -wal file to a folder that can be written and "
                    "give the copy"
                ) from None
            self._db = sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, isolation_level=None)

    @contextmanager
    def read(self):
        cur = self._db.cursor()
        cur.execute("BEGIN")
        try:
            yield Tx(cur, False)
        finally:
            cur.execute("COMMIT")
            cur.close()

    def close(self):
        self._db.close()


def _size(path: str) -> int:
    """The size of the file `path`, 0 when there is none."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _read_only_fs(path: str) -> bool:
    """Whether `path` lies on a file system mounted read-only."""
    try:
        return bool(os.statvfs(os.path.dirname(os.path.abspath(path))).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def read_log(db: str, table: str, read):
    """``read(store)`` on the SQLite intent log `db`, opened read-only, once it is known to
    hold `table` (`read` opens its own transactions: ``store.read()``). Raises `UsageError`
    (no such file, or one this user cannot read) or `InputError` (not an intent log, or one
    a read-only volume keeps from being read), each one line naming the file."""
    try:
        with open(db, "rb"):  # SQLite would say only "unable to open database file"
            pass
    except FileNotFoundError:
        raise UsageError(f"{db}: no such file; give {WHAT}") from None
    except IsADirectoryError:
        raise UsageError(f"{db}: is a folder; give {WHAT}") from None
    except OSError as e:
        raise UsageError(
            f"{db}: cannot read it ({e.strerror}); run as a user who may read "
            "it, or give a readable copy"
        ) from None
    if not os.path.isfile(db):
        raise UsageError(f"{db}: not a file; give {WHAT}")
    try:
        store = _ReadOnly(db)
        try:
            with store.read() as tx:
                if (
                    tx.one(
                        "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
                    )
                    is None
                ):
                    raise InputError(
                        f"{db}:1: an SQLite database without an intent log (no "
                        f"{table} table); give {WHAT}"
                    )
            return read(store)
        finally:
            store.close()
    except sqlite3.DatabaseError as e:
        raise InputError(f"{db}:1: not an SQLite intent log ({e}); give {WHAT}") from None


def log_text(db: str) -> str:
    """The whole log in `db` as JSON Lines text (see `read_log` for its errors)."""
    return read_log(db, "tc_events", _text)


def _text(store: _ReadOnly) -> str:
    """The whole log, in one read transaction: in WAL, the file as of one moment."""
    with store.read() as tx:
        return "".join(line + "\n" for line in page_lines(tx))


def pg_log_text(dsn: str, schema: Optional[str]) -> str:
    """The whole log in `schema` of the database `dsn` as JSON Lines text, as of one moment
    (see `pglog.reading` for its errors)."""
    with reading(dsn, schema, "tc_events") as tx:
        return "".join(line + "\n" for line in page_lines(tx))
