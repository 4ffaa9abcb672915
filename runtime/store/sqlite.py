"""The SQLite store: one file in WAL mode, every write transaction ``BEGIN IMMEDIATE``, and
a read-only opening (`read_only`) for the commands that only read a log."""

from __future__ import annotations

import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

from toolcommit.runtime import refuse as F
from toolcommit.runtime.store.base import Store, StoreError, Tx
from toolcommit.runtime.store.schema import (
    ADDED,
    LATER,
    LATER_COLUMNS,
    add_column,
    columns,
    log_columns,
    tables,
)


def _read_only_hint(path: str) -> str:
    """Why an SQLite file cannot be written where it lies, as a clause; '' when it could."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return (
                "; its volume is mounted read-only: the intent log needs a writable "
                "folder (`toolcommit export` and `toolcommit status` read it in place)"
            )
    except OSError:
        pass
    return ""


class SqliteStore(Store):
    """An embedded SQLite file in WAL mode; every write transaction is ``BEGIN IMMEDIATE``.

    Parameters
    ----------
    path : str
        The database file (created with the schema if absent).
    synchronous : str
        ``FULL`` (default: a commit survives power loss) or ``NORMAL`` (a commit survives a
        process crash, the last ones may be lost on power loss; faster).
    busy_timeout : float
        Seconds a writer waits for another process's transaction.
    adopt : bool
        Put the log into a database that already holds other tables (switching it to WAL
        for good and adding the ``tc_`` tables). Without it, such a database is refused
        (`StoreError`) and left as it was: the log changes only a database it created.
    clock : callable() -> float, optional
        This process's clock (seconds since the epoch; default `time.time`): the store's
        clock, ``tc_now()`` in SQL, on which leases and send times run.
    max_skew : float
        Seconds `clock` may differ from the file system's clock (the time the kernel
        stamps on the file) when the store opens; more is refused (`StoreError`). SQLite
        has no server clock: every writer of the file reads its own, and a writer whose
        clock runs ahead takes over the live calls of the others. Each writer checked
        against the one clock the file's writers share keeps them within twice this.
    create : bool
        Make a new log in a file that holds none (default). False: the file must hold
        one already (`toolcommit recover` never turns an empty file into a log).

    Refused before anything is written (`StoreError`, the file left as it was): a path that
    is no file (``""``, ``":memory:"``: the log must outlive the process), and a database
    with a table named like the log's that is not the log's (`refuse.log_schema`).

    A failed statement or commit (a full disk, an I/O error) is a `StoreError` naming the
    file; its transaction was rolled back, so the decision was not written.
    """

    dialect = "sqlite"
    now_sql = "((julianday('now') - 2440587.5) * 86400.0)"
    returning = sqlite3.sqlite_version_info >= (3, 35, 0)

    def __init__(
        self,
        path: str,
        synchronous: str = "FULL",
        busy_timeout: float = 30.0,
        adopt: bool = False,
        create: bool = True,
        *,
        clock: Callable[[], float] = time.time,
        max_skew: float = 2.0,
    ):
        super().__init__()
        if synchronous.upper() not in ("FULL", "NORMAL", "EXTRA"):
            raise StoreError(f"synchronous={synchronous!r}: use FULL, NORMAL or EXTRA")
        why = F.sqlite_path(path)
        if why is not None:
            raise StoreError(f"IntentLog.sqlite: {why}")
        self.path = os.fspath(path)
        self._busy, self._file = busy_timeout, os.path.abspath(self.path)  # for `snapshot`
        self.clock, self.now_sql, self._now = clock, "tc_now()", _TxClock(clock)
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.create_function("tc_now", 0, self._now)
            self._refuse_foreign(adopt, create)
            self._init(synchronous.upper(), busy_timeout)
            self._check_clock(max_skew)
        except (sqlite3.Error, StoreError) as e:
            if hasattr(self, "_db"):
                self._db.close()
            if isinstance(e, StoreError):
                raise
            raise StoreError(
                f"{self.path}: cannot open the SQLite intent log: {e}{_read_only_hint(self.path)}"
            ) from None

    def _refuse_foreign(self, adopt: bool, create: bool) -> None:
        """`StoreError` if the database may not hold the log (`refuse.log_schema`): read
        only, before the file is switched to WAL or written."""
        have = columns(self._db)
        why = F.log_schema(self.path, have, log_columns(), adopt, create, LATER_COLUMNS)
        if why is not None:
            raise StoreError(why)

    def _check_clock(self, max_skew: float) -> None:
        """`StoreError` if `clock` is more than `max_skew` seconds off the file system's
        clock: the time the kernel stamps on the log's file when touched (`file_skew`)."""
        try:
            skew = file_skew(self._file, self.clock)
        except OSError as e:
            raise StoreError(
                f"{self.path}: cannot touch the file to read the file system's clock "
                f"({e.strerror}): open the log as a user who may write it"
            ) from None
        if abs(skew) > max_skew:
            raise StoreError(
                f"{self.path}: this process's clock runs {abs(skew):.1f} s "
                f"{'ahead of' if skew > 0 else 'behind'} the file system's clock, and "
                "leases in an SQLite log run on each writer's clock: this process would "
                f"take over the live calls of the file's other writers (allowed: "
                f"{max_skew:g} s); set the clock right (NTP), then open the log again"
            )

    def _init(self, synchronous: str, busy_timeout: float) -> None:
        """WAL mode and the schema. Switching to WAL, and the recovery after a process died
        with the file open, can answer "locked" at once instead of waiting in the busy
        handler: retry with a backoff, within `busy_timeout`."""
        deadline, pause = time.monotonic() + busy_timeout, 0.005
        while True:
            try:
                if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                    self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute(f"PRAGMA synchronous={synchronous}")
                with self._tx() as tx:
                    for stmt in tables(
                        "REAL", "INTEGER", "INTEGER PRIMARY KEY AUTOINCREMENT"
                    ).split(";"):
                        tx.run(stmt)
                    have = {r[1] for r in tx.all("PRAGMA table_info(tc_records)")}
                    for col in ADDED:
                        if col not in have:  # a log written before these columns existed
                            tx.run(f"ALTER TABLE tc_records ADD COLUMN {col} REAL")
                    for table, col, kind, then in LATER:
                        if col not in {r[1] for r in tx.all(f"PRAGMA table_info({table})")}:
                            add_column(tx, table, col, kind, then)
                return
            except sqlite3.OperationalError as e:
                if (
                    "locked" not in str(e)
                    and "busy" not in str(e)
                    or time.monotonic() + pause > deadline
                ):
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.1)

    @contextmanager
    def _tx(self) -> Iterator[Tx]:
        with self._lock:
            self._now.at = None
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield Tx(cur, False)
            except BaseException:
                if self._db.in_transaction:  # SQLite may have rolled it back itself
                    cur.execute("ROLLBACK")
                raise
            else:
                cur.execute("COMMIT")
            finally:
                cur.close()

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        try:
            with self._tx() as tx:
                yield tx
        except sqlite3.Error as e:
            raise StoreError(_failed(self.path, e)) from None

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        """See `Store.snapshot`: a read transaction (in WAL, the file as of its first
        read) on a second connection to the file."""
        db = None
        try:
            db = sqlite3.connect(
                Path(self._file).as_uri() + "?mode=ro",  # never creates a file
                uri=True,
                timeout=self._busy,
                isolation_level=None,
            )
            db.create_function("tc_now", 0, _TxClock(self.clock))
            cur = db.cursor()
            cur.execute("BEGIN")
            yield Tx(cur, False)
        except sqlite3.Error as e:
            raise StoreError(f"{self.path}: cannot read the SQLite intent log: {e}") from None
        finally:
            if db is not None:
                db.close()  # ends the read transaction

    @contextmanager
    def read(self) -> Iterator[Tx]:
        with self._lock:
            self._now.at = None
            try:
                cur = self._db.cursor()
                cur.execute("BEGIN")
                try:
                    yield Tx(cur, False)
                finally:
                    if self._db.in_transaction:
                        cur.execute("COMMIT")
                    cur.close()
            except sqlite3.Error as e:
                raise StoreError(_failed(self.path, e)) from None

    def close(self) -> None:
        with self._lock:
            self._db.close()


class _TxClock:
    """``tc_now()``: `clock` read once per transaction (`at` cleared as one begins), so
    each statement of it sees one moment, as with SQLite's own ``'now'``."""

    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self.at: Optional[float] = None

    def __call__(self) -> float:
        if self.at is None:
            self.at = self.clock()
        return self.at


def file_skew(path: str, clock: Callable[[], float] = time.time) -> float:
    """Seconds `clock` runs ahead of the file system's clock (negative: behind): the
    modification time the kernel stamps on `path` when touched (``utime`` with no time:
    set by the kernel, never by the process), against `clock` read around it. On one
    machine every process's file stamps come from that one clock. The stamp is compared
    with the interval `clock` read around the touch, never its midpoint: a process
    descheduled there (a loaded machine) is not taken for one whose clock is off."""
    before = clock()
    os.utime(path)
    stamped = os.stat(path).st_mtime
    after = clock()
    if stamped < before:
        return before - stamped
    if stamped > after:
        return after - stamped
    return 0.0


def _failed(path: str, e: Exception) -> str:
    """The one-line message of a failed SQLite statement or commit."""
    full = "full" in str(e).lower()
    return (
        f"{path}: the SQLite intent log could not write ({e}); the transaction was rolled "
        "back, so this decision was not written: "
        + ("free some space, then retry" if full else "check the file and the disk")
    )
