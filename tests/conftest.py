"""Shared, expensive results: each preset's default suite is checked once per session."""
import pytest

from toolcommit.checker.verify.suite import resolve_instances, run_suite
from toolcommit.model.knobs import PRESETS, preset


@pytest.fixture(scope="session")
def suites():
    """`toolcommit check --preset P` for every preset, as data (about 40 s in all)."""
    return {p: run_suite(preset(p), resolve_instances(None, {})) for p in PRESETS}
