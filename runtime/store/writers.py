"""The writers (``tc_writers``): one row per writer name, its incarnation, whether a process
claims it (``running``), its last seq and where that process runs (``host``, ``pid``, on
PostgreSQL its server process ``backend``)."""

from __future__ import annotations

from typing import Optional

from toolcommit.runtime.store.base import Store, Tx, Write


def current(tx: Tx, writer: str) -> Optional[tuple[int, bool, int]]:
    """(incarnation, running, last seq) of the name `writer`; None: never opened."""
    row = tx.one("SELECT incarnation, running, seq FROM tc_writers WHERE writer = ?", (writer,))
    return None if row is None else (int(row[0]), bool(row[1]), int(row[2]))


def first(tx: Tx, writer: str) -> None:
    """Open the name `writer` for the first time: incarnation 1, running."""
    tx.run(
        "INSERT INTO tc_writers (writer, incarnation, running, seq) VALUES (?, 1, 1, 0)",
        (writer,),
    )


def reopen(tx: Tx, writer: str, incarnation: int) -> None:
    """Open the name `writer` again as `incarnation`, running."""
    tx.run(
        "UPDATE tc_writers SET incarnation = ?, running = 1 WHERE writer = ?",
        (incarnation, writer),
    )


def runs_at(tx: Tx, store: Store, writer: str, host: str, pid: int) -> None:
    """Note where the process of `writer` runs (`toolcommit status`: alive or not)."""
    tx.run(
        f"UPDATE tc_writers SET host = ?, pid = ?, backend = {store.backend_sql} WHERE writer = ?",
        (host, pid, writer),
    )


def on_reconnect(store: Store, mine: tuple[str, int]) -> Write:
    """The statement that keeps `mine`'s ``backend`` true on a new connection."""
    return (
        f"UPDATE tc_writers SET backend = {store.backend_sql} WHERE writer = ? AND incarnation = ?",
        mine,
    )


def stopped(tx: Tx, mine: tuple[str, int]) -> None:
    """Mark `mine` stopped (a clean shutdown: its next opening is a restart)."""
    tx.run("UPDATE tc_writers SET running = 0 WHERE writer = ? AND incarnation = ?", mine)


def any_writer(tx: Tx) -> bool:
    """Whether any writer ever opened the log."""
    return bool(tx.first("SELECT count(*) FROM tc_writers")[0])
