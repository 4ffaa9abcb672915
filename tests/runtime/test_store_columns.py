"""The columns `status` and `recover` read (``tc_records.in_flight``, ``tc_design.doc``) are
added to a log written before them, its open records counted as having a request in flight
(their first takeover then stamps their last send, as every takeover did before)."""

import sqlite3

from toolcommit.runtime import IntentLog


def test_a_log_written_before_the_columns_gets_them_and_its_open_records_are_in_flight(tmp_path):
    db = str(tmp_path / "i.db")
    log = IntentLog.sqlite(db, writer="pod-0", provider="stripe", settler=False)
    open_ = log.propose("t1", "refund", {"charge": "c1"}, "s", principal="u").key
    assert log.timeout(log.dispatch(open_))
    done = log.propose("t2", "refund", {"charge": "c2"}, "s", principal="u").key
    assert log.ack(log.dispatch(done), {"id": "re_2"})
    log.close()
    with sqlite3.connect(db) as c:  # as an earlier release wrote it
        c.execute("ALTER TABLE tc_records DROP COLUMN in_flight")
        c.execute("ALTER TABLE tc_design DROP COLUMN doc")
        for col in ("host", "pid", "backend"):
            c.execute(f"ALTER TABLE tc_writers DROP COLUMN {col}")
    IntentLog.sqlite(db, writer="reader", provider="stripe", settler=False).close()
    with sqlite3.connect(db) as c:
        flights = dict(c.execute("SELECT key, in_flight FROM tc_records"))
        assert [r[1] for r in c.execute("PRAGMA table_info(tc_design)")][-1] == "doc"
        assert c.execute("SELECT pid FROM tc_writers WHERE writer = 'reader'").fetchone()[0]
    assert flights == {open_: 1, done: 0}
