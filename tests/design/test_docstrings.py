"""The scenario module's docstring examples also run when the file is handed to doctest
directly (`python -m doctest model/scenario.py`); tests/test_doctests.py runs every module's
examples by its installed name."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_scenario_examples_run_as_a_file():
    done = subprocess.run(
        [sys.executable, "-m", "doctest", str(REPO / "model" / "scenario.py")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
