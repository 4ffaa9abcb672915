"""`ask` and `design` exit codes users can script: 0 an answer that holds was found, 1 none
holds, 2 bad usage, 3 undecided; one table in both commands' --help. And `ask --set`
changes every cell as `check --set` does, refusing a setting the grid varies."""

import json
from pathlib import Path

import pytest

from tests.incli import cli
from toolcommit.checker.cli import main
from toolcommit.checker.cli.exits import ASK_DESIGN_CODES

REPO = Path(__file__).resolve().parents[2]
ONE_COLUMN = {"provider_fences": ["yes"], "status_read": ["yes"], "key_expiries": [0]}


def question(tmp_path, option: str, stale=(0,)) -> str:
    """late-replay (which reads the lagging search) narrowed to one option in one world:
    fences, a status read, no expiry; stale reads as `stale` says (() : not varied)."""
    doc = json.loads((REPO / "spec" / "questions" / "late-replay.json").read_text("utf-8"))
    doc["rows"] = {"knob": "late_replay", "options": [option]}
    varied = {"stale_reads": list(stale)} if stale else {}
    doc["columns"] = {"assumptions": {**ONE_COLUMN, **varied}}
    path = tmp_path / f"{option}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", ["ask", "design"])
def test_the_exit_code_table_is_in_the_help_of_ask_and_design(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert " ".join(ASK_DESIGN_CODES.split()) in " ".join(out.split())


def test_ask_exits_0_when_a_cell_holds(tmp_path):
    code, out, _ = cli("ask", question(tmp_path, "reject"))
    assert code == 0 and "HOLDS" in out


def test_ask_exits_1_when_every_cell_is_violated(tmp_path):
    code, out, _ = cli("ask", question(tmp_path, "replay_same_key"))
    assert code == 1 and "VIOLATED" in out and "HOLDS  " not in out


def test_ask_exits_3_when_a_limit_left_a_cell_open(tmp_path):
    code, out, _ = cli("ask", question(tmp_path, "reject"), "--max-states", "3")
    assert code == 3 and "UNKNOWN" in out


def test_ask_exits_2_on_bad_usage():
    assert cli("ask", "no-such-question")[0] == 2


def test_ask_set_changes_every_cell_as_check_set_does(tmp_path):
    path = question(tmp_path, "reject", stale=())
    assert cli("ask", path)[0] == 0
    code, out, _ = cli("ask", path, "--set", "stale_reads=1")
    assert code == 1 and "VIOLATED I1" in out  # the lagging search reads absent: I1 breaks


def test_ask_set_refuses_a_setting_the_grid_varies(tmp_path):
    for setting in ("late_replay=compensate", "stale_reads=1"):
        code, _, err = cli("ask", question(tmp_path, "reject"), "--set", setting)
        assert code == 2 and "varies it across its grid" in err and err.count("\n") == 1


def test_ask_set_refuses_an_unknown_name_and_a_budget_that_is_no_number(tmp_path):
    path = question(tmp_path, "reject")
    assert "unknown knob 'colour'" in cli("ask", path, "--set", "colour=red")[2]
    assert "whole number" in cli("ask", path, "--set", "errors_after=some")[2]


@pytest.mark.slow  # two design searches: about a minute on two loaded cores
def test_design_exits_1_when_no_design_holds_and_3_when_a_limit_left_it_open():
    # email: no key, no status read, no undo; FULFIL on give_up_retry (the user's intent
    # done, not given up) is out of reach of every design
    code, out, _ = cli(
        "design",
        "--env",
        "email",
        "--instance",
        "give_up_retry",
        "--property",
        "FULFIL",
        "--explain",
        "none",
    )
    assert code == 1, out
    code, out, _ = cli(
        "design",
        "--env",
        "email",
        "--instance",
        "ack_loss",
        "--max-states",
        "5",
        "--explain",
        "none",
    )
    assert code == 3, out


def test_readme_and_docs_give_ask_and_design_the_codes_the_help_gives():
    readme = (REPO / "README.md").read_text("utf-8")
    rows = {line.split(" | ")[0].strip("| `"): line for line in readme.splitlines()}
    for command in ("ask", "design"):
        row = rows[command]
        assert "an answer that holds was found" in row and "none holds" in row, row
        assert "undecided" in row, row
    docs = (REPO / "docs" / "design-and-ask.md").read_text("utf-8")
    table = docs.split("### Exit codes of `ask` and `design`", 1)[1].split("\n\n", 3)[2]
    codes = [line.split(" | ")[0].strip("| ") for line in table.splitlines()[2:]]
    assert codes == ["0", "1", "2", "3"] and "an answer that holds was found" in table
    for word in ("an answer that holds was found", "none holds", "bad usage", "undecided"):
        assert word in ASK_DESIGN_CODES


def test_ask_takes_a_provider_file_and_names_the_provider_as_the_file_does(tmp_path):
    provider = REPO / "spec" / "providers" / "example-payments.json"
    path = question(tmp_path, "reject", stale=())
    doc = json.loads(Path(path).read_text("utf-8"))
    doc["columns"] = {"assumptions": {"provider_fences": ["no"], "key_expiries": [1]}}
    Path(path).write_text(json.dumps(doc), encoding="utf-8")  # the provider's world
    code, out, _ = cli("ask", path, "--env", str(provider))
    assert code in (0, 1) and "@example-payments" in out and "stripe" not in out
