"""The store's common face: a transaction (`Tx`), the `Store` every engine implements, and
its one error (`StoreError`). The SQL the log runs lives beside this module, one module per
table group (`records`, `lines`, `writers`, `design`); each engine (`sqlite`, `postgres`)
only opens connections and transactions."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Any, Optional, Protocol, Sequence

from toolcommit.model.errors import ToolcommitError

Write = tuple[str, tuple[Any, ...]]  # one statement (``?`` placeholders) and its parameters
GATE = "{gate}"  # where a `Write` takes the condition it runs under (see `gated`)


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
