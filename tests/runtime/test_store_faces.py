"""The store's face (`toolcommit.runtime.store`: the record table and its leases, the lines,
the writers, the design, and the public `LogReader`), each body run once on SQLite and once
on PostgreSQL: one SQL text, two engines, the same answers."""

from __future__ import annotations

import itertools
from contextlib import contextmanager

import pytest

from toolcommit.runtime.store import LogReader, PostgresStore, SqliteStore
from toolcommit.runtime.store import design as SD
from toolcommit.runtime.store import lines as SL
from toolcommit.runtime.store import records as SR
from toolcommit.runtime.store import writers as SW

_SCHEMAS = itertools.count()


@pytest.fixture(params=["sqlite", "postgres"])
def face(request, tmp_path):
    """(store, a function opening the `LogReader` of the same log)."""
    if request.param == "sqlite":
        path = str(tmp_path / "faces.db")
        store = SqliteStore(path)

        def reader():
            return LogReader.sqlite(path)

    else:
        pg = request.getfixturevalue("pg")
        schema = f"faces_{next(_SCHEMAS)}"
        store = PostgresStore(pg.dsn, schema)

        def reader():
            return LogReader.postgres(pg.dsn, schema)

    yield store, reader
    store.close()


ME, OTHER = ("w1", 1), ("w2", 1)


def _values(key: str, owner=ME) -> tuple:
    """The 12 insert values of a RECORDED record `key` held by `owner`."""
    return (key, f"i-{key}", 0, "refund", "s", '{"amount": 20}', "t1", "RECORDED", 0, *owner, None)


@contextmanager
def opened(store, *names):
    with store.tx() as tx:
        for n in names:
            SW.first(tx, n)
        yield tx


def test_a_record_is_inserted_once_and_read_back(face):
    store, _ = face
    with opened(store, "w1") as tx:
        rec = SR.insert(tx, store, 30.0, _values("k1"), "NULL")
        again = SR.insert(tx, store, 30.0, _values("k1"), "NULL")
        got = SR.get(tx, store, "k1")
    assert rec is not None and again is None
    assert got == rec and (got.state, got.args, got.owner) == ("RECORDED", {"amount": 20}, "w1")
    with store.read() as tx:
        assert SR.latest(tx, "i-k1") == rec and SR.count_open(tx) == 1


def test_a_compare_and_set_wins_only_from_its_state_under_its_holder(face):
    store, _ = face
    with opened(store, "w1") as tx:
        SR.insert(tx, store, 30.0, _values("k1"), "NULL")
        update, params = SR.cas_sql(
            store, 30.0, "k1", ("RECORDED",), "DISPATCHED", OTHER, bump=True
        )
        assert tx.run(update, params) == 0  # not the holder
        update, params = SR.cas_sql(store, 30.0, "k1", ("RECORDED",), "DISPATCHED", ME, bump=True)
        assert tx.run(update, params) == 1
        assert tx.run(update, params) == 0  # not RECORDED any more
        got = SR.get(tx, store, "k1")
    assert (got.state, got.fence) == ("DISPATCHED", 1)


def test_leases_expire_renew_and_are_taken_over(face):
    store, _ = face
    with opened(store, "w1", "w2") as tx:
        SR.insert(tx, store, 30.0, _values("k1"), "NULL")
        assert SR.lease_left(tx, store, "k1") > 29
        assert SR.takeable(tx, store, OTHER, 10) == []
    assert SR.expire_leases(store, "w1") == 1
    with store.tx() as tx:
        assert SR.takeable(tx, store, OTHER, 10) == ["k1"]
        assert SR.may_take(tx, store, "k1", OTHER) is False  # an expired lease, not a death
        rec = SR.get(tx, store, "k1")
        assert SR.take(tx, store, 30.0, rec, "RECORDED", OTHER, expired=True)
        assert SR.held(tx, OTHER)[0].key == "k1" and SR.held(tx, ME) == []
        assert SR.renew(tx, store, 30.0, OTHER, "1 = 1", []) == 1
        assert SR.release(tx, OTHER) == 1 and SR.lease_left(tx, store, "k1") == 0


def test_lines_are_appended_by_the_current_incarnation_and_read_in_order(face):
    store, reader = face
    with opened(store, "w1") as tx:
        assert SL.append(tx, ME, 2, [(1, '{"n": 1}'), (2, '{"n": 2}')])
        assert not SL.append(tx, ("w1", 7), 3, [(3, '{"n": 3}')])  # superseded: nothing
    assert list(SL.read_lines(store)) == ['{"n": 1}', '{"n": 2}']
    with reader() as log:
        assert list(log.lines(batch=1)) == ['{"n": 1}', '{"n": 2}']


def test_the_design_the_account_and_rules_are_stored_once(face):
    store, reader = face
    with opened(store, "w1") as tx:
        assert SD.keep_design(tx, "stripe", "d1", '{"name": "stripe"}') is None
        assert SD.keep_design(tx, "email", "d2", "{}") == ("stripe", "d1")
        assert SD.bind_account(tx, "acct_1") == "acct_1" and SD.bind_account(tx, "x") == "acct_1"
        SD.keep_rule(tx, "refund", '["amount"]')
        assert SD.rule(tx, "refund") == '["amount"]'
    with reader() as log:
        assert log.stored_design() == ("stripe", "d1", {"name": "stripe"})
        assert [w[:3] for w in log.writers()] == [("w1", 1, True)]


def test_the_reader_sees_the_records_and_their_flight(face):
    store, reader = face
    with opened(store, "w1") as tx:
        SR.insert(tx, store, 30.0, _values("k1"), "NULL")
        SR.insert(tx, store, 30.0, _values("k2"), "NULL")
    with reader() as log:
        assert [r.key for r in log.records()] == ["k1", "k2"]
        assert log.records_in_flight(["DISPATCHED"]) == []
        assert log.now() > 0
