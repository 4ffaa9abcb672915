"""`validate --engine dask` when the cluster is not what it should be: every wait ends. A
port where something else listens (never answering Dask's handshake) is a usage error
within the connect deadline, an address that is none is one line at once, and a worker
killed while it holds a shard ends the run with exit 5 (nothing judged), never a hang or
"a bug in toolcommit"."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from toolcommit.model.errors import ResourceError

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "ack_loss-bad.jsonl"
distributed = pytest.importorskip(
    "dask.distributed",
    reason="the 'distributed' extra is not installed "
    "(pip install 'toolcommit[distributed]'); CI installs it",
)


def run_cli(*args: str, connect_s: float = 20.0):
    """`toolcommit validate LOG --engine dask ARGS` in a fresh process (a client that never
    connected must not linger in this one), with the connect deadline `connect_s`."""
    code = (
        "import sys; from toolcommit.checker.logs import cluster; "
        f"cluster.CONNECT_S = {connect_s}; from toolcommit.checker.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "validate",
            str(LOG),
            "--engine",
            "dask",
            "--jobs",
            "2",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_a_port_that_never_answers_the_handshake_is_a_usage_error_within_the_deadline():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        held, stop = [], threading.Event()

        def accept():
            s.settimeout(0.2)
            while not stop.is_set():
                try:
                    held.append(s.accept()[0])
                except OSError:
                    pass

        t = threading.Thread(target=accept, daemon=True)
        t.start()
        try:
            done = run_cli("--scheduler", f"tcp://127.0.0.1:{s.getsockname()[1]}", connect_s=1.0)
        finally:
            stop.set()
            t.join()
            for c in held:
                c.close()
    assert done.returncode == 2 and done.stdout == ""
    assert "no Dask scheduler answered" in done.stderr and len(done.stderr.splitlines()) == 1


def test_an_address_that_is_none_is_one_line():
    done = run_cli("--scheduler", "garbage")
    assert done.returncode == 2 and "not a scheduler address" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_worker_killed_while_it_holds_a_shard_ends_the_run_as_a_lost_resource(monkeypatch):
    from toolcommit.checker.logs import cluster, shards

    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=50,
        ) as lc,
        distributed.Client(lc) as c,
    ):
        pids = c.run(os.getpid)
        first = sorted(pids)[0]  # the worker that holds shard 0

        def kill_then_go_on(call, n, fixup):  # the shards exist: kill one's worker
            os.kill(pids[first], signal.SIGKILL)
            return shards.coordinate(call, n, fixup)

        monkeypatch.setattr(cluster, "coordinate", kill_then_go_on)
        with pytest.raises(ResourceError, match="left the cluster|could not be reached"):
            cluster.check([str(LOG)], 1 << 20, (), 2, dask_client=c)
