"""Out of memory is its own exit (5), one line, never 0 or 1 (which scripts read as a verdict):
a real search under an address-space limit, a shard that runs out, and the C libraries that
crash instead of raising MemoryError are not used under a limit."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.logs import pool, shards

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "ack_loss-bad.jsonl"


def limited(megabytes: int):
    def set_limit():
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return set_limit


def test_a_search_that_runs_out_of_memory_exits_5_in_one_line():
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolcommit.checker.cli",
            "check",
            "--preset",
            "naive",
            "--instance",
            "default",
            "--bounds",
            "workers=2,crashes=2,ack_losses=2",
            "--explain",
            "none",
        ],
        capture_output=True,
        text=True,
        preexec_fn=limited(250),
        timeout=300,
    )
    errors = [ln for ln in done.stderr.splitlines() if not ln.startswith("  [")]  # progress
    assert done.returncode == 5 and done.stdout == ""
    assert len(errors) == 1 and errors[0].startswith("toolcommit: out of memory")
    assert "--max-states" in errors[0] and "Traceback" not in done.stderr


def test_a_shard_out_of_memory_exits_5_not_as_a_bug(monkeypatch, capsys):
    def no_memory(self):
        raise MemoryError

    monkeypatch.setattr(shards.Shard, "run", no_memory)
    monkeypatch.setattr(pool, "SHARD_MIN_BYTES", 0)
    assert main(["validate", str(LOG), "--jobs", "2"]) == 5
    err = capsys.readouterr().err
    assert err.startswith("toolcommit: out of memory: shard") and err.count("\n") == 1


@pytest.mark.parametrize(
    "module,name",
    [("toolcommit.model.canon", "_dumps"), ("toolcommit.checker.logs.read", "_orjson")],
)
def test_under_a_memory_limit_orjson_which_crashes_when_an_allocation_fails_is_not_used(
    module, name
):
    probe = f"import {module} as m; print(getattr(m, {name!r}) is None)"
    free = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    under = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, preexec_fn=limited(4096)
    )
    assert (free.stdout, under.stdout) == ("False\n", "True\n")
