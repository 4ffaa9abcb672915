"""The ok/bad log fixtures: expected verdicts, one pair per property and failure class, and
verdicts that survive reordering across writers and skewed clocks."""

from __future__ import annotations

import gzip
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate import validate
from toolcommit.checker.logs.conformance import check
from toolcommit.checker.logs.write import events_to_jsonl

from .logtools import interleave

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
EXPECTED = json.loads((LOGS / "expected.json").read_text())["expected"]
FAILURE_CLASSES = (
    "ack_loss",
    "crash_before_dispatch",
    "reorder",
    "provider_non_idempotent",
    "prompt_revision",
    "duplicate_call_id",
    "zombie",
    "cancel",
)
PROPERTY_PAIRS = {
    "I1": "i1",
    "P1": "i1",
    "P2": "p2",
    "P3": "cancel",
    "P4": "p4",
    "FENCE": "fence",
    "LEGAL": "legal",
    "RACE": "reorder",
    "CANON": "prompt_revision",
    "SEQ_GAP": "seq_gap",
    "UNSETTLED": "unsettled",
    "ORPHAN_EFFECT": "orphan",
}


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in (LOGS / name).read_text().splitlines()]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_verdict_matches_the_manifest(name):
    report = validate([str(LOGS / name)])
    exp = EXPECTED[name]
    assert report.verdict.value == exp["verdict"]
    assert (
        sorted({f.property for f in report.findings if f.certainty == "certain"}) == exp["certain"]
    )
    assert (
        sorted({f.property for f in report.findings if f.certainty == "possible"})
        == exp["possible"]
    )


@pytest.mark.parametrize("cls", FAILURE_CLASSES)
def test_every_failure_class_has_an_ok_log_that_conforms_and_a_bad_log_that_violates(cls):
    assert EXPECTED[f"{cls}-ok.jsonl"]["verdict"] == "CONFORMS"
    assert EXPECTED[f"{cls}-bad.jsonl"]["verdict"] == "VIOLATES"


@pytest.mark.parametrize("prop,pair", sorted(PROPERTY_PAIRS.items()))
def test_every_property_is_caught_by_its_bad_fixture_and_silent_on_its_ok_fixture(prop, pair):
    bad = EXPECTED[f"{pair}-bad.jsonl"]
    assert prop in bad["certain"] + bad["possible"]
    assert EXPECTED[f"{pair}-ok.jsonl"]["verdict"] == "CONFORMS"


def test_each_fixture_name_has_its_pair():
    names = {n.rsplit("-", 1)[0] for n in EXPECTED if n.endswith(".jsonl")}
    for n in names - {"canon_no_effects"}:
        assert f"{n}-ok.jsonl" in EXPECTED and f"{n}-bad.jsonl" in EXPECTED, n


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n.endswith("-bad.jsonl")))
def test_every_finding_names_property_key_writers_and_lines(name):
    for f in validate([str(LOGS / name)]).findings:
        assert f.property and f.key and f.certainty in ("certain", "possible")
        assert f.locations and all(p.endswith(name) and n >= 1 for p, n in f.locations)
        assert f.steps and f.explanation
        if f.property not in ("SEQ_GAP", "ORPHAN_EFFECT", "I1", "P1"):
            assert f.writers


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n.endswith(".jsonl")))
def test_cli_exit_code_is_the_verdict(name, capsys):
    code = main(["validate", str(LOGS / name)])
    assert code == {"CONFORMS": 0, "VIOLATES": 1, "INCONCLUSIVE": 3}[EXPECTED[name]["verdict"]]


def test_gzip_log_gives_the_same_verdict_as_plain():
    assert (
        gzip.decompress((LOGS / "gzip-ok.jsonl.gz").read_bytes())
        == (LOGS / "ack_loss-ok.jsonl").read_bytes()
    )
    assert validate([str(LOGS / "gzip-ok.jsonl.gz")]).verdict.value == "CONFORMS"


def _summary(report):
    return report.verdict, {(f.property, f.certainty) for f in report.findings}


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if n.endswith(".jsonl")))
def test_shuffling_lines_across_writers_keeps_the_verdict(name):
    evs = events(name)
    base = check(evs)
    rng = random.Random(name)
    for _ in range(25):
        assert check(interleave(evs, rng)).verdict == base.verdict


@pytest.mark.parametrize(
    "name",
    sorted(n for n in EXPECTED if n.endswith(".jsonl") and EXPECTED[n]["verdict"] != "VIOLATES"),
)
def test_conforming_and_inconclusive_logs_keep_every_finding_under_shuffling(name):
    """A violating log is left out: a race in it may follow either branch, so only its
    verdict is kept under shuffling (the test above)."""
    evs = events(name)
    base = check(evs)
    assert base.verdict.value == EXPECTED[name]["verdict"]
    rng = random.Random(name + "x")
    for _ in range(25):
        assert _summary(check(interleave(evs, rng))) == _summary(base)


@pytest.mark.parametrize("hours", [-7, 3, 26])
@pytest.mark.parametrize(
    "name",
    ["p4-ok.jsonl", "p4-bad.jsonl", "zombie-ok.jsonl", "zombie-bad.jsonl", "reorder-bad.jsonl"],
)
def test_skewing_one_writers_clock_by_hours_does_not_change_the_verdict(name, hours):
    evs = events(name)
    skewed = []
    for e in evs:
        e = dict(e)
        if e["writer"] == "w2" or (e["writer"] == "w1" and "w2" not in {x["writer"] for x in evs}):
            t = datetime.fromisoformat(e["ts"].replace("Z", "+00:00")) + timedelta(hours=hours)
            e["ts"] = t.isoformat()
        skewed.append(e)
    assert _summary(check(skewed)) == _summary(check(evs))


def test_one_writer_per_file_gives_the_same_verdict_as_one_merged_file(tmp_path):
    for name in ("p4-bad.jsonl", "zombie-ok.jsonl", "reorder-bad.jsonl", "fence-ok.jsonl"):
        evs = events(name)
        paths = []
        for w in sorted({e["writer"] for e in evs}, reverse=True):
            p = tmp_path / f"{name}.{w}.jsonl"
            p.write_text(events_to_jsonl([e for e in evs if e["writer"] == w]))
            paths.append(str(p))
        assert validate(paths).verdict == validate([str(LOGS / name)]).verdict, name
