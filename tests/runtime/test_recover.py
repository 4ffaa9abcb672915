"""Recovery built in: a writer SIGKILLed after the provider applied its refund, restarted
as a new pod under a new writer name, settles the record with no recovery code of the user's:
by the agent's retry of the call (which waits out the dead writer's lease), or by
`toolcommit recover`. The provider is a file ledger shared by the processes."""

import json
import os
import signal
import subprocess
import sys

from toolcommit.checker.cli import main
from toolcommit.runtime import IntentLog

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
