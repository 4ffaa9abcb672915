"""The intent log on SQLite: the log decides, writes compare-and-set, recovery comes from
the log, and every decision writes lines `toolcommit validate` accepts."""

import json

import pytest

from toolcommit.checker.logs.read import problem
from toolcommit.runtime import IntentLog, IntentLogError, JsonlSink, Superseded

from .at_once import decisions
from .ledger import Bank, conforms

SCOPE = "user:42:checkout:7"


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "intents.db")


def test_paraphrased_call_under_a_new_id_is_a_duplicate_of_the_first_record(db):
    log = IntentLog.sqlite(db, "w1", provider="ideal")
    first = log.propose(
        "t1", "refund", {"amount": 20, "reason": "damaged item"}, SCOPE, principal="user:1"
    )
    again = log.propose(
        "t2", "refund", {"reason": " damaged  item ", "amount": 20.0}, SCOPE, principal="user:1"
    )
    other = log.propose(
        "t3", "refund", {"amount": 25, "reason": "damaged item"}, SCOPE, principal="user:1"
    )
    assert (first.decision, again.decision, other.decision) == ("accepted", "duplicate", "accepted")
    assert again.key == first.key != other.key
    assert again.record.call_id == "t1"  # the call id is evidence, not identity


def test_only_the_lease_holder_dispatches_and_only_once(db):
    w1, w2 = (
        IntentLog.sqlite(db, "w1", provider="ideal"),
        IntentLog.sqlite(db, "w2", provider="ideal"),
    )
    d = w1.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    assert w2.dispatch(d.key) is None
    t = w1.dispatch(d.key)
    assert (t.fence, t.idempotency_key, t.purpose) == (1, None, "apply")  # ideal: fences, no key
    assert w1.dispatch(d.key) is None


def test_unknown_is_reconciled_with_a_sealing_fence_never_redispatched(db):
    log = IntentLog.sqlite(db, "w1", provider="ideal")
    d = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    t = log.dispatch(d.key)
    assert log.timeout(t)
    assert log.dispatch(d.key) is None and not log.ack(t)
    r = log.reconcile(d.key)
    assert (r.fence, r.purpose) == (2, "status")
    assert log.reconcile(d.key).fence == 2  # a repeated status read keeps its fence
    assert log.settle(r, True, {"id": "e1"})
    assert (log.record(d.key).state, log.record(d.key).result) == ("ACKED", {"id": "e1"})


def test_status_absent_dead_letters_and_the_users_new_attempt_takes_the_next_epoch(db):
    log = IntentLog.sqlite(db, "w1", provider="ideal")
    d = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    log.timeout(log.dispatch(d.key))
    log.settle(log.reconcile(d.key), False)
    assert log.record(d.key).state == "DEAD_LETTER"
    assert (
        log.propose("t2", "refund", {"amount": 20}, SCOPE, principal="user:1").decision
        == "duplicate"
    )
    nxt = log.propose("t3", "refund", {"amount": 20}, SCOPE, new_attempt=True, principal="user:1")
    assert nxt.accepted and nxt.record.epoch == 1 and nxt.key != d.key
    assert (
        log.propose(
            "t4", "refund", {"amount": 20}, SCOPE, new_attempt=True, principal="user:1"
        ).decision
        == "duplicate"
    )  # epoch 1 is live


def test_a_zombie_cannot_write_after_its_lease_was_taken_over(db):
    w1, w2 = (
        IntentLog.sqlite(db, "w1", provider="ideal"),
        IntentLog.sqlite(db, "w2", provider="ideal"),
    )
    d = w1.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    t = w1.dispatch(d.key)
    assert w1.expire_leases("w1") == 1
    taken = w2.recover()
    assert [(r.key, r.state, r.owner) for r in taken] == [(d.key, "UNKNOWN", "w2")]
    assert not w1.ack(t) and not w1.timeout(t) and w1.reconcile(d.key) is None
    r = w2.reconcile(d.key)
    assert r.fence == 2 and w2.settle(r, False)


def test_a_live_lease_is_not_taken_over(db):
    w1, w2 = (
        IntentLog.sqlite(db, "w1", provider="ideal"),
        IntentLog.sqlite(db, "w2", provider="ideal"),
    )
    w1.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    assert w2.recover() == []


def test_reopening_a_crashed_writer_logs_the_crash_and_takes_its_records_over(db):
    old = IntentLog.sqlite(db, "w1", provider="ideal")
    d = old.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    t = old.dispatch(d.key)
    new = IntentLog.sqlite(db, "w1", provider="ideal")  # the old process never closed: it crashed
    assert new.crashed and new.incarnation == 2
    assert new.record(d.key).state == "UNKNOWN" and new.record(d.key).owner_inc == 2
    kinds = [(e["type"], e.get("to")) for e in new.events() if e["writer"] == "w1"][-3:]
    assert kinds == [("crash", None), ("restart", None), ("transition", "UNKNOWN")]
    with pytest.raises(Superseded):
        old.propose("t9", "refund", {"amount": 99}, SCOPE, principal="user:1")
    assert not old.ack(t)


def test_a_clean_close_is_no_crash_and_frees_the_leases(db):
    w1 = IntentLog.sqlite(db, "w1", provider="ideal")
    d = w1.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    w1.close()
    assert [r.key for r in IntentLog.sqlite(db, "w2", provider="ideal").recover()] == [d.key]
    again = IntentLog.sqlite(db, "w1", provider="ideal")
    assert not again.crashed and again.incarnation == 2
    assert "crash" not in [e["type"] for e in again.events()]


def test_cancel_before_dispatch_keeps_the_call_from_the_provider(db):
    log, user = (
        IntentLog.sqlite(db, "w1", provider="ideal"),
        IntentLog.sqlite(db, "user", provider="ideal"),
    )
    d = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    assert user.cancel(d.key)
    assert log.dispatch(d.key) is None
    assert log.record(d.key).state == "REJECTED_CONFLICT"
    assert (
        log.propose("t2", "refund", {"amount": 20}, SCOPE, principal="user:1").decision
        == "duplicate"
    )
    late = log.dispatch(log.propose("t3", "refund", {"amount": 30}, SCOPE, principal="user:1").key)
    assert not user.cancel(late.key)  # dispatched: a cancel is now a compensation


def test_an_exclusive_tool_conflicts_with_another_live_intent_of_its_scope(db):
    log = IntentLog.sqlite(db, "w1", exclusive_tools=["refund"], provider="ideal")
    d = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    c = log.propose("t2", "refund", {"amount": 25}, SCOPE, principal="user:1")
    assert c.decision == "conflict" and c.record.key == d.key
    # another checkout's refund names its charge: the ideal design holds a re-ask of the
    # same arguments in another scope (reask=hold), and this is not one
    assert log.propose(
        "t3", "refund", {"amount": 25, "charge": "ch_8"}, "user:42:checkout:8", principal="user:1"
    ).accepted
    log.timeout(log.dispatch(d.key))
    log.dead_letter(d.key)  # given up: the scope is free again
    assert log.propose("t4", "refund", {"amount": 25}, SCOPE, principal="user:1").accepted


def test_compensation_and_dead_letter_settle_an_unknown_record(db):
    log = IntentLog.sqlite(db, "w1", provider="ideal")
    a = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    b = log.propose("t2", "email", {"to": "a@b"}, SCOPE, principal="user:1")
    log.timeout(log.dispatch(a.key))
    log.timeout(log.dispatch(b.key))
    assert log.compensated(a.key) and log.dead_letter(b.key)
    assert [log.record(k).state for k in (a.key, b.key)] == ["COMPENSATED", "DEAD_LETTER"]
    assert log.unsettled() == 0


def test_calls_without_a_canonical_form_are_refused_with_one_line(db):
    log = IntentLog.sqlite(db, "w1", provider="ideal")
    with pytest.raises(IntentLogError, match="args must be a JSON object"):
        log.propose("t1", "refund", [20], SCOPE, principal="user:1")
    with pytest.raises(IntentLogError, match="no canonical form.*NaN"):
        log.propose("t1", "refund", {"amount": float("nan")}, SCOPE, principal="user:1")
    assert log.events() == []


def test_every_line_is_the_log_contract_and_sinks_see_each_committed_line(db, tmp_path):
    seen = []
    log = IntentLog.sqlite(
        db, "w1", sinks=[JsonlSink(str(tmp_path / "sink.jsonl")), seen.append], provider="ideal"
    )
    d = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    log.ack(log.dispatch(d.key), {"id": "e1"})
    log.propose("t2", "refund", {"amount": 20.0}, SCOPE, principal="user:1")
    stored = log.events()
    assert [problem(e) for e in stored] == [None] * 5
    assert seen == stored
    with open(tmp_path / "sink.jsonl") as f:
        assert [json.loads(x) for x in f] == stored
    assert [e["seq"] for e in stored] == [1, 2, 3, 4, 5]


def test_a_run_with_a_lost_ack_a_crash_and_a_zombie_validates(db, tmp_path):
    bank = Bank(lose_first_ack=True)
    w1 = IntentLog.sqlite(db, "w1", provider="ideal")
    d = w1.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    t = w1.dispatch(d.key)
    with pytest.raises(TimeoutError):
        bank.refund(t, {"amount": 20})
    w1.timeout(t)
    w1.propose("t2", "refund", {"amount": 20.0}, SCOPE, principal="user:1")  # the model re-asks
    r = w1.reconcile(d.key)
    found = bank.status(r)
    w1.settle(r, found is not None, found)
    e = w1.propose("t3", "email", {"to": "a@b"}, SCOPE, principal="user:1")
    stale = w1.dispatch(e.key)
    w1 = IntentLog.sqlite(db, "w1", provider="ideal")  # crash and restart
    w2 = IntentLog.sqlite(db, "w2", provider="ideal")
    r = w1.reconcile(e.key)
    present = bank.status(r) is not None  # seals at fence 2
    with pytest.raises(PermissionError):  # the stale request lands
        bank.refund(stale, {"to": "a@b"})
    w1.settle(r, present)
    assert w2.recover() == [] and w1.unsettled() == 0
    assert len(bank.ledger) == 1
    assert conforms(w1, bank, tmp_path)


PROPOSER = """
import sys
from toolcommit.runtime import IntentLog
log = IntentLog.sqlite(sys.argv[1], "p" + sys.argv[2], provider="ideal")
d = log.propose("t" + sys.argv[2], "refund", {"amount": 20}, sys.argv[3], principal="user:1")
log.close()
print(d.decision)
"""


def test_concurrent_processes_proposing_one_intent_accept_exactly_one(db):
    """Six fresh processes (none forked from this one, whose other tests' threads a fork
    would copy) propose one intent at once: one is accepted, five are told it is decided."""
    IntentLog.sqlite(db, "setup", provider="ideal").close()
    got = decisions(PROPOSER, [[db, str(i), SCOPE] for i in range(6)])
    assert got == ["a"] + ["d"] * 5


def test_an_export_holds_up_none_of_the_process_s_decisions(db):
    from .live_export import export_leaves_the_log_live

    log = IntentLog.sqlite(db, "w1", provider="ideal")
    export_leaves_the_log_live(log)
    log.close()


def test_an_export_reads_the_log_it_was_opened_on_after_a_change_of_directory(
    tmp_path, monkeypatch
):
    """A log opened by a relative path is exported from that file even after the process
    changes its working directory (the export opens a connection of its own)."""
    monkeypatch.chdir(tmp_path)
    log = IntentLog.sqlite("intents.db", "w1", provider="ideal")
    log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert [e["type"] for e in log.events()] == ["proposal", "transition"]
    assert list(elsewhere.iterdir()) == []
    log.close()
