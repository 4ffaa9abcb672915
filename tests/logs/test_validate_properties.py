"""Property-based and metamorphic tests of the log checker (Hypothesis).

Claims: findings depend only on each writer's own order, never on how the writers' lines
interleave; a conforming log that loses a line is INCONCLUSIVE unless the line is one the
log cannot miss; the bytes around the events (extra fields, timestamps, CRLF, a BOM,
gzip) change nothing; and every injected violation is found, certain.
"""

from __future__ import annotations

import gzip

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcommit.checker.cli.validate import validate
from toolcommit.checker.logs.conformance import check
from toolcommit.checker.logs.write import events_to_jsonl
from toolcommit.checker.render.findings import render_json

from .logtools import conforming, hostile, merge, picks

SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def summary(report) -> tuple:
    """What must not depend on line order: the verdict and every finding's name, key and
    certainty (line numbers and stories may)."""
    return report.verdict.value, sorted({(f.property, f.key, f.certainty) for f in report.findings})


@SETTINGS
@given(lanes=st.one_of(conforming(), hostile()), a=picks, b=picks)
def test_any_interleaving_of_the_writers_own_orders_gives_the_same_findings(lanes, a, b):
    assert summary(check(merge(lanes, a))) == summary(check(merge(lanes, b)))


@SETTINGS
@given(lanes=conforming(), a=picks)
def test_generated_conforming_logs_conform(lanes, a):
    report = check(merge(lanes, a))
    assert report.verdict.value == "CONFORMS", summary(report)


@SETTINGS
@given(lanes=conforming(), a=picks, data=st.data())
def test_a_conforming_log_that_loses_a_line_is_inconclusive_unless_nothing_can_show_it(
    lanes, a, data
):
    log = merge(lanes, a)
    lost = data.draw(st.integers(0, len(log) - 1))
    ev = log[lost]
    report = check(log[:lost] + log[lost + 1 :])
    last_of_writer = ev["seq"] == len(lanes[ev["writer"]])
    if not last_of_writer:  # the lines of its writer around it show the gap (or the
        assert report.verdict.value == "INCONCLUSIVE", summary(report)  # proposal is gone)
        if ev["seq"] > 1:
            assert any(f.property == "SEQ_GAP" for f in report.findings), summary(report)
    else:  # nothing after it can show it: only provider records,
        assert report.verdict.value != "VIOLATES", summary(report)  # restarts, or a
        if report.verdict.value == "CONFORMS":  # proposal whose key
            assert ev["type"] in ("effect", "restart", "proposal"), ev  # has no move yet


# ----- the bytes around the events change nothing ----------------------------------------------
@SETTINGS
@given(lanes=st.one_of(conforming(), hostile()), a=picks, data=st.data())
def test_extra_fields_timestamps_crlf_bom_and_gzip_change_nothing(lanes, a, data, tmp_path_factory):
    log = merge(lanes, a)
    path = tmp_path_factory.mktemp("log") / "log.jsonl"
    path.write_text(events_to_jsonl(log))
    base = render_json(validate([str(path)]))
    varied = []
    for ev in log:
        ev = dict(ev)
        if data.draw(st.booleans()):
            ev["ts"] = data.draw(
                st.sampled_from(["2024-05-01T12:00:00Z", "1999-12-31T23:59:59+09:00", "not a time"])
            )
        if data.draw(st.booleans()):
            ev["x-trace"] = data.draw(st.sampled_from([{"span": [1, {"a": None}]}, "abc", 7]))
        varied.append(ev)
    text = events_to_jsonl(varied).encode()
    if data.draw(st.booleans()):
        text = text.replace(b"\n", b"\r\n")
    if data.draw(st.booleans()):
        text = b"\xef\xbb\xbf" + text
    if data.draw(st.booleans()):
        text = gzip.compress(text)
    path.write_bytes(text)
    assert render_json(validate([str(path)])) == base


# ----- every injected violation is found -------------------------------------------------------
def _next(lanes: dict, w: str, ev: dict) -> None:
    lanes[w].append(dict(ev, writer=w, seq=len(lanes[w]) + 1))


def _applied(lanes: dict) -> list[dict]:
    return [ev for ev in lanes["bank"] if ev["kind"] == "apply"]


INJECTIONS = ["double effect", "stale fence", "illegal transition", "P2", "P3"]


@SETTINGS
@given(
    lanes=conforming(),
    a=picks,
    what=st.sampled_from(INJECTIONS),
    w=st.sampled_from(["w1", "w2", "w3"]),
)
def test_every_injected_violation_is_found_and_certain(lanes, a, what, w):
    call = {"tool": "refund", "args": {"amount": 99}, "scope": "u"}
    key = "bad"

    def path(*states, fence=None):
        for x, y in zip(states, states[1:]):
            _next(
                lanes,
                w,
                {
                    "type": "transition",
                    "key": key,
                    "from": x,
                    "to": y,
                    **({"fence": fence} if fence else {}),
                },
            )

    _next(
        lanes, w, {"type": "proposal", "call_id": "tb", "key": key, "decision": "accepted", **call}
    )
    if what == "double effect":
        path("PROPOSED", "RECORDED", "DISPATCHED", "ACKED", fence=1)
        for eid in ("x1", "x2"):
            _next(
                lanes,
                "bank",
                {
                    "type": "effect",
                    "key": key,
                    "kind": "apply",
                    "fence": 1,
                    "effect_id": eid,
                    **call,
                },
            )
        expect = {"I1", "P1"}
    elif what == "stale fence":
        path("PROPOSED", "RECORDED", "DISPATCHED", fence=1)
        path("DISPATCHED", "UNKNOWN")
        path("UNKNOWN", "RECONCILING", "DEAD_LETTER", fence=2)
        _next(lanes, "bank", {"type": "effect", "key": key, "kind": "apply", "fence": 1, **call})
        expect = {"FENCE"}
    elif what == "illegal transition":
        path("PROPOSED", "RECORDED", "ACKED")
        expect = {"LEGAL"}
    elif what == "P2":
        path("PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "DISPATCHED", "ACKED", fence=1)
        expect = {"P2"}
    else:
        path("PROPOSED", "RECORDED", "REJECTED_CONFLICT")
        _next(lanes, "bank", {"type": "effect", "key": key, "kind": "apply", **call})
        expect = {"P3"}
    report = check(merge(lanes, a))
    found = {
        f.property
        for f in report.findings
        if f.certainty == "certain"
        and f.key == key
        or f.property == "I1"
        and key in f.key.split(" + ")
    }
    assert expect <= found, summary(report)
    assert report.verdict.value == "VIOLATES"
