"""Every page under docs/frameworks/ runs as printed: its ```python block prints the lines
of the ```text block that follows it. The blocks run in this process (the frameworks are
imported once), DBOS's in a fresh one (DBOS is one global instance per process), CrewAI's in
CrewAI's own interpreter (`crewai_env`: skipped without it, failed under CI), offline."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .crewai_env import crewai_python

DOCS = Path(__file__).resolve().parents[2] / "docs" / "frameworks"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
NEEDS = {
    "openai-agents.md": "agents",
    "langchain.md": "langchain.agents",
    "temporal.md": "temporalio",
    "dbos.md": "dbos",
    "crewai.md": None,
}
# CrewAI offline: no telemetry, no tracing prompt
QUIET = {
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "CREWAI_TRACING_ENABLED": "false",
    "CREWAI_DISABLE_TRACKING": "true",
}


def blocks(text: str, lang: str) -> list[str]:
    """The fenced blocks of `lang` in a Markdown text, in order."""
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.S | re.M)


def test_every_framework_page_is_known():
    assert PAGES == sorted(NEEDS)


def _printed(code: str, page: str, tmp_path, capsys) -> str:
    if page == "crewai.md":
        run = subprocess.run(
            [crewai_python(), "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, **QUIET),
        )
        assert run.returncode == 0, run.stderr[-2000:]
        return run.stdout
    if page == "dbos.md":
        run = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        )
        assert run.returncode == 0, run.stderr[-2000:]
        return run.stdout
    capsys.readouterr()
    exec(compile(code, str(DOCS / page), "exec"), {"__name__": "__docs__"})
    return capsys.readouterr().out


# CrewAI's page runs in CrewAI's own interpreter (about 12 s of its start): with -m slow
@pytest.mark.parametrize(
    "page", [pytest.param(p, marks=pytest.mark.slow) if p == "crewai.md" else p for p in PAGES]
)
def test_framework_page_example_prints_what_the_page_shows(page, tmp_path, capsys):
    if NEEDS[page]:
        pytest.importorskip(NEEDS[page], reason="the 'frameworks' extra is not installed")
    text = (DOCS / page).read_text()
    (code,) = blocks(text, "python")
    (shown,) = blocks(text, "text")
    assert _printed(code, page, tmp_path, capsys) == shown
