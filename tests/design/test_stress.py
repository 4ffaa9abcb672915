"""Robust synthesis: `design` judges every candidate, before calling it minimal, on the
stress instance too, where every fault its profile allows meets a delay, a lease expiry
and an SDK retry at once; so no design is minimal on faults met one at a time only."""

import json
from pathlib import Path

import pytest

from toolcommit.checker.design.file import config_for
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance
from toolcommit.checker.verify.suite import design_names, suite_names
from toolcommit.model.design_file import design_of
from toolcommit.model.environment import configure, instance_in, names, profile
from toolcommit.model.instance import instance, stress_instances
from toolcommit.model.knobs import preset

DESIGNS = Path(__file__).resolve().parents[2] / "spec" / "designs"
COMBINED = ("delays", "lease_expiries", "duplicates")


def test_design_judges_the_suite_and_the_stress_instance_by_default():
    assert stress_instances() == ["stress"]
    assert design_names() == suite_names() + ["stress"]
    assert "stress" not in suite_names()  # a check's default suite stays the failure classes


@pytest.mark.parametrize("env", names())
def test_the_stress_instance_has_every_fault_of_the_profile_with_delays_leases_and_sdk_retries(env):
    inst = instance_in(instance("stress"), env)
    for f in COMBINED:
        assert inst.faults[f] == 1, f
    for f, n in profile(env).budgets.items():
        assert inst.faults[f] == n == 1, f
    assert inst.workers == 2


@pytest.mark.parametrize("env", names())
def test_the_stress_instance_stays_small_enough_to_judge_every_candidate(env):
    """Its whole graph, under naive (no departure prunes anything) and recommended, is a
    few thousand states: a candidate costs little more than a failure class."""
    for p in ("naive", "recommended"):
        r = check_instance(configure(preset(p), env), instance_in(instance("stress"), env), ["I1"])
        assert r.stats["complete"] and r.stats["states"] < 50_000, (env, p, r.stats["states"])


def test_the_shipped_stripe_design_turns_the_sdk_retries_off_because_of_the_stress_instance():
    doc = json.loads((DESIGNS / "stripe.json").read_text("utf-8"))
    assert "stress" in doc["instances"]
    (why,) = [d for d in doc["departures"] if d["knob"] == "sdk_retries"]
    assert why["option"] == "off" and why["without"]["instance"] == "stress"
    assert "redeliver(key=k0, fence=1)" in why["without"]["trace"]
    design, env = design_of(doc)
    on = config_for({**design, "sdk_retries": "on"}, env)
    v = check_instance(on, instance_in(instance("stress"), env), ["I1"]).verdicts[0]
    assert v.status is Status.VIOLATED and v.counterexample.length == why["without"]["steps"]
