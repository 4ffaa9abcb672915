"""A skip for want of something CI installs is a failure under CI (env ``CI`` set), and a
bare import skip names the extra that brings the module.

CI (`.ci/run`) installs every extra but ``crewai`` (which has its own environment, see
tests/runtime/crewai_env.py), the PostgreSQL server binaries, Spin, Chromium and a C
compiler; a test that skips there for want of one of them ran nothing, and a green run
would hide it. Skips for what CI cannot change (no ``os.fork``, not Linux, not root, one
CPU) stay skips. The hooks are imported by tests/conftest.py.
"""

from __future__ import annotations

import os

import pytest

# what a skip's reason says when it skipped for want of what CI installs (lower case)
WANTS = (
    "could not import",  # pytest.importorskip without a reason of its own
    "extra",  # "the 'frameworks' extra is not installed", ...
    "postgres",  # the server binaries, or a server that cannot start
    "chromium",
    "spin is not installed",
    "no c compiler",
    "msgspec",
    "no native lane",
)
# modules a bare importorskip names, and the extra that installs each
EXTRA_OF = {"mcp": "gateway", "httpx2": "gateway", "anyio": "gateway", "psycopg": "postgres"}


def skip_reason(longrepr) -> str:
    """The reason of a skipped report (pytest keeps it as (file, line, reason))."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def wants_what_ci_installs(reason: str) -> bool:
    low = reason.lower()
    return any(w in low for w in WANTS)


def named(reason: str) -> str:
    """`reason`, with the extra to install when it is a bare import skip of a known module."""
    for module, extra in EXTRA_OF.items():
        if f"could not import '{module}'" in reason:
            return f"{reason} (the '{extra}' extra: pip install -e '.[{extra}]')"
    return reason


def _judge(report) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = named(skip_reason(report.longrepr))
    if os.environ.get("CI") and wants_what_ci_installs(reason):
        report.outcome = "failed"
        report.longrepr = f"CI installs what this needs, yet it skipped: {reason}"
    elif isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        report.longrepr = (*report.longrepr[:2], reason)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _judge(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A module skipped whole at import (``allow_module_level``) is judged the same way."""
    outcome = yield
    _judge(outcome.get_result())
