"""`toolcommit design`: minimal designs with the reason for every departure, the weakest
environment promise when none holds, and sound pruning."""
import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.design.synthesis import (SUPERSETS, Environment, Oracle, departures,
                                                 preset_design, simulates, synthesize)
from toolcommit.checker.engines.trace import breaks, replay
from toolcommit.checker.engines.verdict import Status
from toolcommit.model.environment import instance_in
from toolcommit.model.instance import instance
from toolcommit.model.knobs import from_label
from toolcommit.model.semantics import build

SMALL = ["ack_loss", "cancel", "paraphrase", "transport_retry", "give_up_retry"]


@pytest.fixture(scope="module")
def ideal():
    return synthesize("ideal", SMALL)


def test_a_minimal_design_holds_and_every_departure_is_needed(ideal):
    assert ideal.minimal and ideal.complete
    naive = preset_design("naive")
    for m in ideal.minimal:
        assert set(m.needed) == set(m.departures)
        for k, f in m.needed.items():
            assert f is not None and f.status is Status.VIOLATED, k
            cx = f.counterexample
            config = from_label(cx.config)
            assert config.knobs[k] == naive[k]
            system = build(config, instance_in(instance(f.instance), config.env))
            assert replay(system, cx) is None and breaks(system, cx)


def test_minimal_designs_are_listed_fewest_departures_first(ideal):
    sizes = [len(m.departures) for m in ideal.minimal]
    assert sizes == sorted(sizes)


def test_no_design_survives_a_non_idempotent_email_transport_and_keys_are_the_promise():
    s = synthesize("email", ["transport_retry", "ack_loss"])
    assert not s.minimal and s.recommended is not None
    assert s.recommended.property == "I1" and s.recommended.instance == "transport_retry"
    promises = [dict(st.promises) for st in s.strengthening]
    assert {"provider_idempotent": "yes"} in promises
    st = next(st for st in s.strengthening if dict(st.promises) == {"provider_idempotent": "yes"})
    assert st.without is not None and st.without.status is Status.VIOLATED


def test_a_failover_that_loses_the_accept_has_no_design_only_a_durable_log():
    s = synthesize("async-log", ["ack_loss"])
    assert not s.minimal
    assert [dict(st.promises) for st in s.strengthening] == [{"failovers": 0}]


def test_an_instance_the_profile_contradicts_is_not_judged():
    s = synthesize("stripe", ["provider_non_idempotent", "cancel"])
    assert [name for name, _ in s.skipped] == ["provider_non_idempotent"]
    assert s.instances == ["cancel"]


def test_the_naive_options_of_the_monotone_knobs_simulate_the_others():
    rec = preset_design("recommended")
    for knob, table in SUPERSETS.items():
        for weaker, stronger in table.items():
            for option in stronger:
                assert simulates({**rec, knob: weaker}, {**rec, knob: option})
                assert not simulates({**rec, knob: option}, {**rec, knob: weaker}) or weaker == option


@pytest.mark.parametrize("knob", sorted(SUPERSETS))
def test_a_design_pruned_by_monotonicity_really_fails_the_same_property(knob):
    """Pruning is sound here: break I1 with a stronger option, then check the weaker one."""
    insts = [instance("paraphrase"), instance("prompt_revision")]
    oracle = Oracle(Environment("ideal"), insts, ["I1"])
    base = {**preset_design("recommended"), "canonicalizer": "literal"}   # breaks I1
    strong = {**base, knob: "atomic" if knob == "insert" else
              "log_cas" if knob == "dispatch_guard" else "reject"}
    first = oracle.check(strong)
    assert first is not None and first.property == "I1"
    for weaker, stronger in SUPERSETS[knob].items():
        d = {**strong, knob: weaker}
        pruned_before = oracle.counts["pruned"]
        assert oracle.check(d) is not None
        assert oracle.counts["pruned"] == pruned_before + 1
        fresh = Oracle(Environment("ideal"), insts, ["I1"]).check(d)
        assert fresh is not None and fresh.property == "I1", (knob, weaker)


def test_a_time_limit_stops_the_search_and_says_so():
    s = synthesize("ideal", SMALL, seconds=0.01)
    assert not s.complete and "time limit" in s.stop_reason


def test_design_cli_prints_minimal_designs_and_why_each_departure(capsys):
    code = main(["design", "--env", "ideal", "--instance", "cancel", "--instance", "ack_loss",
                 "--explain", "none"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Minimal designs" in out and "back to " in out


def test_design_cli_rejects_an_unknown_environment(capsys):
    assert main(["design", "--env", "paypal"]) == 2
    assert "unknown environment 'paypal'" in capsys.readouterr().err


def test_departures_count_the_knobs_that_differ_from_naive():
    assert departures(preset_design("naive")) == []
    assert len(departures(preset_design("recommended"))) == 14      # every knob, intent_id included


def test_the_search_judges_the_sealed_saga_and_the_human_gate_as_neighbours_of_recommended():
    from toolcommit.checker.design.synthesis import neighbours
    options = {d["on_unknown"] for d in neighbours(preset_design("recommended"))}
    assert {"sealed_compensate", "human_approval"} <= options


def test_design_never_proposes_an_option_the_model_flatters_and_says_so():
    """lease=none is safe in the model only because it detects every crash at once."""
    from toolcommit.checker.design.synthesis import neighbours, unsearched
    from toolcommit.model.knobs import preset
    rec = dict(preset("recommended").knobs)
    assert all(d["lease"] == rec["lease"] for d in neighbours(rec))
    assert [o for o, _ in unsearched()] == ["lease=none"]
