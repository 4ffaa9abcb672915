"""Exit codes, one test per code, and random argument vectors: never a traceback, never 4.

0 holds / conforms, 1 violated, 2 bad usage or input, 3 unknown or inconclusive,
4 internal error (with a request to report it).
"""

import contextlib
import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from toolcommit.checker.cli import main
from toolcommit.model.errors import InternalError

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


def test_exit_0_when_every_property_holds():
    assert run(["check", "--instance", "ack_loss"])[0] == 0


def test_exit_1_when_a_property_is_violated():
    assert run(["check", "--preset", "naive", "--instance", "ack_loss", "--property", "I1"])[0] == 1


def test_exit_2_on_bad_usage_with_one_line():
    code, _, err = run(["check", "--preset", "nope"])
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_exit_3_when_a_limit_leaves_the_verdict_unknown():
    assert run(["check", "--instance", "default", "--max-states", "5", "--property", "I1"])[0] == 3


def test_exit_4_on_an_internal_error_asks_for_a_report(monkeypatch):
    from toolcommit.checker.engines.explicit import engine

    def broken(*a, **k):
        raise InternalError("engines disagree")

    monkeypatch.setattr(engine.Explicit, "run", broken)
    code, _, err = run(["check", "--instance", "ack_loss"])
    assert code == 4 and "please report" in err and "Traceback" not in err


def test_exit_130_on_a_ctrl_c_while_the_command_line_is_still_importing(monkeypatch, capsys):
    """The installed `toolcommit` enters through `toolcommit.checker.entry`, which imports
    the command line itself: a Ctrl-C that lands in that import is one line, not a
    traceback (one that lands later is `main`'s)."""
    import builtins

    from toolcommit.checker import entry

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '\ntoolcommit = "toolcommit.checker.entry:main"\n' in pyproject
    real = builtins.__import__

    def interrupted(name, *a, **k):
        if name == "toolcommit.checker.cli":
            raise KeyboardInterrupt
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    code = entry.main()
    monkeypatch.undo()
    assert (code, capsys.readouterr().err) == (130, "toolcommit: interrupted\n")


def test_an_unknown_flag_is_reported_by_its_subcommand_in_one_line():
    code, _, err = run(["check", "--frob"])
    assert code == 2 and err.startswith("toolcommit check: error: unrecognized arguments: --frob")
    assert len(err.strip().splitlines()) == 1


WORDS = [
    "check",
    "prove",
    "validate",
    "spec",
    "ask",
    "--preset",
    "naive",
    "seed",
    "recommended",
    "nope",
    "--instance",
    "ack_loss",
    "reorder",
    "cancel",
    "zzz",
    "--property",
    "I1",
    "P4",
    "DEADLOCK",
    "P9",
    "--set",
    "fencing=off",
    "epoch=x",
    "=",
    "--bounds",
    "workers=2",
    "crashes=1",
    "",
    "workers=-1",
    "max_fence=x",
    "--engine",
    "smt",
    "random",
    "explicit",
    "--depth",
    "3",
    "0",
    "-1",
    "--runs",
    "5",
    "--max-steps",
    "nan",
    "1e9",
    "--format",
    "json",
    "python",
    "mermaid",
    "text",
    "--key",
    "k1",
    "--explain",
    "all",
    "--method",
    "pdr",
    "--max-k",
    "2",
    "--list",
    "--lifecycle",
    "record",
    "-",
    "--seed",
    "7",
    str(LOGS / "ack_loss-bad.jsonl"),
    str(LOGS / "i1-ok.jsonl"),
    "/nonexistent.jsonl",
]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=0, max_size=7))
def test_random_argument_vectors_never_give_a_traceback_or_exit_4(words):
    argv = list(words)
    if argv and argv[0] in ("check", "ask"):
        argv += ["--max-states", "300", "--timeout", "5"]
    if argv and argv[0] == "prove":
        argv += ["--timeout", "5"]
    if argv and argv[0] == "ask" and "--list" not in argv:
        argv.insert(1, "--list")
    code, _, err = run(argv)
    assert code in (0, 1, 2, 3), (argv, code, err)
    assert "Traceback" not in err, argv
