"""Every numeric limit is range-checked before it reaches C, and the native lane checks the
types and ranges it assumes: a value out of range is a one-line usage error (exit 2) or a
Python exception, never a wrapped limit, a division by zero or a crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.logs import lane, typed
from toolcommit.checker.logs.conformance import Conformance

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
LANE, WHY = lane.load()


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def test_a_state_limit_past_64_bits_is_refused_not_wrapped(capsys):
    # 2**64 + 1000: the C engine's uint64_t would stop after 1,000 states
    assert (
        main(
            [
                "check",
                "--preset",
                "naive",
                "--instance",
                "default",
                "--max-states",
                str(2**64 + 1000),
            ]
        )
        == 2
    )
    assert "--max-states 18446744073709552616: use 0 (no limit) to" in one_line(capsys)


def test_the_largest_state_limit_is_no_limit_in_effect(capsys):
    assert (
        main(
            [
                "check",
                "--preset",
                "naive",
                "--instance",
                "ack_loss",
                "--max-states",
                str(2**64 - 1),
                "--explain",
                "none",
            ]
        )
        == 1
    )
    assert "state limit" not in capsys.readouterr().out


@pytest.mark.parametrize("jobs", ["0", str(2**32)])
def test_validate_jobs_out_of_range_is_one_line(jobs, capsys):
    assert main(["validate", str(LOGS / "i1-ok.jsonl"), "--jobs", jobs]) == 2
    assert f"--jobs {jobs}: use 1 to" in one_line(capsys)


def test_design_refuses_a_negative_timeout(capsys):
    assert main(["design", "--instance", "ack_loss", "--timeout", "-5"]) == 2
    assert "--timeout must be a number of seconds >= 0" in one_line(capsys)


def test_a_shard_threshold_that_is_not_a_number_is_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", "validate", str(LOGS / "i1-ok.jsonl")],
        capture_output=True,
        text=True,
        env=dict(os.environ, TOOLCOMMIT_SHARD_MIN_BYTES="abc"),
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "TOOLCOMMIT_SHARD_MIN_BYTES=abc: give a whole number of bytes" in done.stderr


needs_lane = pytest.mark.skipif(
    LANE is None or typed.decode is None, reason=f"no native lane: {WHY}"
)


def events():
    return [typed.decode(b) for b in (LOGS / "i1-ok.jsonl").read_bytes().splitlines() if b.strip()]


@needs_lane
@pytest.mark.parametrize("me,shards", [(0, 2**32), (0, 0), (2, 2), (-1, 2)])
def test_the_lane_refuses_a_route_out_of_range(me, shards):
    c = Conformance(["<log>"], native=True)
    evs = events()
    route = (me, shards, None, True, True, lambda *a: None, c.skip)
    with pytest.raises((ValueError, OverflowError), match="route|too large|int"):
        LANE.feed(c, evs, 0, 1, c.feed, route)


@needs_lane
@pytest.mark.parametrize("table", ["writers", "keys", "intents", "memo"])
def test_the_lane_refuses_core_tables_that_are_not_dicts(table):
    c = Conformance(["<log>"], native=True)

    class Core:  # the core's attributes, one of them not a dict
        def __getattr__(self, name):
            return [] if name == table else getattr(c, name)

    with pytest.raises(TypeError, match="must be dicts"):
        LANE.feed(Core(), events(), 0, 1, c.feed)


@pytest.mark.parametrize("engine", ["smt", "random"])
def test_an_engine_that_counts_no_states_refuses_a_state_limit_in_one_line(engine, capsys):
    assert main(["check", "--engine", engine, "--max-states", "1", "--instance", "ack_loss"]) == 2
    assert f"--max-states 1: the {engine} engine keeps no set of states" in one_line(capsys)


def test_prove_refuses_a_state_limit_too():
    from toolcommit.checker.engines.base import Limits
    from toolcommit.checker.engines.portfolio import for_prove
    from toolcommit.model.errors import UsageError
    from toolcommit.model.instance import instance
    from toolcommit.model.knobs import preset
    from toolcommit.model.semantics import build

    with pytest.raises(UsageError, match="keeps no set of states"):
        for_prove().run(build(preset("recommended"), instance("ack_loss")), ["I1"], Limits(1))


@pytest.mark.parametrize("flag", ["--timeout", "--run-timeout"])
@pytest.mark.parametrize("engine", ["smt", "random"])
def test_a_search_cut_by_its_time_limit_never_says_holds(engine, flag, capsys):
    """A microsecond, for the whole command or for the instance: the engine checks its clock
    before its first depth or run, so the search is cut there: UNKNOWN naming the limit,
    exit 3."""
    assert (
        main(
            [
                "check",
                "--engine",
                engine,
                flag,
                "0.000001",
                "--instance",
                "ack_loss",
                "--property",
                "I1",
                "--explain",
                "none",
            ]
        )
        == 3
    )
    out = capsys.readouterr().out
    assert "HOLDS" not in out and "time limit 1e-06s reached" in out, out
