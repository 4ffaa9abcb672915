"""`toolcommit ask` honours the limits a user sets: a stopped search is UNKNOWN with its
reason, and the SMT fallback runs past a user's state or time limit only when asked for,
bounded, and announced."""

import json
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.design.question import Limits
from toolcommit.checker.design.run import answer
from toolcommit.checker.design.schema import load_question
from toolcommit.checker.engines.verdict import Status

REPO = Path(__file__).resolve().parents[2]


def _late_replay_cell(tmp_path, option="replay_same_key", **extra):
    """One cell of the late-replay question: its run without wipes (877 states) fits in
    LIMIT, its P4 run with wipes (3,512) does not."""
    doc = json.loads((REPO / "spec" / "questions" / "late-replay.json").read_text("utf-8"))
    doc.update(question="one-cell", **extra)
    doc["rows"] = {"knob": "late_replay", "options": [option]}
    doc["columns"] = {"assumptions": {"provider_idempotent": ["yes"]}}
    doc["properties"] = [p for p in doc["properties"] if p != "FULFIL"]  # SMT judges invariants
    path = tmp_path / "one-cell.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _cell(capsys):
    doc = json.loads(capsys.readouterr().out)
    (cell,) = doc["cells"]
    return cell, {v["property"]: v for v in cell["verdicts"]}


def _unknown_question(tmp_path, **extra):
    """One HOLDS cell whose explicit search (the large default instance) outgrows 100 states."""
    doc = {
        "question": "big",
        "instance": "default",
        "properties": ["I1"],
        "rows": {"knob": "late_replay", "options": ["reject"]},
        "columns": {"assumptions": {"provider_idempotent": ["yes"]}},
        **extra,
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


LIMIT = "2000"  # a state limit is checked after every state since 081336f: 100 stopped the
#                 run without wipes too, so P4 had nothing to re-judge (a failure on main)


def test_user_state_limit_makes_p4_unknown_instead_of_a_silent_smt_run(tmp_path, capsys):
    path = _late_replay_cell(tmp_path)
    assert (
        main(["ask", str(path), "--max-states", LIMIT, "--format", "json"]) == 1
    )  # the cell is VIOLATED: no answer holds
    cell, verdicts = _cell(capsys)
    assert cell["engine"] == "explicit" and cell["status"] == "VIOLATED"
    p4 = verdicts["P4"]
    assert p4["status"] == "UNKNOWN"
    assert f"state limit {LIMIT} reached" in p4["reason"] and "--bmc-depth" in p4["reason"]


def test_user_state_limit_on_a_holding_cell_is_unknown_with_exit_3(tmp_path, capsys):
    path = _unknown_question(tmp_path)
    assert main(["ask", str(path), "--max-states", "100", "--format", "json"]) == 3
    cell, verdicts = _cell(capsys)
    assert cell["engine"] == "explicit" and cell["status"] == "UNKNOWN"
    assert "state limit 100 reached" in verdicts["I1"]["reason"]


def test_smt_fallback_past_a_user_limit_runs_when_asked_bounded_and_announced(tmp_path, capsys):
    path = _late_replay_cell(tmp_path)
    assert main(["ask", str(path), "--max-states", LIMIT, "--bmc-depth", "8"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "(smt)" in out
    assert (
        "bounded SMT judged what the explicit search left open at its limit, up to depth 8" in out
    )
    assert (
        main(["ask", str(path), "--max-states", LIMIT, "--bmc-depth", "8", "--format", "json"]) == 1
    )
    cell, verdicts = _cell(capsys)
    assert cell["engine"] == "explicit+smt"
    assert verdicts["P4"]["scope"].startswith("up to depth 8 ")


def test_a_state_limit_in_the_question_file_is_a_user_limit_too(tmp_path):
    q = load_question(str(_unknown_question(tmp_path, limits={"max_states": 100})))
    (cell,) = answer(q).cells.values()
    assert cell.engine == "explicit" and cell.status is Status.UNKNOWN


def test_default_limits_keep_the_smt_fallback_and_a_user_timeout_bounds_it():
    assert Limits().smt_fallback and Limits().smt_timeout == 300
    assert not Limits().override(max_states=100).smt_fallback
    assert not Limits().override(timeout=5).smt_fallback
    both = Limits().override(timeout=5, bmc_depth=4)
    assert both.smt_fallback and both.smt_timeout == 5
    assert Limits().override(timeout=5, bmc_depth=4, bmc_timeout=9).smt_timeout == 9
    assert Limits().override(bmc_depth=4).smt_timeout == 300


def test_a_row_of_unknown_cells_is_explained_as_unknown(tmp_path, capsys):
    path = _unknown_question(tmp_path)
    assert main(["ask", str(path), "--max-states", "100"]) == 3
    out = " ".join(capsys.readouterr().out.split())
    assert 'reject is UNKNOWN in the one column, "idem+": I1: state limit 100 reached' in out
    assert "VIOLATED in :" not in out
    assert "no option holds in any column" not in out


@pytest.mark.slow  # a deeper or repeated check of what a default test shows
def test_negative_or_nan_limits_on_the_command_line_are_refused(capsys):
    for flag, value in (
        ("--max-states", "-5"),
        ("--timeout", "nan"),
        ("--timeout", "-1"),
        ("--run-timeout", "nan"),
        ("--run-timeout", "-1"),
        ("--bmc-depth", "-2"),
    ):
        assert main(["ask", "late-replay", flag, value]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and flag in err and ">= 0" in err
