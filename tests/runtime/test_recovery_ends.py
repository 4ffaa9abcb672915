"""Recovery that ends (issue 27): `toolcommit recover` settles every open record of every
dead incarnation (its own earlier runs included), names or waits out a live lease, runs
safely three at once and says truly in its exit code whether anything is left open; a live
call longer than the lease keeps it; a settler settles a record in doubt once its design
allows; a log refuses a design other than the one it was created under."""

import functools
import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from toolcommit.checker.cli import main
from toolcommit.runtime import DesignError, IntentLog, current_ticket, effectful
from toolcommit.runtime.design import load

SCOPE = "user:42:request:7"

TOOLS = """
import fcntl, json, os, signal
from toolcommit.runtime import IntentLog, current_ticket, effectful

LEDGER = os.environ["BANK"]
_LOG = []


def log():
    if not _LOG:
        kw = dict(provider="stripe", lease=float(os.environ.get("LEASE", "3")),
                  wait=float(os.environ.get("WAIT", "0")))
        _LOG.append(IntentLog.postgres(os.environ["DSN"], schema=os.environ["SCHEMA"], **kw)
                    if os.environ.get("DSN") else IntentLog.sqlite(os.environ["DB"], **kw))
    return _LOG[0]


def effects():
    try:
        return [json.loads(x) for x in open(LEDGER)]
    except FileNotFoundError:
        return []


def apply(t, args):
    with open(LEDGER + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = [e for e in effects() if e["idempotency_key"] == t.idempotency_key]
        if found:
            return {"id": found[0]["id"]}              # the saved response for the key
        e = {"id": "re_%d" % (len(effects()) + 1), "idempotency_key": t.idempotency_key,
             "key": t.key, "args": args}
        with open(LEDGER, "a") as f:
            f.write(json.dumps(e) + "\\n")
    if os.environ.get("DIE_AFTER_APPLY"):
        os.kill(os.getpid(), signal.SIGKILL)           # applied; the ack never written
    return {"id": e["id"]}


def status(t):
    found = [e for e in effects() if e["key"] == t.key]
    return {"id": found[0]["id"]} if found else None


@effectful(log, tool="refund", scope=lambda charge, amount: "charge:%s:request:1" % charge,
           status=status, principal="user:1")
def refund(charge, amount):
    return apply(current_ticket(), {"charge": charge, "amount": amount})
"""


def _env(tmp_path, writer="pod-a", **extra):
    return {
        **os.environ,
        "BANK": str(tmp_path / "bank.jsonl"),
        "DB": str(tmp_path / "i.db"),
        "TOOLCOMMIT_WRITER": writer,
        "PYTHONPATH": str(tmp_path),
        **extra,
    }


def _kill_mid_call(tmp_path, **env):
    """A pod SIGKILLed after the provider applied its refund, before the ack was written."""
    (tmp_path / "refund_tools.py").write_text(TOOLS)
    code = "import refund_tools; refund_tools.refund('ch_1', 20, call_id='t1')"
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env(tmp_path, DIE_AFTER_APPLY="1", **env),
        timeout=60,
    )
    assert p.returncode == -signal.SIGKILL, p.stderr


def _recover(tmp_path, *args, provider="stripe", where=None, env=None):
    where = [str(tmp_path / "i.db")] if where is None else where
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolcommit.checker.cli",
            "recover",
            *where,
            "--provider",
            provider,
            *args,
        ],
        cwd=tmp_path,
        env=_env(tmp_path, "unused", **(env or {})),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _done(p):
    out, err = p.communicate(timeout=60)
    return p.returncode, out + err


def _states(db, provider="stripe"):
    log = IntentLog.sqlite(str(db), "reader", provider=provider)
    try:
        return sorted(r.state for r in log.records())
    finally:
        log.close()


def _effects(tmp_path):
    return [json.loads(x) for x in open(tmp_path / "bank.jsonl")]


def kill_then_recover(tmp_path, states, where=None, env=None):
    """SIGKILL mid-call, then `toolcommit recover` at once, after the lease, again under
    the same name, three at once under other names and once more: each exit code says
    truly whether a record is open; one refund. `states()` reads the records' states."""
    _kill_mid_call(tmp_path, **(env or {}))
    rec = functools.partial(_recover, tmp_path, where=where, env=env)

    code, out = _done(rec())  # at once: the lease still runs
    assert code == 3 and "pod-a#1 holds 1 record(s) (1 DISPATCHED) under a live lease" in out

    code, out = _done(rec("--writer", "sweeper", "--wait", "30"))
    assert code == 3, out  # after the lease: taken, no tool
    assert "sweeper#1 holds 1 record(s) (1 UNKNOWN): tool refund is not registered" in out
    code, out = _done(rec("--writer", "sweeper"))  # again, the same name
    assert code == 3 and "sweeper#2 holds 1 record(s) (1 UNKNOWN)" in out
    assert states() == ["UNKNOWN"]

    three = [rec("--tools", "refund_tools", "--wait", "30") for _ in range(3)]
    results = [_done(p) for p in three]  # three at once, other names
    assert [c for c, _ in results] == [0, 0, 0], results
    assert sorted(o.split("taken over: ")[1].split(";")[0] for _, o in results) == [
        "1 ACKED",
        "nothing to take over",
        "nothing to take over",
    ]
    assert states() == ["ACKED"]
    assert len(_effects(tmp_path)) == 1  # the replay found the saved one

    code, out = _done(rec("--writer", "sweeper"))
    assert code == 0 and "no record of the log is open" in out


# ----- toolcommit recover after a SIGKILL: at once, after the lease, again, elsewhere, x3 -------
def test_sigkill_mid_call_then_recover_at_once_after_the_lease_again_elsewhere_and_three(tmp_path):
    kill_then_recover(tmp_path, lambda: _states(tmp_path / "i.db"))


@pytest.mark.parametrize("n", [30, pytest.param(300, marks=pytest.mark.slow)])
def test_three_recovers_at_once_settle_every_record_and_each_exit_code_is_true(tmp_path, n):
    db = str(tmp_path / "i.db")
    dead = IntentLog.sqlite(db, "pod-a", provider="email", synchronous="NORMAL")
    for i in range(n):
        dead.dispatch(
            dead.propose(
                f"t{i}", "mail", {"to": f"u{i}@example.com"}, SCOPE, principal="user:1"
            ).key
        )
    dead.expire_leases("pod-a")  # pod-a died; its lease ran out
    nowait = [_recover(tmp_path, provider="email") for _ in range(3)]
    for code, out in map(_done, nowait):
        # 0 only if no record was open when it ended; 3 names who holds what
        assert (
            code == 0
            and "no record of the log is open" in out
            or code == 3
            and "under a live lease" in out
        ), out
    waiting = [_recover(tmp_path, "--wait", "30", provider="email") for _ in range(3)]
    assert [_done(p)[0] for p in waiting] == [0, 0, 0]
    assert _states(db, "email") == ["DEAD_LETTER"] * n


@pytest.mark.slow
def test_three_recovers_under_one_writer_name_stop_safely(tmp_path):
    """The old default: one writer name for every run. A run whose name another opened is
    superseded: it stops, exit 2 in one line, and never writes again."""
    db = str(tmp_path / "i.db")
    dead = IntentLog.sqlite(db, "pod-a", provider="email", synchronous="NORMAL")
    for i in range(300):
        dead.dispatch(
            dead.propose(
                f"t{i}", "mail", {"to": f"u{i}@example.com"}, SCOPE, principal="user:1"
            ).key
        )
    dead.expire_leases("pod-a")
    runs = [_recover(tmp_path, "--writer", "sweeper", provider="email") for _ in range(3)]
    for code, out in map(_done, runs):
        assert code == 0 and "no record of the log is open" in out or code in (2, 3), out
    assert _done(_recover(tmp_path, "--wait", "30", provider="email"))[0] == 0
    assert _states(db, "email") == ["DEAD_LETTER"] * 300


def test_recover_settles_its_own_earlier_incarnations_records(tmp_path):
    """A later run under the same writer name takes its earlier run's records when it opens
    the log; `recover()` still returns them to settle."""
    db = str(tmp_path / "i.db")
    dead = IntentLog.sqlite(db, "pod-a", provider="email")
    d = dead.propose("t1", "mail", {"to": "a@example.com"}, SCOPE, principal="user:1")
    dead.dispatch(d.key)
    dead.expire_leases("pod-a")
    first = IntentLog.sqlite(db, "sweeper", provider="email", settler=False)
    assert [r.state for r in first.recover()] == ["UNKNOWN"]  # taken, then it crashed
    again = IntentLog.sqlite(db, "sweeper", provider="email", settler=False)
    assert again.crashed and [r.key for r in again.recover()] == [d.key]
    assert again.dead_letter(d.key) and again.recover() == []


def test_recover_refuses_a_log_of_another_design_in_one_line(tmp_path, capsys):
    db = str(tmp_path / "i.db")
    log = IntentLog.sqlite(db, "pod-a", provider="email")
    log.dispatch(log.propose("t1", "mail", {"to": "a@example.com"}, SCOPE, principal="user:1").key)
    log.expire_leases("pod-a")
    assert main(["recover", db, "--provider", "stripe"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and "created under design email" in err[0] and "opened under stripe" in err[0]
    )
    with pytest.raises(DesignError, match="created under design email .* opened under stripe"):
        IntentLog.sqlite(db, "pod-b", provider="stripe")
    with pytest.raises(DesignError, match="opened under email \\(digest"):  # timing counts
        IntentLog.sqlite(db, "pod-b", provider=load("email").with_timing(delay_bound=1))
    assert _states(db, "email") == ["DISPATCHED"]  # nothing was replayed


def test_a_log_written_before_logs_stored_their_design_adopts_the_first_and_says_so(
    tmp_path, capsys
):
    db = str(tmp_path / "i.db")
    IntentLog.sqlite(db, "pod-a", provider="email").close()
    with sqlite3.connect(db) as c:
        c.execute("DROP TABLE tc_design")  # the schema before this change
    assert main(["recover", db, "--provider", "email"]) == 0
    assert "now follows email" in capsys.readouterr().err
    with pytest.raises(DesignError, match="created under design email"):
        IntentLog.sqlite(db, "pod-b", provider="stripe")
    again = IntentLog.sqlite(db, "pod-b", provider="email")
    assert again.design_adopted is None
    again.close()


@pytest.mark.parametrize(
    "argv",
    [
        ["recover", "--dsn", "host=/nonexistent dbname=x", "--provider", "stripe"],
        ["status", "--dsn", "host=/nonexistent dbname=x"],
        ["validate", "--from", "dbos", "postgresql:///x?host=/nonexistent"],
        ["torture", "--runs", "1", "--store", "postgres", "--dsn", "host=/nonexistent dbname=x"],
    ],
    ids=["recover", "status", "validate-dbos", "torture"],
)
def test_a_command_without_tools_never_imports_from_the_working_directory(tmp_path, argv):
    """Only ``recover --tools`` (and ``validate --scope MODULE:FUNCTION``) name a module to
    load: a ``psycopg.py`` in the working directory is never run in its place."""
    (tmp_path / "psycopg.py").write_text("open('RAN', 'w').write('shadowed')\n")
    cli = os.path.join(os.path.dirname(sys.executable), "toolcommit")  # as a user runs it
    p = subprocess.run(
        [cli, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert p.returncode == 2 and not (tmp_path / "RAN").exists(), p.stderr


# ----- the heartbeat: a call longer than the lease keeps it -----------------------------------
class Clock:
    """A store clock the test moves (`IntentLog.sqlite(clock=...)`): leases run on it."""

    def __init__(self):
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_a_call_longer_than_the_lease_is_never_taken_over(tmp_path):
    """While the effect runs, the store's clock moves on by 2.4 leases in steps of 0.3 of
    one; after each step the heartbeat renews the lease (waited for, with a bound) and
    another writer's recover takes nothing."""
    db, clock = str(tmp_path / "i.db"), Clock()
    w1 = IntentLog.sqlite(db, "w1", provider="stripe", lease=1.0, settler=False, clock=clock)
    w2 = IntentLog.sqlite(db, "w2", provider="stripe", lease=1.0, settler=False, clock=clock)
    taken = []

    @effectful(w1, tool="slow_refund", scope=SCOPE, status=lambda t: None, principal="user:1")
    def slow_refund(amount):
        (key,) = [r.key for r in w1.records()]
        for _ in range(8):
            clock.now += 0.3
            _until(lambda: w1.lease_left(key) > 0.95)  # the heartbeat renewed it
            taken.extend(w2.recover())
        return {"id": "re_1"}

    assert slow_refund(20, call_id="t1") == {"id": "re_1"}
    assert taken == []
    (rec,) = w1.records()
    assert (rec.state, rec.owner) == ("ACKED", "w1")
    assert "takeover" not in json.dumps(w1.events())


# ----- the settler: a record in doubt is settled once the design allows it --------------------
def _until(pred, seconds=10):
    deadline = time.monotonic() + seconds
    while not pred():
        assert time.monotonic() < deadline, "not settled before the test's deadline"
        time.sleep(0.02)


def test_the_settler_settles_a_timed_out_call_once_the_delay_bound_passed(tmp_path):
    design = load("stripe").with_timing(delay_bound=0.3)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider=design, wait=0, settle_every=0.1)
    applied = []

    def status(t):
        return {"id": "re_1"} if applied else None

    @effectful(log, tool="late_refund", scope=SCOPE, status=status, principal="user:1")
    def late_refund(amount):
        applied.append(current_ticket().idempotency_key)  # the provider applies it ...
        raise TimeoutError("... after the client gave up")

    from toolcommit.runtime import InDoubt

    with pytest.raises(InDoubt):
        late_refund(20, call_id="t1")
    assert [r.state for r in log.records()] == ["RECONCILING"]
    _until(lambda: log.records()[0].state != "RECONCILING")
    (rec,) = log.records()
    assert (rec.state, rec.result) == ("ACKED", {"id": "re_1"})
    assert len(set(applied)) == 1  # replays under the one key, never a new one
    log.close()
    assert not any(t.is_alive() for t in log._threads.values())


def test_a_live_settler_keeps_the_leases_of_its_records_in_doubt(tmp_path):
    """Idle in doubt is not dead: while its settler runs, a process's records are never
    taken over (a takeover of its replay in flight would restart the delay bound)."""
    db = str(tmp_path / "i.db")
    design = load("stripe").with_timing(delay_bound=2)
    pod = IntentLog.sqlite(db, "pod-a", provider=design, lease=1.0, wait=0, settle_every=0.1)
    other = IntentLog.sqlite(db, "pod-b", provider=design, settler=False)

    @effectful(
        pod, tool="kept_refund", scope=SCOPE, status=lambda t: {"id": "re_1"}, principal="user:1"
    )
    def kept_refund(amount):
        raise TimeoutError("no answer")

    from toolcommit.runtime import InDoubt

    with pytest.raises(InDoubt):
        kept_refund(20, call_id="t1")
    deadline = time.monotonic() + 10
    while not pod.records()[0].settled:  # the delay bound (2 s), then a read
        assert time.monotonic() < deadline, "not settled before the test's deadline"
        assert other.recover() == [] and pod.records()[0].owner == "pod-a"
        time.sleep(0.05)
    assert [r.state for r in pod.records()] == ["ACKED"]
    pod.close()


def test_a_restarted_pods_settler_settles_what_its_dead_incarnation_left(tmp_path):
    db = str(tmp_path / "i.db")
    dead = IntentLog.sqlite(db, "pod-a", provider="email")
    dead.dispatch(
        dead.propose("t1", "notify", {"to": "a@example.com"}, SCOPE, principal="user:1").key
    )
    pod = IntentLog.sqlite(db, "pod-a", provider="email", settle_every=0.1)  # the restart

    @effectful(pod, tool="notify", scope=SCOPE, principal="user:1")
    def notify(to):
        return {"sent": to}

    _until(lambda: pod.records()[0].settled)
    assert [r.state for r in pod.records()] == ["DEAD_LETTER"]  # email: given up visibly
    pod.close()


def test_recover_watch_settles_as_leases_run_out_and_stops_on_sigterm(tmp_path):
    db = str(tmp_path / "i.db")
    dead = IntentLog.sqlite(db, "pod-a", provider="email", lease=1.0)
    dead.dispatch(
        dead.propose("t1", "mail", {"to": "a@example.com"}, SCOPE, principal="user:1").key
    )
    p = _recover(tmp_path, "--watch", provider="email")  # the lease runs 1 s more
    ready, _, _ = select.select([p.stdout], [], [], 30)
    if not ready:
        p.kill()
    line = p.stdout.readline() if ready else ""
    assert line.endswith("DEAD_LETTER\n"), line
    p.send_signal(signal.SIGTERM)
    code, out = _done(p)
    assert code == 0 and "1 record(s) of dead writers taken over: 1 DEAD_LETTER" in out


def test_recover_watch_needs_the_tools_where_the_design_reads_status(tmp_path):
    IntentLog.sqlite(str(tmp_path / "i.db"), "pod-a", provider="stripe").close()
    code, out = _done(_recover(tmp_path, "--watch"))  # a process of its own: no tools
    assert code == 2 and "--watch: design stripe settles" in out


def test_a_log_dropped_without_close_ends_its_background_threads(tmp_path):
    from toolcommit.runtime.shims import register

    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider="email", settle_every=0.05)
    register("dropped_tool", lambda args: None, None, log=log)
    threads = list(log._threads.values())
    assert sorted(t.name for t in threads if t.is_alive()) == [
        "toolcommit-heartbeat-w1",
        "toolcommit-settler-w1",
    ]
    del log  # never closed: the threads hold it weakly
    _until(lambda: not any(t.is_alive() for t in threads))
