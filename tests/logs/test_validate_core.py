"""The conformance core as claims: each property, certainty, ordering without clocks,
bounded memory, the schema, the canonicalizer and the renderers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from toolcommit.checker.cli.validate import EXIT_CODES
from toolcommit.checker.logs import events as logevents
from toolcommit.checker.logs.conformance import Conformance, LogVerdict, check
from toolcommit.checker.logs.typed import from_dict
from toolcommit.checker.logs.write import events_to_jsonl
from toolcommit.checker.render.findings import meanings, render_json, render_mermaid, render_text
from toolcommit.model.canon import CanonError, canonical_intent, intent_digest
from toolcommit.spec import protocol

SPEC = Path(__file__).resolve().parents[2] / "spec"


class Log:
    """A tiny log writer for tests: per-writer seq numbers, no timestamps."""

    def __init__(self):
        self.events, self.seq = [], {}

    def _e(self, w, t, **kw):
        self.seq[w] = self.seq.get(w, 0) + 1
        self.events.append({"type": t, "writer": w, "seq": self.seq[w], **kw})
        return self

    def accept(self, key="k1", w="w1", args=None, call="t1", decision="accepted", **kw):
        return self._e(
            w,
            "proposal",
            call_id=call,
            tool="refund",
            scope="u42",
            key=key,
            args={"amount": 20} if args is None else args,
            decision=decision,
            **kw,
        )

    def tr(self, frm, to, key="k1", w="w1", **kw):
        return self._e(w, "transition", key=key, **{"from": frm, "to": to}, **kw)

    def path(self, *states, key="k1", w="w1", fence=None):
        for a, b in zip(states, states[1:]):
            self.tr(a, b, key=key, w=w, **({"fence": fence} if fence is not None else {}))
        return self

    def effect(self, key="k1", kind="apply", args=None, w="bank", **kw):
        extra = {"key": key} if key else {}
        return self._e(
            w,
            "effect",
            tool="refund",
            scope="u42",
            kind=kind,
            args={"amount": 20} if args is None else args,
            **extra,
            **kw,
        )

    def crash(self, w="w1"):
        return self._e(w, "crash")

    def report(self):
        r = check(self.events)
        assert same_report(r, check(self.events, pack=False))  # packing changes nothing
        return r


def same_report(a, b) -> bool:
    return (a.verdict, [f.to_json() for f in a.findings], a.stats) == (
        b.verdict,
        [f.to_json() for f in b.findings],
        b.stats,
    )


def props(report, certainty=None):
    return sorted(
        {f.property for f in report.findings if certainty is None or f.certainty == certainty}
    )


HAPPY = ("PROPOSED", "RECORDED", "DISPATCHED", "ACKED")


# ----- I1 / P1 --------------------------------------------------------------------------
def test_one_apply_per_intent_conforms():
    r = Log().accept().path(*HAPPY).effect().report()
    assert r.verdict is LogVerdict.CONFORMS and r.findings == ()


def test_two_applies_for_one_intent_violate_I1_and_P1():
    r = Log().accept().path(*HAPPY).effect().effect().report()
    assert r.verdict is LogVerdict.VIOLATES and props(r, "certain") == ["I1", "P1"]


def test_two_applies_under_two_keys_of_one_intent_violate_I1_not_P1():
    r = (
        Log()
        .accept()
        .path(*HAPPY)
        .effect()
        .accept(key="k2", args={"amount": 20.0}, call="t2")
        .path(*HAPPY, key="k2")
        .effect(key="k2", args={"amount": 20.0})
        .report()
    )
    assert props(r, "certain") == ["CANON", "I1"]


def test_one_effect_exported_twice_with_one_effect_id_is_one_effect():
    r = Log().accept().path(*HAPPY).effect(effect_id="e1").effect(effect_id="e1").report()
    assert r.verdict is LogVerdict.CONFORMS


def test_compensated_effects_still_count_for_I1():
    r = Log().accept().path(*HAPPY).effect().effect().effect(kind="compensate").report()
    assert "I1" in props(r, "certain")


def test_two_dispatches_without_effect_records_are_a_possible_I1_and_inconclusive():
    log = Log()
    for e in (1, 2):
        log.accept(key=f"k@{e}", epoch=e, call=f"t{e}")
        log.path("PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "DEAD_LETTER", key=f"k@{e}")
    r = log.report()
    assert r.verdict is LogVerdict.INCONCLUSIVE and props(r, "possible") == ["I1"]
    assert len(r.findings[0].locations) == 2


def test_two_acked_keys_of_one_intent_without_effect_records_violate_I1():
    r = (
        Log()
        .accept(key="a", epoch=1)
        .path(*HAPPY, key="a")
        .accept(key="b", epoch=2, call="t2")
        .path(*HAPPY, key="b")
        .report()
    )
    assert props(r, "certain") == ["I1"]


def test_an_effect_matched_by_idempotency_key_counts_for_its_key():
    r = (
        Log()
        .accept()
        .path(*HAPPY)
        .effect(key=None, idempotency_key="k1")
        .effect(key=None, idempotency_key="k1")
        .report()
    )
    assert props(r, "certain") == ["I1", "P1"]


# ----- CANON ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "paraphrase",
    [
        {"amount": 20.0},
        {" amount ": 20},
        {"amount": 20, "note": "café"},
    ],
)
def test_keys_the_implementation_kept_apart_but_one_canonical_intent_are_CANON(paraphrase):
    first = {"amount": 20, "note": "cafe\u0301"} if "note" in paraphrase else {"amount": 20}
    r = Log().accept(args=first).accept(key="k2", args=paraphrase, call="t2").report()
    assert [f.property for f in r.findings] == ["CANON"]
    f = r.findings[0]
    assert f.certainty == "certain" and [n for _, n in f.locations] == [1, 2]


def test_same_canonical_intent_in_another_epoch_is_not_CANON():
    r = Log().accept(key="k@1", epoch=1).accept(key="k@2", epoch=2, call="t2").report()
    assert "CANON" not in props(r)


def test_a_revised_prompt_with_other_arguments_is_another_intent():
    r = Log().accept().accept(key="k2", args={"amount": "20.00", "currency": "USD"}).report()
    assert "CANON" not in props(r)


# ----- LEGAL, RACE, P2, P3, P4, FENCE --------------------------------------------------------
def test_a_transition_that_is_not_a_spec_edge_violates_LEGAL():
    r = Log().accept().path("PROPOSED", "RECORDED", "ACKED").report()
    assert props(r, "certain") == ["LEGAL"]


def test_blind_retry_after_unknown_violates_P2():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "DISPATCHED", "ACKED")
        .report()
    )
    assert "P2" in props(r, "certain")


@pytest.mark.parametrize("after", ["RECONCILING", "COMPENSATED", "DEAD_LETTER"])
def test_every_allowed_step_after_unknown_keeps_P2(after):
    log = Log().accept().path("PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", after)
    if after == "RECONCILING":
        log.tr("RECONCILING", "ACKED")
    assert log.report().verdict is LogVerdict.CONFORMS


def test_two_writers_leaving_one_state_is_a_race_naming_both_writers_and_lines():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .tr("RECORDED", "DISPATCHED", w="w1")
        .tr("RECORDED", "DISPATCHED", w="w2")
        .tr("DISPATCHED", "ACKED", w="w1")
        .report()
    )
    race = [f for f in r.findings if f.property == "RACE"]
    assert race and race[0].writers == ("w1", "w2")
    assert {3, 4} <= {n for _, n in race[0].locations}


def test_a_chain_spread_over_writers_and_received_backwards_conforms():
    log = (
        Log()
        .accept()
        .tr("PROPOSED", "RECORDED", w="w1")
        .tr("RECORDED", "DISPATCHED", w="w1", fence=1)
        .tr("DISPATCHED", "UNKNOWN", w="w2")
        .tr("UNKNOWN", "RECONCILING", w="w3", fence=2)
        .tr("RECONCILING", "ACKED", w="w3", fence=2)
    )
    assert check(list(reversed(log.events))).verdict is LogVerdict.CONFORMS


def test_an_effect_after_a_cancel_before_dispatch_violates_P3():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .tr("RECORDED", "REJECTED_CONFLICT", w="user")
        .effect()
        .report()
    )
    assert props(r, "certain") == ["P3"]


def test_a_cancel_with_no_dispatch_and_no_effect_conforms():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .tr("RECORDED", "REJECTED_CONFLICT", w="user")
        .report()
    )
    assert r.verdict is LogVerdict.CONFORMS


def test_a_writer_acting_on_a_stale_state_after_its_crash_violates_P4():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED", "DISPATCHED")
        .crash("w1")
        .tr("DISPATCHED", "UNKNOWN", w="w2")
        .tr("DISPATCHED", "ACKED", w="w1")
        .tr("UNKNOWN", "DEAD_LETTER", w="w2")
        .report()
    )
    p4 = [f for f in r.findings if f.property == "P4"]
    assert p4 and "crash" in " ".join(s.kind for s in p4[0].steps)


def test_a_writer_resuming_from_the_log_after_its_crash_keeps_P4():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .crash("w1")
        .tr("RECORDED", "DISPATCHED", w="w1")
        .tr("DISPATCHED", "ACKED", w="w1")
        .report()
    )
    assert r.verdict is LogVerdict.CONFORMS


def test_the_same_stale_move_without_a_crash_is_a_race_not_P4():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED", "DISPATCHED")
        .tr("DISPATCHED", "UNKNOWN", w="w2")
        .tr("DISPATCHED", "ACKED", w="w1")
        .tr("UNKNOWN", "DEAD_LETTER", w="w2")
        .report()
    )
    assert "RACE" in props(r) and "P4" not in props(r)


def test_a_fence_going_backwards_along_the_chain_violates_FENCE():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .tr("RECORDED", "DISPATCHED", fence=5)
        .tr("DISPATCHED", "UNKNOWN", fence=5)
        .tr("UNKNOWN", "RECONCILING", fence=4)
        .tr("RECONCILING", "ACKED", fence=4)
        .report()
    )
    assert props(r, "certain") == ["FENCE"]


def test_an_effect_with_a_fence_older_than_the_seal_violates_FENCE():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .tr("RECORDED", "DISPATCHED", fence=1)
        .tr("DISPATCHED", "UNKNOWN", w="w2")
        .tr("UNKNOWN", "RECONCILING", w="w2", fence=2)
        .tr("RECONCILING", "DEAD_LETTER", w="w2", fence=2)
        .effect(fence=1)
        .report()
    )
    assert props(r, "certain") == ["FENCE"]


def test_an_effect_applied_before_the_seal_and_found_by_the_status_read_conforms():
    r = (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .tr("RECORDED", "DISPATCHED", fence=1)
        .effect(fence=1)
        .tr("DISPATCHED", "UNKNOWN", w="w2")
        .tr("UNKNOWN", "RECONCILING", w="w2", fence=2)
        .tr("RECONCILING", "ACKED", w="w2", fence=2)
        .report()
    )
    assert r.verdict is LogVerdict.CONFORMS


# ----- completeness -------------------------------------------------------------------------
def test_a_seq_gap_makes_the_verdict_inconclusive():
    log = Log().accept().path(*HAPPY).effect()
    log.events[2]["seq"] = 9
    log.events[3]["seq"] = 10
    r = log.report()
    assert r.verdict is LogVerdict.INCONCLUSIVE and "SEQ_GAP" in props(r)


def test_seq_numbers_arriving_out_of_order_are_not_a_gap():
    log = Log().accept().path(*HAPPY).effect()
    assert check([log.events[i] for i in (2, 0, 3, 1, 4)]).verdict is LogVerdict.CONFORMS


def test_a_repeated_seq_is_ignored_and_reported():
    log = Log().accept().path(*HAPPY).effect()
    r = check(log.events + [dict(log.events[2])])
    assert r.verdict is LogVerdict.INCONCLUSIVE and props(r) == ["SEQ_DUP"]


def test_a_key_left_dispatched_is_unsettled_and_inconclusive():
    r = Log().accept().path("PROPOSED", "RECORDED", "DISPATCHED").report()
    assert r.verdict is LogVerdict.INCONCLUSIVE and props(r) == ["UNSETTLED"]


def test_an_effect_no_record_accounts_for_is_an_orphan():
    r = Log().accept().path(*HAPPY).effect().effect(key="ghost", args={"amount": 7}).report()
    assert props(r, "certain") == ["ORPHAN_EFFECT"]


def test_a_key_whose_first_transition_skips_proposed_is_not_a_chain():
    # possible, not certain: the line that moved it PROPOSED -> RECORDED may be the lost
    # last line of another writer, which no seq gap can show
    r = Log().accept().tr("RECORDED", "DISPATCHED").tr("DISPATCHED", "ACKED").report()
    assert "LEGAL" in props(r, "possible") and r.verdict is LogVerdict.INCONCLUSIVE


# ----- memory: keys close when they settle ---------------------------------------------------
def test_settled_keys_drop_their_transitions_so_memory_follows_open_keys():
    c = Conformance()
    log = Log()
    for i in range(500):
        log.accept(key=f"k{i}", args={"amount": i}, call=f"t{i}").path(*HAPPY, key=f"k{i}")
    for n, ev in enumerate(log.events, 1):
        c.feed(from_dict(ev), 0, n)
    assert c.open_keys == 0
    assert all(type(v) is bytes for v in c.keys.values())  # packed: a few dozen bytes each
    assert len(c.intents) == 500
    assert c.finish().verdict is LogVerdict.CONFORMS


def test_a_packed_key_touched_again_reports_as_if_it_had_never_been_packed():
    # every late event kind after the key settled (and was packed): a second accept, a
    # transition out of a state it left, a second apply, a compensate, a fenced stale apply
    log = Log().accept().path(*HAPPY, fence=1).effect(fence=1, effect_id="e1")
    log.accept(key="k2", args={"amount": 21}).path(
        "PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", key="k2", fence=2
    )
    log.tr("RECONCILING", "DEAD_LETTER", key="k2", fence=3)
    log.effect(key="k2", args={"amount": 21}, fence=1).crash(w="w2")
    log.accept(call="t9").tr("DISPATCHED", "ACKED", w="w2").effect(effect_id="e2")
    log.effect(kind="compensate").tr("RECORDED", "REJECTED_CONFLICT", w="w3")
    r = log.report()  # compares with pack=False
    assert {"FENCE", "I1", "LEGAL", "P1", "P4"} <= set(props(r, "certain")), props(r)


def test_packed_and_unpacked_keys_round_trip():
    c = Conformance()
    log = Log().accept(epoch=3).path(*HAPPY, fence=7).effect(fence=7, effect_id="e")
    for n, ev in enumerate(log.events, 1):
        c.feed(from_dict(ev), 0, n)
    ((name, rec),) = c.keys.items()
    assert type(rec) is bytes and len(rec) <= 150  # 99 bytes, and 17 a chain transition
    k = c.key(name)
    assert (k.tip, k.max_fence, k.min_apply_fence, k.applies, k.dispatches, k.last_writer) == (
        3,
        7,
        7,
        1,
        1,
        "w1",
    )
    e = c.intents[k.digest]
    assert (e.key, e.epoch, e.applies, e.recorded) == ("k1", 3, 1, True)
    assert [(t[0], t[2], t[3], t[4]) for t in k.chain] == [
        ("w1", 0, 1, 7),
        ("w1", 1, 2, 7),
        ("w1", 2, 3, 7),
    ]  # the chain comes back too


def test_findings_per_property_are_capped():
    from toolcommit.checker.logs import findings

    log = Log()
    for i in range(findings.MAX_PER_PROPERTY + 5):
        log.accept(key=f"k{i}", args={"amount": i}).path(
            "PROPOSED", "RECORDED", "ACKED", key=f"k{i}"
        )
    r = log.report()
    assert len(r.findings) == findings.MAX_PER_PROPERTY and r.dropped == 5


# ----- the log format: schema, hand validation and writer agree ------------------------------
def test_schema_and_hand_validation_agree_on_required_and_optional_fields():
    schema = json.loads((SPEC / "log.schema.json").read_text())
    assert set(schema["required"]) == set(logevents.COMMON)
    assert set(schema["properties"]) == set(logevents.COMMON) | set(logevents.COMMON_OPTIONAL)
    assert schema["properties"]["type"]["enum"] == list(logevents.TYPES)
    for branch in schema["allOf"]:
        t = branch["if"]["properties"]["type"]["const"]
        then = branch["then"]
        assert set(then["required"]) == set(logevents.REQUIRED[t]), t
        assert set(then["properties"]) == set(logevents.REQUIRED[t]) | set(logevents.OPTIONAL[t]), t
        for f, kind in {**logevents.REQUIRED[t], **logevents.OPTIONAL[t]}.items():
            s = then["properties"][f]
            want = {"str": "string", "int": "integer", "obj": "object", "names": "array"}.get(kind)
            if want:
                assert s["type"] == want, (t, f)
            else:
                assert set(s["enum"]) == set(logevents.ENUMS[kind][1]), (t, f)
        if t in logevents.ONE_OF:
            assert {r["required"][0] for r in then["anyOf"]} == set(logevents.ONE_OF[t])


def test_schema_state_names_are_the_spec_record_states():
    schema = json.loads((SPEC / "log.schema.json").read_text())
    tr = next(b for b in schema["allOf"] if b["if"]["properties"]["type"]["const"] == "transition")
    assert tr["then"]["properties"]["from"]["enum"] == list(protocol().record.states)


def test_every_fixture_line_passes_hand_validation_and_the_schema_required_fields():
    schema = json.loads((SPEC / "log.schema.json").read_text())
    req = {b["if"]["properties"]["type"]["const"]: b["then"]["required"] for b in schema["allOf"]}
    for p in (Path(__file__).parents[1] / "fixtures" / "logs").glob("*.jsonl"):
        for line in p.read_text().splitlines():
            ev = json.loads(line)
            assert logevents.problem(ev) is None and logevents.fast_ok(ev), (p.name, line)
            assert set(schema["required"]) | set(req[ev["type"]]) <= set(ev)


def test_fast_validation_is_the_thorough_one_on_flat_events_and_defers_otherwise():
    ev = Log().accept().events[0]
    for extra in ({"x": 1}, {"x": [1]}, {"args": {"a": {"b": 1}}}, {"args": {"a": [1]}}):
        m = {**ev, **extra}
        assert logevents.problem(m) is None and not logevents.fast_ok(m), m  # thorough path
    assert logevents.fast_ok({**ev, "args": {"a": 1, "b": "x", "c": None}})


def test_fast_and_thorough_validation_agree_on_mutations():
    base = Log().accept().path(*HAPPY).effect(fence=1, effect_id="e").events
    values = [None, "", "x", 0, -1, 1.5, True, [], {}, 2**63, "PROPOSED", "apply"]
    for ev in base:
        for f in list(ev) + ["fence", "epoch", "key", "idempotency_key"]:
            for v in values:
                m = dict(ev)
                if v is None:
                    m.pop(f, None)
                else:
                    m[f] = v
                # fast True must imply valid; on these flat events (no unknown fields, flat
                # args) it must also be True whenever the event is valid
                flat = (
                    set(m) <= logevents.KNOWN[m["type"]]
                    if isinstance(m.get("type"), str) and m["type"] in logevents.KNOWN
                    else True
                )
                assert logevents.fast_ok(m) == (logevents.problem(m) is None and flat), (
                    m,
                    logevents.problem(m),
                )


def test_events_to_jsonl_round_trips_and_is_deterministic():
    evs = Log().accept(args={"b": 1, "a": "é"}).path(*HAPPY).effect().events
    text = events_to_jsonl(evs)
    assert text == events_to_jsonl([dict(reversed(list(e.items()))) for e in evs])
    assert [json.loads(x) for x in text.splitlines()] == evs
    assert text.splitlines()[0].startswith('{"type":"proposal","writer":"w1","seq":1,')


def test_every_finding_name_has_a_one_line_meaning():
    raw = json.loads((SPEC / "log-findings.json").read_text())["log_findings"]
    used = {
        "RACE",
        "CANON",
        "SEQ_GAP",
        "SEQ_DUP",
        "CUT_OFF",
        "NO_PROPOSAL",
        "UNSETTLED",
        "ORPHAN_EFFECT",
        "DESIGN",
        "ANSWER_ACROSS",
        "EFFECT_ARGS",
    }
    assert used == set(raw)
    assert {"I1", "P1", "P2", "P3", "P4", "FENCE", "LEGAL"} <= set(meanings())


# ----- the canonicalizer -------------------------------------------------------------------
def test_canonicalizer_v1_digests_are_pinned_forever():
    c = canonical_intent("refund", {"amount": 20}, "user:42:checkout:7")
    assert c.form == '["refund","user:42:checkout:7",{"amount":20}]'
    assert c.digest == canonical_intent(" refund ", {"amount": 20.0}, "user:42:checkout:7").digest
    assert c.digest == "6894bfa509829df6d3e425fd5a467a0ced84b327bcceb5ea9de6a90b37b76fe4"
    assert (
        canonical_intent("t", {"x": [1.5, None, True, "é"]}, "s").form
        == '["t","s",{"x":[1.5,null,true,"é"]}]'
    )
    assert (
        intent_digest("refund", {"amount": 20}, "user:42:checkout:7")
        == bytes.fromhex(c.digest)[:16]
    )


@pytest.mark.parametrize(
    "a,b,same",
    [
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"a": 20}, {"a": 20.0}, True),
        ({"a": -0.0}, {"a": 0}, True),
        # two floats one ulp apart are two amounts, and 0.1 + 0.2 is not 0.3
        ({"a": 0.1}, {"a": math.nextafter(0.1, 1.0)}, False),
        ({"a": 0.1 + 0.2}, {"a": 0.3}, False),
        ({"a": "café"}, {"a": "cafe\u0301"}, True),
        ({"a": "  two   words "}, {"a": "two words"}, True),
        ({"a": 2**60}, {"a": float(2**60)}, True),
        ({"a": True}, {"a": 1}, False),
        ({"a": "20"}, {"a": 20}, False),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"a": None}, {}, False),
        ({"A": 1}, {"a": 1}, False),
    ],
)
def test_canonicalizer_rules(a, b, same):
    assert (canonical_intent("t", a, "s").digest == canonical_intent("t", b, "s").digest) is same


@pytest.mark.parametrize(
    "bad", [{"a": float("nan")}, {"a": float("inf")}, {"a": 1, " a": 2}, {"a": object()}]
)
def test_canonicalizer_refuses_what_has_no_canonical_form(bad):
    with pytest.raises(CanonError):
        canonical_intent("t", bad, "s")


def test_canonicalizer_refuses_unknown_versions():
    with pytest.raises(CanonError, match="known: 1"):
        canonical_intent("t", {}, "s", version=2)


# ----- renderers -------------------------------------------------------------------------------
def _bad_report():
    return (
        Log()
        .accept()
        .path("PROPOSED", "RECORDED")
        .crash("w1")
        .tr("RECORDED", "REJECTED_CONFLICT", w="user")
        .tr("RECORDED", "DISPATCHED", w="w1")
        .effect()
        .report()
    )


def test_text_explains_like_a_counterexample():
    text = render_text(_bad_report())
    assert text.startswith("VIOLATES:")
    for word in ("Let:", "Then:", "However:", "P3", "P4", "<events>:"):
        assert word in text


def test_json_carries_every_finding_with_its_locations():
    r = _bad_report()
    d = json.loads(render_json(r, EXIT_CODES[r.verdict]))
    assert d["verdict"] == "VIOLATES" and d["exit_code"] == 1
    assert len(d["findings"]) == len(r.findings)
    assert all(f["locations"] and f["steps"] for f in d["findings"])


def test_mermaid_draws_one_sequence_diagram_with_a_block_per_finding_and_the_focus_history():
    text = render_mermaid(_bad_report())
    assert text.count("sequenceDiagram") == 1
    assert text.count("  rect ") == len(_bad_report().findings)
    focus = check(Log().accept().path(*HAPPY).effect().events, focus=["k1"])
    diagram = render_mermaid(focus)
    assert diagram.count("sequenceDiagram") == 1
    assert diagram.count("->>K") - diagram.count("-->>K") == 4 and diagram.count("-->>K") == 1
    assert "RECORDED → DISPATCHED" in diagram


def test_mermaid_text_cannot_break_out_of_its_message():
    evil = (
        Log()
        .accept(key="k1;\nNote over K: pwned")
        .path("PROPOSED", "RECORDED", "ACKED", key="k1;\nNote over K: pwned")
    )
    out = render_mermaid(evil.report())
    assert all(not line.startswith("Note over K: pwned") for line in out.splitlines())
    assert ";" not in "".join(line for line in out.splitlines() if not line.startswith("%%"))


# ----- hostile shapes stay bounded -----------------------------------------------------------
def test_thousands_of_writers_racing_on_one_key_stay_linear_and_are_reported():
    log = Log().accept()
    for i in range(20000):
        log.tr("PROPOSED", "RECORDED", w=f"w{i}")
    r = log.report()
    race = [f for f in r.findings if f.property == "RACE"]
    assert race and race[0].more > 1000 and len(race[0].steps) <= 41


def test_a_key_cycling_through_illegal_edges_keeps_a_bounded_story():
    log = Log().accept().path("PROPOSED", "RECORDED", "DISPATCHED")
    for _ in range(5000):
        log.tr("DISPATCHED", "UNKNOWN").tr("UNKNOWN", "DISPATCHED")
    r = log.report()
    assert "P2" in props(r, "certain")
    assert all(len(f.steps) <= 45 for f in r.findings)


def test_focus_key_and_output_file(tmp_path, capsys):
    from toolcommit.checker.cli import main

    logs = Path(__file__).parents[1] / "fixtures" / "logs"
    out = tmp_path / "r.mmd"
    assert (
        main(
            [
                "validate",
                str(logs / "p4-bad.jsonl"),
                "--key",
                "k1",
                "--format",
                "mermaid",
                "-o",
                str(out),
            ]
        )
        == 1
    )
    text = out.read_text()
    assert "history of k1" in text and "crash" in text
    assert main(["validate", str(logs / "p4-bad.jsonl"), "--key", "other", "--format", "json"]) == 2
    assert "not in the log" in capsys.readouterr().err


# ----- the canonicalizer's fast path is the full one, where it applies ----------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from toolcommit.model import canon  # noqa: E402

_texts = st.text(alphabet=st.sampled_from(list(' !"#ab~\\\t\u00e9\u0301A0:-')), max_size=6)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    _texts,
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(_texts, inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(tool=_texts, scope=_texts, args=st.dictionaries(_texts, _values, max_size=4))
def test_the_fast_canonical_form_is_the_full_one_whenever_it_answers(tool, scope, args):
    fast = canon.fast_form_v1(tool, args, scope)
    try:
        full = canonical_intent(tool, args, scope)
    except CanonError:
        assert fast is None
        return
    if fast is not None:
        assert fast.decode("utf-8") == full.form
    assert intent_digest(tool, args, scope) == bytes.fromhex(full.digest)[:16]
    dump = canon.sorted_dump(tool, args, scope)
    flat = canon.flat_digest_v1(tool, args, scope, dump) if dump is not None else None
    assert flat is None or (fast is not None and flat == canon.digest_of_form(fast))


def test_the_fast_canonical_form_answers_for_plain_calls_and_declines_the_rest():
    plain = canon.fast_form_v1("refund", {"amount": 20, "note": "a b", "x": [None, True]}, "u:1")
    assert plain == b'["refund","u:1",{"amount":20,"note":"a b","x":[null,true]}]'
    for args in (
        {"a": 20.0},
        {"a": " x"},
        {"a": "x  y"},
        {"a b": 1},
        {"a!": 1},
        {"a": "\u00e9"},
        {"a": 2**53 + 1},
        {"a": "x\ty"},
    ):
        assert canon.fast_form_v1("t", args, "s") is None, args
        assert canon.flat_digest_v1("t", args, "s", canon.sorted_dump("t", args, "s")) is None


def test_the_flat_digest_answers_for_flat_calls_without_spaces():
    args = {"amount": 20, "currency": "EUR", "ok": True, "none": None, "order": "o-1"}
    dump = canon.sorted_dump("refund", args, "u:1")
    assert canon.flat_digest_v1("refund", args, "u:1", dump) == intent_digest("refund", args, "u:1")
    for odd in ({"a": "x y"}, {"a": [1]}, {"a": 1.5}, {"a": 2**53 + 1}):
        assert canon.flat_digest_v1("t", odd, "s", canon.sorted_dump("t", odd, "s")) is None
