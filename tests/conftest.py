"""Shared, expensive results (each preset's default suite is checked once per session), and
the terminal width every test sees."""

import pytest

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
