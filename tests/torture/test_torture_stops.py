"""Stopping `toolcommit torture` leaves nothing: SIGTERM or Ctrl-C during a run ends every
process of the campaign and removes every run folder, with no traceback; a SIGKILL's
orphans die with it and the next campaign removes its folders. The provider stops quietly
with a request still held, and refuses a web page's requests. Real processes and signals; each waits for an event (a run
folder appearing, a process ending), never for a time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from toolcommit.checker.torture import harness
from toolcommit.checker.torture import provider as P
from toolcommit.checker.torture.plan import Timing, random_plan

BOUND = 120.0  # seconds: an upper bound on events that take well under one


def until(cond, what: str):
    end = time.monotonic() + BOUND
    while not (got := cond()):
        assert time.monotonic() < end, f"{what} did not happen within {BOUND:g} s"
        time.sleep(0.05)
    return got


def session(sid: int) -> list[int]:
    """Live (not zombie) processes of session `sid`."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(pid))
    return out


def campaign(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(tmp_path))
    return subprocess.Popen(
        [sys.executable, "-m", "toolcommit.checker.cli", "torture", "--runs", "500", "-q", *args],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def folders(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("toolcommit-torture-"))


def stop(tmp_path: Path, args: tuple, how) -> tuple[subprocess.Popen, str]:
    p = campaign(tmp_path, *args)
    until(lambda: folders(tmp_path), "a run folder")  # a run is in progress
    how(p)
    _, err = p.communicate(timeout=BOUND)
    until(lambda: not session(p.pid), "the end of every process of the campaign")
    return p, err


def test_sigterm_during_a_run_ends_every_process_and_removes_the_run_folder(tmp_path):
    p, err = stop(tmp_path, (), lambda p: p.send_signal(signal.SIGTERM))
    assert p.returncode == -signal.SIGTERM
    assert folders(tmp_path) == [] and err == ""


@pytest.mark.slow
def test_ctrl_c_with_two_jobs_ends_every_process_and_removes_every_run_folder(tmp_path):
    p, err = stop(tmp_path, ("--jobs", "2"), lambda p: os.killpg(p.pid, signal.SIGINT))
    assert p.returncode == 130 and err == "toolcommit: interrupted\n"
    assert folders(tmp_path) == []


def test_a_sigkilled_campaign_leaves_no_process_and_the_next_one_removes_its_folders(
    tmp_path, monkeypatch
):
    p, _ = stop(tmp_path, ("--jobs", "2"), lambda p: p.kill())
    left = folders(tmp_path)
    assert left, "the kill landed between runs: nothing to clean"
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert harness.sweep() == len(left) and folders(tmp_path) == []


def serving(plan, timing, err):
    """The provider and proxy of `plan` in a forked process, its stderr in `err`: (its pid,
    the provider's port, the proxy's port, the control fd whose closing stops it)."""
    r_ready, w_ready = os.pipe()
    r_ctl, w_ctl = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r_ready)
            os.close(w_ctl)
            fd = os.open(err, os.O_WRONLY | os.O_CREAT, 0o600)
            os.dup2(fd, 2)
            sys.stderr = open(2, "w", buffering=1, closefd=False)  # not pytest's capture
            P.serve(P.PROFILES["fenced"], plan, timing, w_ready, r_ctl)
            code = 0
        finally:
            os._exit(code)
    os.close(w_ready)
    os.close(r_ctl)
    provider, proxy = map(int, os.read(r_ready, 64).split())
    os.close(r_ready)
    return pid, provider, proxy, w_ctl


def test_the_provider_stops_quietly_with_a_delayed_request_still_held(tmp_path):
    plan = replace(random_plan(1), net=((("apply", "*", 1), "delay"),))
    err = tmp_path / "provider.err"
    pid, provider, proxy, w_ctl = serving(plan, Timing(hold=BOUND), err)
    held = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, urllib.request; "
            "urllib.request.urlopen(urllib.request.Request(sys.argv[1], "
            "data=b'{}', method='POST'), timeout=600)",
            f"http://127.0.0.1:{proxy}/effect",
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        ledger = f"http://127.0.0.1:{provider}/ledger"
        until(
            lambda: (
                json.loads(urllib.request.urlopen(ledger, timeout=10).read())["network"]["delay"]
                == 1
            ),
            "the proxy holding the request",
        )
        os.close(w_ctl)  # the harness is done
        _, status = os.waitpid(pid, 0)
    finally:
        held.kill()
        held.wait()
    assert os.waitstatus_to_exitcode(status) == 0
    assert err.read_text() == ""


def test_a_web_page_cannot_apply_an_effect_through_the_provider_or_its_proxy(tmp_path):
    """The provider and the proxy listen on loopback, where a web page can reach them: a
    request naming a foreign Host (DNS rebinding) or carrying a foreign Origin is refused,
    nothing of it applied or counted; the run's own requests pass."""
    import urllib.error

    pid, provider, proxy, w_ctl = serving(
        replace(random_plan(1), net=()), Timing(), tmp_path / "provider.err"
    )
    body = json.dumps({"tool": "refund", "args": {"amount": 20}, "scope": "u1"}).encode()

    def post(port: int, headers: dict) -> int:
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/effect", data=body, method="POST", headers=headers
        )
        try:
            return urllib.request.urlopen(req, timeout=BOUND).status
        except urllib.error.HTTPError as e:
            return e.code

    try:
        for port in (proxy, provider):
            assert post(port, {"Origin": "https://evil.example"}) == 403
            assert post(port, {"Host": f"evil.example:{port}"}) == 421
        ledger = f"http://127.0.0.1:{provider}/ledger"
        seen = json.loads(urllib.request.urlopen(ledger, timeout=BOUND).read())
        assert seen["effects"] == [] and seen["network"]["requests"] == 0
        assert post(proxy, {"Origin": f"http://localhost:{proxy}"}) == 200  # the run's own
        seen = json.loads(urllib.request.urlopen(ledger, timeout=BOUND).read())
        assert len(seen["effects"]) == 1 and seen["network"]["requests"] == 1
    finally:
        os.close(w_ctl)
        os.waitpid(pid, 0)
