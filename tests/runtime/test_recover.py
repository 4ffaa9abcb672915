"""Recovery built in: a writer SIGKILLed after the provider applied its refund, restarted
as a new pod under a new writer name, settles the record with no recovery code of the user's:
by the agent's retry of the call (which waits out the dead writer's lease), or by
`toolcommit recover`. The provider is a file ledger shared by the processes."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading

import pytest

from toolcommit.checker.cli import main
from toolcommit.runtime import EffectError, IntentLog, current_ticket, effectful, tell

from .test_recovery_ends import TOOLS  # the refund tool over a file ledger


def _env(tmp_path, writer, **extra):
    return {
        **os.environ,
        "BANK": str(tmp_path / "bank.jsonl"),
        "DB": str(tmp_path / "i.db"),
        "TOOLCOMMIT_WRITER": writer,
        "PYTHONPATH": str(tmp_path),
        "LEASE": "1",
        "WAIT": "10",
        **extra,
    }


def _killed_pod(tmp_path):
    (tmp_path / "refund_tools.py").write_text(TOOLS)
    code = "import refund_tools; refund_tools.refund('ch_1', 20, call_id='t1')"
    p = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(tmp_path, "pod-a", DIE_AFTER_APPLY="1"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == -signal.SIGKILL, p.stderr


def _effects(tmp_path):
    return [json.loads(x) for x in open(tmp_path / "bank.jsonl")]


def _settled(tmp_path):
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "reader", provider="stripe")
    try:
        return [(r.state, r.owner, r.result) for r in log.records()]
    finally:
        log.close()


def test_a_new_pod_settles_a_killed_pods_refund_when_the_agent_retries(tmp_path):
    _killed_pod(tmp_path)
    code = "import refund_tools; print(refund_tools.refund('ch_1', 20.0, call_id='t2'))"
    p = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(tmp_path, "pod-b"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "{'id': 're_1'}"
    assert len(_effects(tmp_path)) == 1
    assert _settled(tmp_path) == [("ACKED", "pod-b", {"id": "re_1"})]


def test_toolcommit_recover_settles_a_killed_pods_refund(tmp_path, monkeypatch, capsys):
    _killed_pod(tmp_path)
    monkeypatch.chdir(tmp_path)
    for k, v in _env(tmp_path, "sweeper").items():
        monkeypatch.setenv(k, v)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert (
        main(
            [
                "recover",
                str(tmp_path / "i.db"),
                "--provider",
                "stripe",  # waits out
                "--tools",
                "refund_tools",
                "--wait",
                "30",
            ]
        )
        == 0
    )  # the lease
    assert "1 record(s) of dead writers taken over: 1 ACKED" in capsys.readouterr().out
    assert len(_effects(tmp_path)) == 1
    ((state, owner, result),) = _settled(tmp_path)
    assert (state, result) == ("ACKED", {"id": "re_1"})
    assert owner.startswith("toolcommit-recover@")


def test_recover_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert main(["recover", str(tmp_path / "none.db"), "--provider", "stripe"]) == 2
    assert not (tmp_path / "none.db").exists()
    other = tmp_path / "shop.db"
    import sqlite3

    sqlite3.connect(other).execute("CREATE TABLE orders (id)").connection.commit()
    before = other.read_bytes()
    assert main(["recover", str(other), "--provider", "stripe"]) == 2
    assert main(["recover", str(other), "--provider", "nope"]) == 2
    assert other.read_bytes() == before
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "no such file" in err[0] and "neither a shipped design" in err[2]


# ----- a restart never races its own settler (issue 39) ---------------------------------------
def _tools(tmp_path, monkeypatch, writer, name="refund_tools_here", eager=False):
    """The refund tools module loaded in this process (its own copy: its own log), as a
    restarted pod under `writer` imports it; the model's retry waits at most 10 s. `eager`:
    the module opens its log as it is imported (``@effectful(log(), ...)``), so its
    settler starts then, before any call."""
    for k, v in _env(tmp_path, writer).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("DIE_AFTER_APPLY", raising=False)
    path = tmp_path / f"{name}.py"
    code = (tmp_path / "refund_tools.py").read_text()
    path.write_text(code.replace("@effectful(log,", "@effectful(log(),") if eager else code)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_retry_while_the_restarted_pods_settler_replays_waits_for_its_outcome(
    tmp_path, monkeypatch
):
    """The pod is SIGKILLed after the provider applied the refund; it restarts under its
    name (the record taken over, UNKNOWN) and its settler replays the refund. The model's
    retry arrives while that replay is in flight (events hold it there): it waits for the
    settler's outcome and gets the refund, never InDoubt ("... 900 s")."""
    _killed_pod(tmp_path)
    tools = _tools(tmp_path, monkeypatch, "pod-a")
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), "pod-a", provider="stripe", wait=10, settle_every=0.05
    )
    assert log.crashed and [r.state for r in log.taken_over] == ["UNKNOWN"]
    in_flight, release, proposed = threading.Event(), threading.Event(), threading.Event()
    log.sinks.append(lambda line: line.get("decision") == "duplicate" and proposed.set())

    @effectful(
        log,
        tool="refund",
        scope=lambda charge, amount: "charge:%s:request:1" % charge,
        status=tools.status,
        principal="user:1",
    )
    def refund(charge, amount):  # the settler's replay, held in flight until released
        t = current_ticket()
        in_flight.set()
        assert release.wait(30), "the test never released the replay"
        return tools.apply(t, {"charge": charge, "amount": amount})

    assert in_flight.wait(30), "the settler never replayed the record it took over"
    got: dict = {}

    def retry():
        try:
            got["told"] = refund("ch_1", 20.0, call_id="t2")
        except EffectError as e:
            got["told"] = tell(e)

    t = threading.Thread(target=retry)
    t.start()
    assert proposed.wait(30), "the retry never reached the log"
    release.set()  # the replay lands while the retry is in the log
    t.join(30)
    assert not t.is_alive()
    assert got["told"] == {"id": "re_1"}, got  # the settler's outcome, not InDoubt
    assert len(_effects(tmp_path)) == 1
    assert [(r.state, r.result) for r in log.records()] == [("ACKED", {"id": "re_1"})]
    log.close()


@pytest.mark.slow
def test_twenty_restarts_after_a_sigkill_no_retry_is_told_in_doubt(tmp_path, monkeypatch):
    """20 times: a pod SIGKILLed after the provider applied its refund restarts under its
    name and imports its tools (the log opened at import: the record taken over, and the
    settler started, replaying it at once), and the model's retry arrives as the settler
    settles: every retry gets the refund, none InDoubt; one refund each time."""
    told = []
    for i in range(20):
        where = tmp_path / f"run{i}"
        where.mkdir()
        _killed_pod(where)
        tools = _tools(where, monkeypatch, "pod-a", name=f"refund_tools_{i}", eager=True)
        try:
            told.append(tools.refund("ch_1", 20.0, call_id="t2"))
        except EffectError as e:
            told.append(tell(e))
        finally:
            tools.log().close()
        assert len(_effects(where)) == 1
    in_doubt = [t for t in told if isinstance(t, dict) and t.get("toolcommit")]
    assert (len(told), len(in_doubt)) == (20, 0), f"{len(in_doubt)} of 20 told {in_doubt[0]}"
    assert told == [{"id": "re_1"}] * 20
