"""The JSON schemas of the question files (spec/question.schema.json) and the design files
(spec/design.schema.json) describe what their readers read: every shipped file validates,
the schemas name the readers' fields, and a malformed file is refused by both."""

import json
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="needs jsonschema (the test extra)")

from toolcommit.checker.cli import main  # noqa: E402 (after the skip without jsonschema)
from toolcommit.checker.design import schema as reader  # noqa: E402
from toolcommit.model.design_file import claim_of, design_of  # noqa: E402

SPEC = Path(__file__).resolve().parents[2] / "spec"
QUESTIONS = sorted((SPEC / "questions").glob("*.json"))
DESIGNS = sorted((SPEC / "designs").glob("*.json"))


def validator(kind: str):
    schema = json.loads((SPEC / f"{kind}.schema.json").read_text("utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(kind: str, doc) -> list[str]:
    return [e.message for e in validator(kind).iter_errors(doc)]


@pytest.mark.parametrize("path", QUESTIONS, ids=[p.stem for p in QUESTIONS])
def test_every_shipped_question_validates_against_its_schema_and_its_reader(path):
    assert schema_errors("question", json.loads(path.read_text("utf-8"))) == []
    assert reader.load_question(str(path)).name == path.stem


@pytest.mark.parametrize("path", DESIGNS, ids=[p.stem for p in DESIGNS])
def test_every_shipped_design_validates_against_its_schema_and_its_reader(path):
    doc = json.loads(path.read_text("utf-8"))
    assert schema_errors("design", doc) == []
    design, env = design_of(doc)
    assert env == path.stem and claim_of(doc, env).properties == tuple(doc["properties"])


def test_the_question_schema_names_the_readers_fields():
    s = json.loads((SPEC / "question.schema.json").read_text("utf-8"))
    d = s["$defs"]
    assert tuple(s["properties"]) == reader.TOP_FIELDS
    column = set(d["variant"]["properties"])
    assert column == {f for f in reader.VARIANT_FIELDS if f not in ("cells", "show")}
    assert column | set(d["row"]["properties"]) == set(reader.VARIANT_FIELDS)
    assert tuple(d["instance"]["anyOf"][1]["properties"]) == reader.INSTANCE_FIELDS
    assert tuple(s["properties"]["limits"]["properties"]) == reader.LIMIT_FIELDS
    assert set(d["pattern"]["properties"]) == {"action", "params", "when"}


def test_the_design_schema_names_every_field_a_shipped_design_has():
    s = json.loads((SPEC / "design.schema.json").read_text("utf-8"))
    for path in DESIGNS:
        doc = json.loads(path.read_text("utf-8"))
        assert set(doc) <= set(s["properties"]), path.name
        assert set(doc["assumes"]) <= set(s["properties"]["assumes"]["properties"]), path.name
        for dep in doc["departures"]:
            assert set(dep) <= set(s["properties"]["departures"]["items"]["properties"])
            if dep["without"]:
                assert set(dep["without"]) <= set(s["$defs"]["failure"]["properties"])


def _question(**change) -> dict:
    doc = json.loads((SPEC / "questions" / "reask.json").read_text("utf-8"))
    return {k: v for k, v in {**doc, **change}.items() if v is not None}


BAD_QUESTIONS = {
    "no rows": _question(rows=None),
    "an unknown field": _question(answer="reject"),
    "a row without a name": _question(rows=[{"set": {"reask": "hold"}}]),
    "a claim neither HOLDS nor VIOLATED": _question(
        rows=[{"name": "hold", "set": {"reask": "hold"}, "expect": "MAYBE"}]
    ),
    "a fault budget of 9": _question(set={"stale_reads": 9}),
    "an inline instance without proposals": _question(instance={"workers": 2}),
    "a negative time limit": _question(limits={"timeout": -1}),
    "a scenario event with an unknown field": _question(scenario=[{"action": "crash", "at": 3}]),
    "columns of no assumption": _question(columns={"assumptions": {}}),
}


@pytest.mark.parametrize("doc", BAD_QUESTIONS.values(), ids=list(BAD_QUESTIONS))
def test_a_malformed_question_fails_the_schema_and_the_reader(doc, tmp_path):
    assert schema_errors("question", doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(reader.QuestionError, match="bad.json"):
        reader.load_question(str(path))


def _design(**change) -> dict:
    doc = json.loads((SPEC / "designs" / "stripe.json").read_text("utf-8"))
    return {k: v for k, v in {**doc, **change}.items() if v is not None}


BAD_DESIGNS = {
    "another kind": _design(kind="toolcommit question"),
    "version 2": _design(version=2),
    "no knobs": _design(knobs=None),
    "an option that is a number": _design(knobs={"fencing": 1}),
    "a window that is no duration": _design(timing={"replay_window": "an hour"}),
    "no properties": _design(properties=[]),
    "instances as a string": _design(instances="ack_loss"),
}


@pytest.mark.parametrize("doc", BAD_DESIGNS.values(), ids=list(BAD_DESIGNS))
def test_a_malformed_design_fails_the_schema_and_the_reader(doc, tmp_path, capsys):
    assert schema_errors("design", doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert main(["check", "--design", str(path), "--instance", "ack_loss"]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
