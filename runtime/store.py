"""Where the intent log lives: one SQL schema, two engines (SQLite, PostgreSQL).

The log needs three things of its store, and both engines give them:

1. a uniqueness constraint that decides a race in one step (``tc_records.key`` is the
   primary key; ``tc_records.slot`` is unique where set),
2. a compare-and-set (``UPDATE ... WHERE key = ? AND state = ? AND owner = ? ...``, whose
   row count says who won), and
3. one transaction per decision, holding the record change and the log lines it writes, so
   a crash (even SIGKILL) leaves both or neither.

Tables
------
``tc_records``  one row per semantic key: the record state, fence, lease (owner,
                owner_inc, lease_until on the store's clock), the accepting call, the
                provider's saved result, and when its request was first and last sent
                (``first_sent``, ``sent_at``: the replay window and the delay bound), and
                whether a request of it may be on its way from its holder now
                (``in_flight``: a dispatch or a replay whose end is not written; a takeover
                of such a record counts as its last send, and of no other).
``tc_events``   the log contract (spec/log.schema.json), one JSON line per row, in insert
                order (``id``); ``(writer, seq)`` is unique.
``tc_writers``  one row per writer name: its incarnation, whether a process claims it
                (``running``), its last seq, and where that process runs (``host``,
                ``pid``, and on PostgreSQL its server process, ``backend``): what tells
                `status` a killed process from a live one before its leases run out.
``tc_account``  at most one row (``id = 1``): the provider account the log's tools act on,
                recorded by the first tool naming one (`IntentLog.bind_account`).
``tc_design``   one row (``id = 1``): the name, digest and document of the design the log was
                created under (`Design.digest`, `Design.doc`: what `status` and `recover`
                read it from); `IntentLog` refuses to open the log under another.
                With none stored and no open record (else when told: ``adopt_design``), the first
                design that opens the log is stored (`IntentLog.design_adopted` says so).
``tc_tools``    one row per tool called with a declared identity: its rule
                (`toolcommit.runtime.identity.Identity.rule`, JSON), which decides which
                calls are one intent; `IntentLog.declare` refuses a changed rule while the
                tool has records in doubt.

SQL is written once with ``?`` placeholders; the PostgreSQL store turns them into
``%s``, so no statement may contain a literal ``%`` or ``?``.

One statement per decision
--------------------------
A decision whose expected case is known before it runs (a fresh proposal accepted, an
ack at the ticket's generation) can be written without a conversation: `Store.once` sends
its writes as one statement, each gated on the one before (``{gate}`` in a `Write`: the
writer's incarnation current for the first, the first having written for the rest), all
or nothing. PostgreSQL runs it as one data-modifying ``WITH``, committed alone: one round
trip where a transaction takes one per statement plus ``BEGIN`` and ``COMMIT``. When the
case does not hold nothing is written, and the log decides in a transaction as usual, so
the decision itself lives once, in the log. SQLite, in process, has no round trips to save
(and no data-modifying ``WITH``): it always decides in a transaction.

Limitations
-----------
SQLite is for processes on one machine (one file, WAL, ``BEGIN IMMEDIATE`` serializes
writers); leases run on each writer's clock (``tc_now()``), and a writer whose clock is off
the file system's (the time stamped on the file) is refused when it opens the file.
PostgreSQL is for orchestrators on several machines; leases then run on the database
server's clock, never on a worker's, and a lost connection is opened again at the next use
(`PostgresStore`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Protocol, Sequence

from toolcommit.model.errors import ToolcommitError
from toolcommit.runtime import refuse as F

_LOGGER = logging.getLogger("toolcommit.runtime")

OPEN_STATES = ("RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING")
_OPEN_SQL = "('RECORDED', 'DISPATCHED', 'UNKNOWN', 'RECONCILING')"
GAVE_UP = ("DEAD_LETTER", "COMPENSATED", "REJECTED_CONFLICT")
_ADDED = ("first_sent", "sent_at")  # store-clock times of a key's first and last send
#: columns a log written before them lacks: (table, column, its type; a statement run once
#: it is added, or None). An open record of such a log counts as having a request in flight
#: (its first takeover then stamps its last send, as every takeover did before)
_LATER = (
    (
        "tc_records",
        "in_flight",
        "INTEGER NOT NULL DEFAULT 0",
        f"UPDATE tc_records SET in_flight = 1 WHERE state IN {_OPEN_SQL}",
    ),
    ("tc_design", "doc", "TEXT", None),
    ("tc_writers", "host", "TEXT", None),
    ("tc_writers", "pid", "INTEGER", None),
    ("tc_writers", "backend", "INTEGER", None),
)

#: every (table, column) a log written before it lacks, added at open (`refuse.log_schema`)
LATER_COLUMNS = frozenset([("tc_records", c) for c in _ADDED] + [(t, c) for t, c, _, _ in _LATER])

_TABLES = """
CREATE TABLE IF NOT EXISTS tc_records (
  key TEXT PRIMARY KEY, intent TEXT NOT NULL, epoch INTEGER NOT NULL,
  tool TEXT NOT NULL, scope TEXT NOT NULL, args TEXT NOT NULL, call_id TEXT NOT NULL,
  state TEXT NOT NULL, fence INTEGER NOT NULL DEFAULT 0,
  owner TEXT, owner_inc INTEGER NOT NULL DEFAULT 0, lease_until {real} NOT NULL DEFAULT 0,
  slot TEXT, result TEXT, first_sent {real}, sent_at {real},
  in_flight INTEGER NOT NULL DEFAULT 0);
CREATE UNIQUE INDEX IF NOT EXISTS tc_records_slot ON tc_records (slot);
CREATE INDEX IF NOT EXISTS tc_records_intent ON tc_records (intent, epoch);
CREATE INDEX IF NOT EXISTS tc_records_open ON tc_records (state)
  WHERE state IN ('RECORDED', 'DISPATCHED', 'UNKNOWN', 'RECONCILING');
CREATE TABLE IF NOT EXISTS tc_asks (
  key TEXT NOT NULL, content TEXT NOT NULL, scope TEXT NOT NULL,
  told INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (key, scope));
CREATE INDEX IF NOT EXISTS tc_asks_content ON tc_asks (content);
CREATE TABLE IF NOT EXISTS tc_account (id INTEGER PRIMARY KEY, account TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tc_events (
  id {serial}, writer TEXT NOT NULL, seq {bigint} NOT NULL, line TEXT NOT NULL,
  UNIQUE (writer, seq));
CREATE TABLE IF NOT EXISTS tc_writers (
  writer TEXT PRIMARY KEY, incarnation INTEGER NOT NULL, running INTEGER NOT NULL,
  seq {bigint} NOT NULL, host TEXT, pid INTEGER, backend INTEGER);
CREATE TABLE IF NOT EXISTS tc_design (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, digest TEXT NOT NULL, doc TEXT);
CREATE TABLE IF NOT EXISTS tc_tools (tool TEXT PRIMARY KEY, rule TEXT NOT NULL)
"""


Write = tuple[str, tuple[Any, ...]]  # one statement (``?`` placeholders) and its parameters
GATE = "{gate}"  # where a `Write` takes the condition it runs under (see `gated`)


def _add_column(tx: "Tx", table: str, col: str, kind: str, then: Optional[str]) -> None:
    """Add `col` to `table` of a log written before it existed (`_LATER`)."""
    tx.run(f"ALTER TABLE {table} ADD COLUMN {col} {kind}")
    if then is not None:
        tx.run(then)


def gated(sql: str, condition: str = "1 = 1") -> str:
    """`sql` with its `GATE` replaced by `condition` (default: none, in a transaction)."""
    return sql.replace(GATE, condition)


class StoreError(ToolcommitError):
    """The store cannot be opened or used (bad path, server down, driver missing)."""


class Cursor(Protocol):
    """What `Tx` uses of a DB-API cursor (sqlite3's, psycopg's)."""

    @property
    def rowcount(self) -> int: ...
    def execute(self, sql: str, params: tuple[Any, ...], /) -> object: ...
    def executemany(self, sql: str, rows: list[tuple[Any, ...]], /) -> object: ...
    def fetchone(self) -> Optional[tuple[Any, ...]]: ...
    def fetchall(self) -> list[tuple[Any, ...]]: ...


class Tx:
    """One open transaction: `one`, `all` and `run` (which returns the row count)."""

    def __init__(self, cursor: Cursor, convert: bool):
        self._c, self._convert = cursor, convert

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self._convert else sql

    def one(self, sql: str, params: Sequence[Any] = ()) -> Optional[tuple[Any, ...]]:
        self._c.execute(self._sql(sql), tuple(params))
        return self._c.fetchone()

    def first(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...]:
        """The row of a query that always returns one (an aggregate, a row known to exist);
        `StoreError` if it returned none."""
        row = self.one(sql, params)
        if row is None:
            raise StoreError(f"no row where one was certain: {sql}")
        return row

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._c.execute(self._sql(sql), tuple(params))
        return self._c.fetchall()

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        self._c.execute(self._sql(sql), tuple(params))
        return self._c.rowcount

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._c.executemany(self._sql(sql), [tuple(r) for r in rows])


class Store:
    """The common shape: `tx()` (a write transaction), `read()`, `now_sql`, `close()`.

    Thread-safe: one lock serializes this process's use of its one connection."""

    dialect = ""
    now_sql = ""
    lock_sql = ""  # appended to a SELECT that must lock its row until the commit
    backend_sql = "NULL"  # the server process of this connection, where there is one
    returning = True  # INSERT / UPDATE ... RETURNING (SQLite since 3.35)
    one_statement = False  # `once` writes a decision in one statement

    def __init__(self) -> None:
        self._lock = threading.RLock()
        #: a statement (and its parameters) run on each new connection after a lost one:
        #: the log keeps its writer's ``backend`` true there (`toolcommit status`)
        self.on_reconnect: Optional[Write] = None

    def once(
        self,
        writer: tuple[str, int],
        first: Write,
        then: Sequence[Write],
        seq: int,
        lines: Sequence[tuple[int, str]],
    ) -> Optional[tuple[Any, ...]]:
        """Write one decision in one statement, committed alone, or write nothing (see the
        module docstring; only where `one_statement`).

        `first` (``... RETURNING`` the record's columns) runs where its `GATE` holds
        under `writer` = (name, incarnation) current, whose row then stays locked to the
        commit (a process opening that name waits for it); if it wrote, each of `then`
        (its `GATE`: that `first` wrote), the writer's seq set to `seq`, and `lines` ((seq,
        JSON text) each) stored. The row `first` returned, or None: nothing was written
        (its case did not hold, or the writer was superseded): decide in a transaction.
        """
        raise NotImplementedError  # pragma: no cover - only where one_statement

    def tx(self) -> AbstractContextManager[Tx]:  # pragma: no cover - abstract
        raise NotImplementedError

    def read(self) -> AbstractContextManager[Tx]:
        return self.tx()

    def snapshot(self) -> AbstractContextManager[Tx]:
        """A read-only transaction whose statements all see the store as of one moment:
        a reader that pages through a table in it (`read_lines`) never sees a later line
        of a writer without an earlier one. It runs on a connection of its own, so a long
        read (an export) holds up none of this process's decisions or lease renewals."""
        return self.read()

    def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


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
        have = _columns(self._db)
        why = F.log_schema(self.path, have, _log_columns(), adopt, create, LATER_COLUMNS)
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
                    for stmt in _TABLES.format(
                        real="REAL", bigint="INTEGER", serial="INTEGER PRIMARY KEY AUTOINCREMENT"
                    ).split(";"):
                        tx.run(stmt)
                    have = {r[1] for r in tx.all("PRAGMA table_info(tc_records)")}
                    for col in _ADDED:
                        if col not in have:  # a log written before these columns existed
                            tx.run(f"ALTER TABLE tc_records ADD COLUMN {col} REAL")
                    for table, col, kind, then in _LATER:
                        if col not in {r[1] for r in tx.all(f"PRAGMA table_info({table})")}:
                            _add_column(tx, table, col, kind, then)
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


def _columns(db: sqlite3.Connection) -> dict[str, set[str]]:
    """{table: its columns} of an SQLite database, read only."""
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {
        n: {r[1] for r in db.execute("SELECT * FROM pragma_table_info(?)", (n,))} for n in names
    }


def _schema_columns() -> dict[str, set[str]]:
    """{table: columns} of the log's own schema (`_TABLES`, built in memory)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(
            _TABLES.format(real="REAL", bigint="INTEGER", serial="INTEGER PRIMARY KEY")
        )
        return {k: v for k, v in _columns(db).items() if k.startswith("tc_")}
    finally:
        db.close()


#: computed once, at import: a store opened in a forked child never builds it there
_LOG_COLUMNS = _schema_columns()


def _log_columns() -> dict[str, set[str]]:
    """{table: columns} of the log's own schema (a copy: callers may change it)."""
    return {k: set(v) for k, v in _LOG_COLUMNS.items()}


def _pg_columns(tx: Tx) -> dict[str, set[str]]:
    """{table: its columns} of the current PostgreSQL schema."""
    have: dict[str, set[str]] = {}
    for table, column in tx.all(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema()"
    ):
        have.setdefault(str(table), set()).add(str(column))
    return have


def _failed(path: str, e: Exception) -> str:
    """The one-line message of a failed SQLite statement or commit."""
    full = "full" in str(e).lower()
    return (
        f"{path}: the SQLite intent log could not write ({e}); the transaction was rolled "
        "back, so this decision was not written: "
        + ("free some space, then retry" if full else "check the file and the disk")
    )


class PostgresStore(Store):
    """A PostgreSQL database through psycopg 3 (the ``postgres`` extra).

    Parameters
    ----------
    conninfo : str
        A libpq connection string or URI (``host=/tmp/pg port=5432 dbname=toolcommit``).
    schema : str, optional
        Keep the tables in this schema (created if absent); default ``public``. Its name
        is folded to lower case, as PostgreSQL folds an unquoted name (`pg_schema`).
    adopt : bool
        Put the log into a schema that already holds other tables; without it such a
        schema is refused (`StoreError`) and left as it was.
    reconnects : int
        Attempts to open the connection again, when a statement finds it lost (the
        server restarted, the session killed), before the statement is refused with a
        `StoreError`; the next statement tries again. A statement that failed as the
        connection was lost is never re-run: whether it was written is not known.
    """

    dialect = "postgres"
    now_sql = "extract(epoch from clock_timestamp())"
    lock_sql = " FOR UPDATE"
    backend_sql = "pg_backend_pid()"
    one_statement = True

    def __init__(
        self,
        conninfo: str,
        schema: Optional[str] = None,
        adopt: bool = False,
        reconnects: int = 3,
    ):
        super().__init__()
        self._reconnects, self._shut = max(1, int(reconnects)), False
        try:
            import psycopg
        except ImportError:
            raise StoreError(
                "PostgreSQL needs psycopg 3: pip install 'toolcommit[postgres]'"
            ) from None
        self._errors = psycopg.Error
        self._conninfo, self._schema = conninfo, pg_schema(schema) if schema else None
        try:
            self._db = psycopg.connect(conninfo, autocommit=True)
            with self.tx() as tx:
                tx.one("SELECT pg_advisory_xact_lock(7277261)")  # one DDL writer at a time
                if schema:
                    schema = pg_schema(schema)
                    tx.run(f"CREATE SCHEMA IF NOT EXISTS {schema}")
                    tx.run(f"SET search_path TO {schema}")
                names = [
                    r[0]
                    for r in tx.all(
                        "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                        "current_schema() ORDER BY table_name"
                    )
                ]
                why = F.log_schema(  # a tc_ table of another program's: even with adopt
                    f"schema {schema or 'public'}",
                    _pg_columns(tx),
                    _log_columns(),
                    True,
                    True,
                    LATER_COLUMNS,
                )
                if why is not None:
                    raise StoreError(why)
                if names and "tc_writers" not in names and not adopt:
                    raise StoreError(
                        f"schema {schema or 'public'} holds another "
                        f"application's tables ({', '.join(names[:5])}) and no "
                        "intent log; give a schema of its own (schema=...), or "
                        "pass adopt=True to put the log there"
                    )
                for stmt in _TABLES.format(
                    real="DOUBLE PRECISION", bigint="BIGINT", serial="BIGSERIAL PRIMARY KEY"
                ).split(";"):
                    tx.run(stmt)
                have = {
                    r[0]
                    for r in tx.all(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                        "current_schema() AND table_name = 'tc_records'"
                    )
                }
                for col in _ADDED:
                    if col not in have:  # a log written before these columns existed
                        tx.run(f"ALTER TABLE tc_records ADD COLUMN {col} DOUBLE PRECISION")
                for table, col, kind, then in _LATER:
                    if not tx.all(
                        "SELECT 1 FROM information_schema.columns WHERE table_schema = "
                        "current_schema() AND table_name = ? AND column_name = ?",
                        (table, col),
                    ):
                        _add_column(tx, table, col, kind, then)
            if schema:
                self._db.execute(f"SET search_path TO {schema}")
        except (psycopg.Error, StoreError) as e:
            if hasattr(self, "_db"):
                self._db.close()
            if isinstance(e, StoreError):
                raise
            raise StoreError(
                "cannot open the PostgreSQL intent log: "
                + " ".join(str(e).split())
                + "; check the connection string"
            ) from None

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        """One transaction; a failed statement or commit (the server gone, a full disk) is a
        `StoreError` in one line: rolled back, so the decision was not written."""
        with self._lock:
            self._connected()
            try:
                with self._db.transaction(), self._db.cursor() as cur:
                    yield Tx(cur, True)
            except self._errors as e:
                raise StoreError(_pg_failed(e, self._db.closed)) from None

    def _connected(self) -> None:
        """Open the connection again if it was lost: up to `reconnects` attempts, a short
        pause between them; `StoreError` (one line) if none succeeds."""
        if not self._db.closed:
            return
        if self._shut:
            raise StoreError("the PostgreSQL intent log was closed: open it again")
        import psycopg

        pause, last = 0.05, ""
        for attempt in range(self._reconnects):
            if attempt:
                time.sleep(pause)
                pause *= 4
            try:
                db = psycopg.connect(self._conninfo, autocommit=True, **_timeout(self._conninfo))
                if self._schema:
                    db.execute(f"SET search_path TO {self._schema}")
            except self._errors as e:
                last = " ".join(str(e).split())
                continue
            self._db = db
            self._reconnected()
            return
        raise StoreError(
            "the PostgreSQL intent log lost its connection and could not open it again "
            f"({self._reconnects} attempts; the last: {last}): check the server; the log "
            "tries again at its next use"
        )

    def _reconnected(self) -> None:
        """Run `on_reconnect` on the new connection; a failure there is logged, never
        raised (the connection serves the log either way)."""
        if self.on_reconnect is None:
            return
        sql, params = self.on_reconnect
        try:
            with self._db.cursor() as cur:
                cur.execute(sql.replace("?", "%s"), tuple(params))
        except self._errors as e:
            _LOGGER.warning("after reconnecting: %s", " ".join(str(e).split()))

    @contextmanager
    def snapshot(self) -> Iterator[Tx]:
        """See `Store.snapshot`: REPEATABLE READ, READ ONLY, on a connection of its own
        (the log's schema its search path). Under PostgreSQL's default
        (READ COMMITTED) each statement sees its own moment, and ``tc_events.id`` is taken
        at insert, not at commit: a page read after another could hold a writer's next
        line without the one before it, which committed late with a smaller id."""
        try:
            with pg_snapshot(self._conninfo, self._schema) as cur:
                yield Tx(cur, True)
        except self._errors as e:
            raise StoreError(
                "the PostgreSQL intent log could not be read ("
                + " ".join(str(e).split())
                + "): check the server, then retry"
            ) from None

    def once(
        self,
        writer: tuple[str, int],
        first: Write,
        then: Sequence[Write],
        seq: int,
        lines: Sequence[tuple[int, str]],
    ) -> Optional[tuple[Any, ...]]:
        """See `Store.once`: one data-modifying ``WITH`` in autocommit. ``lk`` reads the
        writer's row ``FOR UPDATE`` (a concurrent opening of the name is waited for, and
        its new incarnation then fails the check); ``m`` is `first`; the rest test that
        ``m`` returned a row. A failure is a `StoreError` as in `tx`: nothing written."""
        wrote = "EXISTS (SELECT 1 FROM m)"
        parts: list[Write] = [
            (
                "lk AS (SELECT 1 FROM tc_writers WHERE writer = ? AND incarnation = ? FOR UPDATE)",
                writer,
            ),
            (f"m AS ({gated(first[0], 'EXISTS (SELECT 1 FROM lk)')})", first[1]),
        ]
        parts += [(f"t{i} AS ({gated(sql, wrote)})", p) for i, (sql, p) in enumerate(then)]
        if lines:
            parts.append(
                (
                    "s AS (UPDATE tc_writers SET seq = ? WHERE writer = ? AND incarnation = ? "
                    f"AND {wrote})",
                    (seq, *writer),
                )
            )
            values = ", ".join(["(?, ?::bigint, ?)"] * len(lines))
            parts.append(
                (
                    "e AS (INSERT INTO tc_events (writer, seq, line) SELECT * FROM "
                    f"(VALUES {values}) AS v (writer, seq, line) WHERE {wrote})",
                    tuple(x for n, text in lines for x in (writer[0], n, text)),
                )
            )
        sql = "WITH " + ", ".join(w[0] for w in parts) + " SELECT * FROM m"
        with self._lock:
            self._connected()
            try:
                with self._db.cursor() as cur:
                    rows = Tx(cur, True).all(sql, [x for w in parts for x in w[1]])
            except self._errors as e:
                raise StoreError(_pg_failed(e, self._db.closed)) from None
        return rows[0] if rows else None

    def close(self) -> None:
        with self._lock:
            self._shut = True
            self._db.close()


def _pg_failed(e: Exception, lost: bool = False) -> str:
    """The one-line message of a failed PostgreSQL statement or commit; `lost`: the
    connection went with it (a commit then may or may not have been written)."""
    what = " ".join(str(e).split())
    if lost:
        return (
            f"the PostgreSQL intent log could not write ({what}): the connection was lost, "
            "so this decision may or may not have been written; the log opens the "
            "connection again at its next use"
        )
    return (
        f"the PostgreSQL intent log could not write ({what}); the transaction was rolled "
        "back, so this decision was not written: check the server, then retry"
    )


def _timeout(conninfo: str) -> dict[str, Any]:
    """``connect_timeout`` for a reconnection, unless `conninfo` names its own: a server
    that does not answer must not hold a call (and the log's lock) for ever."""
    return {} if "connect_timeout" in conninfo else {"connect_timeout": 5}


def pg_schema(schema: Optional[str]) -> str:
    """The name PostgreSQL gives the schema `schema` (default ``public``): the log writes it
    unquoted, so the server folds it to lower case (``S1`` is ``s1``); `StoreError` for a
    name other than letters, digits and _."""
    if not schema:
        return "public"
    if not schema.replace("_", "").isalnum() or not schema.isascii():
        raise StoreError(f"schema {schema!r}: use letters, digits and _")
    return schema.lower()


@contextmanager
def pg_snapshot(conninfo: str, schema: Optional[str], **connect: Any) -> Iterator[Any]:
    """A psycopg cursor in a read-only REPEATABLE READ transaction on a connection of its
    own (`connect`: psycopg.connect's keywords), its search path `schema` (a name
    `pg_schema` folded; None: the server's default); rolled back and closed at the end.
    psycopg's errors pass through: each caller says what they mean."""
    import psycopg

    with psycopg.connect(conninfo, **connect) as db, db.cursor() as cur:
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        if schema:
            cur.execute(f"SET LOCAL search_path TO {schema}")
        yield cur
        db.rollback()


def read_lines(store: Store, batch: int = 5000) -> Iterator[str]:
    """Every line stored in `store` (JSON text) in the order written: the exported log,
    read in one `Store.snapshot` (the log as of one moment, while others may be writing
    it)."""
    with store.snapshot() as tx:
        yield from page_lines(tx, batch)


def page_lines(tx: Tx, batch: int = 5000) -> Iterator[str]:
    """Every line in `tx`'s view of the log, in the order written, `batch` rows a query."""
    last = -1
    while True:
        rows = tx.all(
            "SELECT id, line FROM tc_events WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
        )
        if not rows:
            return
        for _id, text in rows:
            yield text
        last = rows[-1][0]


def expire_leases(store: Store, writer: Optional[str] = None) -> int:
    """Expire the leases of `writer`'s unsettled records (every writer's if None) at once:
    an operator's action, and the fault harness's. Writes no line (no process logs a lease
    lapsing). Returns how many leases it expired."""
    with store.tx() as tx:
        if writer is None:
            return tx.run(f"UPDATE tc_records SET lease_until = 0 WHERE state IN {_OPEN_SQL}")
        return tx.run(
            f"UPDATE tc_records SET lease_until = 0 WHERE state IN {_OPEN_SQL} AND owner = ?",
            (writer,),
        )
