"""`toolcommit status DB`: an on-call engineer sees every record in doubt with its age, its
owner and whether it is alive, what the design waits for and the next step; exit 3 while
something is in doubt, 0 otherwise; the log is only read; SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import json

import pytest

from toolcommit.runtime import IntentLog

from ..incli import cli

ARGS = {"charge": "ch_1", "amount": 20}
SCOPE = "user:42:request:7"


def timed_out(log: IntentLog, scope: str = SCOPE) -> str:
    """A call whose request was sent and whose answer never came: UNKNOWN."""
    d = log.propose("t1", "refund", ARGS, scope, principal="user:1")
    assert log.timeout(log.dispatch(d.key))
    return d.key


def test_an_unknown_record_is_listed_with_its_age_holder_and_what_it_waits_for(tmp_path):
    db = str(tmp_path / "intents.db")
    log = IntentLog.sqlite(db, writer="pod-0", provider="stripe")
    key = timed_out(log)
    before = hashlib.sha256(open(db, "rb").read()).hexdigest()
    code, out, err = cli("status", db, "--provider", "stripe")
    out = " ".join(out.split())
    assert code == 3, err
    assert "1 record(s) in doubt" in out and key in out and "UNKNOWN" in out
    assert "owner pod-0#1 alive" in out and "pod-0#1 (alive, its lease renewed)" in out
    assert "next step: none: pod-0#1 is alive and settles it (its settler); if it dies: " in out
    assert hashlib.sha256(open(db, "rb").read()).hexdigest() == before
    code, out, _ = cli("status", db, "--provider", "stripe", "--format", "json")
    report = json.loads(out)
    assert code == 3 and report["in_doubt"] == 1 and report["given_up"] == 0
    [rec] = report["records"]
    assert rec["key"] == key and rec["state"] == "UNKNOWN" and rec["kind"] == "in doubt"
    assert rec["age_s"] >= 0 and rec["owner"] == "pod-0#1" and rec["lease_left_s"] > 0
    assert rec["owner_alive"] and rec["settles_in_s"] == 0
    log.close()


def test_what_the_stripe_design_waits_for_a_record_whose_holder_is_gone(tmp_path):
    """With no live holder: first a replay under the same key; after the replay went
    unanswered, the delay bound; each said as the design's timing says."""
    db = str(tmp_path / "intents.db")
    log = IntentLog.sqlite(db, writer="pod-0", provider="stripe")
    key = timed_out(log)
    log.expire_leases()
    _, out, _ = cli("status", db, "--provider", "stripe", "--format", "json")
    [rec] = json.loads(out)["records"]
    assert rec["waits_for"] == "a takeover (its holder is gone), then a replay under the same key"
    assert rec["next_step"] == f"toolcommit recover {db} --tools MODULE"
    t = log.reconcile(key)
    assert t.purpose == "replay" and log.timeout(t)
    log.expire_leases()
    _, out, _ = cli("status", db, "--provider", "stripe", "--format", "json")
    [rec] = json.loads(out)["records"]
    assert rec["state"] == "RECONCILING" and not rec["owner_alive"]
    assert rec["waits_for"].startswith(
        "a takeover (its holder is gone), then the delay bound: a request of it may still "
        "arrive for"
    )
    assert rec["next_step"].startswith(f"toolcommit recover {db} --tools MODULE --wait ")
    assert "status read by list" in rec["waits_for"]
    log.close()


def test_a_given_up_record_is_listed_but_nothing_in_doubt_exits_0(tmp_path):
    db = str(tmp_path / "intents.db")
    log = IntentLog.sqlite(db, writer="pod-0", provider="email")
    key = timed_out(log)
    assert log.dead_letter(key, "no status read: given up")
    d = log.propose(
        "t2", "refund", {"charge": "ch_2", "amount": 5}, "user:43:request:1", principal="user:1"
    )
    assert log.ack(log.dispatch(d.key), {"id": "re_2"})
    code, out, _ = cli("status", db, "--provider", "email")
    out = " ".join(out.split())  # the lines are fitted to the terminal's width
    assert code == 0
    assert "0 record(s) in doubt, 0 not sent, 0 in progress, 1 given up" in out
    assert "given up: " + key in out
    assert "the effect may have happened" in out and d.key not in out
    log.close()


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    assert cli("status", str(tmp_path / "none.db"))[0] == 2
    other = tmp_path / "other.db"
    import sqlite3

    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (x)")
    code, _, err = cli("status", str(other), "--provider", "stripe")
    assert code == 2 and "without an intent log" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("status")
    assert code == 2 and "DB or --dsn" in err


def test_status_reads_a_postgresql_log(tmp_path):
    pytest.importorskip("psycopg", reason="the 'postgres' extra (psycopg 3) is not installed")
    from toolcommit.checker.torture.pgserver import NoPostgres, TempPostgres, binaries

    if binaries() is None:
        pytest.skip("PostgreSQL server binaries are not installed")
    try:
        server = TempPostgres()
        server.__enter__()
    except NoPostgres as e:
        pytest.skip(str(e))
    try:
        log = IntentLog.postgres(server.dsn, "pod-0", schema="t_status", provider="stripe")
        key = timed_out(log)
        code, out, err = cli(
            "status",
            "--dsn",
            server.dsn,
            "--schema",
            "T_STATUS",
            "--provider",
            "stripe",
            "--format",
            "json",
        )
        assert code == 3, err
        assert [r["key"] for r in json.loads(out)["records"]] == [key]
        log.close()
    finally:
        server.__exit__(None, None, None)


def test_the_design_comes_from_the_log_itself_and_another_is_refused(tmp_path):
    db = str(tmp_path / "intents.db")
    log = IntentLog.sqlite(db, writer="pod-0", provider="email")
    timed_out(log)
    code, out, _ = cli("status", db, "--format", "json")
    assert code == 3 and json.loads(out)["design"] == "email"
    code, _, err = cli("status", db, "--provider", "stripe")
    assert code == 2 and "created under design email" in err
    log.close()
