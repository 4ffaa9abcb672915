"""The guard's own OpenTelemetry spans and metrics (`toolcommit.runtime.otel`), read with
the SDK's in-memory exporter and reader; the library without opentelemetry; a guarded
run's spans validated as a trace (``validate --from otel``)."""

import asyncio
import json
import subprocess
import sys

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the 'frameworks' extra is not installed")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

from toolcommit.runtime import (  # noqa: E402
    Conflict,
    GaveUp,
    InDoubt,
    IntentLog,
    current_ticket,
    effectful,
    guard,
    otel,  # noqa: E402
    recover_settle,
)

from .ledger import Bank  # noqa: E402

SCOPE = "user:42:request:7"


class Telemetry:
    """The spans and metrics toolcommit reported in one test."""

    def __init__(self):
        self.exporter, self.reader = InMemorySpanExporter(), InMemoryMetricReader()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def spans(self, kind=None, writer=None):
        """The finished spans of `kind` (None: every kind), of the log of `writer` only if
        given (another test's log left open in this process reports here too)."""
        return [
            s
            for s in self.exporter.get_finished_spans()
            if (kind is None or s.attributes.get("toolcommit.span") == kind)
            and (writer is None or s.attributes.get("toolcommit.writer") == writer)
        ]

    def points(self, name):
        """{sorted attribute items: value (a sum, a gauge's value, a histogram's count)}."""
        out = {}
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        for p in m.data.data_points:
                            v = (
                                getattr(p, "count", None)
                                if hasattr(p, "bucket_counts")
                                else p.value
                            )
                            out[tuple(sorted(p.attributes.items()))] = v
        return out


@pytest.fixture
def tel():
    t = Telemetry()
    otel.configure(t.tracer_provider, t.meter_provider)
    yield t
    otel.configure()
    t.meter_provider.shutdown()


def _log(tmp_path, provider, writer="w1", **kw):
    return IntentLog.sqlite(str(tmp_path / "i.db"), writer, provider=provider, **kw)


def _refund(log, bank):
    @effectful(log, tool="refund", scope=SCOPE, status=bank.status, principal="user:1")
    def refund(amount):
        return bank.refund(current_ticket(), {"amount": amount})

    return refund


def _moves(span):
    return [
        (e.attributes["toolcommit.from"], e.attributes["toolcommit.to"])
        for e in span.events
        if e.name == "toolcommit.transition"
    ]


def test_each_guarded_call_is_one_execute_tool_span_with_its_decision_and_transitions(
    tmp_path, tel
):
    log = _log(tmp_path, "ideal", settler=False)
    refund = _refund(log, Bank())
    assert refund(20, call_id="t1") == {"id": "e1"}
    (span,) = tel.spans("guard")
    a = span.attributes
    assert span.name == "execute_tool refund"
    assert (a["gen_ai.operation.name"], a["gen_ai.tool.name"], a["gen_ai.tool.call.id"]) == (
        "execute_tool",
        "refund",
        "t1",
    )
    assert (a["toolcommit.decision"], a["toolcommit.outcome"], a["toolcommit.happened"]) == (
        "accepted",
        "result",
        "yes",
    )
    (rec,) = log.records()
    assert (
        a["toolcommit.key"],
        a["toolcommit.epoch"],
        a["toolcommit.fence"],
        a["toolcommit.state"],
    ) == (rec.key, 0, 1, "ACKED")
    assert "toolcommit.resolution" not in a and span.status.status_code is StatusCode.UNSET
    assert [e.name for e in span.events][0] == "toolcommit.proposal"
    assert _moves(span) == [
        ("PROPOSED", "RECORDED"),
        ("RECORDED", "DISPATCHED"),
        ("DISPATCHED", "ACKED"),
    ]
    log.close()


def test_a_lost_ack_is_replayed_in_the_call_and_the_model_retry_gets_the_saved_answer(
    tmp_path, tel
):
    log = _log(tmp_path, "stripe", settler=False)
    refund = _refund(log, Bank(lose_first_ack=True))
    assert refund(20, call_id="t1") == refund(20.0, call_id="t2") == {"id": "e1"}
    first, retry = tel.spans("guard")
    assert _moves(first)[2:] == [
        ("DISPATCHED", "UNKNOWN"),
        ("UNKNOWN", "RECONCILING"),
        ("RECONCILING", "ACKED"),
    ]
    assert (first.attributes["toolcommit.resolution"], first.attributes["toolcommit.outcome"]) == (
        "replay_answered",
        "result",
    )
    assert (retry.attributes["toolcommit.decision"], retry.attributes["toolcommit.outcome"]) == (
        "duplicate",
        "saved",
    )
    assert (
        _moves(retry) == []
        and retry.attributes["toolcommit.key"] == first.attributes["toolcommit.key"]
    )
    assert tel.points("toolcommit.decisions") == {
        (("gen_ai.tool.name", "refund"), ("toolcommit.decision", "accepted")): 1,
        (("gen_ai.tool.name", "refund"), ("toolcommit.decision", "duplicate")): 1,
    }
    assert tel.points("toolcommit.settle.duration") == {
        (("gen_ai.tool.name", "refund"), ("toolcommit.state", "ACKED")): 1
    }
    log.close()


def test_a_call_cancelled_after_the_effect_leaves_doubt_and_the_retry_span_says_replay(
    tmp_path, tel
):
    """The answer is lost with the task (cancelled after the provider applied): the
    record is UNKNOWN; the model's retry (a new call id) replays it under the same key."""
    bank = Bank()
    log = _log(tmp_path, "stripe", "otel-cancel", settler=False)  # its own gauge series
    applied = asyncio.Event()

    @effectful(log, tool="refund", scope=SCOPE, status=bank.status, principal="user:1")
    async def refund(amount):
        got = bank.refund(current_ticket(), {"amount": amount})
        if len(bank.requests) == 1:
            applied.set()
            await asyncio.Event().wait()  # the answer never comes back
        return got

    async def agent():
        task = asyncio.ensure_future(refund(20, call_id="t1"))
        await asyncio.wait_for(applied.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (
            tel.points("toolcommit.in_doubt")[
                (("gen_ai.tool.name", "refund"), ("toolcommit.writer", "otel-cancel"))
            ]
            == 1
        )
        return await refund(20, call_id="t2")

    assert asyncio.run(agent()) == {"id": "e1"} and len(bank.ledger) == 1
    first, retry = tel.spans("guard")
    assert (
        first.attributes["toolcommit.outcome"],
        first.attributes["toolcommit.resolution"],
        first.attributes["toolcommit.happened"]
        if "toolcommit.happened" in first.attributes
        else None,
    ) == ("CancelledError", "settler", None)
    assert first.status.status_code is StatusCode.ERROR
    assert (
        retry.attributes["toolcommit.decision"],
        retry.attributes["toolcommit.resolution"],
        retry.attributes["toolcommit.outcome"],
    ) == ("duplicate", "replay_answered", "result")
    assert _moves(retry) == [("UNKNOWN", "RECONCILING"), ("RECONCILING", "ACKED")]
    assert (
        tel.points("toolcommit.in_doubt")[
            (("gen_ai.tool.name", "refund"), ("toolcommit.writer", "otel-cancel"))
        ]
        == 0
    )
    log.close()


def test_a_give_up_and_a_refusal_end_their_spans_in_error_and_count(tmp_path, tel):
    log = _log(tmp_path, "email", settler=False, exclusive_tools={"send"})
    lost = Bank(lose_first_ack=True)

    @effectful(log, tool="send", scope=lambda to: f"user:42:mail:{to}", principal="user:1")
    def send(to):
        return lost.refund(current_ticket(), {"to": to})

    with pytest.raises(GaveUp):
        send("a@example.com", call_id="t1")
    d = log.propose("t2", "send", {"to": "b@example.com"}, "user:42:mail:b", principal="user:1")
    with pytest.raises(Conflict):  # the scope holds another live send
        guard(
            log,
            "t3",
            "send",
            {"to": "c@example.com"},
            "user:42:mail:b",
            lambda t: None,
            principal="user:1",
        )
    gave_up, refused = tel.spans("guard")
    assert (
        gave_up.attributes["toolcommit.outcome"],
        gave_up.attributes["toolcommit.resolution"],
        gave_up.attributes["toolcommit.happened"],
        gave_up.attributes["error.type"],
    ) == ("GaveUp", "give_up", "unknown", "GaveUp")
    assert _moves(gave_up)[-3:] == [
        ("DISPATCHED", "UNKNOWN"),
        ("UNKNOWN", "RECONCILING"),
        ("RECONCILING", "DEAD_LETTER"),
    ]
    assert (refused.attributes["toolcommit.decision"], refused.attributes["error.type"]) == (
        "conflict",
        "Conflict",
    )
    assert gave_up.status.status_code is refused.status.status_code is StatusCode.ERROR
    assert tel.points("toolcommit.give_ups") == {
        (("gen_ai.tool.name", "send"), ("toolcommit.state", "DEAD_LETTER")): 1
    }
    assert d.decision == "accepted"
    log.close()


def test_a_call_left_in_doubt_says_settler_and_the_recovery_pass_settles_it(tmp_path, tel):
    bank = Bank(lose_first_ack=True)
    log = _log(tmp_path, "ideal", writer="w-idle-pass", settler=False)

    def down(t):
        raise ConnectionError("status endpoint down")

    @effectful(log, tool="refund", scope=SCOPE, status=down, principal="user:1")
    def refund(amount):
        return bank.refund(current_ticket(), {"amount": amount})

    with pytest.raises(InDoubt):
        refund(20, call_id="t1")
    (call,) = tel.spans("guard")
    assert (
        call.attributes["toolcommit.outcome"],
        call.attributes["toolcommit.resolution"],
        call.attributes["toolcommit.state"],
    ) == ("InDoubt", "settler", "RECONCILING")
    assert call.status.status_code is StatusCode.UNSET
    effectful(log, tool="refund", scope=SCOPE, status=bank.status, principal="user:1")(
        lambda amount: None
    )
    got = recover_settle(log)
    assert list(got.values()) == ["ACKED"]
    (pass_span,) = [s for s in tel.spans("recover") if s.attributes["toolcommit.trigger"] == "pass"]
    # the pass's own settle span (a settler another test left running traces its own)
    (settle,) = [s for s in tel.spans("settle") if s.parent.span_id == pass_span.context.span_id]
    assert (
        pass_span.attributes["toolcommit.settled"],
        pass_span.attributes["toolcommit.left"],
    ) == (1, 0)
    assert (
        settle.name,
        settle.attributes["toolcommit.from"],
        settle.attributes["toolcommit.state"],
        settle.attributes["toolcommit.resolution"],
    ) == ("toolcommit.settle refund", "RECONCILING", "ACKED", "read_present")
    assert tel.points("toolcommit.settle.duration") == {
        (("gen_ai.tool.name", "refund"), ("toolcommit.state", "ACKED")): 1
    }
    log.close()


def test_a_restart_is_one_recover_span_that_carries_the_takeover(tmp_path, tel):
    first = _log(tmp_path, "stripe", settler=False)
    d = first.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    first.dispatch(d.key)
    first.store.close()  # the process dies holding a dispatched record
    again = _log(tmp_path, "stripe", settler=False)
    opened = [s for s in tel.spans("recover") if s.attributes["toolcommit.trigger"] == "open"]
    span = opened[-1]
    assert (span.attributes["toolcommit.taken"], span.attributes["toolcommit.crashed"]) == (1, True)
    assert [e.name for e in span.events] == [
        "toolcommit.crash",
        "toolcommit.restart",
        "toolcommit.transition",
    ]
    again.close()


NO_OTEL = r"""
import sys, tempfile, os

class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError("blocked: " + name)

sys.meta_path.insert(0, Block())
import toolcommit.runtime as rt
from toolcommit.runtime import otel
log = rt.IntentLog.sqlite(os.path.join(tempfile.mkdtemp(), "i.db"), writer="w1",
                          provider="stripe")
got = rt.guard(log, "t1", "refund", {"amount": 20}, "user:1:request:1",
               lambda t: {"id": "re_1"}, lambda t: None, principal="user:1")
print(got["id"], otel.available(), rt.recover_settle(log),
      sorted(m for m in sys.modules if m.startswith("opentelemetry")))
log.close()
"""


def test_without_opentelemetry_the_library_imports_nothing_and_guards_calls():
    out = subprocess.run(
        [sys.executable, "-c", NO_OTEL], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["re_1", "False", "{}", "[]"]


# ----- validate --from otel on the guard's spans ------------------------------------------
def _export(tmp_path, spans, fmt):
    """The spans as OTLP JSON (the Collector's file format) or the console exporter's."""
    path = tmp_path / f"run.{fmt}.json"
    if fmt == "console":
        path.write_text("\n".join(s.to_json() for s in spans) + "\n")
        return str(path)
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    path.write_text(json.dumps(MessageToDict(encode_spans(spans))) + "\n")
    return str(path)


def _ledger(tmp_path, bank, twice=False):
    rows = [
        {"idempotency_key": e["idempotency_key"], "effect_id": e["effect_id"]} for e in bank.ledger
    ]
    if twice:
        rows.append({**rows[0], "effect_id": "e2"})
    path = tmp_path / "ledger.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.mark.parametrize("framework_span,fmt", [(False, "otlp"), (True, "otlp"), (True, "console")])
def test_a_guarded_runs_spans_validate_and_a_doubled_effect_is_caught(
    tmp_path, tel, framework_span, fmt
):
    """The guard's spans alone, or inside a framework's own execute_tool span (folded: one
    call each), judged by the guard's lines; a ledger with the effect applied twice
    violates I1."""
    from toolcommit.checker.logs.adapters.rules import Rules
    from toolcommit.checker.logs.adapters.trace import check_trace

    bank = Bank(lose_first_ack=True)
    log = _log(tmp_path, "stripe", settler=False)
    refund = _refund(log, bank)
    tracer = tel.tracer_provider.get_tracer("an-agent-framework")
    for cid, amount in (("t1", 20), ("t2", 20.0)):
        if framework_span:
            with tracer.start_as_current_span(
                "execute_tool refund",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "refund",
                    "gen_ai.tool.call.id": cid,
                },
            ):
                refund(amount, call_id=cid)
        else:
            refund(amount, call_id=cid)
    log.close()
    trace = _export(tmp_path, tel.exporter.get_finished_spans(), fmt)
    rules = Rules(effectful=frozenset({"refund"}))
    tr = check_trace("otel", [trace], rules, ledgers=[_ledger(tmp_path, bank)])
    assert tr.report.verdict.value == "CONFORMS", [f.explanation for f in tr.report.findings]
    assert tr.stats["judged_by_log"] == 2 and tr.stats["tool_calls"] == 2
    tr = check_trace("otel", [trace], rules, ledgers=[_ledger(tmp_path, bank, twice=True)])
    assert tr.report.verdict.value == "VIOLATES"
    assert "I1" in {f.property for f in tr.report.findings if f.certainty == "certain"}


def test_an_idle_settler_pass_writes_no_span_and_a_due_one_does(tmp_path, tel):
    from toolcommit.runtime.shims import settle_pass

    bank = Bank(lose_first_ack=True)
    log = _log(tmp_path, "ideal", writer="w-idle-pass", settler=False)

    def down(t):
        raise ConnectionError("status endpoint down")

    refund = effectful(log, tool="refund", scope=SCOPE, status=down, principal="user:1")(
        lambda amount: bank.refund(current_ticket(), {"amount": amount})
    )
    settle_pass(log)
    assert tel.spans("recover", log.writer)[1:] == []  # the log's opening only
    with pytest.raises(InDoubt):
        refund(20, call_id="t1")
    effectful(log, tool="refund", scope=SCOPE, status=bank.status, principal="user:1")(
        lambda amount: None
    )
    settle_pass(log)
    passes = [
        s
        for s in tel.spans("recover", log.writer)
        if s.attributes["toolcommit.trigger"] == "settler"
    ]
    assert len(passes) == 1 and passes[0].attributes["toolcommit.settled"] == 1
    assert log.records()[0].state == "ACKED"
    log.close()


def test_the_telemetry_page_example_prints_what_the_page_shows(tmp_path):
    """Run in a fresh process: the gauge reports every open log of its process."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "telemetry.md"
    text = page.read_text()
    (code,) = re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)
    (shown,) = re.findall(r"^```text\n(.*?)^```$", text, flags=re.S | re.M)
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout == shown
