"""The decorator and the OpenTelemetry attributes."""
import pytest

from toolcommit.runtime import IntentLog
from toolcommit.runtime.shims import GaveUp, InDoubt, effectful

from .ledger import Bank, conforms

SCOPE = "user:42:checkout:7"


def test_decorated_refund_after_lost_ack_is_reconciled_not_resent(tmp_path):
    bank = Bank(lose_first_ack=True)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1")

    @effectful(log, tool="refund", scope=SCOPE, status=bank.status)
    def refund(amount, *, idempotency_key, fence):
        from toolcommit.runtime.shims import current_ticket
        return bank.refund(current_ticket(), {"amount": amount})

    assert refund(20, call_id="t1") == {"id": "e1"}
    assert refund(20.0, call_id="t2") == {"id": "e1"}
    assert len(bank.ledger) == 1
    assert [e.get("to") for e in log.events() if e["type"] == "transition"] == \
        ["RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", "ACKED"]
    assert conforms(log, bank, tmp_path)


def test_without_a_status_read_an_unknown_outcome_is_dead_lettered_not_retried(tmp_path):
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1")
    sent = []

    @effectful(log, tool="email", scope=lambda to: f"mailbox:{to}")
    def email(to, *, idempotency_key, fence):
        sent.append(to)
        raise ConnectionResetError("no answer")

    with pytest.raises(InDoubt):
        email("a@b", call_id="t1")
    with pytest.raises(GaveUp):
        email("a@b", call_id="t2")
    assert sent == ["a@b"]


def test_a_recording_span_gets_the_lines_as_toolcommit_attributes(tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="the 'otel' extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1")
    with tracer.start_as_current_span("execute_tool refund"):
        d = log.propose("t1", "refund", {"amount": 20}, SCOPE)
        log.ack(log.dispatch(d.key), {"id": "e1"})
    span, = exporter.get_finished_spans()
    assert span.attributes["toolcommit.key"] == d.key
    assert span.attributes["toolcommit.state"] == "ACKED"
    assert span.attributes["toolcommit.decision"] == "accepted"
    assert span.attributes["toolcommit.fence"] == 1
    assert [e.name for e in span.events] == ["toolcommit.proposal"] + ["toolcommit.transition"] * 3
