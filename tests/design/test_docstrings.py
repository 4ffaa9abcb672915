"""The docstring examples of the design-question modules and of scenario restriction run,
both imported as a package and as a file (`python -m doctest model/scenario.py`)."""
import doctest
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULES = ["toolcommit.model.scenario", "toolcommit.checker.design.grid",
           "toolcommit.checker.design.schema"]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0


def test_scenario_examples_run_as_a_file():
    done = subprocess.run([sys.executable, "-m", "doctest", str(REPO / "model" / "scenario.py")],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
