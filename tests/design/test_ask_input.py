"""Hostile question files: refused before any work, with one line that names the file, what
is wrong and what is allowed (exit 2), never a traceback."""

import json
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.design.schema import MAX_DEPTH, MAX_QUESTION_BYTES, load_question
from toolcommit.model.instance import MAX_BOUNDS

REPO = Path(__file__).resolve().parents[2]


def _good() -> dict:
    doc = json.loads((REPO / "spec" / "questions" / "late-replay.json").read_text("utf-8"))
    doc["rows"] = {
        "knob": "late_replay",
        "options": ["reject", "replay_same_key", "compensate"],
    }  # the knob form of rows
    return doc


def _refused(capsys, path, *words) -> str:
    """`ask path` exits 2 with one line naming the file and every word in `words`."""
    assert main(["ask", str(path)]) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert str(path) in err, err
    for w in words:
        assert w in err, (w, err)
    return err


def test_deeply_nested_question_is_refused_before_decoding(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    _refused(capsys, path, "nested", str(MAX_DEPTH))


def test_nesting_inside_strings_does_not_count(tmp_path):
    doc = _good()
    doc["notes"].append("[" * 1000 + "{" * 1000)
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert load_question(str(path)).notes[-1].startswith("[[[")


def test_oversized_question_is_refused_before_reading(tmp_path, capsys):
    path = tmp_path / "big.json"
    doc = _good()
    doc["notes"] = ["x" * (MAX_QUESTION_BYTES + 1)]
    path.write_text(json.dumps(doc), encoding="utf-8")
    _refused(capsys, path, "bytes", "at most")


def test_a_utf8_bom_is_accepted_as_validate_accepts_it(tmp_path):
    path, plain = tmp_path / "bom.json", tmp_path / "plain.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(_good()).encode("utf-8"))
    plain.write_bytes(json.dumps(_good()).encode("utf-8"))
    assert load_question(str(path)).rows == load_question(str(plain)).rows


@pytest.mark.parametrize(
    "field, value, allowed",
    [
        ("workers", 1000, str(MAX_BOUNDS["workers"])),
        ("max_fence", 10**9, str(MAX_BOUNDS["max_fence"])),
        ("faults.crashes", 10**6, str(MAX_BOUNDS["faults"])),
        ("faults.delays", 1e6, str(MAX_BOUNDS["faults"])),
        ("workers", 0, str(MAX_BOUNDS["workers"])),
    ],
)
def test_bounds_above_the_cap_are_refused_naming_it(tmp_path, capsys, field, value, allowed):
    doc = _good()
    if field.startswith("faults."):
        doc["instance"]["faults"][field[7:]] = value
    else:
        doc["instance"][field] = value
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    err = _refused(capsys, path, f"instance.{field}", allowed)
    assert "whole number" in err


def test_bounds_cap_is_the_clis_too(capsys):
    for argv in (
        ["check", "--instance", "ack_loss", "--bounds", "workers=9"],
        ["prove", "--bounds", "workers=1000"],
        ["check", "--bounds", "crashes=1000000"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "allowed" in err, err


def test_every_shipped_instance_and_question_is_within_the_caps():
    from toolcommit.model.instance import check_bound, instance, instance_names

    for name in instance_names():
        for bound, value in instance(name).bounds().items():
            check_bound(bound, value)
    shipped = sorted(p.stem for p in (REPO / "spec" / "questions").glob("*.json"))
    assert len(shipped) >= 5
    for name in shipped:
        load_question(name)


def test_a_proposal_listed_twice_is_refused(tmp_path, capsys):
    doc = _good()
    doc["instance"]["proposals"] = ["t1"] * 12
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    _refused(capsys, path, "instance.proposals[1]", "twice")


@pytest.mark.parametrize(
    "limit, value",
    [
        ("max_states", 1.5),
        ("bmc_depth", 2.5),
        ("timeout", float("nan")),
        ("bmc_timeout", float("inf")),
    ],
)
def test_limits_must_be_finite_and_whole_where_counted(tmp_path, capsys, limit, value):
    doc = _good()
    doc["limits"] = {limit: value}
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    _refused(capsys, path, f"limits.{limit}")


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["instance"].update(proposals=[["t1", "t2"]]), "instance.proposals[0]"),
        (lambda d: d.update(rows={"knob": ["late_replay"]}), "rows.knob"),
        (lambda d: d["rows"].update(options=[["reject"]]), "rows.options[0]"),
        (lambda d: d["instance"].update(name=["a", 1]), "instance.name"),
        (lambda d: d.update({"colour\nblue": 1}), "colour\\nblue"),
    ],
)
def test_found_by_fuzzing_odd_types_and_control_characters_are_one_line_errors(
    tmp_path, capsys, edit, field
):
    doc = _good()
    edit(doc)
    path = tmp_path / "q.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    _refused(capsys, path, field)
