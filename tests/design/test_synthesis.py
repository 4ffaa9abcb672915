"""`toolcommit design`: minimal designs with the reason for every departure, the weakest
environment promise when none holds, and sound pruning."""

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.design.synthesis import (
    SUPERSETS,
    Environment,
    Oracle,
    simulates,
    synthesize,
)
from toolcommit.checker.engines.trace import breaks, replay
from toolcommit.checker.engines.verdict import Status
from toolcommit.model.design import departures, preset_design
from toolcommit.model.environment import from_label, instance_in
from toolcommit.model.instance import instance
from toolcommit.model.semantics import build

SMALL = ["ack_loss", "cancel", "paraphrase", "transport_retry", "give_up_retry"]
# `design` on two small instances, the command line the CLI tests start from
DESIGN_TWO = ["design", "--env", "ideal", "--instance", "cancel", "--instance", "ack_loss"]


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


@pytest.fixture(scope="module")
def email():
    """The search for email (about 30 CPU-s): its tests run with -m slow. The default set
    re-judges the shipped email design and checks each departure is needed
    (test_design_file); docs/design-and-ask.md's email command is in the slow set too.
    transport_retry and give_up_retry show every claim below (ack_loss adds half again)."""
    return synthesize("email", ["transport_retry", "give_up_retry"])


@pytest.mark.slow
def test_email_gets_at_most_once_and_exactly_once_needs_what_no_email_provider_offers(email):
    """No key and no status read: a lost answer leaves the email in doubt, so exactly-once
    is out of reach; the design the search offers gives up visibly, at most once."""
    first, chosen = email.levels[0], email.chosen
    assert first.guarantee == "exactly-once" and first.status is Status.VIOLATED
    assert first.strengthening and not any(st.offered for st in first.strengthening)
    assert all(st.inherent for st in first.strengthening)
    assert chosen.guarantee == "at-most-once" and chosen.minimal
    for m in chosen.minimal:
        assert m.design["sdk_retries"] == "off"  # the SDK's retry is the duplicate


@pytest.mark.slow
def test_no_level_claims_exactly_once_for_email(email):
    assert all(lv.guarantee != "exactly-once" or not lv.minimal for lv in email.levels)


def test_a_failover_that_loses_the_accept_has_no_design_only_a_durable_log():
    s = synthesize("async-log", ["ack_loss"])
    first = s.levels[0]
    assert not first.minimal
    assert [dict(st.promises) for st in first.strengthening] == [{"failovers": 0}]
    assert first.strengthening[0].offered  # synchronous replication is a promise one can make


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
                assert (
                    not simulates({**rec, knob: option}, {**rec, knob: weaker}) or weaker == option
                )


@pytest.mark.parametrize("knob", sorted(SUPERSETS))
def test_a_design_pruned_by_monotonicity_really_fails_the_same_property(knob):
    """Pruning is sound here: break I1 with a stronger option, then check the weaker one."""
    insts = [instance("paraphrase"), instance("prompt_revision")]
    oracle = Oracle(Environment("ideal"), insts, ["I1"])
    base = {**preset_design("recommended"), "canonicalizer": "literal"}  # breaks I1
    strong = {
        **base,
        knob: {"insert": "atomic", "dispatch_guard": "log_cas", "replay_window": "1h"}.get(
            knob, "reject"
        ),
    }
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
    assert s.status is Status.UNKNOWN and not s.minimal


def test_a_design_stopped_by_a_limit_reports_nothing_unconfirmed(capsys):
    """Issue 19: --timeout 3 printed an 11-departure design check showed broken; --max-states
    50 printed "No design holds"; --timeout 0.001 printed both "holds" and "No design"."""
    for args in (["--timeout", "0.001"], ["--max-states", "5"]):
        code = main([*DESIGN_TWO, "--explain", "none", *args])
        out = capsys.readouterr().out
        assert code == 3, args
        assert "No design holds" not in out and "Minimal designs" not in out, args
        assert "UNKNOWN" in out.splitlines()[0], args
    assert main(["design", "--timeout", "-5"]) == 2
    assert "--timeout must be a number of seconds >= 0" in capsys.readouterr().err


def test_a_design_found_under_a_time_limit_holds_when_checked(capsys, tmp_path):
    """Whatever a limited search reports, it confirmed: a design it writes re-checks clean."""
    target = tmp_path / "d.json"
    code = main([*DESIGN_TWO, "--timeout", "20", "--explain", "none", "-o", str(target)])
    capsys.readouterr()
    if code == 0:
        assert (
            main(
                [
                    "check",
                    "--design",
                    str(target),
                    "--instance",
                    "cancel",
                    "--instance",
                    "ack_loss",
                    "--property",
                    "I1",
                    "--property",
                    "FULFIL",
                    "--property",
                    "P3",
                ]
            )
            == 0
        )
    else:
        assert code == 3 and not target.exists()


def test_design_cli_prints_minimal_designs_and_why_each_departure(capsys):
    code = main([*DESIGN_TWO, "--explain", "none"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Minimal designs" in out and "back to " in out


def test_design_cli_rejects_an_unknown_environment(capsys):
    assert main(["design", "--env", "no-such-api"]) == 2
    assert "unknown environment 'no-such-api'" in capsys.readouterr().err


def test_departures_count_the_knobs_that_differ_from_naive():
    assert departures(preset_design("naive")) == []
    # every knob, intent_id and the re-ask's hold included, the SDK retries, the list read,
    # the identity (schema, principal, told from the caller's side) and the replay window
    assert len(departures(preset_design("recommended"))) == 21


def test_the_search_judges_the_sealed_saga_and_the_human_gate_as_neighbours_of_recommended():
    from toolcommit.checker.design.synthesis import neighbours

    options = {d["on_unknown"] for d in neighbours(preset_design("recommended"))}
    assert {"sealed_compensate", "human_approval"} <= options


def test_design_never_proposes_an_option_the_model_flatters_and_says_so():
    """lease=none is safe in the model only because it detects every crash at once."""
    from toolcommit.checker.design.synthesis import neighbours, unsearched

    rec = preset_design("recommended")
    assert all(d["lease"] == rec["lease"] for d in neighbours(rec))
    assert [o for o, _ in unsearched()] == ["lease=none"]
