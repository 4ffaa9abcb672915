"""The wrappers for the OpenAI Agents SDK, LangChain tools, Temporal activities and DBOS
steps, each with the real framework offline (a scripted model where the framework has one,
Temporal's ActivityEnvironment, DBOS on SQLite), sync and async, under the cases of
`fw_cases`: a lost ack plus a retry under a new call id is one refund; InDoubt and GaveUp
reach the model (or the workflow) as the truth. Needs the 'frameworks' extra."""
import asyncio
import json

import pytest

from toolcommit.checker.runtime import shims

from .fw_cases import ARGS, CASES, Case

FORMS = ("sync", "async")


def _body(case: Case, form: str):
    """The refund tool's function, sync or async, with the framework's own signature."""
    if form == "sync":
        def refund(order: str, amount: float) -> dict:
            """Refund an order."""
            return case.refund(order, amount)
    else:
        async def refund(order: str, amount: float) -> dict:
            """Refund an order."""
            return case.refund(order, amount)
    return refund


# ----- the OpenAI Agents SDK ---------------------------------------------------------------
def _scripted_agent_model(calls):
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (ResponseFunctionToolCall, ResponseOutputMessage,
                                        ResponseOutputText)

    class Scripted(Model):
        """Emits one function call per turn (by how many are in the conversation), then
        text."""

        async def get_response(self, system_instructions, input, *a, **kw):
            items = input if isinstance(input, list) else []
            turn = sum(1 for i in items if isinstance(i, dict)
                       and i.get("type") == "function_call")
            if turn < len(calls):
                name, args, cid = calls[turn]
                out = ResponseFunctionToolCall(type="function_call", name=name, call_id=cid,
                                               arguments=json.dumps(args), id=f"fc_{cid}",
                                               status="completed")
            else:
                out = ResponseOutputMessage(
                    id="msg", type="message", role="assistant", status="completed",
                    content=[ResponseOutputText(type="output_text", text="done",
                                                annotations=[])])
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *a, **kw):
            raise NotImplementedError("the scripted model does not stream")

    return Scripted()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", CASES)
def test_openai_agents_tool_one_refund_and_the_truth(kind, form, tmp_path):
    pytest.importorskip("agents", reason="the 'frameworks' extra is not installed")
    from agents import Agent, Runner, set_tracing_disabled

    from toolcommit.runtime.frameworks import openai_agents_tool

    set_tracing_disabled(True)
    case = Case(kind, tmp_path)
    tool = openai_agents_tool(case.log, _body(case, form), scope="user:42:request:7",
                              status=case.status)
    model = _scripted_agent_model([("refund", {"order": "o-7", "amount": 20}, "call_A"),
                                   ("refund", ARGS, "call_B")])
    result = Runner.run_sync(Agent(name="refunder", model=model, tools=[tool]), "refund o-7")
    assert result.final_output == "done"
    items = result.to_input_list()
    assert [i["call_id"] for i in items if i.get("type") == "function_call_output"] == \
        ["call_A", "call_B"]
    case.check([i["output"] for i in items if i.get("type") == "function_call_output"])
    assert "refund" in shims._TOOLS
