"""One statement per decision on PostgreSQL (`Store.once`): the happy path's two commits
are two round trips, and what it writes is what the transactions write. Every claim runs
against a real server (TempPostgres) and, where it compares, against SQLite, which decides
every case in a transaction."""

from __future__ import annotations

import dataclasses
import os

import pytest

from toolcommit.checker.torture.pgserver import binaries
from toolcommit.runtime import IntentLog, Superseded, guard

pytest.importorskip("psycopg", reason="the 'postgres' extra (psycopg 3) is not installed")
if binaries() is None:
    pytest.skip(
        "PostgreSQL server binaries are not installed (apt-get install postgresql)",
        allow_module_level=True,
    )


def _open(store, pg, tmp_path, schema, writer="w1", **kw):
    kw = {"provider": "ideal", "lease": 3600, **kw}
    if store == "postgres":
        return IntentLog.postgres(pg.dsn, writer, schema=schema, **kw)
    return IntentLog.sqlite(str(tmp_path / f"{schema}.db"), writer, **kw)


class RoundTrips:
    """The round trips the log's connection makes, read from libpq's own trace of the
    messages it sends: each ends with a Sync (extended protocol) or is one Query."""

    def __init__(self, log: IntentLog, path: str):
        from psycopg import pq

        self.path, self._conn = path, log.store._db.pgconn
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        self._conn.trace(self._fd)
        self._conn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)

    def stop(self) -> int:
        self._conn.untrace()
        os.close(self._fd)
        with open(self.path) as f:
            sent = [line.split("\t") for line in f]
        return sum(1 for m in sent if m[0] == "F" and m[2].split()[0] in ("Sync", "Query"))


def test_the_happy_path_is_two_round_trips_per_intent_on_postgres(pg, tmp_path):
    """propose(dispatch=True) and ack, and guard: one statement each, where a
    transaction of the same decisions took 14 round trips under this design."""
    log = _open("postgres", pg, tmp_path, "t_trips")
    try:
        trips = None
        for i in range(16):
            if i == 6:  # psycopg has prepared its statements (a round trip each, once)
                trips = RoundTrips(log, str(tmp_path / "trace"))
            if i % 2:
                d = log.propose(
                    f"t{i}", "refund", {"amount": i}, f"s{i}", dispatch=True, principal="user:1"
                )
                assert d.decision == "accepted" and log.ack(d.ticket, {"id": i})
            else:
                assert guard(
                    log,
                    f"t{i}",
                    "refund",
                    {"amount": i},
                    f"s{i}",
                    lambda t: {"id": i},
                    lambda t: None,
                    principal="user:1",
                ) == {"id": i}
        assert trips.stop() == 2 * 10
        assert [r.state for r in log.records()] == ["ACKED"] * 16
    finally:
        log.close()


def test_a_re_proposal_by_the_proposing_process_skips_the_statement(pg, tmp_path):
    """A duplicate decides in its transaction: 9 round trips (BEGIN, the reads of tc_asks,
    its record, the intent's latest record, the insert, the record of the key, the
    writer's row, the lines, COMMIT). The process that proposed the intent knows it is no
    fresh case and sends no statement first; another process sends it, and it writes
    nothing: 10."""
    log = _open("postgres", pg, tmp_path, "t_dup_trips", "w1")
    other = _open("postgres", pg, tmp_path, "t_dup_trips", "w2")
    try:
        for i in range(16):  # psycopg prepares its statements on their 5th run
            log.propose(
                f"t{i}", "refund", {"amount": i}, f"s{i}", dispatch=True, principal="user:1"
            )
            for who in (log, other) if i < 15 else ():
                assert who.propose(
                    f"r{i}", "refund", {"amount": i}, f"s{i}", principal="user:1"
                ).decision == ("duplicate")
        for who, trips in ((log, 9), (other, 10)):  # intent 15: log's own, new to other
            counter = RoundTrips(who, str(tmp_path / "trace"))
            assert (
                who.propose("r", "refund", {"amount": 15}, "s15", principal="user:1").decision
                == "duplicate"
            )
            assert counter.stop() == trips
    finally:
        log.close()
        other.close()


def _script(log: IntentLog) -> list[object]:
    """Decisions covering the expected cases (written in one statement on PostgreSQL) and
    the others (the statement writes nothing; a transaction decides): what each returned."""
    out: list[object] = []
    d = log.propose("t1", "refund", {"amount": 20}, "s1", dispatch=True, principal="user:1")
    out.append((d.decision, d.ticket.generation))
    out.append(
        log.propose("t2", "refund", {"amount": 20.0}, "s1", principal="user:1").decision
    )  # duplicate
    out.append(
        log.propose("t3", "refund", {"amount": 20}, "s2", principal="user:1").decision
    )  # held (reask)
    out.append(log.ack(dataclasses.replace(d.ticket, generation=7), {"id": "x"}))  # stale fence
    out.append(log.timeout(d.ticket))  # DISPATCHED -> UNKNOWN
    out.append(log.ack(d.ticket, {"id": "late"}))  # not DISPATCHED any more: refused
    r = log.reconcile(d.key)
    out.append((r.purpose, r.generation))
    out.append(log.settle(r, True, {"id": "re_1"}))  # RECONCILING -> ACKED
    out.append(
        log.propose("t4", "refund", {"amount": 20}, "s2", principal="user:1").decision
    )  # answered
    d = log.propose("t5", "refund", {"amount": 30}, "s3", dispatch=True, principal="user:1")
    out.append(log.ack(d.ticket, {"id": "re_2"}))  # its own ack: told
    out.append(
        log.propose("t6", "refund", {"amount": 30}, "s4", principal="user:1").decision
    )  # told: accepted
    d = log.propose(
        "t7", "transfer", {"to": "a"}, "s5", principal="user:1"
    )  # exclusive, not dispatched
    out.append(
        log.propose("t8", "transfer", {"to": "b"}, "s5", principal="user:1").decision
    )  # conflict
    t = log.dispatch(d.key)
    out.append((t.generation, log.ack(t, {"id": "re_3"})))
    return out


def _seen(log: IntentLog):
    lines = [{k: v for k, v in e.items() if k != "ts"} for e in log.events()]
    records = [
        dataclasses.replace(r, lease_until=0.0, first_sent=None, sent_at=None)
        for r in log.records()
    ]
    return lines, records


def test_one_statement_decides_and_writes_what_a_transaction_does(pg, tmp_path):
    """The same decisions on PostgreSQL (one statement where the case is expected) and on
    SQLite (a transaction each) return the same, leave the same records and write the same
    lines, in the same order with the same seqs."""
    got = {}
    for store in ("sqlite", "postgres"):
        log = _open(store, pg, tmp_path, "t_same", exclusive_tools=["transfer"])
        try:
            got[store] = (_script(log), *_seen(log))
        finally:
            log.close()
    assert got["postgres"] == got["sqlite"]
    assert got["sqlite"][0] == [
        ("accepted", 1),
        "duplicate",
        "held",
        False,
        True,
        False,
        ("status", 2),
        True,
        "answered",
        True,
        "accepted",
        "conflict",
        (1, True),
    ]


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_superseded_writer_is_refused_and_writes_nothing(pg, tmp_path, store):
    """The writer name opened again (its old process still running): the old process's
    proposal raises `Superseded` and writes nothing; its ack loses the compare-and-set to
    the new incarnation, which took the record over (UNKNOWN)."""
    old = _open(store, pg, tmp_path, "t_super")
    d = old.propose("t1", "refund", {"amount": 20}, "s1", dispatch=True, principal="user:1")
    new = _open(store, pg, tmp_path, "t_super")
    try:
        before = _seen(new)
        for dispatch in (True, False):
            with pytest.raises(Superseded):
                old.propose(
                    "t2", "refund", {"amount": 21}, "s2", dispatch=dispatch, principal="user:1"
                )
        assert not old.ack(d.ticket, {"id": "re_1"})
        assert _seen(new) == before
        (r,) = new.records()
        assert (r.state, r.owner, r.owner_inc) == ("UNKNOWN", "w1", 2)
    finally:
        new.close()
        old.store.close()


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_lost_compare_and_set_race_writes_nothing(pg, tmp_path, store):
    """w1's lease lapses and w2 takes its dispatched record over: w1's ack and timeout
    (at the generation it sent) lose and write nothing; w2 settles it."""
    w1 = _open(store, pg, tmp_path, "t_race", "w1")
    w2 = _open(store, pg, tmp_path, "t_race", "w2")
    try:
        d = w1.propose("t1", "refund", {"amount": 20}, "s1", dispatch=True, principal="user:1")
        w1.expire_leases("w1")
        assert [r.state for r in w2.recover()] == ["UNKNOWN"]
        before = _seen(w2)
        assert not w1.ack(d.ticket, {"id": "re_1"}) and not w1.timeout(d.ticket)
        assert _seen(w2) == before
        r = w2.reconcile(d.key)
        assert w2.settle(r, True, {"id": "re_1"}) and w2.record(d.key).state == "ACKED"
        assert [e["seq"] for e in w1.events() if e["writer"] == "w1"] == [1, 2, 3]
    finally:
        w1.close()
        w2.close()
