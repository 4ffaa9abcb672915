"""`LogReader`: the public, read-only view of an intent log: its records, its lines, the
design it stores, the writers and the store's clock (what `toolcommit status`, `export` and
`recover` read), all in one read transaction, so as of one moment.

Nothing is created or changed where the log lies. An SQLite file is opened read-only: with
SQLite's ``immutable`` flag where no writer has it open (no ``-wal`` or ``-shm`` beside it:
then no such file is left behind), else ``mode=ro`` beside the writer's; a path that is not
a regular file (a folder, a FIFO, a device) is refused before it is opened. A PostgreSQL log
is read at REPEATABLE READ, READ ONLY, on a connection of its own.

Every refusal is a `ReadError`: one line naming the log and what to do; `usage` says whether
the argument was wrong (no such file, a bad conninfo) or the log itself (not an intent log).
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from toolcommit.runtime.records import Record, record_of
from toolcommit.runtime.store.base import StoreError, Tx
from toolcommit.runtime.store.lines import page_lines
from toolcommit.runtime.store.postgres import PostgresStore, pg_schema, pg_snapshot
from toolcommit.runtime.store.schema import COLS
from toolcommit.runtime.store.sqlite import SqliteStore

#: the longest design document a reader takes from a log (a design file is a few KB)
MAX_DESIGN = 1 << 20
#: the parts of a log a command may need, and their tables
TABLES = {"records": "tc_records", "lines": "tc_events", "writers": "tc_writers"}
WHAT = "the intent log's SQLite file (toolcommit gateway --db, or IntentLog.sqlite's path)"


class ReadError(StoreError):
    """A log that cannot be read, in one line; `usage`: the argument naming it was wrong
    (else the log itself is not one this release can read)."""

    def __init__(self, message: str, usage: bool = True):
        super().__init__(message)
        self.usage = usage


class LogReader:
    """A read transaction on one log (see the module docstring); open it with `sqlite` or
    `postgres`, which close it at the end."""

    def __init__(self, tx: Tx, now_sql: str, where: str):
        self.tx, self.now_sql, self.where = tx, now_sql, where

    # ----- opening ------------------------------------------------------------------------
    @classmethod
    @contextmanager
    def sqlite(cls, path: str, part: str = "records") -> Iterator["LogReader"]:
        """The SQLite log at `path`, once it is known to hold `part` (``records``,
        ``lines`` or ``writers``: the table a command reads)."""
        table = TABLES[part]
        _regular(path)
        db = _read_only(path)
        try:
            cur = db.cursor()
            cur.execute("BEGIN")
            tx = Tx(cur, False)
            if not _has_table(tx, "sqlite_master", table):
                raise ReadError(
                    f"{path}:1: an SQLite database without an intent log (no {table} "
                    f"table); give {WHAT}",
                    usage=False,
                )
            yield cls(tx, SqliteStore.now_sql, path)
        except sqlite3.DatabaseError as e:
            raise ReadError(
                f"{path}:1: not an SQLite intent log ({e}); give {WHAT}", usage=False
            ) from None
        finally:
            db.close()

    @classmethod
    @contextmanager
    def postgres(
        cls, dsn: str, schema: Optional[str], part: str = "records"
    ) -> Iterator["LogReader"]:
        """The log in `schema` (default ``public``, folded as PostgreSQL folds it) of the
        database `dsn`, once it is known to hold `part` (as `sqlite`)."""
        table = TABLES[part]
        if not dsn or not dsn.strip():
            raise ReadError("--dsn is empty: give a conninfo (host=... dbname=...) or a URI")
        try:
            import psycopg
        except ImportError:
            raise ReadError("--dsn needs psycopg 3: pip install 'toolcommit[postgres]'") from None
        try:
            where = pg_schema(schema)
        except StoreError as e:
            raise ReadError(f"--schema: {e}") from None
        try:
            with pg_snapshot(dsn, where, connect_timeout=10) as cur:
                tx = Tx(cur, True)
                if tx.one(_PG_TABLE, (where, table)) is None:
                    raise ReadError(
                        f"--dsn: schema {where} holds no intent log (no {table} table); "
                        "give the schema the runtime writes to (--schema)"
                    )
                yield cls(tx, PostgresStore.now_sql, f"schema {where}")
        except (psycopg.Error, UnicodeError, ValueError) as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise ReadError(
                f"--dsn: cannot read the database: {first}; check the conninfo, that the "
                f"server is up and that this role may read schema {where}"
            ) from None

    # ----- reading ------------------------------------------------------------------------
    def records(self, states: Optional[Sequence[str]] = None) -> list[Record]:
        """The records (in `states` if given), by key."""
        return [r for r, _ in self.records_in_flight(states)]

    def records_in_flight(
        self, states: Optional[Sequence[str]] = None
    ) -> list[tuple[Record, bool]]:
        """The records (in `states` if given), by key, each with whether a request of it may
        be on its way from its holder (``in_flight``; a log written before the column: yes)."""
        flight = "in_flight" if self.has("tc_records", "in_flight") else "1"
        which = "" if states is None else f" WHERE state IN ({', '.join('?' * len(states))})"
        rows = self.tx.all(
            f"SELECT {COLS}, {flight} FROM tc_records{which} ORDER BY key", tuple(states or ())
        )
        return [(record_of(x[:-1]), bool(x[-1])) for x in rows]

    def writers(self) -> list[tuple[str, int, bool, Optional[str], Optional[int], Optional[int]]]:
        """(writer, incarnation, running, host, pid, server process) of each writer name."""
        where = "host, pid, backend" if self.has("tc_writers", "backend") else "NULL, NULL, NULL"
        return [
            (
                str(w),
                int(i),
                bool(r),
                h,
                None if p is None else int(p),
                None if b is None else int(b),
            )
            for w, i, r, h, p, b in self.tx.all(
                f"SELECT writer, incarnation, running, {where} FROM tc_writers"
            )
        ]

    def server_processes(self) -> set[int]:
        """The server processes PostgreSQL runs now (each writer's ``backend`` is one)."""
        return {int(x[0]) for x in self.tx.all("SELECT pid FROM pg_stat_activity")}

    def now(self) -> float:
        """The store's clock."""
        return float(self.tx.first(f"SELECT {self.now_sql}")[0])

    def stored_design(self) -> Optional[tuple[str, str, Optional[Any]]]:
        """(name, digest, document or None) of the design the log stores; None: none. A
        document longer than `MAX_DESIGN` or not JSON is a `ReadError`."""
        if not self.has("tc_design", "digest"):
            return None
        doc = "doc" if self.has("tc_design", "doc") else "NULL"
        row = self.tx.one(
            f"SELECT substr(name, 1, 400), substr(digest, 1, 200), length({doc}), "
            f"substr({doc}, 1, {MAX_DESIGN}) FROM tc_design WHERE id = 1"
        )
        if row is None:
            return None
        name, digest, size, text = str(row[0]), str(row[1]), row[2], row[3]
        if size is not None and int(size) > MAX_DESIGN:
            raise ReadError(
                f"{self.where}: its stored design is {int(size)} characters long (at most "
                f"{MAX_DESIGN}): the log was changed outside toolcommit",
                usage=False,
            )
        try:
            return name, digest, None if text is None else json.loads(text)
        except ValueError as e:
            raise ReadError(
                f"{self.where}: its stored design is not JSON ({e}): the log was changed "
                "outside toolcommit",
                usage=False,
            ) from None

    def lines(self, batch: int = 5000) -> Iterator[str]:
        """Every line of the log (JSON text) in the order written."""
        yield from page_lines(self.tx, batch)

    def database(self) -> str:
        """The name of the PostgreSQL database read."""
        return str(self.tx.first("SELECT current_database()")[0])

    def has(self, table: str, column: str) -> bool:
        """Whether `table` has `column` (a log of an earlier release may lack either), asked
        inside a savepoint so a refusal leaves the read transaction usable."""
        self.tx.run("SAVEPOINT tc_probe")
        try:
            self.tx.one(f"SELECT {column} FROM {table} WHERE 1 = 0")
            found = True
        except Exception:  # the engine's own error: no such table or column
            self.tx.run("ROLLBACK TO SAVEPOINT tc_probe")
            found = False
        self.tx.run("RELEASE SAVEPOINT tc_probe")
        return found


_PG_TABLE = "SELECT 1 FROM information_schema.tables WHERE table_schema = ? AND table_name = ?"


def _has_table(tx: Tx, master: str, table: str) -> bool:
    return (
        tx.one(f"SELECT name FROM {master} WHERE type = 'table' AND name = ?", (table,)) is not None
    )


def _regular(path: str) -> None:
    """`ReadError` unless `path` is a regular file this user may read (checked before it is
    opened: opening a FIFO would wait for a writer for ever)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ReadError(f"{path}: no such file; give {WHAT}") from None
    except OSError as e:
        raise ReadError(f"{path}: cannot read it ({e.strerror}); give {WHAT}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ReadError(f"{path}: is a folder; give {WHAT}")
    if not stat.S_ISREG(st.st_mode):
        raise ReadError(f"{path}: not a regular file (a pipe, a device or a socket); give {WHAT}")
    try:
        with open(path, "rb"):  # SQLite would say only "unable to open database file"
            pass
    except OSError as e:
        raise ReadError(
            f"{path}: cannot read it ({e.strerror}); run as a user who may read it, or give "
            "a readable copy"
        ) from None


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


def _read_only(path: str) -> sqlite3.Connection:
    """A read-only connection to the SQLite file `path` that leaves nothing beside it.

    With no ``-wal`` holding writes and no ``-shm`` (no writer has the file open, or the
    last closed it cleanly) it is opened ``immutable``: SQLite then reads the file alone and
    creates no ``-shm`` or ``-wal``. Else a writer may be live: ``mode=ro``, sharing its
    ``-shm`` (on a read-only volume, where it cannot be made, a `ReadError` saying what to
    copy)."""
    uri = Path(os.path.abspath(path)).as_uri()
    wal, shm = _size(path + "-wal"), os.path.exists(path + "-shm")
    if not wal and not shm:
        return sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, isolation_level=None)
    db = sqlite3.connect(uri + "?mode=ro", uri=True, isolation_level=None)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError as e:
        db.close()
        if not _read_only_fs(path):
            raise ReadError(
                f"{path}:1: cannot open it read-only ({e}): SQLite needs to read or create its "
                "-shm file beside it; read it where that folder can be written, or copy it "
                "together with its -wal and -shm files",
                usage=False,
            ) from None
        if wal:
            raise ReadError(
                f"{path}:1: cannot read it on this read-only volume: its last writes are in "
                "its -wal file, which SQLite reads only with its -shm file, and that cannot "
                "be created here; copy it with its -wal file to a folder that can be written "
                "and give the copy",
                usage=False,
            ) from None
        return sqlite3.connect(uri + "?mode=ro&immutable=1", uri=True, isolation_level=None)


def public_dsn(dsn: str) -> str:
    """The conninfo `dsn` without its password (what a printed command may show)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    shown = {k: v for k, v in conninfo_to_dict(dsn).items() if k != "password"}
    return make_conninfo(**{k: str(v) for k, v in shown.items()})
