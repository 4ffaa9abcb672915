"""What the three presets do on the failure classes: claims about the protocol itself."""
import pytest

from toolcommit.checker.verify.check import check_instance
from toolcommit.checker.engines.base import Limits
from toolcommit.checker.verify.suite import resolve_instances, run_suite, suite_names
from toolcommit.checker.engines.verdict import Status
from toolcommit.model.instance import failure_classes, instance
from toolcommit.model.knobs import preset
from toolcommit.spec import protocol

CLASS_BREAKS = {  # failure class -> the property the naive preset breaks first
    "ack_loss": "I1", "crash_before_dispatch": "PROGRESS", "reorder": "I1",
    "provider_non_idempotent": "I1", "transport_retry": "I1", "prompt_revision": "I1",
    "duplicate_call_id": "I1", "zombie": "I1", "cancel": "P3", "paraphrase": "I1",
    "give_up_retry": "I1", "two_intents": "I1",
}


def verdict(suite, inst, prop):
    for r in suite.results:
        if r.instance.name == inst:
            return next(v for v in r.verdicts if v.property == prop)
    raise KeyError(inst)


def test_every_failure_class_is_covered_by_a_claim():
    assert set(CLASS_BREAKS) == set(failure_classes())


@pytest.mark.parametrize("cls", sorted(CLASS_BREAKS))
def test_naive_preset_breaks_each_failure_class(suites, cls):
    v = verdict(suites["naive"], cls, CLASS_BREAKS[cls])
    assert v.status is Status.VIOLATED
    assert v.counterexample.length >= 2


def test_recommended_holds_every_property_on_every_instance_exhaustively(suites):
    s = suites["recommended"]
    assert [r.instance.name for r in s.results] == suite_names()
    for v in s.verdicts():
        assert v.status is Status.HOLDS, v.line()
        assert v.scope == "exhaustively", v.line()


def test_recommended_default_instance_has_the_faults_the_issue_asks_for():
    inst = instance("default")
    assert inst.workers >= 2
    assert sum(1 for p in inst.proposals if p.form == "orig" and p.epoch == 1) >= 2
    assert any(p.form == "paraphrase" for p in inst.proposals)
    for fault in ("crashes", "ack_losses", "delays", "lease_expiries"):
        assert inst.faults[fault] >= 1, fault


SEED_FLAWS = [  # (instance, property): how the article's fixture falls short of its own design
    ("ack_loss", "P2"),              # reconcile writes ACKED straight from UNKNOWN
    ("ack_loss", "LEGAL"),           # ... an edge its own state machine does not have
    ("provider_non_idempotent", "I1"),  # absent -> back to RECORDED -> dispatched again
    ("reorder", "LEGAL"),            # check-then-insert: a second insert overwrites DISPATCHED
    ("crash_before_dispatch", "PROGRESS"),  # nothing reloads a RECORDED intent after a crash
    ("cancel", "P3"),                # dispatch never looks at the log: a cancel is ignored
    ("paraphrase", "I1"),            # literal json.dumps: 20 and 20.0 are two intents
    ("prompt_revision", "I1"),       # no canonicalizer version, no conflict detection
    ("two_intents", "FULFIL"),       # scope "user:42:checkout:7": a second refund is a duplicate
]


@pytest.mark.parametrize("inst,prop", SEED_FLAWS)
def test_seed_preset_shows_the_fixtures_flaws(suites, inst, prop):
    assert verdict(suites["seed"], inst, prop).status is Status.VIOLATED


def test_seed_and_naive_break_model_independence(suites):
    assert suites["seed"].p5.status is Status.VIOLATED
    assert suites["naive"].p5.status is Status.VIOLATED
    assert suites["recommended"].p5.status is Status.HOLDS


def _naive_knobs():
    for name, knob in protocol().knobs.items():
        if knob.presets["naive"] != knob.presets["recommended"]:
            yield name, knob.presets["naive"]


@pytest.mark.parametrize("knob,option", list(_naive_knobs()))
def test_turning_one_recommended_knob_back_to_naive_yields_a_counterexample(knob, option):
    names = [n for n in suite_names() if n != "default"]
    s = run_suite(preset("recommended").with_knobs({knob: option}), resolve_instances(names, {}))
    violated = [v for v in s.verdicts() if v.status is Status.VIOLATED]
    assert violated, f"{knob}={option} changes nothing"
    assert all(v.counterexample is not None for v in violated)


def test_a_state_limit_gives_unknown_not_holds():
    r = check_instance(preset("recommended"), instance("default"), ["I1", "PROGRESS"],
                       limits=Limits(max_states=500))
    assert {v.status for v in r.verdicts} == {Status.UNKNOWN}
    assert all("no violation up to depth" in v.reason for v in r.verdicts)
