"""`status` tells the truth and the next step; `recover` converges (issue 39, items 2 and 3).

After a real SIGKILL `status` lists the dead pod's record at once as in doubt, with its
owner gone, when the design lets it be settled and the one command that settles it; a live
call is in progress. `status` and `recover` read the design the log stores (custom timing,
a design file that is gone). `recover` run again and again, faster than the delay bound,
never moves a record's last send, and settles it by its delay bound. `recover --tools` with
a module that opens its log at import under the live pod's name never takes the pod over.
SQLite and PostgreSQL."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from toolcommit.runtime import IntentLog
from toolcommit.runtime.design import load

from ..incli import cli
from .test_recovery_ends import _env, _kill_mid_call

WHO = {"principal": "user:1"}
SCOPE = "user:42:request:7"


def _where(tmp_path, pg, schema):
    """The arguments naming the log (a SQLite file, or --dsn and --schema) and the TOOLS
    module's environment for it."""
    if pg is None:
        return [str(tmp_path / "i.db")], {}
    return ["--dsn", pg.dsn, "--schema", schema], {"DSN": pg.dsn, "SCHEMA": schema}


def _open(tmp_path, pg, schema, writer, **kw):
    if pg is None:
        return IntentLog.sqlite(str(tmp_path / "i.db"), writer, **kw)
    return IntentLog.postgres(pg.dsn, writer, schema=schema, **kw)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request):
    if request.param == "sqlite":
        return None
    pytest.importorskip("psycopg", reason="the 'postgres' extra is not installed")
    return request.getfixturevalue("pg")


def _status(*where):
    code, out, err = cli("status", *where, "--format", "json")
    assert code in (0, 3), err
    report = json.loads(out)
    assert report["exit"] == code
    return code, report


def test_status_lists_a_sigkilled_pods_record_at_once_with_its_next_step(tmp_path, store):
    where, env = _where(tmp_path, store, "t_killed")
    _kill_mid_call(tmp_path, LEASE="600", **env)  # its lease runs on for 10 minutes
    deadline = time.monotonic() + 20  # PostgreSQL: the killed client's server process ends
    while True:
        code, report = _status(*where)
        if not report["records"][0]["owner_alive"] or time.monotonic() > deadline:
            break
    [rec] = report["records"]
    assert code == 3 and report["in_doubt"] == 1, report
    assert (rec["state"], rec["kind"], rec["owner"], rec["owner_alive"]) == (
        "DISPATCHED",
        "in doubt",
        "pod-a#1",
        False,
    )
    assert 500 < rec["settles_in_s"] <= 600 and rec["lease_left_s"] == rec["settles_in_s"]
    recover = f"toolcommit recover {where[0]}" if store is None else "toolcommit recover --dsn"
    assert rec["next_step"].startswith(recover)
    wait = re.fullmatch(r".* --tools MODULE --wait (\d+)", rec["next_step"])
    assert wait and rec["settles_in_s"] < int(wait[1]) <= rec["settles_in_s"] + 2
    assert "then a replay under the same key" in rec["waits_for"]
    if store is not None:  # the database is named, its password never shown
        assert report["log"] == "database postgres, schema t_killed"
        assert "password" not in rec["next_step"]

    live = _open(tmp_path, store, "t_killed", "pod-b", provider="stripe", settler=False)
    d = live.propose("t2", "refund", {"charge": "ch_2", "amount": 5}, SCOPE, **WHO)
    assert live.dispatch(d.key) is not None  # a call of a live process, under way
    code, report = _status(*where)
    mine = [r for r in report["records"] if r["key"] == d.key]
    assert [(r["kind"], r["owner_alive"]) for r in mine] == [("in progress", True)]
    assert report["in_doubt"] == 1 and report["in_progress"] == 1 and code == 3
    live.close()


def test_a_record_under_a_lease_its_process_renews_but_never_answered_is_in_doubt(tmp_path, store):
    """A live process whose ack was never written (a store fault) keeps renewing its
    lease: once its request has been out longer than the delay bound, status counts it in
    doubt, its owner alive, and names the step (a restart of that process)."""
    where, _ = _where(tmp_path, store, "t_renewed")
    design = load("stripe").with_timing(delay_bound=0.5)
    pod = _open(tmp_path, store, "t_renewed", "pod-0", provider=design, settler=False)
    key = pod.propose("t1", "refund", {"charge": "ch_1", "amount": 20}, SCOPE, **WHO).key
    assert pod.dispatch(key) is not None  # sent; its answer is never recorded
    deadline = time.monotonic() + 30
    while True:
        assert pod.renew(key)  # the process lives on and renews its lease
        code, report = _status(*where)
        [rec] = report["records"]
        if rec["kind"] == "in doubt":
            break
        assert time.monotonic() < deadline, "never counted in doubt"
        assert rec["kind"] == "in progress" and code == 0
    assert code == 3 and rec["owner_alive"] and rec["state"] == "DISPATCHED"
    assert "longer than the delay bound" in rec["waits_for"]
    assert rec["next_step"] == "restart pod-0 (its restart takes the record over and settles it)"
    pod.close()


def test_status_and_recover_read_a_log_written_under_custom_timing(tmp_path, store):
    where, _ = _where(tmp_path, store, "t_timing")
    design = load("stripe").with_timing(delay_bound=7.0)
    log = _open(tmp_path, store, "t_timing", "pod-0", provider=design, settler=False)
    d = log.propose("t1", "timed_refund", {"charge": "ch_1", "amount": 20}, SCOPE, **WHO)
    assert log.timeout(log.dispatch(d.key))
    log.close()  # its lease released: the record waits for a takeover
    code, report = _status(*where)
    assert code == 3 and report["digest"] == design.digest and report["delay_bound_s"] == 7.0
    code, out, err = cli("status", *where, "--provider", "stripe")
    assert code == 2 and "leave --provider out" in err and len(err.splitlines()) == 1
    code, out, err = cli("recover", *where)  # no tool: taken over, held, exit 3
    assert code == 3 and "tool timed_refund is not registered" in out, err


def test_status_and_recover_read_a_log_written_under_a_design_file_now_gone(tmp_path):
    src = tmp_path / "ours.json"
    src.write_text(_shipped("email"))
    db = str(tmp_path / "i.db")
    log = IntentLog.sqlite(db, "pod-0", provider=str(src), settler=False)
    d = log.propose("t1", "mail", {"to": "a@example.com"}, SCOPE, **WHO)
    assert log.timeout(log.dispatch(d.key))
    log.close()
    os.remove(src)
    code, report = _status(db)
    assert code == 3 and report["design"] == "ours.json"
    assert report["records"][0]["next_step"] == f"toolcommit recover {db}"
    code, out, err = cli("recover", db)  # email: no status read, given up visibly
    assert code == 0 and "1 DEAD_LETTER" in out, err
    assert _status(db)[0] == 0


def _shipped(name: str) -> str:
    from importlib import resources

    return resources.files("toolcommit.spec").joinpath(f"designs/{name}.json").read_text("utf-8")


STATUS_ONLY = """
from toolcommit.runtime import effectful


def log():
    raise RuntimeError("recover settles through its own log")


@effectful(log, tool="swept_refund", scope="s", status=lambda t: None, principal="user:1")
def refund(charge, amount):
    raise RuntimeError("the window is closed: never sent again")
"""


def test_recover_run_again_and_again_settles_a_record_by_its_delay_bound(
    tmp_path, store, monkeypatch
):
    """A sweeper run back to back, far more often than the delay bound: each takes the
    record over and leaves it; its last send is recorded once and never moved, so the
    status read settles it once the delay bound ran out (before: each run restarted it)."""
    where, _ = _where(tmp_path, store, "t_sweep")
    design = load("stripe").with_timing(delay_bound=1.5, replay_window=0.0)
    log = _open(tmp_path, store, "t_sweep", "pod-0", provider=design, settler=False)
    key = log.propose("t1", "swept_refund", {"charge": "ch_1", "amount": 20}, SCOPE, **WHO).key
    assert log.timeout(log.dispatch(key))
    sent = log.record(key).sent_at
    log.close()
    (tmp_path / "status_only.py").write_text(STATUS_ONLY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    reader = _open(tmp_path, store, "t_sweep", "reader", provider=design, settler=False)
    runs, deadline = 0, time.monotonic() + 60
    while reader.record(key).state != "DEAD_LETTER":
        assert time.monotonic() < deadline, f"not settled after {runs} runs"
        code, out, err = cli("recover", *where, "--tools", "status_only")
        runs += 1
        assert code in (0, 3), err
        rec = reader.record(key)
        assert rec.sent_at == sent, f"run {runs} moved the last send"
    assert code == 0 and "1 DEAD_LETTER" in out  # read absent once the bound ran out
    reader.close()


def test_a_takeover_counts_as_a_send_only_where_one_may_have_been_on_its_way(tmp_path, store):
    design = load("stripe").with_timing(delay_bound=900.0)
    pod = _open(tmp_path, store, "t_flight", "pod-0", provider=design, settler=False, lease=60)
    idle = pod.propose("t1", "refund", {"charge": "ch_1", "amount": 1}, SCOPE, **WHO).key
    assert pod.timeout(pod.dispatch(idle))  # UNKNOWN: its send ended
    flying = pod.propose("t2", "refund", {"charge": "ch_2", "amount": 2}, SCOPE, **WHO).key
    assert pod.timeout(pod.dispatch(flying))
    assert pod.reconcile(flying).purpose == "replay"  # a replay out, its end never written
    before = {k: pod.record(k).sent_at for k in (idle, flying)}
    pod.expire_leases("pod-0")
    other = _open(tmp_path, store, "t_flight", "pod-b", provider=design, settler=False)
    assert sorted(r.key for r in other.recover()) == sorted([idle, flying])
    assert other.record(idle).sent_at == before[idle]
    assert other.record(flying).sent_at > before[flying]
    other.close()
    pod.close()


DOCS_LIKE = """
import os, sys
from toolcommit.runtime import IntentLog, effectful

log = IntentLog.sqlite(os.environ["DB"], writer="pod-refunds-0", provider="stripe")


@effectful(log, tool="refund", scope=lambda charge, amount: "charge:" + charge,
           status=lambda t: None, principal="user:1")
def refund(charge, amount):
    if os.environ.get("HOLD"):
        print("sending", flush=True)
        sys.stdin.readline()                      # the provider answers when the test says
    return {"id": "re_1"}
"""


def test_recover_tools_with_a_module_like_the_docs_never_takes_a_live_pod_over(tmp_path):
    (tmp_path / "refunds.py").write_text(DOCS_LIKE)
    env = _env(tmp_path, "unused")
    pod = subprocess.Popen(
        [sys.executable, "-c", "import refunds; print(refunds.refund('ch_1', 20, call_id='t1'))"],
        env={**env, "HOLD": "1"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert pod.stdout.readline() == "sending\n"  # the call is out: DISPATCHED
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolcommit.checker.cli",
                "recover",
                "i.db",
                "--tools",
                "refunds",
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 3, p.stdout + p.stderr
        assert "pod-refunds-0#1 holds 1 record(s) (1 DISPATCHED) under a live lease" in p.stdout
        out, err = pod.communicate("\n", timeout=60)  # the provider answers
    finally:
        pod.kill() if pod.poll() is None else None
    assert pod.returncode == 0 and out.strip() == "{'id': 're_1'}", err
    reader = IntentLog.sqlite(str(tmp_path / "i.db"), "reader", provider="stripe", settler=False)
    [rec] = reader.records()
    assert (rec.state, rec.owner, rec.owner_inc) == ("ACKED", "pod-refunds-0", 1)
    reader.close()
