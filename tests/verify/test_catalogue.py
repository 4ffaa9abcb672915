"""The stored counterexample catalogue is exactly what the tool computes, and replays."""

import json
from pathlib import Path

import pytest

from toolcommit.checker.engines.trace import breaks, replay
from toolcommit.checker.render.catalogue import files_for
from toolcommit.checker.render.counterexample import parse_itf
from toolcommit.checker.verify.hyper import personality_instance
from toolcommit.checker.verify.manifest import compute, stored
from toolcommit.model.instance import instance
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.semantics import build

ROOT = Path(__file__).resolve().parents[2] / "counterexamples"


@pytest.mark.parametrize("p", PRESETS)
def test_stored_catalogue_matches_regeneration_byte_for_byte(suites, p):
    expected = files_for(suites[p])
    folder = ROOT / p
    actual = {
        str(f.relative_to(folder)): f.read_text("utf-8") for f in folder.rglob("*") if f.is_file()
    }
    assert sorted(actual) == sorted(expected), "run: toolcommit check --preset %s --write" % p
    for rel, text in expected.items():
        assert actual[rel] == text, f"{p}/{rel} differs; run: toolcommit check --preset {p} --write"


def test_manifest_matches_the_computed_counts_and_verdicts(suites):
    assert compute(suites, profiles=False)["presets"] == stored()["presets"], (
        "run: python -m toolcommit.checker.verify.manifest --write"
    )


@pytest.mark.slow
def test_manifest_of_every_profile_matches_the_computed_counts_and_verdicts():
    from toolcommit.checker.verify.manifest import profile_entries

    assert profile_entries() == stored()["profiles"], (
        "run: python -m toolcommit.checker.verify.manifest --write"
    )


def _stored_traces():
    for path in sorted(ROOT.glob("*/*/*.itf.json")):
        if path.parts[-3] in PRESETS:
            yield pytest.param(path, id=str(path.relative_to(ROOT)))


@pytest.mark.parametrize("path", list(_stored_traces()))
def test_every_stored_counterexample_replays_through_the_model(path):
    p, inst = path.parts[-3], path.parts[-2]
    target = (
        personality_instance(json.loads(path.read_text())["#meta"]["instance"].split("/")[1])
        if inst == "personalities"
        else instance(inst)
    )
    system = build(preset(p), target, wipe=path.name.startswith("P4."))
    cx = parse_itf(json.loads(path.read_text()), system, str(path))
    assert replay(system, cx) is None
    assert breaks(system, cx)


def test_recommended_stores_no_counterexample():
    assert not list((ROOT / "recommended").rglob("*.itf.json"))
