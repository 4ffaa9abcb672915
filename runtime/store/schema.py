"""The log's SQL schema, written once for both engines: its tables, the columns added since
the first release (added when an older log is opened), and the record's columns (`COLS`)."""

from __future__ import annotations

import sqlite3
from typing import Optional

from toolcommit.model.states import GAVE_UP, OPEN, sql_list
from toolcommit.runtime.store.base import Tx

__all__ = ["COLS", "GAVE_UP", "LATER_COLUMNS", "OPEN_SQL", "OPEN_STATES", "tables"]

OPEN_STATES = OPEN  # the record states not settled (`toolcommit.model.states`)
OPEN_SQL = sql_list(OPEN)  # as an SQL list: ``state IN {OPEN_SQL}``
#: every column of a record, in `toolcommit.runtime.records.record_of`'s order
COLS = (
    "key, intent, epoch, tool, scope, args, call_id, state, fence, owner, owner_inc, "
    "lease_until, slot, result, first_sent, sent_at"
)
ADDED = ("first_sent", "sent_at")  # store-clock times of a key's first and last send
#: columns a log written before them lacks: (table, column, its type; a statement run once
#: it is added, or None). An open record of such a log counts as having a request in flight
#: (its first takeover then stamps its last send, as every takeover did before)
LATER = (
    (
        "tc_records",
        "in_flight",
        "INTEGER NOT NULL DEFAULT 0",
        f"UPDATE tc_records SET in_flight = 1 WHERE state IN {OPEN_SQL}",
    ),
    ("tc_design", "doc", "TEXT", None),
    ("tc_writers", "host", "TEXT", None),
    ("tc_writers", "pid", "INTEGER", None),
    ("tc_writers", "backend", "INTEGER", None),
)

#: every (table, column) a log written before it lacks, added at open (`refuse.log_schema`)
LATER_COLUMNS = frozenset([("tc_records", c) for c in ADDED] + [(t, c) for t, c, _, _ in LATER])

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
  WHERE state IN {open};
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


def tables(real: str, bigint: str, serial: str) -> str:
    """The schema's statements (``;``-separated) in an engine's column types."""
    return _TABLES.format(real=real, bigint=bigint, serial=serial, open=OPEN_SQL)


def add_column(tx: Tx, table: str, col: str, kind: str, then: Optional[str]) -> None:
    """Add `col` to `table` of a log written before it existed (`LATER`)."""
    tx.run(f"ALTER TABLE {table} ADD COLUMN {col} {kind}")
    if then is not None:
        tx.run(then)


def columns(db: sqlite3.Connection) -> dict[str, set[str]]:
    """{table: its columns} of an SQLite database, read only."""
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {
        n: {r[1] for r in db.execute("SELECT * FROM pragma_table_info(?)", (n,))} for n in names
    }


def _schema_columns() -> dict[str, set[str]]:
    """{table: columns} of the log's own schema (`_TABLES`, built in memory)."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(tables("REAL", "INTEGER", "INTEGER PRIMARY KEY"))
        return {k: v for k, v in columns(db).items() if k.startswith("tc_")}
    finally:
        db.close()


#: computed once, at import: a store opened in a forked child never builds it there
_LOG_COLUMNS = _schema_columns()


def log_columns() -> dict[str, set[str]]:
    """{table: columns} of the log's own schema (a copy: callers may change it)."""
    return {k: set(v) for k, v in _LOG_COLUMNS.items()}
