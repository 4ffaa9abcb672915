"""The intent log never changes a database it did not create unless asked, and a full disk
is a one-line `StoreError` with the decision rolled back, not a raw sqlite3 error."""

from __future__ import annotations

import sqlite3

import pytest

from toolcommit.checker.cli import main  # noqa: F401 - the CLI's error tree is the library's
from toolcommit.model.errors import ToolcommitError
from toolcommit.runtime import IntentLog, StoreError


def other_app(path) -> bytes:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, total INTEGER)")
    db.execute("INSERT INTO orders VALUES (1, 20)")
    db.commit()
    db.close()
    return path.read_bytes()


def shape(path):
    db = sqlite3.connect(path)
    try:
        return (
            db.execute("PRAGMA journal_mode").fetchone()[0],
            [
                r[0]
                for r in db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name"
                )
            ],
        )
    finally:
        db.close()


def test_another_applications_database_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "shop.db"
    before = other_app(path)
    with pytest.raises(StoreError, match="another application's database.*adopt=True"):
        IntentLog.sqlite(str(path), "w1", provider="ideal")
    assert path.read_bytes() == before and shape(path) == ("delete", ["orders"])
    assert not (tmp_path / "shop.db-wal").exists()


def test_adopt_puts_the_log_into_another_applications_database(tmp_path):
    path = tmp_path / "shop.db"
    other_app(path)
    log = IntentLog.sqlite(str(path), "w1", adopt=True, provider="ideal")
    assert log.propose("c1", "refund", {"amount": 20}, "u1", principal="user:1").accepted
    log.close()
    mode, tables = shape(path)
    assert mode == "wal" and {"orders", "tc_records", "tc_events", "tc_writers"} <= set(tables)
    again = IntentLog.sqlite(str(path), "w2", provider="ideal")  # holds a log now: no adopt needed
    again.close()


def test_a_full_disk_is_a_store_error_and_the_decision_is_not_written(tmp_path):
    path = tmp_path / "intents.db"
    log = IntentLog.sqlite(str(path), "w1", provider="ideal")
    pages = log.store._db.execute("PRAGMA page_count").fetchone()[0]
    log.store._db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is now full
    with pytest.raises(StoreError, match="could not write.*free some space") as e:
        for i in range(1000):
            log.propose(
                f"c{i}", "refund", {"amount": i, "note": "x" * 2000}, "u1", principal="user:1"
            )
    assert isinstance(e.value, ToolcommitError) and "\n" not in str(e.value)
    written = {r[0] for r in log.store._db.execute("SELECT key FROM tc_records")}
    events = log.store._db.execute("SELECT count(*) FROM tc_events").fetchone()[0]
    assert events == 2 * len(written)  # each decision whole (proposal + RECORDED) or not
    log.close()


def test_a_400_digit_integer_in_a_proposal_is_a_one_line_error_not_an_overflow(tmp_path):
    from toolcommit.runtime import IntentLogError

    log = IntentLog.sqlite(str(tmp_path / "intents.db"), "w1", provider="ideal")
    with pytest.raises(IntentLogError, match="args.amount: an integer beyond the float range"):
        log.propose("c1", "refund", {"amount": 10**400}, "u1", principal="user:1")
    assert log.events() == []  # nothing decided, nothing written
    log.close()
