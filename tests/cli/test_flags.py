"""One flag per meaning (issue 31): each shared flag means one thing in every subcommand,
each old spelling still works for one release and says so in one line, an old and a new
spelling that disagree exit 2; the progress line fits its terminal and is erased however a
command ends; torture's rerun line pastes whole into a shell."""

import io
import json
import shlex
import shutil
from pathlib import Path

import pytest

from toolcommit.checker.cli import main, parser, terminal
from toolcommit.checker.cli.terminal import Progress
from toolcommit.checker.render.fit import fit
from toolcommit.model.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
NAIVE = [
    "check",
    "--preset",
    "naive",
    "--instance",
    "ack_loss",
    "--property",
    "I1",
    "--explain",
    "none",
]


def _notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("toolcommit: note: ")]


def _options(command: str) -> dict:
    sub = next(a for a in parser((command,))._actions if a.dest == "command")
    return {o: a for a in sub.choices[command]._actions for o in a.option_strings}


# --- one meaning per flag, in every subcommand's help --------------------------------------


@pytest.mark.parametrize("command", ["check", "ask", "prove", "design"])
def test_timeout_is_the_whole_commands_wall_clock_limit_everywhere(command):
    assert "the whole command's wall-clock limit" in _options(command)["--timeout"].help


@pytest.mark.parametrize("command", ["check", "ask", "validate", "export", "design"])
def test_every_command_with_an_output_file_takes_it_as_o_and_output(command):
    opts = _options(command)
    assert opts["-o"] is opts["--output"] and opts["-o"].metavar == "FILE"


@pytest.mark.parametrize("command", ["check", "ask"])
def test_write_is_a_switch_and_out_dir_its_folder(command):
    opts = _options(command)
    assert opts["--write"].nargs == 0 and "repository's place" in opts["--write"].help
    assert opts["--out-dir"].metavar == "DIR" and opts["--out-dir"].default == "counterexamples"


@pytest.mark.parametrize("command", ["check", "design"])
def test_explain_takes_first_all_or_none_everywhere(command):
    assert list(_options(command)["--explain"].choices) == ["first", "all", "none"]


@pytest.mark.parametrize("command", ["check", "validate", "torture"])
def test_jobs_is_n_parallel_workers_everywhere(command):
    jobs = _options(command)["--jobs"]
    assert jobs.metavar == "N" and jobs.help.startswith("parallel workers; here a worker is")


def test_torture_env_takes_every_profile_of_the_environments_file():
    doc = json.loads((ROOT / "spec" / "environments.json").read_text("utf-8"))
    env = _options("torture")["--env"]  # a name, or a provider file (read by its type)
    names = [*doc["profiles"], "fenced", "keyed", "fences-only", "bare"]  # --profile's too
    assert len(doc["profiles"]) == 5 and [env.type(n) for n in names] == names
    assert all(n in env.help for n in names)


# --- old spellings: a note each, and a clash is exit 2 -------------------------------------


def test_check_out_still_stores_under_the_folder_and_says_out_dir(tmp_path, capsys):
    assert main([*NAIVE, "--write", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert _notes(err) == [
        "toolcommit: note: --out is now spelled --out-dir; the old spelling goes in a later release"
    ]
    assert (tmp_path / "naive" / "ack_loss" / "I1.itf.json").is_file()


def test_ask_out_still_stores_under_the_folder_and_says_out_dir(tmp_path, capsys):
    assert main(["ask", "tradeoffs", "--write", "--out", str(tmp_path)]) == 0
    assert len(_notes(capsys.readouterr().err)) == 1
    assert list((tmp_path / "questions").iterdir())


def test_design_write_file_still_stores_the_design_and_says_output(tmp_path, capsys):
    target = tmp_path / "d.json"
    assert (
        main(
            [
                "design",
                "--env",
                "ideal",
                "--instance",
                "ack_loss",
                "--explain",
                "none",
                "--write",
                str(target),
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert _notes(err) == [
        "toolcommit: note: --write is now spelled --output; the old "
        "spelling goes in a later release"
    ]
    assert json.loads(target.read_text("utf-8"))["knobs"]


def test_torture_profile_still_chooses_the_provider_and_says_env(capsys):
    assert main(["torture", "--profile", "fenced", "--runs", "1", "-q"]) == 0
    out, err = capsys.readouterr()
    assert "profile fenced" in out and "--profile is now spelled --env" in err


def test_an_old_and_a_new_spelling_that_disagree_exit_2_in_one_line(tmp_path, capsys):
    assert (
        main([*NAIVE, "--write", "--out", str(tmp_path / "a"), "--out-dir", str(tmp_path / "b")])
        == 2
    )
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--out-dir" in err and "disagree" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_an_old_and_a_new_spelling_that_agree_are_one_choice(tmp_path, capsys):
    assert main([*NAIVE, "--write", "--out", str(tmp_path), "--out-dir", str(tmp_path)]) == 1
    assert len(_notes(capsys.readouterr().err)) == 1


def test_an_old_spelling_is_not_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    assert "--out-dir DIR" in out and "--out " not in out and "--out," not in out


# --- the new meanings ----------------------------------------------------------------------


def test_check_output_writes_the_report_stdout_would_show(tmp_path, capsys):
    assert main(NAIVE) == 1
    shown = capsys.readouterr().out
    target = tmp_path / "report.txt"
    assert main([*NAIVE, "-o", str(target)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and f"wrote {target}" in err
    assert target.read_text("utf-8") == shown


def test_ask_output_writes_the_answer_stdout_would_show(tmp_path, capsys):
    assert main(["ask", "tradeoffs", "--format", "json"]) == 0
    shown = capsys.readouterr().out
    target = tmp_path / "answer.json"
    assert main(["ask", "tradeoffs", "--format", "json", "--output", str(target)]) == 0
    assert capsys.readouterr().out == ""
    assert json.loads(target.read_text("utf-8"))["question"] == json.loads(shown)["question"]


def test_check_timeout_bounds_the_whole_suite_not_each_instance(capsys):
    """Used up before the second search: that one is cut at once too (the random engine
    checks its clock before its first run), UNKNOWN, exit 3."""
    argv = [
        "check",
        "--engine",
        "random",
        "--preset",
        "naive",
        "--instance",
        "ack_loss",
        "--instance",
        "cancel",
        "--property",
        "I1",
        "--explain",
        "none",
    ]
    assert main([*argv, "--timeout", "0.000001"]) == 3
    out = capsys.readouterr().out
    assert "HOLDS" not in out and "VIOLATED" not in out
    assert "ack_loss" in out and "cancel" in out and out.count("time limit 1e-06s reached") == 2


def test_ask_timeout_bounds_the_whole_answer(capsys):
    assert main(["ask", "tradeoffs", "--timeout", "0.000001"]) == 3
    assert "time limit" in capsys.readouterr().out


def test_design_explain_first_prints_the_steps_of_one_counterexample(capsys):
    lines = {}
    for explain in ("none", "first", "all"):
        assert (
            main(["design", "--env", "ideal", "--instance", "ack_loss", "--explain", explain]) == 0
        )
        lines[explain] = capsys.readouterr().out.splitlines()
    steps = {
        k: sum(" ; " in line or line.rstrip().endswith(";") for line in v) for k, v in lines.items()
    }
    assert steps["none"] == 0 < steps["first"] < steps["all"]
    assert len(lines["none"]) < len(lines["first"]) < len(lines["all"])


def test_torture_runs_on_the_ideal_profile(capsys):
    assert main(["torture", "--env", "ideal", "--runs", "2", "-q"]) == 0
    assert "profile ideal" in capsys.readouterr().out


def test_torture_refuses_the_library_where_no_design_holds_in_one_line(capsys):
    assert main(["torture", "--env", "async-log", "--runs", "1", "-q"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--runtime park or chat" in err


# --- the progress line ---------------------------------------------------------------------


class Tty(io.StringIO):
    """A terminal's stream as far as `Progress` asks: no size of its own to report."""

    def isatty(self):
        return True


@pytest.fixture
def at_once(monkeypatch):
    monkeypatch.setattr(terminal, "AFTER", 0.0)
    monkeypatch.setattr(terminal, "EVERY", 0.0)


def _shown(stream: Tty) -> list[str]:
    return [piece for piece in stream.getvalue().split("\r\x1b[K") if piece]


def test_the_progress_line_is_cut_to_80_columns_when_no_terminal_says(at_once, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(
        shutil,
        "get_terminal_size",
        lambda fallback=(80, 24): __import__("os").terminal_size(fallback),
    )  # stdout: a pipe
    tty = Tty()
    Progress(tty).show("x" * 300)
    assert [len(p) for p in _shown(tty)] == [79]


def test_the_progress_line_is_cut_to_columns(at_once, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    tty = Tty()
    p = Progress(tty)
    p.show("y" * 300)
    p.close()
    assert [len(x) for x in _shown(tty)] == [39] and tty.getvalue().endswith("\r\x1b[K")


def test_a_command_that_fails_leaves_no_progress_line(at_once, monkeypatch, capsys):
    """However a command ends (here an error after its progress line was shown), the line
    is erased before the error is printed."""
    from toolcommit.checker.cli import check

    tty = Tty()

    def fails(args):
        Progress(tty).show("  [bfs] 1,000 states")
        raise UsageError("stopped on purpose")

    monkeypatch.setattr(check, "run", fails)
    assert main(["check"]) == 2
    assert tty.getvalue().endswith("\r\x1b[K")
    assert capsys.readouterr().err == "toolcommit: stopped on purpose\n"


# --- torture's rerun line ------------------------------------------------------------------


def test_the_rerun_line_is_shell_quoted_whole_and_replays_the_run(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "a folder; with 'quotes'"
    folder.mkdir()
    trace = folder / "I1.itf.json"
    shutil.copy(ROOT / "counterexamples" / "naive" / "ack_loss" / "I1.itf.json", trace)
    monkeypatch.setenv("COLUMNS", "40")
    assert main(["torture", "--runtime", "chat", "--itf", str(trace), "-q"]) == 1
    out = capsys.readouterr().out
    rerun = [line for line in out.splitlines() if line.startswith("  rerun: ")]
    assert len(rerun) == 1 and len(rerun[0]) > 40  # one line, however narrow
    argv = shlex.split(rerun[0][len("  rerun: ") :])
    assert argv[:2] == ["toolcommit", "torture"] and argv[argv.index("--itf") + 1] == str(trace)
    assert main(argv[1:] + ["-q"]) == 1
    assert "caught: VIOLATES" in capsys.readouterr().out


def test_fit_keeps_a_line_to_paste_whole():
    text = "  rerun: toolcommit torture --runtime chat --seed 2 --runs 1\n  log: " + "w " * 40
    out = fit(text, 30, whole=("  rerun: ",)).splitlines()
    assert out[0] == text.splitlines()[0] and all(len(x) <= 30 for x in out[1:])
