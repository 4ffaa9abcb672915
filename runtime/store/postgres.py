"""The PostgreSQL store, through psycopg 3 (the ``postgres`` extra): leases on the server's
clock, a lost connection opened again at the next use, a decision's expected case in one
statement (`PostgresStore.once`)."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional, Sequence

from toolcommit.runtime import refuse as F
from toolcommit.runtime.store.base import Store, StoreError, Tx, Write, gated
from toolcommit.runtime.store.schema import (
    ADDED,
    LATER,
    LATER_COLUMNS,
    add_column,
    log_columns,
    tables,
)

_LOGGER = logging.getLogger("toolcommit.runtime")
#: PostgreSQL's reserved key words (its documentation, appendix C): never a bare schema name
RESERVED = frozenset(
    """all analyse analyze and any array as asc asymmetric authorization binary both case
    cast check collate collation column concurrently constraint create cross current_catalog
    current_date current_role current_schema current_time current_timestamp current_user
    default deferrable desc distinct do else end except false fetch for foreign freeze from
    full grant group having ilike in initially inner intersect into is isnull join lateral
    leading left like limit localtime localtimestamp natural not notnull null offset on only
    or order outer overlaps placing primary references returning right select session_user
    similar some symmetric system_user table tablesample then to trailing true union unique
    user using variadic verbose when where window with""".split()
)


def _pg_columns(tx: Tx) -> dict[str, set[str]]:
    """{table: its columns} of the current PostgreSQL schema."""
    have: dict[str, set[str]] = {}
    for table, column in tx.all(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema()"
    ):
        have.setdefault(str(table), set()).add(str(column))
    return have


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
                    log_columns(),
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
                for stmt in tables("DOUBLE PRECISION", "BIGINT", "BIGSERIAL PRIMARY KEY").split(
                    ";"
                ):
                    tx.run(stmt)
                have = {
                    r[0]
                    for r in tx.all(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                        "current_schema() AND table_name = 'tc_records'"
                    )
                }
                for col in ADDED:
                    if col not in have:  # a log written before these columns existed
                        tx.run(f"ALTER TABLE tc_records ADD COLUMN {col} DOUBLE PRECISION")
                for table, col, kind, then in LATER:
                    if not tx.all(
                        "SELECT 1 FROM information_schema.columns WHERE table_schema = "
                        "current_schema() AND table_name = ? AND column_name = ?",
                        (table, col),
                    ):
                        add_column(tx, table, col, kind, then)
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
    if schema.lower() in RESERVED or schema[0].isdigit():
        raise StoreError(
            f"schema {schema!r}: a word PostgreSQL reserves (or a leading digit) cannot be "
            f"written unquoted: give another name (tc_{schema.lower()})"
        )
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


def drop_schema(conninfo: str, schema: str) -> None:
    """Drop the schema `schema` (a name `pg_schema` accepts) with every table in it: a
    throwaway log's end (the fault harness's). A failure is a `StoreError` in one line."""
    import psycopg

    name = pg_schema(schema)
    try:
        with psycopg.connect(conninfo, autocommit=True, **_timeout(conninfo)) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    except psycopg.Error as e:
        raise StoreError(f"cannot drop schema {name}: " + " ".join(str(e).split())) from None
