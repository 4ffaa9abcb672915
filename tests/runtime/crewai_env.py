"""CrewAI's own interpreter for the tests that need it: CrewAI cannot be installed beside the
'frameworks' and 'gateway' extras (it pins mcp<2, openai<3, pydantic<2.13), so it lives in
``.venv-crewai`` at the repository's root (or ``TOOLCOMMIT_CREWAI_PYTHON``). Without it the
tests skip and say how to create it; in CI (env CI set) they fail instead."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CREATE = (
    "python3 -m venv .venv-crewai && .venv-crewai/bin/pip install --quiet -e "
    "'.[crewai]'  (at the repository's root)"
)


def crewai_python() -> str:
    """The interpreter's path; skips the test (fails it under CI) when it does not exist."""
    path = os.environ.get("TOOLCOMMIT_CREWAI_PYTHON") or str(ROOT / ".venv-crewai/bin/python")
    if Path(path).exists():
        return path
    why = f"no CrewAI interpreter at {path} (CrewAI needs its own environment): {CREATE}"
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the CrewAI tests: {why}", pytrace=False)
    pytest.skip(why)
