"""Claims about `toolcommit prove`: exit codes and output formats."""

from __future__ import annotations

import json

from toolcommit.checker.cli import main


def test_prove_exits_0_when_recommended_is_proved(capsys):
    assert main(["prove", "--property", "I1", "--property", "FENCE"]) == 0
    out = capsys.readouterr().out
    assert "I1: HOLDS proved" in out and "FENCE: HOLDS proved" in out


def test_prove_exits_1_with_a_counterexample_when_naive_breaks_i1(capsys):
    assert main(["prove", "--preset", "naive", "--instance", "ack_loss", "--property", "I1"]) == 1
    assert "I1: VIOLATED in 8 steps" in capsys.readouterr().out


def test_prove_exits_3_when_the_induction_depth_runs_out(capsys):
    assert (
        main(
            [
                "prove",
                "--preset",
                "seed",
                "--instance",
                "paraphrase",
                "--property",
                "FENCE",
                "--max-k",
                "3",
            ]
        )
        == 3
    )
    assert "UNKNOWN" in capsys.readouterr().out


def test_prove_exits_2_on_an_unknown_property(capsys):
    assert main(["prove", "--property", "DEADLOCK"]) == 2
    assert "valid: I1" in capsys.readouterr().err


def test_prove_json_names_method_scope_and_counterexample(capsys):
    assert (
        main(
            [
                "prove",
                "--preset",
                "naive",
                "--instance",
                "cancel",
                "--property",
                "P3",
                "--method",
                "pdr",
                "--format",
                "json",
            ]
        )
        == 1
    )
    doc = json.loads(capsys.readouterr().out)
    v = doc["verdicts"][0]
    assert doc["method"] == "pdr" and v["status"] == "VIOLATED" and v["steps"] == 5
