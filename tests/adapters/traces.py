"""Helpers shared by the trace tests: the pinned traces (tests/fixtures/traces/), their
manifest, and `validate` run on them in this process."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from toolcommit.checker.cli import main

T = Path(__file__).parents[1] / "fixtures" / "traces"
CASES = json.loads((T / "expected.json").read_text())["cases"]


def run(argv, fmt="json"):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(
            ["validate"]
            + [a.replace("{T}", str(T)) for a in argv]
            + (["--format", fmt] if fmt else [])
        )
    return code, out.getvalue(), err.getvalue()


def verdict_of(argv):
    code, out, err = run(argv)
    d = json.loads(out)

    def props(c):
        return sorted({f["property"] for f in d["findings"] if f["certainty"] == c})

    return d["verdict"], props("certain"), props("possible"), code, d
