"""OpenAI Agents SDK runs, offline (a custom `Model`, no network), traced by a
`TracingProcessor` that writes every ``export()`` as a JSON line.

A refund tool that writes what it applies to a plain ledger (keyed by the idempotency key
it sends: the model's call id, as a chat-style tool does), and a scripted model that
answers by the conversation so far. The SDK's own processors (which would send traces
to OpenAI) are replaced. Needs the ``frameworks`` extra.
"""

from __future__ import annotations

import json

from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.tool_context import ToolContext
from agents.tracing import TracingProcessor, set_trace_processors
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

GROUP = "user-42"


class JsonLines(TracingProcessor):
    """Writes each trace and span as ``export()`` JSON, at its start and at its end (a span
    that never ends, its process having died, is still in the file)."""

    def __init__(self, path: str):
        self.f = open(path, "a")

    def _write(self, item) -> None:
        data = item.export()
        if data:
            self.f.write(json.dumps(data) + "\n")
            self.f.flush()

    on_trace_start = on_trace_end = on_span_start = on_span_end = _write

    def shutdown(self) -> None:
        self.f.close()

    def force_flush(self) -> None:
        self.f.flush()


class Scripted(Model):
    """Emits `calls` (tool name, args, call id) one per turn, then a text answer; the
    turn is the number of function calls already in the conversation."""

    def __init__(self, calls):
        self.calls = calls

    async def get_response(
        self,
        system_instructions,
        input,
        model_settings,
        tools,
        output_schema,
        handoffs,
        tracing,
        *,
        previous_response_id,
        conversation_id,
        prompt,
    ):
        items = input if isinstance(input, list) else []
        turn = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call")
        if turn < len(self.calls):
            name, args, cid = self.calls[turn]
            out = ResponseFunctionToolCall(
                type="function_call",
                name=name,
                call_id=cid,
                arguments=json.dumps(args),
                id=f"fc_{cid}",
                status="completed",
            )
        else:
            out = ResponseOutputMessage(
                id="msg_done",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
            )
        return ModelResponse(output=[out], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the scripted model does not stream")


def run(calls, fail_first: bool, trace_path: str, ledger: list, effect=None) -> list:
    """Run the agent, tracing to `trace_path`; the refund tool applies every call (one
    ledger line each) and, if `fail_first`, then raises on its first call (the provider
    applied the refund but the tool saw a timeout: the SDK's default failure handler tells
    the model, which calls again under a new id). With `effect`, the tool returns
    ``effect(call_id, order, amount)`` instead (a guarded refund). Returns the run items as
    ``result.to_input_list()``."""
    processor = JsonLines(trace_path)
    set_trace_processors([processor])
    seen = []

    @function_tool
    def refund(ctx: ToolContext, order: str, amount: float) -> str:
        """Refund an order."""
        if effect is not None:
            return effect(ctx.tool_call_id, order, amount)
        ledger.append({"idempotency_key": ctx.tool_call_id, "effect_id": f"re_{len(ledger) + 1}"})
        seen.append(ctx.tool_call_id)
        if fail_first and len(seen) == 1:
            raise TimeoutError("the payment provider timed out")
        return f"refunded {amount}"

    @function_tool
    def order_status(order: str) -> str:
        """Read an order's status (no effect)."""
        return "paid"

    agent = Agent(name="refunder", model=Scripted(calls), tools=[order_status, refund])
    try:
        result = Runner.run_sync(agent, "refund order o-7", run_config=RunConfig(group_id=GROUP))
    finally:
        set_trace_processors([])
        processor.shutdown()
    return result.to_input_list()


CLEAN = [
    ("order_status", {"order": "o-7"}, "call_s"),
    ("refund", {"order": "o-7", "amount": 20}, "call_A"),
]
REISSUED = CLEAN + [("refund", {"order": "o-7", "amount": 20.0}, "call_B")]
