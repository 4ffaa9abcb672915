"""The folder's run modules (``*_runs.py``, ``scopes.py``) are also scripts run in
subprocesses and imported by bare name (``import guarded_runs``, ``--scope scopes:NAME``):
their folder is on the import path for every test here, not only after another module put
it there."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
