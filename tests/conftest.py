"""Shared, expensive results (each preset's default suite is checked once per run), the
terminal width every test sees, under CI a skip for want of what CI installs fails
(tests/ci_skips.py), and each test's tier by measured time (tests/tiers.py)."""

import fcntl
import pickle

import pytest

from tests.ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401
from tests.tiers import pytest_collection_modifyitems  # noqa: F401
from toolcommit.checker.verify.suite import resolve_instances, run_suite
from toolcommit.model.knobs import PRESETS, preset


def _suites() -> dict:
    return {p: run_suite(preset(p), resolve_instances(None, {})) for p in PRESETS}


@pytest.fixture(scope="session")
def suites(tmp_path_factory, request):
    """`toolcommit check --preset P` for every preset, as data (about 10 CPU-s in all),
    computed once per run: under pytest-xdist the first worker that asks computes it and
    leaves it pickled in the run's shared temporary folder (under a lock) for the others."""
    if not hasattr(request.config, "workerinput"):  # not an xdist worker: nothing to share
        return _suites()
    shared = tmp_path_factory.getbasetemp().parent
    path = shared / "suites.pickle"
    with open(shared / "suites.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if path.exists():
            return pickle.loads(path.read_bytes())
        got = _suites()
        path.write_bytes(pickle.dumps(got))
        return got


@pytest.fixture(autouse=True)
def _columns(monkeypatch):
    """Text reports are as wide as a 100-column terminal in every test, whoever runs it
    (pytest-xdist's workers set COLUMNS=80; a developer's terminal has its own width)."""
    monkeypatch.setenv("COLUMNS", "100")
