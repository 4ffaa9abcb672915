"""Pydantic AI runs, offline (`FunctionModel`), exported as OpenTelemetry traces.

A refund tool that writes what it applies to a plain ledger (the provider's record, keyed
by the idempotency key it sends: the model's call id, as a chat-style tool does), and a
scripted model. Needs the ``frameworks`` extra.
"""

from __future__ import annotations

import json

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent, ModelRetry, RunContext
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings


def _script(calls):
    """A model that emits `calls` (tool name, args, call id) one per turn, then text."""

    def model(messages, info):
        turn = sum(1 for m in messages if m.kind == "response")
        if turn < len(calls):
            name, args, cid = calls[turn]
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=cid)])
        return ModelResponse(parts=[TextPart("done")])

    return model


def run(calls, fail_first: bool, ledger: list):
    """Run the agent; the refund tool applies every call (one ledger line each) and, if
    `fail_first`, then fails on its first call with ModelRetry (the provider applied the
    refund but the tool saw a timeout). Returns the finished spans."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "refund-agent"}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    agent = Agent(FunctionModel(_script(calls)))
    agent.instrument = InstrumentationSettings(tracer_provider=tp, include_content=True)
    seen = []

    @agent.tool
    def refund(ctx: RunContext[None], order: str, amount: float) -> str:
        """Refund an order."""
        ledger.append({"idempotency_key": ctx.tool_call_id, "effect_id": f"re_{len(ledger) + 1}"})
        seen.append(ctx.tool_call_id)
        if fail_first and len(seen) == 1:
            raise ModelRetry("the payment provider timed out; try again")
        return f"refunded {amount}"

    @agent.tool_plain
    def order_status(order: str) -> str:
        """Read an order's status (no effect)."""
        return "paid"

    agent.run_sync("refund order o-7")
    return exporter.get_finished_spans()


def console_json(spans) -> str:
    """What the SDK's ConsoleSpanExporter prints: each span's to_json(), one after another."""
    return "".join(s.to_json() + "\n" for s in spans)


def otlp_json(spans) -> str:
    """The OTLP/JSON encoding of an ExportTraceServiceRequest (the SDK's own protobuf
    encoder, then protobuf's JSON mapping), as one line: the Collector's file format."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return json.dumps(MessageToDict(encode_spans(spans)), separators=(",", ":")) + "\n"


CLEAN = [
    ("order_status", {"order": "o-7"}, "call_s"),
    ("refund", {"order": "o-7", "amount": 20}, "call_A"),
]
REISSUED = CLEAN + [("refund", {"order": "o-7", "amount": 20.0}, "call_B")]
