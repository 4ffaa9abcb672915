"""Guards against vacuous truth: the happy path, every fault and every property's witness
are reachable, so a HOLDS never comes from nothing happening."""

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.verify.check import run_instance
from toolcommit.checker.verify.suite import suite_names
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build
from toolcommit.spec import instances as instances_spec
from toolcommit.spec import protocol


@pytest.fixture(scope="module")
def recommended_default():
    return run_instance(preset("recommended"), instance("default"), Limits())


def test_happy_path_is_reachable_on_the_default_instance(recommended_default):
    _, ex = recommended_default
    assert "happy" in ex.first_witness


@pytest.mark.parametrize("prop", ["I1", "I1net", "P1", "P2", "P3", "OWN", "FENCE", "LEGAL"])
def test_every_invariant_has_a_reachable_witness(recommended_default, prop):
    _, ex = recommended_default
    assert prop in ex.first_witness, f"{prop} could hold only because nothing happens"


def test_every_ideal_fault_fires_somewhere_in_the_recommended_suite(suites):
    """The faults the instances budget fire under `ideal`; the real systems' faults (zero
    in every instance, raised by a profile) fire in tests/model/test_environment.py. The one
    exception is a fault the design removes: recommended turns the SDK's automatic retries
    off, so `redeliver` is not an action of it; it fires under naive."""

    def fired(preset_name):
        out = {}
        for r in suites[preset_name].results:
            for action, n in r.coverage.items():
                out[action] = out.get(action, 0) + n
        return out

    budgeted = {f for i in instances_spec()["instances"].values() for f in i["faults"]}
    faults = {protocol().faults[f] for f in budgeted}
    silent = {a for a in faults if fired("recommended").get(a, 0) == 0}
    assert faults and silent == {"redeliver"}
    assert preset("recommended").knobs["sdk_retries"] == "off"
    assert fired("naive").get("redeliver", 0) > 0


def test_every_recommended_action_fires_somewhere(suites):
    declared = set()
    for name in suite_names():
        declared |= {
            a.name for a in build(preset("recommended"), instance(name)).actions if not a.cut
        }
    fired = {a for r in suites["recommended"].results for a, n in r.coverage.items() if n}
    assert declared - fired == set()


def reached_record_states(config) -> set:
    """Every record state some reachable state of the suite shows, under `config`."""
    reached = set()
    for name in suite_names():
        c, ex = run_instance(config, instance(name), Limits())
        recs = [v.name for v in c.system.variables if v.family == "rec"]
        for s in ex.states:
            values = c.unpack(s)
            reached |= {c.system.var(r).show(values[r]) for r in recs}
    return reached


def test_recommended_reaches_every_spec_record_state_but_compensated():
    reached = reached_record_states(preset("recommended"))
    assert set(protocol().record.states) - reached == {"COMPENSATED"}


def test_the_saga_variant_reaches_compensated():
    saga = preset("recommended").with_knobs({"on_unknown": "compensate"})
    assert "COMPENSATED" in reached_record_states(saga)
