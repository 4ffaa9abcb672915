"""Two durable commits per intent on the happy path (issue 30): the record and its dispatch
in one transaction before the effect, the outcome in one after. Counted on the store itself
(SQLite: the write transactions its connection commits; PostgreSQL: the transaction ids
the server assigns, one per writing transaction), and a real SIGKILL between the two
commits: restart and recovery give at most one effect and the record the design says, and
the log conforms."""

from __future__ import annotations

import importlib.util
import os
import select
import signal
import subprocess
import sys

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate import validate
from toolcommit.checker.torture.pgserver import NoPostgres, TempPostgres, binaries
from toolcommit.runtime import GaveUp, IntentLog, guard
from toolcommit.runtime import lines as L

SCOPE = "user:42:request:7"
N = 12

pg_only = pytest.mark.skipif(binaries() is None, reason="PostgreSQL server binaries missing")


@pytest.fixture(scope="module")
def pg():
    pytest.importorskip("psycopg", reason="the 'postgres' extra (psycopg 3) is not installed")
    try:
        with TempPostgres() as server:
            import psycopg

            with psycopg.connect(server.dsn, autocommit=True) as c:
                # nothing but the log assigns transaction ids (an autoanalyze would)
                c.execute("ALTER SYSTEM SET autovacuum = off")
                c.execute("SELECT pg_reload_conf()")
            yield server
    except NoPostgres as e:
        pytest.skip(str(e))


# ----- counting commits --------------------------------------------------------------------
class SqliteCommits:
    """Counts the write transactions (``BEGIN IMMEDIATE`` ... ``COMMIT``) the log's SQLite
    connection commits; a read transaction's COMMIT writes nothing and is not counted."""

    def __init__(self, log: IntentLog):
        self.n, self._writing = 0, False
        log.store._db.set_trace_callback(self._see)

    def _see(self, sql: str) -> None:
        word = sql.strip().upper()
        if word.startswith("BEGIN"):
            self._writing = word == "BEGIN IMMEDIATE"
        elif word == "COMMIT" and self._writing:
            self.n, self._writing = self.n + 1, False

    def count(self) -> int:
        return self.n

    def close(self) -> None:
        pass


class PgCommits:
    """Counts the transaction ids the server assigned: every writing transaction takes
    one (a read-only one none), and on this test's own server only the log writes."""

    def __init__(self, dsn: str):
        import psycopg

        self._c = psycopg.connect(dsn, autocommit=True)
        self._start = self._next()

    def _next(self) -> int:
        return int(
            self._c.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()[0]
        )

    def count(self) -> int:
        return self._next() - self._start

    def close(self) -> None:
        self._c.close()


def _sqlite(tmp_path, writer="w1", **kw):
    return IntentLog.sqlite(str(tmp_path / "i.db"), writer, provider="stripe", lease=3600, **kw)


def _pg(pg, schema, writer="w1"):
    return IntentLog.postgres(pg.dsn, writer, schema=schema, provider="stripe", lease=3600)


def _direct(log, i):
    d = log.propose(f"t{i}", "refund", {"amount": i}, SCOPE, dispatch=True, principal="user:1")
    assert d.decision == "accepted" and d.ticket.fence is None and d.ticket.generation == 1
    assert log.ack(d.ticket, {"id": f"re_{i}"})


def _guarded(log, i):
    assert guard(
        log,
        f"t{i}",
        "refund",
        {"amount": i},
        SCOPE,
        lambda t: {"id": f"re_{i}"},
        lambda t: None,
        principal="user:1",
    ) == {"id": f"re_{i}"}


def _happy_path_commits(log, counter, call) -> int:
    """The write commits of `N` intents through `call`."""
    try:
        before = counter.count()
        for i in range(N):
            call(log, i)
        assert [r.state for r in log.records()] == ["ACKED"] * N
        return counter.count() - before
    finally:
        counter.close()


def _apart(log, i):
    """The path before: propose, dispatch and ack, a transaction each."""
    d = log.propose(f"t{i}", "refund", {"amount": i}, SCOPE, principal="user:1")
    assert log.ack(log.dispatch(d.key), {"id": f"re_{i}"})


PATHS = pytest.mark.parametrize(
    "call,commits",
    [(_direct, 2), (_guarded, 2), (_apart, 3)],
    ids=["propose_dispatch_ack", "guard", "three_steps_apart"],
)


@PATHS
def test_the_happy_path_is_two_sqlite_commits_per_intent(tmp_path, call, commits):
    """Two per intent; the three steps apart, three (the counter sees what it claims)."""
    log = _sqlite(tmp_path)
    try:
        assert _happy_path_commits(log, SqliteCommits(log), call) == commits * N
        assert conforms(log, tmp_path)
    finally:
        log.close()


@pg_only
@PATHS
def test_the_happy_path_is_two_postgres_commits_per_intent(pg, tmp_path, call, commits):
    log = _pg(pg, f"t_two_{call.__name__.strip('_')}")
    try:
        assert _happy_path_commits(log, PgCommits(pg.dsn), call) == commits * N
        assert conforms(log, tmp_path)
    finally:
        log.close()


def test_dispatch_in_the_proposals_commit_writes_the_three_lines_of_the_two_steps(tmp_path):
    log = _sqlite(tmp_path)
    try:
        d = log.propose("t1", "refund", {"amount": 20}, SCOPE, dispatch=True, principal="user:1")
        again = log.propose(
            "t2", "refund", {"amount": 20.0}, SCOPE, dispatch=True, principal="user:1"
        )
        assert (again.decision, again.ticket) == ("duplicate", None)
        r = log.record(d.key)
        assert (r.state, r.fence, r.first_sent is not None, r.sent_at == r.first_sent) == (
            "DISPATCHED",
            1,
            True,
            True,
        )
        assert log.dispatch(d.key) is None  # dispatched once, by the proposal
        ev = [
            (e["type"], e.get("from"), e.get("to") or e.get("decision"), e["seq"])
            for e in log.events()
        ]
        assert ev == [
            ("proposal", None, "accepted", 1),
            ("transition", "PROPOSED", "RECORDED", 2),
            ("transition", "RECORDED", "DISPATCHED", 3),
            ("proposal", None, "duplicate", 4),
        ]
    finally:
        log.close()


# ----- a SIGKILL between the two commits ---------------------------------------------------
CHILD = '''
import fcntl, json, os, select, sys
from toolcommit.runtime import IntentLog, guard

LEDGER = os.environ["BANK"]


def open_log(writer):
    kw = dict(provider=os.environ["PROVIDER"], lease=3600.0)
    if os.environ.get("DSN"):
        return IntentLog.postgres(os.environ["DSN"], writer, schema=os.environ["SCHEMA"], **kw)
    return IntentLog.sqlite(os.environ["DB"], writer, **kw)


def effects():
    try:
        return [json.loads(x) for x in open(LEDGER)]
    except FileNotFoundError:
        return []


def apply(t):
    """The provider: one effect per idempotency key (a repeat gets the saved answer)."""
    with open(LEDGER + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = [e for e in effects() if e["idempotency_key"] == (t.idempotency_key or t.key)]
        if found:
            return {"id": found[0]["effect_id"]}
        e = {"type": "effect", "key": t.key, "idempotency_key": t.idempotency_key or t.key,
             "tool": t.tool, "args": t.args, "scope": t.scope, "kind": "apply",
             "fence": t.fence or 0, "effect_id": "re_%d" % (len(effects()) + 1)}
        with open(LEDGER, "a") as f:
            f.write(json.dumps(e) + "\\n")
    return {"id": e["effect_id"]}


def status(t):
    found = [e for e in effects() if e["key"] == t.key]
    return {"id": found[0]["effect_id"]} if found else None


def blocked(t):
    """The effect that starts, says so, and blocks until killed (at most 60 s)."""
    if os.environ["WHEN"] == "applied":
        apply(t)
    print("effect started", flush=True)
    select.select([sys.stdin], [], [], 60)
    return apply(t)


if __name__ == "__main__":
    guard(open_log("pod-a"), "t1", "refund", {"amount": 20}, "user:42:request:7", blocked,
          status, principal="user:1")
'''


def _killed_between_the_commits(tmp_path, monkeypatch, design, when, **env):
    """Run the child until its effect started, then SIGKILL it (the parent never writes
    to its stdin: the effect blocks); the child's outcome was never written. Returns the
    child's module, loaded here (its provider and `open_log`, on the same ledger and log)."""
    (tmp_path / "child.py").write_text(CHILD)
    env = {
        "BANK": str(tmp_path / "bank.jsonl"),
        "DB": str(tmp_path / "i.db"),
        "WHEN": when,
        "PROVIDER": design,
        **env,
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    p = subprocess.Popen(
        [sys.executable, str(tmp_path / "child.py")],
        env=dict(os.environ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready, _, _ = select.select([p.stdout], [], [], 60)
        assert ready and p.stdout.readline() == "effect started\n"
        os.kill(p.pid, signal.SIGKILL)
        assert p.wait(timeout=60) == -signal.SIGKILL
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=60)
        for f in (p.stdin, p.stdout, p.stderr):
            f.close()
    spec = importlib.util.spec_from_file_location(f"child_{when}", tmp_path / "child.py")
    child = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(child)
    return child


# what the design does with a record whose holder died between its two commits: stripe's
# replays the request under the same key (applied once, or answered from the saved
# response); fenced-store's seals and reads: absent is given up (nothing was applied)
OUTCOME = {
    ("stripe", "before_applied"): "ACKED",
    ("stripe", "applied"): "ACKED",
    ("fenced-store", "before_applied"): "DEAD_LETTER",
    ("fenced-store", "applied"): "ACKED",
}


def _restart_and_recover(child, tmp_path, design, when):
    log = child.open_log("reader")
    try:  # what the first commit made durable before the effect: record and dispatch
        (r,) = log.records()
        assert (r.state, r.fence, r.owner) == ("DISPATCHED", 1, "pod-a")
        assert [(e.get("from"), e.get("to") or e.get("decision")) for e in log.events()] == [
            (None, "accepted"),
            ("PROPOSED", "RECORDED"),
            ("RECORDED", "DISPATCHED"),
        ]
    finally:
        log.close()
    log = child.open_log("pod-a")  # the pod restarts under its name: a crash, taken over
    try:
        assert log.crashed and [t.state for t in log.taken_over] == ["UNKNOWN"]
        try:
            got = guard(
                log,
                "t2",
                "refund",
                {"amount": 20.0},
                SCOPE,
                child.apply,
                child.status,
                principal="user:1",
            )
        except GaveUp:
            got = None
        (r,) = log.records()
        effects = child.effects()
        assert r.state == OUTCOME[design, when]
        assert len(effects) == (r.state == "ACKED") and got == r.result
        assert all(e["key"] == r.key for e in effects)
        path = tmp_path / "run.jsonl"
        with open(path, "w") as out:
            log.export(out)
            for i, eff in enumerate(effects, 1):
                out.write(L.dumps(L.stamp(eff, "bank", i, L.now_rfc3339())) + "\n")
    finally:
        log.close()
    report = validate([str(path)], complete_effects=True)
    assert report.verdict.value == "CONFORMS", [f.explanation for f in report.findings]
    assert main(["validate", "--design", design, str(path)]) == 0


@pytest.mark.parametrize("design,when", sorted(OUTCOME))
def test_sigkill_between_the_two_sqlite_commits_then_restart_settles_as_the_design_says(
    tmp_path, monkeypatch, design, when
):
    child = _killed_between_the_commits(tmp_path, monkeypatch, design, when)
    assert len(child.effects()) == (1 if when == "applied" else 0)
    _restart_and_recover(child, tmp_path, design, when)


@pg_only
@pytest.mark.parametrize("when", ["before_applied", "applied"])
def test_sigkill_between_the_two_postgres_commits_then_restart_gives_one_effect(
    pg, tmp_path, monkeypatch, when
):
    child = _killed_between_the_commits(
        tmp_path, monkeypatch, "stripe", when, DSN=pg.dsn, SCHEMA=f"t_kill_{when}"
    )
    assert len(child.effects()) == (1 if when == "applied" else 0)
    _restart_and_recover(child, tmp_path, "stripe", when)


def conforms(log, tmp_path) -> bool:
    """The log exported conforms (no provider here: no effect lines)."""
    path = tmp_path / "run.jsonl"
    with open(path, "w") as out:
        log.export(out)
    report = validate([str(path)])
    assert report.verdict.value == "CONFORMS", [f.explanation for f in report.findings]
    return True
