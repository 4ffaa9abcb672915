"""`check --jobs N`: the search on N threads prints what --jobs 1 prints, byte for byte (the
same counts, depths, verdicts and shortest counterexamples), and a bad N is one line."""

import json

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.engines.explicit import native

needs_cc = pytest.mark.skipif(native.compiler() is None, reason="no C compiler on this machine")


def output(capsys, *args) -> tuple[int, object]:
    """Exit code and output (JSON as data, the search's seconds left out)."""
    code = main(["check", *args])
    out = capsys.readouterr().out
    return code, (_untimed(json.loads(out)) if "json" in args else out)


def _untimed(v):
    if isinstance(v, dict):
        return {k: _untimed(x) for k, x in v.items() if k != "seconds"}
    return [_untimed(x) for x in v] if isinstance(v, list) else v


@needs_cc
@pytest.mark.parametrize(
    "args",
    [
        ["--preset", "naive", "--instance", "zombie", "--instance", "two_intents"],
        ["--preset", "recommended", "--instance", "default", "--format", "json"],
        ["--preset", "seed", "--instance", "cancel", "--first", "--property", "P3"],
        ["--preset", "naive", "--instance", "default", "--property", "I1", "--max-states", "2000"],
    ],
)
def test_two_threads_print_what_one_prints(capsys, monkeypatch, args):
    monkeypatch.setenv("TOOLCOMMIT_ENGINE", "native")
    one = output(capsys, *args, "--jobs", "1")
    assert output(capsys, *args, "--jobs", "2") == one
    assert output(capsys, *args, "--jobs", "3") == one


@pytest.mark.parametrize(
    "args,message",
    [
        (["--jobs", "0"], "--jobs 0: use at least 1"),
        (["--jobs", "2", "--engine", "smt"], "--jobs is for --engine explicit"),
    ],
)
def test_a_bad_jobs_is_one_line_exit_2(capsys, args, message):
    assert main(["check", "--instance", "ack_loss", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
