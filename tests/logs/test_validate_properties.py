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

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])

STATES = ["PROPOSED", "RECORDED", "DISPATCHED", "ACKED", "UNKNOWN", "RECONCILING",
          "COMPENSATED", "DEAD_LETTER", "REJECTED_CONFLICT"]
# conforming histories: (states, index at which a second writer takes over, or None)
PATHS = [
    (["PROPOSED", "RECORDED", "DISPATCHED", "ACKED"], None),
    (["PROPOSED", "RECORDED", "REJECTED_CONFLICT"], None),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", "ACKED"], 3),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", "DEAD_LETTER"], 3),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "COMPENSATED"], None),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "DEAD_LETTER"], 3),
]


def summary(report) -> tuple:
    """What must not depend on line order: the verdict and every finding's name, key and
    certainty (line numbers and stories may)."""
    return report.verdict.value, sorted({(f.property, f.key, f.certainty)
                                         for f in report.findings})


def number(lanes: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Give each writer's events seq 1, 2, ..."""
    for w, evs in lanes.items():
        for i, ev in enumerate(evs, 1):
            ev["writer"], ev["seq"] = w, i
    return lanes


def merge(lanes: dict[str, list[dict]], picks: list[int]) -> list[dict]:
    """One interleaving of the writers' own orders, chosen by `picks`."""
    queues = {w: list(evs) for w, evs in lanes.items() if evs}
    out, i = [], 0
    while queues:
        names = sorted(queues)
        w = names[picks[i % len(picks)] % len(names)] if picks else names[0]
        i += 1
        out.append(queues[w].pop(0))
        if not queues[w]:
            del queues[w]
    return out


# ----- conforming logs ------------------------------------------------------------------------
@st.composite
def conforming(draw) -> dict[str, list[dict]]:
    """A conforming multi-writer log: each key one intent, one legal history (a takeover by a
    second writer with a higher fence after UNKNOWN), the provider's effect records."""
    lanes: dict[str, list[dict]] = {"w1": [], "w2": [], "w3": [], "bank": []}
    for i in range(draw(st.integers(1, 4))):
        key, call = f"k{i}", {"tool": "refund", "args": {"amount": i + 1}, "scope": "u"}
        states, takeover = draw(st.sampled_from(PATHS))
        first, second = draw(st.permutations(["w1", "w2", "w3"]))[:2]
        lanes[first].append({"type": "proposal", "call_id": f"t{i}", "key": key,
                             "decision": "accepted", **call})
        fence = 0
        for j, (a, b) in enumerate(zip(states, states[1:])):
            w = second if takeover is not None and j >= takeover else first
            if b in ("DISPATCHED", "RECONCILING"):
                fence += 1
            ev = {"type": "transition", "key": key, "from": a, "to": b}
            if fence:
                ev["fence"] = fence
            lanes[w].append(ev)
            if b == "DISPATCHED" and states[-1] in ("ACKED", "COMPENSATED"):
                lanes["bank"].append({"type": "effect", "key": key, "kind": "apply",
                                      "fence": fence, "effect_id": f"e{i}", **call})
        if states[-1] == "COMPENSATED":
            lanes["bank"].append({"type": "effect", "key": key, "kind": "compensate", **call})
        if draw(st.booleans()):
            lanes[draw(st.sampled_from(["w1", "w2", "w3"]))].append({"type": "restart"})
    return number(lanes)


@st.composite
def hostile(draw) -> dict[str, list[dict]]:
    """Anything well-formed: random moves (legal or not) of a few keys by a few writers,
    crashes, duplicate and paraphrased proposals, effects by key or idempotency key."""
    lanes: dict[str, list[dict]] = {"w1": [], "w2": [], "w3": [], "bank": []}
    keys = [f"k{i}" for i in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["proposal", "move", "move", "move", "effect", "crash"]))
        w = draw(st.sampled_from(["w1", "w2", "w3"]))
        key = draw(st.sampled_from(keys))
        call = {"tool": "refund", "args": {"amount": draw(st.sampled_from([20, 20.0, 7]))},
                "scope": "u"}
        if kind == "proposal":
            lanes[w].append({"type": "proposal", "call_id": "t", "key": key,
                             "decision": draw(st.sampled_from(["accepted", "duplicate"])),
                             "epoch": draw(st.integers(1, 2)), **call})
        elif kind == "move":
            ev = {"type": "transition", "key": key, "from": draw(st.sampled_from(STATES)),
                  "to": draw(st.sampled_from(STATES))}
            if draw(st.booleans()):
                ev["fence"] = draw(st.integers(1, 3))
            lanes[w].append(ev)
        elif kind == "effect":
            ev = {"type": "effect", "kind": draw(st.sampled_from(["apply", "apply", "compensate"])),
                  **call, **({"key": key} if draw(st.booleans()) else {"idempotency_key": key})}
            if draw(st.booleans()):
                ev["fence"] = draw(st.integers(1, 3))
            if draw(st.booleans()):
                ev["effect_id"] = draw(st.sampled_from(["e1", "e2"]))
            lanes["bank"].append(ev)
        else:
            lanes[w].append({"type": "crash"})
    return number(lanes)


picks = st.lists(st.integers(0, 3), min_size=1, max_size=30)


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
        lanes, a, data):
    log = merge(lanes, a)
    lost = data.draw(st.integers(0, len(log) - 1))
    ev = log[lost]
    report = check(log[:lost] + log[lost + 1:])
    last_of_writer = ev["seq"] == len(lanes[ev["writer"]])
    if not last_of_writer:      # the lines of its writer around it show the gap (or the
        assert report.verdict.value == "INCONCLUSIVE", summary(report)   # proposal is gone)
        if ev["seq"] > 1:
            assert any(f.property == "SEQ_GAP" for f in report.findings), summary(report)
    else:                       # nothing after it can show it: only provider records,
        assert report.verdict.value != "VIOLATES", summary(report)   # restarts, or a
        if report.verdict.value == "CONFORMS":                         # proposal whose key
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
            ev["ts"] = data.draw(st.sampled_from(["2024-05-01T12:00:00Z", "1999-12-31T23:59:59+09:00",
                                                  "not a time"]))
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
@given(lanes=conforming(), a=picks, what=st.sampled_from(INJECTIONS),
       w=st.sampled_from(["w1", "w2", "w3"]))
def test_every_injected_violation_is_found_and_certain(lanes, a, what, w):
    call = {"tool": "refund", "args": {"amount": 99}, "scope": "u"}
    key = "bad"

    def path(*states, fence=None):
        for x, y in zip(states, states[1:]):
            _next(lanes, w, {"type": "transition", "key": key, "from": x, "to": y,
                             **({"fence": fence} if fence else {})})

    _next(lanes, w, {"type": "proposal", "call_id": "tb", "key": key, "decision": "accepted",
                     **call})
    if what == "double effect":
        path("PROPOSED", "RECORDED", "DISPATCHED", "ACKED", fence=1)
        for eid in ("x1", "x2"):
            _next(lanes, "bank", {"type": "effect", "key": key, "kind": "apply", "fence": 1,
                                  "effect_id": eid, **call})
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
    found = {f.property for f in report.findings if f.certainty == "certain" and f.key == key
             or f.property == "I1" and key in f.key.split(" + ")}
    assert expect <= found, summary(report)
    assert report.verdict.value == "VIOLATES"
