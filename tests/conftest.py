"""Shared, expensive results (each preset's default suite is checked once per session), the
terminal width every test sees, and under CI a skip for want of what CI installs fails
(tests/ci_skips.py)."""

import pytest

from tests.ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: F401
from toolcommit.checker.verify.suite import resolve_instances, run_suite
from toolcommit.model.knobs import PRESETS, preset


@pytest.fixture(scope="session")
def suites():
    """`toolcommit check --preset P` for every preset, as data (about 40 s in all)."""
    return {p: run_suite(preset(p), resolve_instances(None, {})) for p in PRESETS}


@pytest.fixture(autouse=True)
def _columns(monkeypatch):
    """Text reports are as wide as a 100-column terminal in every test, whoever runs it
    (pytest-xdist's workers set COLUMNS=80; a developer's terminal has its own width)."""
    monkeypatch.setenv("COLUMNS", "100")
