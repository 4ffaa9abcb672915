"""Under CI a test that skips for want of an extra CI installs fails; elsewhere it skips
and names the extra. Real pytest runs in a subprocess, on a folder of their own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.ci_skips import named, wants_what_ci_installs

REPO = Path(__file__).resolve().parents[1]
CASES = """
import os, pytest

def test_wants_an_extra():
    pytest.importorskip("mcp_not_installed_here", reason="the 'gateway' extra is not installed")

def test_wants_a_bare_module():
    pytest.importorskip("psycopg_absent_module")

@pytest.mark.skipif(True, reason="os.fork")
def test_cannot_run_on_this_platform():
    pass
"""
MODULE = """
import pytest
pytest.importorskip("mcp_absent_module", reason="the 'gateway' extra is not installed")

def test_never_collected():
    pass
"""


def run(folder: Path, ci: bool, *files: str) -> subprocess.CompletedProcess:
    (folder / "conftest.py").write_text(
        "from tests.ci_skips import pytest_make_collect_report, pytest_runtest_makereport\n"
    )
    for name in files:
        (folder / name).write_text(CASES if name == "test_cases.py" else MODULE)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    if ci:
        env["CI"] = "true"
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(folder)]
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=120, env=env)


def test_without_ci_a_missing_extra_skips(tmp_path):
    r = run(tmp_path, False, "test_cases.py", "test_module.py")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 skipped" in r.stdout and "failed" not in r.stdout, r.stdout
    assert "the 'gateway' extra is not installed" in r.stdout


def test_under_ci_a_missing_extra_fails_and_a_platform_skip_stays_a_skip(tmp_path):
    r = run(tmp_path, True, "test_cases.py")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 failed" in r.stdout and "1 skipped" in r.stdout, r.stdout
    assert "CI installs what this needs, yet it skipped" in r.stdout


def test_under_ci_a_module_skipped_whole_for_a_missing_extra_is_an_error(tmp_path):
    r = run(tmp_path, True, "test_module.py")
    assert r.returncode != 0 and "1 error" in r.stdout, r.stdout + r.stderr
    assert "CI installs what this needs, yet it skipped" in r.stdout
    assert "the 'gateway' extra is not installed" in r.stdout


def test_a_bare_import_skip_of_a_known_module_names_its_extra():
    reason = "could not import 'mcp': No module named 'mcp'"
    assert named(reason).endswith("(the 'gateway' extra: pip install -e '.[gateway]')")
    assert named("os.fork") == "os.fork" and not wants_what_ci_installs("os.fork")
    assert wants_what_ci_installs("PostgreSQL server binaries missing")
