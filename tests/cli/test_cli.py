"""The command line: exit codes, one-line errors naming what is valid, JSON as data."""

import io
import json
import subprocess
import sys

import pytest

from toolcommit.checker.cli import main


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "args,names",
    [
        (["check", "--preset", "nope"], "naive"),
        (["check", "--set", "fencing=maybe"], "valid options: off, on"),
        (["check", "--set", "nonsense=1"], "valid knobs, assumptions and timing parameters"),
        (["check", "--set", "fencing"], "knob=option"),
        (["check", "--instance", "nope"], "valid instances"),
        (["check", "--bounds", "workers=two"], "name=number"),
        (["check", "--bounds", "planets=2"], "valid bounds"),
        (["check", "--property", "P9"], "valid properties"),
    ],
)
def test_bad_usage_is_one_line_exit_2_naming_what_is_valid(args, names):
    r = run(*args)
    assert r.returncode == 2
    assert names in r.stderr
    assert "Traceback" not in r.stderr


def test_violation_exits_1_and_holding_exits_0():
    assert main(["check", "--preset", "naive", "--instance", "ack_loss", "--property", "I1"]) == 1
    assert main(["check", "--preset", "recommended", "--instance", "ack_loss"]) == 0


def test_a_state_limit_exits_3_with_unknown(capsys):
    code = main(["check", "--instance", "default", "--property", "I1", "--max-states", "300"])
    assert code == 3
    assert "UNKNOWN" in capsys.readouterr().out


def test_json_output_carries_itf_counterexamples(capsys):
    main(
        [
            "check",
            "--preset",
            "naive",
            "--instance",
            "cancel",
            "--property",
            "P3",
            "--format",
            "json",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    v = doc["instances"][0]["verdicts"][0]
    assert v["status"] == "VIOLATED" and v["steps"] == 5
    assert v["counterexample"]["#meta"]["format"] == "ITF"
    assert len(v["counterexample"]["states"]) == 6


def test_write_replaces_a_catalogue_atomically(tmp_path):
    assert (
        main(
            [
                "check",
                "--preset",
                "naive",
                "--instance",
                "cancel",
                "--write",
                "--out-dir",
                str(tmp_path),
            ]
        )
        == 1
    )
    folder = tmp_path / "naive"
    assert (folder / "cancel" / "P3.itf.json").exists() and (folder / "index.json").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["naive"]  # no temporary folder left behind


@pytest.mark.parametrize(
    "fmt,marker",
    [
        ("text", "record lifecycle"),
        ("mermaid", "stateDiagram-v2"),
        ("dot", "digraph"),
        ("json", '"properties"'),
    ],
)
def test_spec_prints_the_graph_in_every_format(capsys, fmt, marker):
    assert main(["spec", "--format", fmt]) == 0
    assert marker in capsys.readouterr().out


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_is_on_a_terminal_stderr_and_erased_at_the_end():
    from toolcommit.checker.cli.terminal import Progress

    err = _Terminal()
    p = Progress(err)
    p.t0 -= 10
    p("default", {"states": 5000, "depth": 7, "seconds": 2.0, "explored": 4000})
    assert "[default] 5,000 states, depth 7" in err.getvalue()
    p.last -= 10  # the next line is due
    p.design({"on_unknown": "reconcile"}, "ack_loss", 0.1)
    assert "[design] 1 designs judged (1 instance checks, last: ack_loss)" in err.getvalue()
    p.close()
    assert err.getvalue().endswith("\r\x1b[K")  # the report starts on a clean line


def test_progress_writes_nothing_when_stderr_is_piped_or_the_run_is_short():
    from toolcommit.checker.cli.terminal import Progress

    piped, quick = io.StringIO(), _Terminal()
    slow = Progress(piped)
    slow.t0 -= 10
    for p in (slow, Progress(quick)):
        p("default", {"states": 5000, "depth": 7, "seconds": 2.0})
        p.design({"on_unknown": "reconcile"}, "ack_loss", 0.1)
        p.close()
    assert piped.getvalue() == "" and quick.getvalue() == ""


@pytest.mark.parametrize("engine", ["smt", "random"])
def test_every_engine_finds_the_ack_loss_duplicate_from_the_cli(capsys, engine):
    assert (
        main(
            [
                "check",
                "--preset",
                "naive",
                "--engine",
                engine,
                "--instance",
                "ack_loss",
                "--property",
                "I1",
                "--explain",
                "none",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert f"engine: {engine}" in out and "ack_loss I1" in out


def test_bounded_engines_refuse_graph_properties_with_a_usage_error():
    r = run("check", "--engine", "smt", "--property", "PROGRESS", "--instance", "cancel")
    assert r.returncode == 2 and "invariants only" in r.stderr


def test_random_engine_states_its_denominator(capsys):
    assert (
        main(["check", "--engine", "random", "--runs", "50", "--seed", "3", "--instance", "zombie"])
        == 0
    )
    out = capsys.readouterr().out
    assert "zombie: 50 runs" in out and "expire_lease=" in out
    assert "not exhaustive" in out


def test_python_format_prints_tests_that_replay_and_pass(capsys):
    """Like Hypothesis: a counterexample prints as a test you can paste, and it passes."""
    assert (
        main(
            [
                "check",
                "--preset",
                "naive",
                "--instance",
                "ack_loss",
                "--instance",
                "crash_before_dispatch",
                "--instance",
                "cancel",
                "--format",
                "python",
            ]
        )
        == 1
    )
    source = capsys.readouterr().out
    namespace: dict = {}
    exec(compile(source, "<printed counterexamples>", "exec"), namespace)  # our own output
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert len(tests) >= 10
    for t in tests:
        t()


@pytest.mark.parametrize(
    "args",
    [
        [
            "--preset",
            "naive",
            "--bounds",
            "workers=2,ack_losses=2",
            "--instance",
            "reorder",
            "--instance",
            "ack_loss",
        ],
        ["--preset", "seed", "--bounds", "crashes=1", "--instance", "duplicate_call_id"],
    ],
)
def test_python_format_carries_the_bounds_so_printed_tests_pass(args, capsys):
    """Issue 9 item 3: the printed replay dropped --bounds, so its tests failed."""
    assert main(["check", *args, "--format", "python"]) == 1
    namespace: dict = {}
    exec(compile(capsys.readouterr().out, "<printed counterexamples>", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert tests
    for t in tests:
        t()


def test_check_first_stops_once_every_asked_property_is_violated_and_says_so():
    r = run(
        "check",
        "--preset",
        "naive",
        "--instance",
        "default",
        "--property",
        "I1",
        "--first",
        "--explain",
        "none",
    )
    assert r.returncode == 1
    row = next(line for line in r.stdout.splitlines() if line.startswith("default "))
    assert row.split()[1:] == ["1330+", "8", "x8"]  # the full search stores 1,681,342
    assert "stopped early (--first): every property asked for is violated" in r.stdout
    assert "  default: 1330 states to depth 8" in r.stdout and "coverage:" not in r.stdout


def test_version_prints_the_installed_version():
    import re
    import subprocess
    import sys
    from importlib.metadata import version
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == f"toolcommit {version('toolcommit')}"
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert re.search(rf'^version = "{re.escape(version("toolcommit"))}"$', pyproject, re.M)
