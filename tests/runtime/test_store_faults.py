"""Store faults said as they are (issue 39, item 5), each a real fault: a full SQLite file
(``PRAGMA max_page_count`` at its size: SQLite's own SQLITE_FULL), a real PostgreSQL
server whose session is killed (``pg_terminate_backend``) between the dispatch's commit
and the ack's, and a process clock off by 120 s (given as the SQLite store's clock).

When the write that fails is the ack, the refund was sent: the caller is told it may have
happened, never "not written, retry"; the log holds the ack and writes it once the store
takes writes, so the next call is answered from the log; the provider sees one refund.
"""

from __future__ import annotations

import time

import pytest

from toolcommit.checker.cli import main
from toolcommit.runtime import InDoubt, IntentLog, StoreError, guard
from toolcommit.runtime.store import SqliteStore, file_skew

from .ledger import Bank, conforms

ARGS, SCOPE = {"amount": 20}, "user:42:request:7"


def _call(log: IntentLog, bank: Bank, call_id: str, execute=None):
    return guard(
        log,
        call_id,
        "refund",
        ARGS,
        SCOPE,
        execute or (lambda t: bank.refund(t, t.args)),
        bank.status,
        principal="user:42",
    )


# ----- SQLite: the disk fills between the two commits ----------------------------------------
def _fill(log: IntentLog) -> None:
    """The file may grow no more (SQLITE_FULL on the next page it needs)."""
    pages = log.store._db.execute("PRAGMA page_count").fetchone()[0]
    log.store._db.execute(f"PRAGMA max_page_count = {pages}")


def _free(log: IntentLog) -> None:
    log.store._db.execute("PRAGMA max_page_count = 1073741823")


def test_a_full_disk_at_the_ack_tells_the_caller_the_refund_may_have_happened(tmp_path):
    path = str(tmp_path / "intents.db")
    bank, log = Bank(), IntentLog.sqlite(path, "w1", provider="stripe")

    def refund_then_full(t):
        answer = bank.refund(t, t.args)
        _fill(log)  # the disk fills while the refund is on its way
        return {**answer, "receipt": "r" * 20000}  # the ack needs pages the file cannot take

    with pytest.raises(InDoubt) as told:
        _call(log, bank, "c1", refund_then_full)
    assert told.value.happened == "unknown" and "\n" not in str(told.value)
    assert "was sent" in str(told.value) and "then retry" not in str(told.value)
    (rec,) = log.records()
    # the lease is released, never renewed while the ack is held: status counts it in doubt
    assert (rec.state, log.lease_left(rec.key)) == ("DISPATCHED", 0.0)
    assert log.renew_held() == 0 and log.lease_left(rec.key) == 0.0
    assert main(["status", path]) == 3

    with pytest.raises(InDoubt, match="could not record its outcome"):
        _call(log, bank, "c2")  # still full: told at once, from the held ack
    _free(log)
    assert _call(log, bank, "c3")["id"] == "e1"  # the next call: the held ack, written
    assert log.record(rec.key).state == "ACKED" and main(["status", path]) == 0
    assert (len(bank.ledger), len(bank.requests)) == (1, 1)  # one refund, never re-sent
    assert conforms(log, bank, tmp_path)
    log.close()


def test_a_held_ack_is_written_by_the_heartbeat_once_the_disk_has_room(tmp_path):
    bank, log = Bank(), IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider="stripe")

    def refund_then_full(t):
        answer = bank.refund(t, t.args)
        _fill(log)
        return {**answer, "receipt": "r" * 20000}

    with pytest.raises(InDoubt):
        _call(log, bank, "c1", refund_then_full)
    (rec,) = log.records()
    log._beat()  # the heartbeat while the disk is full: the ack stays held, no renewal
    assert log.unwritten.keys() == [rec.key] and log.lease_left(rec.key) == 0.0
    _free(log)
    log._beat()
    assert log.unwritten.keys() == [] and log.record(rec.key).state == "ACKED"
    assert len(bank.ledger) == 1
    log.close()


def test_a_held_ack_is_dropped_once_another_process_settled_the_record(tmp_path):
    """The lease released, a second process takes the record over and settles it through
    the design (a replay under the same key): the held ack then writes nothing."""
    path = str(tmp_path / "i.db")
    bank, log = Bank(), IntentLog.sqlite(path, "w1", provider="stripe")

    def refund_then_full(t):
        answer = bank.refund(t, t.args)
        _fill(log)
        return {**answer, "receipt": "r" * 20000}

    with pytest.raises(InDoubt):
        _call(log, bank, "c1", refund_then_full)
    other = IntentLog.sqlite(path, "w2", provider="stripe")
    assert _call(other, bank, "c2")["id"] == "e1"  # taken over, replayed, acked
    _free(log)
    assert log.unwritten.flush() is False  # moot: the record moved on
    assert log.record(log.records()[0].key).state == "ACKED"
    assert len(bank.ledger) == 1
    other.close()
    log.close()


# ----- a process clock that disagrees with the file's ---------------------------------------
@pytest.mark.parametrize("offset, word", [(120.0, "ahead of"), (-120.0, "behind")])
def test_a_process_whose_clock_is_120_s_off_is_refused_at_open(tmp_path, offset, word):
    path = str(tmp_path / "i.db")
    live = IntentLog.sqlite(path, "w1", provider="stripe")
    with pytest.raises(StoreError) as e:
        IntentLog.sqlite(path, "w2", provider="stripe", clock=lambda: time.time() + offset)
    assert "\n" not in str(e.value) and f"runs 120.0 s {word} the file system's clock" in str(
        e.value
    )
    live.close()


def test_the_clock_check_is_what_keeps_a_fast_clock_from_taking_a_live_call(tmp_path):
    """Without the check (any skew allowed), the process whose clock runs 120 s ahead
    reads the live call's 30 s lease as lapsed and takes the call over: the fault fires."""
    path = str(tmp_path / "i.db")
    live = IntentLog.sqlite(path, "w1", provider="stripe")
    d = live.propose("c1", "refund", ARGS, SCOPE, principal="user:42", dispatch=True)
    assert live.lease_left(d.key) > 20
    ahead = lambda: time.time() + 120  # noqa: E731
    fast = IntentLog(SqliteStore(path, clock=ahead, max_skew=float("inf")), "w2", provider="stripe")
    assert fast.take(d.key) is not None and fast.record(d.key).state == "UNKNOWN"
    fast.close()
    live.close()


def test_the_file_system_clock_agrees_with_this_process(tmp_path):
    path = tmp_path / "f"
    path.write_text("")
    assert abs(file_skew(str(path))) < 1.0
    assert 119.0 < file_skew(str(path), lambda: time.time() + 120) < 121.0


# ----- PostgreSQL: the session killed between the two commits -------------------------------
@pytest.fixture(scope="module")
def pgdb(pg):
    """(dsn of a database of the log's own, an admin connection to another)."""
    psycopg = pytest.importorskip("psycopg")
    admin = psycopg.connect(pg.dsn, autocommit=True)
    admin.execute("CREATE DATABASE faults")
    yield pg.dsn.replace("dbname=postgres", "dbname=faults"), admin
    admin.close()


def _kill(admin, log: IntentLog) -> None:
    admin.execute("SELECT pg_terminate_backend(%s)", (log.store._db.info.backend_pid,))


def test_a_killed_session_at_the_ack_is_opened_again_and_the_caller_gets_the_refund(pgdb):
    dsn, admin = pgdb
    bank, log = Bank(), IntentLog.postgres(dsn, "w1", schema="t_kill", provider="stripe")

    def refund_then_kill(t):
        answer = bank.refund(t, t.args)
        _kill(admin, log)
        return answer

    assert _call(log, bank, "c1", refund_then_kill)["id"] == "e1"
    (rec,) = log.records()
    assert rec.state == "ACKED" and len(bank.ledger) == 1
    _kill(admin, log)  # a later kill: the next decision says what is known, then reconnects
    with pytest.raises(StoreError, match="may or may not have been written"):
        log.propose("c2", "refund", {"amount": 5}, SCOPE, principal="user:42")
    assert _call(log, bank, "c3")["id"] == "e1"
    log.close()


def test_a_killed_session_the_server_will_not_reopen_tells_the_caller_it_may_have_happened(
    pgdb,
):
    dsn, admin = pgdb
    bank, log = Bank(), IntentLog.postgres(dsn, "w1", schema="t_refused", provider="stripe")

    def refund_then_kill(t):
        answer = bank.refund(t, t.args)
        admin.execute("ALTER DATABASE faults ALLOW_CONNECTIONS false")
        _kill(admin, log)
        return answer

    try:
        with pytest.raises(InDoubt) as told:
            _call(log, bank, "c1", refund_then_kill)
        assert told.value.happened == "unknown" and "was sent" in str(told.value)
        with pytest.raises(StoreError) as e:  # still refused: one line, no raw driver error
            _call(log, bank, "c2")
        assert "\n" not in str(e.value) and "could not open it again (3 attempts" in str(e.value)
    finally:
        admin.execute("ALTER DATABASE faults ALLOW_CONNECTIONS true")
    assert _call(log, bank, "c3")["id"] == "e1"  # reconnected, the held ack written
    (rec,) = log.records()
    assert rec.state == "ACKED" and (len(bank.ledger), len(bank.requests)) == (1, 1)
    log.close()


def test_a_lost_answer_whose_timeout_cannot_be_written_is_held_and_replayed_once(pgdb):
    """The refund applied, its answer lost, and the session killed with the server
    refusing new ones: the UNKNOWN the log could not write is held, written at the next
    call, and settled by a replay under the same key: one refund."""
    dsn, admin = pgdb
    bank = Bank(lose_first_ack=True)
    log = IntentLog.postgres(dsn, "w1", schema="t_timeout", provider="stripe")

    def refund_then_kill(t):
        admin.execute("ALTER DATABASE faults ALLOW_CONNECTIONS false")
        _kill(admin, log)
        return bank.refund(t, t.args)  # applied, then the answer is lost

    try:
        with pytest.raises(InDoubt, match="was sent") as told:
            _call(log, bank, "c1", refund_then_kill)
        assert told.value.happened == "unknown"
    finally:
        admin.execute("ALTER DATABASE faults ALLOW_CONNECTIONS true")
    assert _call(log, bank, "c2")["id"] == "e1"
    (rec,) = log.records()
    assert rec.state == "ACKED" and len(bank.ledger) == 1
    assert [(p, k) for p, k, _f in bank.requests] == [("apply", rec.key), ("replay", rec.key)]
    log.close()


def test_a_writer_that_reconnected_is_still_alive_to_status(pgdb):
    """`toolcommit status` tells a PostgreSQL writer gone by its server process: a writer
    whose session was killed and opened again names its new process, so it is not taken
    for a dead pod (its records would be listed in doubt while it serves them)."""
    from toolcommit.runtime.status import snapshot
    from toolcommit.runtime.store import LogReader

    dsn, admin = pgdb
    bank, log = Bank(), IntentLog.postgres(dsn, "w1", schema="t_alive", provider="stripe")
    try:
        first = log.store._db.info.backend_pid
        _kill(admin, log)
        with pytest.raises(StoreError):  # the decision the kill interrupted
            _call(log, bank, "c1")
        assert _call(log, bank, "c2")["id"] == "e1"
        assert log.store._db.info.backend_pid != first  # a new server process
        with log.store.read() as tx:
            seen = snapshot(LogReader(tx, log.store.now_sql, "t_alive"))
        assert seen.writers["w1"] == (log.incarnation, True, False)  # running, not gone
    finally:
        log.close()


def test_a_process_descheduled_while_it_reads_the_clock_is_not_off(tmp_path):
    """The stamp falls between the two readings of a clock that is right, however far apart
    they are (a loaded machine): no skew. Before, their midpoint was compared, so a 5 s
    pause after the touch read as 2.5 s off, and a log was refused at open."""
    path = tmp_path / "f"
    path.write_text("")
    readings = iter([time.time(), time.time() + 5.0])
    assert abs(file_skew(str(path), lambda: next(readings))) < 0.1  # a coarse stamp: ms
