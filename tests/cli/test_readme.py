"""Every command the README and the pages under docs/ show runs as shown, prints the lines
they show, in order, and fits a terminal of 100 columns; the README's library example
prints what it shows."""

import functools
import json
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
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


def console_examples(text: str):
    """(command, [expected lines]) for each `$ ` line of each ```console block."""
    out = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
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


# the commands that take more than 20 s on two cores: run with `-m deep` (before a release;
# CI runs the design search of test_provider_design.py)
DEEP = {
    "toolcommit design --env email --instance ack_loss --instance transport_retry "
    "--instance give_up_retry --explain none",
    "toolcommit design --env spec/providers/example-payments.json --explain none",
}


# commands a deep test runs anyway, checking what the page shows with `assert_prints` (the
# same search twice, once per tier, before): the test that runs each
ELSEWHERE = {
    "toolcommit design --env stripe --explain none": (
        "tests/design/test_design_file.py::test_a_shipped_design_is_what_the_search_finds_today"
    ),
}


def shown(cmd: str) -> tuple[str, list]:
    """(page, expected lines) of the first page that shows `cmd`."""
    for page in PAGES:
        for c, expected in console_examples(page.read_text("utf-8")):
            if c == cmd:
                return page.relative_to(ROOT).as_posix(), expected
    raise AssertionError(f"no page shows {cmd!r}")


def examples():
    """pytest params, one per command of each page: (page, command, expected lines)."""
    out = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for i, (cmd, expected) in enumerate(console_examples(page.read_text("utf-8")), 1):
            if cmd in ELSEWHERE:
                continue
            marks = [pytest.mark.deep] if cmd in DEEP else []
            out.append(pytest.param(name, cmd, expected, id=f"{name}#{i}: {cmd}", marks=marks))
    return out


def test_every_deep_command_is_still_shown():
    """A command marked deep, or checked elsewhere, that a page no longer shows is stale."""
    listed = {e.values[1] for e in examples()}
    assert DEEP <= listed, DEEP - listed
    for cmd in ELSEWHERE:
        shown(cmd)


@functools.lru_cache(maxsize=None)
def run(cmd: str) -> subprocess.CompletedProcess:
    """Run `cmd` from the repository's root (once per process: a command two pages show is
    run once where both land on one worker)."""
    argv = shlex.split(cmd)
    assert argv[0] == "toolcommit"
    exe = shutil.which("toolcommit")
    argv = [exe] + argv[1:] if exe else [sys.executable, "-m", "toolcommit.checker.cli"] + argv[1:]
    env = {**os.environ, "COLUMNS": str(WIDTH)}
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)


def test_every_page_with_commands_is_found():
    pages = {p for p, *_ in (e.values for e in examples())}
    assert {
        "README.md",
        "docs/check.md",
        "docs/design-and-ask.md",
        "docs/validate.md",
        "docs/runtime.md",
        "docs/question-files.md",
        "docs/design-files.md",
    } <= pages


@pytest.mark.parametrize("page,cmd,expected", examples())
def test_a_documented_command_prints_what_its_page_shows(page, cmd, expected):
    if "--engine dask" in cmd:
        pytest.importorskip(
            "dask.distributed",
            reason=f"{page} marks this command as "
            "needing the 'distributed' extra, which is not installed",
        )
    result = run(cmd)
    assert result.returncode in (0, 1, 3), result.stderr  # a verdict, not bad usage
    assert "\x1b[K" not in result.stderr and "[design]" not in result.stderr, (
        "progress is for a terminal; stderr here is a pipe"
    )
    assert_prints(result.stdout, expected, cmd, page)


def assert_prints(stdout: str, expected: list, cmd: str, page: str) -> None:
    """`stdout` holds the `expected` lines in order, and no line wider than the terminal."""
    lines = [line.rstrip() for line in stdout.splitlines()]
    wide = [
        line
        for line in lines
        if len(line) > WIDTH  # but a command to paste whole
        and not line.startswith("  rerun: toolcommit ")
    ]
    assert not wide, f"{len(wide)} line(s) wider than COLUMNS={WIDTH}, the first: {wide[0]!r}"
    pos = 0
    for want in expected:
        assert want in lines[pos:], f"{want!r} not printed (in order) by: {cmd} ({page})"
        pos = lines.index(want, pos) + 1


def test_readme_install_and_test_commands_are_what_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    install, test = blocks[0].strip(), blocks[1].strip()
    # CI adds the extra whose tests would otherwise skip (validate --engine dask) and the
    # tools of the checks it runs first (dev: ruff, mypy)
    extras = re.search(r"pip install --quiet -e '\.\[([a-z,]+)\]'", ci).group(1).split(",")
    assert "pip install -e '.[test]'" in install and {"test", "distributed", "dev"} <= set(extras)
    assert "python3 -m venv .venv" in install and "python3 -m venv .venv" in ci
    assert "(cd ts && npm ci)" in install and "cd ts && npm ci" in ci  # the TypeScript library
    assert test == "python -m pytest -q -n 2" and ci.rstrip().endswith(test)


def test_the_readmes_library_example_prints_what_it_shows(tmp_path):
    """The ```python block of the README's runtime section, run in an empty directory,
    prints the ```text block after it: one email for a call and its retry."""
    section = README.split("### Guard your tools: `toolcommit.runtime`\n", 1)[1]
    code, printed = re.search(r"```python\n(.*?)```\n\n```text\n(.*?)```", section, re.S).groups()
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed
    assert (tmp_path / "intents.db").exists()


def test_the_readmes_guarantees_are_the_ones_in_spec_protocol():
    table = README.split(
        "| guarantee | the properties that hold | what the user is promised |\n|---|---|---|\n", 1
    )[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines():
        name, props, meaning = (c.strip() for c in line.strip("|").split(" | "))
        rows[name.strip("*")] = (props.split(", "), meaning)
    spec = json.loads((ROOT / "spec" / "protocol.json").read_text("utf-8"))["guarantees"]
    assert rows == {g: (v["requires"], v["meaning"]) for g, v in spec.items() if g != "about"}
