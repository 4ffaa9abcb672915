"""The fault harness: real processes, real SIGKILLs, a faulty loopback network; every run's
log is judged by validate's code. The chat-style runtime is caught at once, the library
comes out clean, and nothing outlives a run."""

import os

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.torture.campaign import render, torture
from toolcommit.checker.torture.harness import run_once
from toolcommit.checker.torture.plan import random_plan


def test_the_same_seed_is_the_same_schedule_and_another_seed_another():
    assert random_plan(7) == random_plan(7)
    assert random_plan(7) != random_plan(8)
    a = random_plan(7)
    assert [a.net_action("apply", "x", n) for n in range(1, 5)] == [
        random_plan(7).net_action("apply", "x", n) for n in range(1, 5)
    ]


def test_chat_runtime_that_trusts_call_ids_and_retries_blindly_is_caught_in_the_first_runs():
    c = torture(5, seed=1, runtime="chat")
    i, r = c.first_failure
    assert i <= 2 and r.verdict == "VIOLATES" and "I1" in r.properties
    assert c.exit_code == 1 and "caught at run" in render(c)


@pytest.mark.slow
def test_library_comes_out_clean_on_30_seeds_with_every_fault_injected():
    c = torture(30, seed=1, jobs=2, keep_going=True)
    assert c.verdicts()["CONFORMS"] == 30, render(c)
    for fault in (
        "crashes",
        "pauses",
        "cancels",
        "drops",
        "delays",
        "dups",
        "fenced_out",
        "restarts",
    ):
        assert c.total(fault) > 0, f"no {fault} in 30 seeds: the run proves less than it says"
    assert c.total("effects") > 0 and c.exit_code == 0


def _children() -> list[int]:
    me, out = os.getpid(), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                    out.append(int(pid))
        except OSError:
            pass
    return out


def test_no_process_outlives_a_run_even_a_killed_and_paused_one():
    plan = random_plan(4)
    assert plan.kills and plan.pauses
    before = _children()
    r = run_once(plan)
    assert r.counts["crashes"] >= 1
    assert _children() == before


def test_a_provider_without_fences_lets_a_late_request_land_after_the_seal():
    c = torture(10, seed=1, profile="keyed")
    assert c.first_failure is not None and "FENCE" in c.first_failure[1].properties


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["--runs", "0"], "--runs 0: use 1 to"),
        (["--store", "postgres"], "--store postgres needs --dsn"),
        (["--workers", "9"], "--workers 9: use 1 to 8"),
    ],
)
def test_bad_torture_options_are_one_line_errors(argv, msg, capsys):
    assert main(["torture", *argv]) == 2
    err = capsys.readouterr().err
    assert msg in err and len(err.strip().splitlines()) == 1
