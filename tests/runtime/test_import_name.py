"""The intent-log library is its own layer: the folder runtime/ is `toolcommit.runtime`, and
importing it and opening a log loads the model and spec only (no engine, design search, z3
or networkx)."""

import json
import subprocess
import sys

OPEN_A_LOG = """
import json, sys, tempfile, os
from toolcommit.runtime import IntentLog
d = tempfile.mkdtemp()
log = IntentLog.sqlite(os.path.join(d, "intents.db"), writer="w1", provider="stripe")
t = log.propose("t1", "refund", {"amount": 20}, "r1", principal="user:1")
log.close()
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("z3", "networkx", "toolcommit"))))
"""


def test_the_runtime_lives_in_its_own_folder():
    import toolcommit.runtime as rt

    assert rt.IntentLog.__module__ == "toolcommit.runtime.log"
    assert rt.__file__.replace("\\", "/").endswith("/runtime/__init__.py")


def test_importing_the_runtime_and_opening_a_log_loads_no_checker_z3_or_networkx():
    out = subprocess.run(
        [sys.executable, "-c", OPEN_A_LOG], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    loaded = json.loads(out.splitlines()[-1])
    assert "toolcommit.runtime.log" in loaded and "toolcommit.model.design_file" in loaded
    heavy = [
        m
        for m in loaded
        if m.split(".")[0] in ("z3", "networkx")
        or m.startswith(("toolcommit.checker", "toolcommit.model.semantics"))
    ]
    assert heavy == []
