"""validate's shard processes never outlive the process that started them: killed or
terminated mid-run, the parent takes its shards with it (before, each shard kept its own
pipe's other end open and waited on it forever). Real processes and signals; the test
waits for events (the shards existing, then ending), never for a time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "ack_loss-bad.jsonl"
BOUND = 60.0

# the shards are started, then the parent stops before it calls them (deterministic: the
# shards are alive, waiting for their first call, when the parent is stopped)
SCRIPT = """
import multiprocessing, sys, threading
from toolcommit.checker.logs import pool
def stalled(call, shards, fixup, index=None):
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
    threading.Event().wait()  # until the test's signal ends this process
pool.coordinate = stalled
pool.check([sys.argv[1]], 1 << 20, (), 2)
"""


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_the_shards_end_with_a_validate_that_is_killed_or_terminated(sig):
    p = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(LOG)], stdout=subprocess.PIPE, text=True
    )
    try:
        shards = [int(x) for x in p.stdout.readline().split()]
        assert len(shards) == 2 and all(map(running, shards))
        p.send_signal(sig)
        assert p.wait(BOUND) == -sig
        end = time.monotonic() + BOUND
        while any(map(running, shards)) and time.monotonic() < end:
            time.sleep(0.05)
        assert not any(map(running, shards)), "a shard outlived its parent"
    finally:
        for pid in shards if "shards" in locals() else ():
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        p.kill()
        p.wait()


# the shards are mid-call (slowed down) when the parent is interrupted: the parent closes
# their pipes, and each shard's answer meets a closed pipe
INTERRUPTED = """
import multiprocessing, sys, threading, time
from toolcommit.checker.logs import pool
run = pool.Shard.run
def slow(self, *args):
    time.sleep(1.0)
    return run(self, *args)
pool.Shard.run = slow
def stalled(call, shards, fixup, index=None):
    def meanwhile():
        print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
        threading.Event().wait()  # until the test's SIGINT
    call("run", [()] * shards, meanwhile=meanwhile)
pool.coordinate = stalled
try:
    pool.check([sys.argv[1]], 1 << 20, (), 2, indexed=False)
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_a_ctrl_c_while_the_shards_work_ends_them_without_a_traceback():
    p = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(LOG)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        shards = [int(x) for x in p.stdout.readline().split()]
        assert len(shards) == 2
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=BOUND)  # stderr ends once the shards have ended
        assert p.returncode == 130
        assert "Traceback" not in err and "BrokenPipe" not in err, err
        assert not any(map(running, shards))
    finally:
        p.kill()
        p.wait()


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def test_a_ctrl_c_on_the_real_command_with_two_jobs_is_exit_130_and_leaves_nothing(tmp_path):
    """`toolcommit validate --jobs 2` on a log large enough to be sharded, Ctrl-C (SIGINT to
    its process group, as a terminal sends it) once its shards run: one line, exit 130, no
    BrokenPipe, no shard left, nothing left in its TMPDIR."""
    import json

    lines = [
        json.loads(x) for x in (LOG.parent / "happy-ack_loss-ok.jsonl").read_text().splitlines()
    ]
    big, seq = tmp_path / "big.jsonl", 0
    with big.open("w") as f:
        for i in range(40_000):  # about 50 MB, many seconds of work
            for e in lines:
                seq += 1
                f.write(
                    json.dumps(
                        {**e, "key": f"k{i}", "call_id": f"t{i}", "seq": seq, "writer": "w0"}
                        if "key" in e
                        else e
                    )
                    + "\n"
                )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cli = os.path.join(os.path.dirname(sys.executable), "toolcommit")
    p = subprocess.Popen(
        [cli, "validate", "--jobs", "2", str(big)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp)},
    )
    try:
        end = time.monotonic() + BOUND
        while len(shards := _children(p.pid)) < 2 and p.poll() is None and time.monotonic() < end:
            time.sleep(0.01)
        assert len(shards) == 2, "the shards never started"
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=BOUND)
        assert p.returncode == 130, err
        assert err == "toolcommit: interrupted\n" and out == ""
        end = time.monotonic() + BOUND
        while any(map(running, shards)) and time.monotonic() < end:
            time.sleep(0.05)
        assert not any(map(running, shards)) and list(tmp.iterdir()) == []
    finally:
        p.kill()
        p.wait()


def test_a_ctrl_c_while_the_subcommand_is_still_imported_is_exit_130(monkeypatch, capsys):
    """Before, an interrupt while `main` imported the subcommand's modules (a slow start on
    a loaded machine) escaped as a KeyboardInterrupt traceback."""
    import importlib

    from toolcommit.checker import cli

    def interrupted(name, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib, "import_module", interrupted)
    assert cli.main(["validate", str(LOG)]) == 130
    assert capsys.readouterr().err == "toolcommit: interrupted\n"
