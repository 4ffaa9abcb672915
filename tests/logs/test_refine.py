"""The per-knob rules of `validate --design` (`toolcommit.checker.logs.refine`), as values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate_design import claim_of
from toolcommit.checker.logs import claim, refine
from toolcommit.checker.logs.claim import Claim, Line
from toolcommit.runtime import design as D

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"
EXPECTED = json.loads((LOGS / "expected.json").read_text())["expected"]
STRIPE = Claim(
    "stripe",
    "stripe",
    "exactly-once",
    {
        "on_unknown": "replay_then_reconcile",
        "on_absent": "dead_letter",
        "fencing": "off",
        "epoch": "per_intent",
        "status_via": "list",
    },
    {"status_read": "yes"},
    3600.0,
    900.0,
)
EMAIL = Claim(
    "email",
    "email",
    "at-most-once",
    {"on_unknown": "reconcile", "on_absent": "rerecord", "fencing": "off", "epoch": "none"},
    {"status_read": "no"},
    None,
    None,
)


def t(seq, frm, to, reason=None, ts=None, fence=None) -> Line:
    return Line("transition", "w1", seq, "a.jsonl", seq, ts, frm, to, fence, reason)


def lost_ack(ts_replay=30.0, reason=claim.reason("replay")) -> list[Line]:
    return [
        t(1, "PROPOSED", "RECORDED", ts=0.0),
        t(2, "RECORDED", "DISPATCHED", ts=1.0, fence=1),
        t(3, "DISPATCHED", "UNKNOWN", "no answer: TimeoutError", ts=2.0, fence=1),
        t(4, "UNKNOWN", "RECONCILING", reason, ts=ts_replay, fence=2),
    ]


def test_a_replay_inside_the_window_is_the_stripe_designs_step():
    d, hits = refine.judge_key(STRIPE, "k", lost_ack())
    assert d is None and [h for h, _ in hits] == ["dispatch", "unknown", "replay"]


def test_a_replay_after_the_window_departs_resting_on_the_clock():
    d, _ = refine.judge_key(STRIPE, "k", lost_ack(ts_replay=1.0 + 3600 + 5))
    assert (d.knob, d.clock, d.certainty, d.line.line) == ("replay_window", True, "certain", 4)
    assert "writer's clock" in d.explanation("stripe")


def test_within_the_clock_slack_of_the_window_either_step_is_the_designs():
    for reason in (claim.reason("replay"), claim.reason("seal")):
        d, _ = refine.judge_key(STRIPE, "k", lost_ack(1.0 + 3600 + claim.CLOCK_SLACK / 2, reason))
        assert d is None, reason


def test_a_line_without_a_reason_is_possible_and_names_what_is_missing():
    d, _ = refine.judge_key(EMAIL, "k", lost_ack(reason=None))
    assert (d.knob, d.certainty) == ("on_unknown", "possible")
    assert "carries no reason" in d.expected


def test_lines_without_ts_cannot_measure_the_window():
    lines = [x._replace(ts=None) for x in lost_ack()]
    d, _ = refine.judge_key(STRIPE, "k", lines)
    assert (d.knob, d.certainty, d.clock) == ("replay_window", "possible", True)


def test_a_status_read_departs_where_the_provider_offers_none():
    lines = lost_ack(reason=claim.reason("seal")) + [
        t(5, "RECONCILING", "ACKED", claim.reason("present"), ts=40.0, fence=2)
    ]
    d, _ = refine.judge_key(EMAIL, "k", lines)
    assert d.knob == "status_read" and d.line.line == 5


def test_a_give_up_unread_departs_where_the_design_reads():
    lines = lost_ack() + [
        t(5, "RECONCILING", "DEAD_LETTER", claim.reason("no_read"), ts=2000.0, fence=2)
    ]
    d, _ = refine.judge_key(STRIPE, "k", lines)
    assert d.knob == "on_unknown" and "status read" in d.expected


def test_an_absent_read_after_the_delay_bound_is_covered_and_one_before_departs():
    late = lost_ack() + [t(5, "RECONCILING", "DEAD_LETTER", claim.reason("absent"), 30.0 + 901, 2)]
    d, hits = refine.judge_key(STRIPE, "k", late)
    assert d is None
    assert {"replay_unanswered", "read_absent", "read_after_delay_bound"} <= {h for h, _ in hits}
    early = lost_ack() + [t(5, "RECONCILING", "DEAD_LETTER", claim.reason("absent"), 40.0, 2)]
    d, _ = refine.judge_key(STRIPE, "k", early)
    assert (d.knob, d.clock) == ("delay_bound", True)


def test_fencing_on_wants_a_bumped_seal_and_fenced_effects():
    ideal = Claim(
        "ideal",
        "ideal",
        "",
        {"on_unknown": "reconcile", "fencing": "on"},
        {"status_read": "yes"},
        None,
        None,
    )
    d, _ = refine.judge_key(
        ideal,
        "k",
        lost_ack(reason=claim.reason("seal"))[:3]
        + [t(4, "UNKNOWN", "RECONCILING", claim.reason("seal"), fence=1)],
    )
    assert d.knob == "fencing"
    effect = Line("effect", "bank", 1, "a.jsonl", 9, kind="apply")
    d, _ = refine.judge_key(ideal, "k", [effect])
    assert d.knob == "fencing" and d.line.line == 9
    d, _ = refine.judge_key(
        STRIPE, "k", [Line("effect", "bank", 1, "a.jsonl", 9, fence=3, kind="apply")]
    )
    assert d.knob == "fencing" and "no fence" in d.expected


def test_a_new_epoch_needs_the_previous_attempt_given_up():
    def p(line):
        return Line("proposal", "w1", line, "a.jsonl", line, decision="accepted")

    accepted = [("i", 0, "k0", p(1)), ("i", 1, "k1", p(7))]
    deps, hits = refine.judge_epochs(STRIPE, accepted, {"k0": "DEAD_LETTER", "k1": "ACKED"})
    assert deps == [] and [h for h, _ in hits] == ["new_epoch"]
    deps, _ = refine.judge_epochs(STRIPE, accepted, {"k0": "ACKED", "k1": "ACKED"})
    assert [(d.knob, d.key) for d in deps] == [("epoch", "k1")]
    deps, _ = refine.judge_epochs(EMAIL, accepted, {"k0": "DEAD_LETTER", "k1": "ACKED"})
    assert [(d.knob, d.key) for d in deps] == [("epoch", "k1")]


def test_a_knob_without_a_rule_is_named_not_checked():
    unruled = Claim(
        "x",
        "stripe",
        "",
        {**STRIPE.knobs, "reask": "new_key", "on_unknown": "human_approval"},
        {},
        None,
        None,
    )
    k = claim.knob_classes(unruled)
    assert {"reask=new_key", "on_unknown=human_approval"} <= set(k["unchecked"])
    assert k["hidden"]["status_via"] and "on_unknown=human_approval" not in k["checked"]
    d, _ = refine.judge_key(unruled, "k", lost_ack(reason="anything at all"))
    assert d is None


def test_every_path_the_spec_names_is_one_the_rules_count_and_each_shipped_design_has_some():
    counted = {"replay_unanswered", "read_after_delay_bound", "new_epoch", "duplicate", "conflict"}
    pairs = [
        ("DISPATCHED", "UNKNOWN"),
        ("UNKNOWN", "RECONCILING"),
        ("RECONCILING", "ACKED"),
        ("RECONCILING", "DEAD_LETTER"),
        ("RECORDED", "DISPATCHED"),
        ("DISPATCHED", "ACKED"),
        ("UNKNOWN", "DEAD_LETTER"),
        ("RECORDED", "REJECTED_CONFLICT"),
    ]
    for frm, to in pairs:
        for r in [None, *claim.spec()["reasons"].values(), claim.reason("takeover_lease") + "x"]:
            counted |= set(claim.readings(t(1, frm, to, r)))
    names = [p["name"] for p in claim.spec()["paths"]]
    assert len(names) == len(set(names)) and set(names) <= counted
    for name in D.SHIPPED:
        shipped = claim_of(D.read(name))
        assert {"dispatch", "unknown"} <= {p["name"] for p in claim.paths(shipped)}


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if "design" in EXPECTED[n]))
def test_design_fixture_verdicts_match_the_manifest(name, capsys):
    exp = EXPECTED[name]["design"]
    code = main(["validate", "--format", "json", "--design", exp["name"], str(LOGS / name)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == exp["verdict"]
    assert code == {"CONFORMS": 0, "VIOLATES": 1, "INCONCLUSIVE": 3}[exp["verdict"]]
    assert [d["knob"] for d in doc["design"]["departures"]] == exp["departures"]


def test_the_design_check_is_rendered_in_every_format(tmp_path, capsys):
    bad = str(LOGS / "design_early_read-bad.jsonl")
    assert main(["validate", "--design", "stripe", "--format", "mermaid", bad]) == 1
    assert "DESIGN [certain]" in capsys.readouterr().out
    out = tmp_path / "r.html"
    assert main(["validate", "--design", "stripe", "--format", "html", "-o", str(out), bad]) == 1
    page = out.read_text()
    assert "Design stripe" in page and "NOT REACHED" in page and "delay_bound" in page


def test_a_trace_is_checked_through_its_derived_log(tmp_path, capsys):
    """--from with --design is refused in one line naming the way: --emit the derived log
    and validate it with --design; a framework's blind retry then departs on on_unknown."""
    trace = str(Path(__file__).parents[1] / "fixtures" / "traces" / "temporal-retry.json")
    assert main(["validate", "--from", "temporal", trace, "--design", "stripe"]) == 2
    assert "--emit the derived log" in capsys.readouterr().err
    derived = tmp_path / "derived.jsonl"
    main(["validate", "--from", "temporal", trace, "--emit", str(derived)])
    capsys.readouterr()
    assert main(["validate", "--format", "json", "--design", "stripe", str(derived)]) == 1
    (dep,) = json.loads(capsys.readouterr().out)["design"]["departures"]
    assert (dep["knob"], dep["found"]) == (
        "on_unknown",
        "UNKNOWN -> DISPATCHED [attempt under the same call id]",
    )


def test_past_the_cap_departures_are_counted_not_listed(tmp_path, capsys, monkeypatch):
    from toolcommit.checker.logs import refinement

    monkeypatch.setattr(refinement, "MAX_PER_PROPERTY", 2)
    log = tmp_path / "many.jsonl"  # five keys parked unread (UNKNOWN -> DEAD_LETTER)
    with open(log, "w") as out:
        for i in range(5):
            for ev in map(json.loads, (LOGS / "p2-ok.jsonl").read_text().splitlines()):
                ev.update(writer=f"w{i}", key=f"k{i}")
                if "scope" in ev:
                    ev["scope"] = f"user:{i}"
                out.write(json.dumps(ev) + "\n")
    assert main(["validate", "--format", "json", "--design", "ideal", str(log)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["design"]["totals"] == {"certain": 5, "possible": 0}
    assert [d["key"] for d in doc["design"]["departures"]] == ["k0", "k1"]
    assert doc["design"]["dropped"] == 3 and doc["dropped"] == 3
    assert main(["validate", "--format", "json", "--design", "ideal", "--key", "k4", str(log)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [d["key"] for d in doc["design"]["departures"]] == ["k4"]
