"""The CrewAI wrapper with the real CrewAI, offline, in CrewAI's own interpreter (see
`crewai_env`): `crewai_script.py` runs every case in one process (CrewAI takes seconds to
import) and prints each one's outcome, a traceback for a failed one. The cases: `fw_cases`'
three (a lost ack plus a model retry under a new call id is one refund; InDoubt and GaveUp
reach the model as the truth) for a function tool, an ``async def`` under ``akickoff``, a
BaseTool subclass, and its ``arun``; CrewAI alone refunding twice; the live pod's settler
settling, through the wrapper's registration with its log, a dead pod's record and a lost
ack, nobody calling recover."""

import json
import subprocess

import pytest

from .crewai_env import ROOT, crewai_python
from .fw_cases import CASES

FORMS = ("function", "async", "subclass", "arun")
NAMES = (
    [f"{k}-{f}" for f in FORMS for k in CASES]
    + ["unguarded"]
    + [f"recovery-{f}" for f in ("function", "async", "subclass")]
    + [f"settler-{f}" for f in ("function", "async", "subclass")]
)
SCRIPT = ROOT / "tests" / "runtime" / "crewai_script.py"


# every case in one CrewAI process (about 12 s, most of it importing CrewAI): with -m slow
@pytest.mark.slow
def test_crewai_tool_cases_one_refund_and_the_truth(tmp_path):
    """One test, not one per case: under pytest-xdist a module fixture would run per worker,
    so the script (and CrewAI's import) twice."""
    python = crewai_python()
    run = subprocess.run(
        [python, str(SCRIPT), str(tmp_path / "cases"), *NAMES],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    got = {
        d["case"]: d
        for d in (json.loads(x) for x in run.stdout.splitlines() if x.startswith('{"case"'))
    }
    assert sorted(got) == sorted(NAMES), f"outcomes missing: {run.stderr[-3000:]}"
    failed = {name: got[name]["error"] for name in NAMES if not got[name]["ok"]}
    assert not failed, "\n".join(f"{name}:\n{error}" for name, error in failed.items())


WRAP = """
import sys
from crewai.tools import tool
from toolcommit.runtime import IdentityError, IntentLog, IntentLogError
from toolcommit.runtime.frameworks import crewai_tool

@tool("refund")
def refund(order: str, amount: int, note: str = "") -> str:
    '''Refund an order.'''
    return "re_1"

log = IntentLog.sqlite(sys.argv[1], writer="w1", provider="stripe")
try:
    crewai_tool(log, refund, scope="s", status=lambda t: None)
except IntentLogError as e:
    print("no principal:", "pass principal=" in str(e))
try:
    crewai_tool(log, refund, scope="s", status=lambda t: None, principal="u", identity=("amt",))
except IdentityError as e:
    print("undeclared:", "names amt" in str(e))
g = crewai_tool(log, refund, scope="s", status=lambda t: None, principal="u",
                identity=("order", "amount"))
print(g.run(order="o1", amount=20), g.run(order="o1", amount="20", note="again"))
print("proposals:", [e["decision"] for e in log.events() if e["type"] == "proposal"])
log.close()
"""


@pytest.mark.slow
def test_crewai_tool_takes_principal_and_identity_from_its_args_schema(tmp_path):
    """No principal is refused when wrapped; identity fields are checked against the tool's
    ``args_schema``, by which ``"20"`` is 20: a re-ask with an added note is the same."""
    run = subprocess.run(
        [crewai_python(), "-c", WRAP, str(tmp_path / "i.db")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.splitlines()[-4:] == [
        "no principal: True",
        "undeclared: True",
        "re_1 re_1",
        "proposals: ['accepted', 'duplicate']",
    ], run.stdout + run.stderr[-2000:]
