"""Every command the README shows runs as shown, prints the lines it shows, in order, and
fits a terminal of 100 columns."""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIDTH = 100
README = (ROOT / "README.md").read_text("utf-8")


def console_examples():
    """(command, [expected lines]) for each `$ ` line of each ```console block."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        cmd, expected = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if cmd:
                    out.append((cmd, expected))
                cmd, expected = line[2:], []
            elif line.strip() != "...":
                expected.append(line.rstrip())
        if cmd:
            out.append((cmd, expected))
    return out


def run(cmd: str) -> subprocess.CompletedProcess:
    argv = shlex.split(cmd)
    assert argv[0] == "toolcommit"
    exe = shutil.which("toolcommit")
    argv = [exe] + argv[1:] if exe else [sys.executable, "-m", "toolcommit.checker.cli"] + argv[1:]
    env = {**os.environ, "COLUMNS": str(WIDTH)}
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.parametrize("cmd,expected", console_examples(), ids=[c for c, _ in console_examples()])
def test_readme_command_prints_what_the_readme_shows(cmd, expected):
    if "--engine dask" in cmd:
        pytest.importorskip("dask.distributed", reason="the README marks this command as "
                            "needing the 'distributed' extra, which is not installed")
    result = run(cmd)
    assert result.returncode in (0, 1, 3), result.stderr    # a verdict, not bad usage
    assert "\x1b[K" not in result.stderr and "[design]" not in result.stderr, \
        "progress is for a terminal; stderr here is a pipe"
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    wide = [line for line in lines if len(line) > WIDTH     # but a command to paste whole
            and not line.startswith("  rerun: toolcommit ")]
    assert not wide, f"{len(wide)} line(s) wider than COLUMNS={WIDTH}, the first: {wide[0]!r}"
    pos = 0
    for want in expected:
        assert want in lines[pos:], f"{want!r} not printed (in order) by: {cmd}"
        pos = lines.index(want, pos) + 1


def test_readme_install_and_test_commands_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    install, test = blocks[0].strip(), blocks[1].strip()
    # CI adds the extra whose tests would otherwise skip (validate --engine dask)
    assert "pip install -e '.[test]'" in install and \
        "pip install --quiet -e '.[test,distributed]'" in ci
    assert "python3 -m venv .venv" in install and "python3 -m venv .venv" in ci
    assert test == "python -m pytest -q -n 2" and ci.rstrip().endswith(test)
