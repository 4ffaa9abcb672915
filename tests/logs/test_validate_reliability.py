"""Reproductions from the reliability issue, one claim each: the log checker never answers
wrongly, never loses an input, and says why when it cannot answer."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate import validate

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


# ----- a cut-off last line is a lost line ----------------------------------------------------
def test_a_log_whose_last_line_was_cut_off_is_inconclusive_not_conforming(tmp_path, capsys):
    text = (LOGS / "i1-ok.jsonl").read_text()
    apply = next(line for line in text.splitlines() if '"kind":"apply"' in line)
    p = tmp_path / "cut.jsonl"
    p.write_text(text + apply[: len(apply) // 2])
    assert main(["validate", str(p)]) == 3
    out = capsys.readouterr().out
    assert out.startswith("INCONCLUSIVE:") and "no line was lost" not in out
    report = validate([str(p)])
    cut = [f for f in report.findings if f.property == "CUT_OFF"]
    assert cut and cut[0].certainty == "possible" and cut[0].locations == ((str(p), 11),)
