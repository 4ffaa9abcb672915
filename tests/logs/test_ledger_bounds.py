"""A ledger is read with bounds: ``--ledger /dev/zero`` is refused in one line at once (it
grew until killed), a file over the byte bound is refused, and the records of one long line
are placed in one pass (each record's id was searched from the document's start: time
quadratic in the line's length)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.incli import cli
from toolcommit.checker.logs.adapters import ledger
from toolcommit.checker.logs.adapters.docs import read_text
from toolcommit.model.errors import InputError

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"


def _one_line(code: int, err: str, says: str) -> None:
    assert code == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and says in err, err


def _two_gib() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_a_ledger_that_is_dev_zero_is_refused_in_one_line_without_growing():
    argv = ["validate", str(LOGS / "ack_loss-ok.jsonl"), "--ledger", "/dev/zero"]
    done = subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,  # it read until killed before: a hang fails here, loudly
        preexec_fn=_two_gib,  # growth fails as a MemoryError, not a slow machine
    )
    _one_line(done.returncode, done.stderr, "a NUL byte")


def test_a_ledger_over_the_byte_bound_is_refused(tmp_path):
    p = tmp_path / "ledger.jsonl"
    p.write_text('{"idempotency_key": "k", "effect_id": "e"}\n' * 100)
    assert read_text(str(p)).count("\n") == 100
    with pytest.raises(InputError, match="larger than 1000 bytes"):
        read_text(str(p), most=1000)


def test_records_of_one_long_line_are_placed_at_their_own_ids(tmp_path):
    """One line holding an array, then a record per line: each record's line is where its
    id is written, the repeated id included (its second record, its second place)."""

    def event(i: int, rid: str) -> dict:
        return {
            "id": rid,
            "object": "event",
            "request": {"id": f"req_{i}", "idempotency_key": f"k{i}"},
            "data": {"object": {"amount": i}},
        }

    long_line = json.dumps([event(i, f"evt_{i}") for i in range(2000)])
    later = [json.dumps(event(2000 + i, "evt_1999" if i == 1 else f"evt_x{i}")) for i in range(3)]
    p = tmp_path / "events.jsonl"
    p.write_text(long_line + "\n" + "\n".join(later) + "\n")
    got = ledger.read([str(p)]).entries
    assert len(got) == 2003
    assert [e.line for e in got[:2000]] == [1] * 2000
    assert [e.line for e in got[2000:]] == [2, 3, 4]


def test_a_gzip_ledger_is_still_read(tmp_path):
    import gzip

    p = tmp_path / "ledger.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"idempotency_key": "k", "effect_id": "e"}\n'))
    assert [e.effect_id for e in ledger.read([str(p)]).entries] == ["e"]
    code, _, err = cli("validate", str(LOGS / "ack_loss-ok.jsonl"), "--ledger", str(p))
    assert code in (0, 1, 3) and "Traceback" not in err
