"""Shared, expensive results (each preset's default suite is checked once per session), the
terminal width every test sees, and the tests that share one such result kept on one worker."""
from pathlib import Path

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


HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    """`-n N` distributes by `loadgroup` rather than xdist's plain `load` (an explicit
    `--dist` other than load is kept): see pytest_collection_modifyitems."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", "") == "load":
        config.option.dist = "loadgroup"


def pytest_collection_modifyitems(config, items):
    """Every test that uses a module- or session-scoped fixture of this suite (the presets'
    suites, the built-in questions' answers, freshly made traces, a Dask cluster, a
    PostgreSQL server) is put in that fixture's `xdist_group`: under `--dist loadgroup`
    (pytest_configure) the fixture is computed by one worker, not by each worker a test of
    it lands on. A test with two such fixtures joins the first one's group."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        for name in item.fixturenames:
            fixture = defs.get(name, (None,))[-1]
            if fixture is None or fixture.scope not in ("module", "session"):
                continue
            where = Path(getattr(fixture.func, "__code__").co_filename).resolve()
            if HERE in where.parents:
                item.add_marker(pytest.mark.xdist_group(f"{where.relative_to(HERE)}::{name}"))
                break
