"""The fault harness on the TypeScript library (`--runtime ts`): Node workers, SIGKILLed at
the harness's hook points and restarted, against the provider fakes of the shipped designs;
every run's log (plus the provider's ledger) is judged by validate's code, and the report
counts what was injected and done as it does for the Python library. A small bounded
campaign here; `toolcommit torture --runtime ts --env stripe --runs 20` for more."""

from pathlib import Path

import pytest

from tests.ts.node import built
from toolcommit.checker.cli import main
from toolcommit.checker.torture.campaign import render, torture


@pytest.mark.parametrize("env", ["stripe", "fenced-store"])
def test_the_typescript_library_comes_out_clean_under_the_shipped_designs(env):
    built()
    c = torture(3, seed=4, runtime="ts", profile=env, keep_going=True)
    assert c.verdicts()["CONFORMS"] == 3, render(c)
    assert c.exit_code == 0
    assert c.total("crashes") > 0 and c.total("restarts") > 0  # real kills, real restarts
    assert c.total("effects") <= c.total("intents")  # never a second effect of one intent
    lib = torture(1, seed=4, runtime="library", profile=env)
    # the same denominator as the Python library's: the same report, line by line
    head = [ln.split(":")[0] for ln in render(c).splitlines()]
    assert head == [ln.split(":")[0] for ln in render(lib).splitlines()]


def test_runtime_ts_needs_a_profile_with_a_design(capsys):
    assert main(["torture", "--runtime", "ts", "--runs", "1"]) == 2
    assert "--runtime ts follows the design" in capsys.readouterr().err


QUESTIONS = Path(__file__).resolve().parents[2] / "counterexamples" / "questions"


@pytest.mark.parametrize(
    "case",
    [
        "failure-classes@email/Late_request_after_give-up__required_behaviour",
        "tradeoffs@email/Client-side_canonical_intent_log__where_it_is_strong",
        "failure-classes@stripe/Ack_loss__common_bug",
    ],
)
def test_the_models_counterexamples_replay_against_the_typescript_library(case, capsys):
    """The schedule that breaks a weak design in the model (a refund or an email applied
    twice on the fake: tests/runtime/test_itf_replay.py) is one effect on the Node worker, as
    on the Python library."""
    built()
    path = str(QUESTIONS / f"{case}.itf.json")
    assert main(["torture", "--runtime", "ts", "--itf", path]) == 0
    out = capsys.readouterr().out
    assert "1 of 1: 1 CONFORMS" in out and "1 effects applied" in out, out
