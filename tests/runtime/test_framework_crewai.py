"""The CrewAI wrapper with the real CrewAI, offline, in CrewAI's own interpreter (see
`crewai_env`): `crewai_script.py` runs every case in one process (CrewAI takes seconds to
import) and prints each one's outcome; each case here asserts its own. The cases: `fw_cases`'
three (a lost ack plus a model retry under a new call id is one refund; InDoubt and GaveUp
reach the model as the truth) for a function tool, an ``async def`` under ``akickoff``, a
BaseTool subclass, and its ``arun``; CrewAI alone refunding twice; recovery through the
wrapper's registration."""
import json
import subprocess

import pytest

from .crewai_env import ROOT, crewai_python
from .fw_cases import CASES

FORMS = ("function", "async", "subclass", "arun")
NAMES = ([f"{k}-{f}" for f in FORMS for k in CASES] + ["unguarded"]
         + [f"recovery-{f}" for f in ("function", "async", "subclass")])
SCRIPT = ROOT / "tests" / "runtime" / "crewai_script.py"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    python = crewai_python()
    tmp = tmp_path_factory.mktemp("crewai")
    run = subprocess.run([python, str(SCRIPT), str(tmp / "cases"), *NAMES], cwd=tmp,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.startswith('{"case"')]
    return {d["case"]: d for d in lines}, run.stderr


@pytest.mark.parametrize("name", NAMES)
def test_crewai_tool_case(name, outcomes):
    got, stderr = outcomes
    assert name in got, f"the script gave no outcome for {name}: {stderr[-3000:]}"
    assert got[name]["ok"], got[name]["error"]
