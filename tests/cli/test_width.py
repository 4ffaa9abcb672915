"""Every text report fits the terminal: COLUMNS, else the terminal's size, else 100 columns
(but a command printed to be pasted whole); progress goes to a terminal's stderr only."""

import os
import pty
import subprocess
import sys

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.terminal import width

COMMANDS = [
    [
        "check",
        "--preset",
        "naive",
        "--instance",
        "ack_loss",
        "--instance",
        "cancel",
        "--explain",
        "all",
    ],
    [
        "check",
        "--preset",
        "recommended",
        "--instance",
        "ack_loss",
        "--instance",
        "give_up_retry",
        "--property",
        "I1",
        "--property",
        "VISIBLE",
        "--property",
        "ALO",
        "--property",
        "FULFIL",
    ],
    ["prove", "--preset", "naive", "--instance", "ack_loss", "--property", "I1"],
    ["validate", "tests/fixtures/logs/ack_loss-bad.jsonl"],
    [
        "validate",
        "--from",
        "otel",
        "tests/fixtures/traces/pydantic-reissue.otlp.json",
        "--effectful",
        "refund",
        "--ledger",
        "tests/fixtures/traces/stripe-events.json",
    ],
    ["spec"],
    ["spec", "--envs"],
    ["ask", "multi-orchestrator"],
    ["ask", "--list"],
    ["design", "--env", "ideal", "--instance", "ack_loss"],
    ["torture", "--runtime", "chat", "--itf", "counterexamples/naive/ack_loss/I1.itf.json", "-q"],
]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("columns", [100, 60])
@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:2]) for c in COMMANDS])
def test_no_line_of_a_text_report_is_wider_than_columns(argv, columns, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(argv) in (0, 1, 3)
    out = capsys.readouterr().out
    wide = [line for line in out.splitlines() if len(line) > columns and not pastes(line)]
    assert out and not wide, wide[:1]


def pastes(line: str) -> bool:
    """A command printed to be pasted whole (torture's rerun line), never wrapped."""
    return line.startswith("  rerun: toolcommit ")


def test_the_width_is_columns_else_100_when_no_terminal_says(monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    assert width() == 72
    monkeypatch.delenv("COLUMNS")
    r = subprocess.run(
        [sys.executable, "-c", "from toolcommit.checker.cli.terminal import width; print(width())"],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != "COLUMNS"},
    )
    assert r.stdout.strip() == "100"  # stdout is a pipe: no terminal to ask


def test_a_long_run_shows_progress_on_a_terminal_and_erases_it():
    """A run of several seconds shows progress when stderr is a terminal (a pseudo-terminal
    here), and nothing when it is a pipe (test_readme asserts that for every command of the
    README and docs/, design's and ask's runs of tens of seconds among them). Each kind of
    line (design's, torture's, an engine's) is tested in process (tests/cli/test_cli.py);
    here the real command on a real terminal: `check --preset recommended`, about 4 CPU-s,
    past the 2 s before progress starts (`design --env stripe` took 17)."""
    master, slave = pty.openpty()
    env = {**os.environ, "COLUMNS": "100"}
    r = subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", "check", "--preset", "recommended"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
        timeout=300,
    )
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    assert r.returncode == 0 and b"recommended" in r.stdout
    assert b"\r\x1b[K  [" in err and err.endswith(b"\r\x1b[K")  # shown, then erased
    assert b"\x1b[K" not in r.stdout
