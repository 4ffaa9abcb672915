"""Told, from the caller's side: an outcome counts as heard only once it reached the caller
that asked. Under Pydantic AI a sync tool runs in a worker thread; a tool ``timeout=`` that
passes cancels the agent's await, not the thread, which finishes the refund later. The
user, never told it was done, asks again in a new request: the log answers that request
with the first refund's outcome (one refund), where marking it told when the thread acked
refunded twice.

Real Pydantic AI, offline (its FunctionModel); the provider is the in-process `Bank`."""

import asyncio
import threading
import time

import pytest

from toolcommit.runtime import IntentLog

from .ledger import Bank, conforms

pydantic_ai = pytest.importorskip("pydantic_ai", reason="the 'frameworks' extra is not installed")


async def _auntil(cond, what: str, bound: float = 10.0) -> None:
    deadline = time.monotonic() + bound
    while not cond():
        assert time.monotonic() < deadline, f"not within {bound} s: {what}"
        await asyncio.sleep(0.01)


def _returns(result) -> list:
    """What the tool returned to the model in a run, in order."""
    from pydantic_ai.messages import ToolReturnPart

    return [
        p.content
        for m in result.new_messages()
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    ]


def test_pydantic_ai_sync_tool_past_its_deadline_then_a_re_ask_refunds_once(tmp_path):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from toolcommit.runtime.frameworks import pydantic_ai_tool

    bank, go, entered = Bank(), threading.Event(), threading.Event()
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="agent", provider="stripe", wait=0.2)
    script = iter(
        [
            [ToolCallPart("refund", {"charge": "ch_1", "amount": 2000}, tool_call_id="t1")],
            [TextPart("the refund timed out")],  # what the user is told in request 1
            [ToolCallPart("refund", {"charge": "ch_1", "amount": 2000}, tool_call_id="r2")],
            [TextPart("done")],
            [ToolCallPart("refund", {"charge": "ch_1", "amount": 2000}, tool_call_id="r3")],
            [TextPart("refunded again")],
        ]
    )
    seen = []

    def model(messages, info):
        seen.append(messages[-1])
        return ModelResponse(parts=next(script))

    def refund(charge: str, amount: int) -> dict:
        """Refund the charge."""
        entered.set()
        assert go.wait(10), "the test never released the refund"
        return bank.refund_current({"charge": charge, "amount": amount})

    tool = pydantic_ai_tool(
        log,
        refund,
        scope=lambda ctx, args: f"user:42:request:{ctx.deps}",
        principal="user:42",
        status=bank.status,
        timeout=0.05,  # the agent's deadline for the tool: passes while the refund waits
    )
    agent = Agent(FunctionModel(model), tools=[tool], deps_type=int)

    async def requests():  # one long-lived event loop, as a server's
        first = await agent.run("refund my order", deps=1)
        assert first.output == "the refund timed out" and entered.is_set()
        assert "Timed out" in str(seen[1].parts[0].content)  # what the model heard of it
        assert log.records()[0].state == "DISPATCHED"
        go.set()  # the thread runs on: the refund applies and the log acks it, unheard
        await _auntil(lambda: log.records()[0].state == "ACKED", "the abandoned refund acked")
        return await agent.run("refund my order, please", deps=2)  # the user's re-ask

    second = asyncio.run(requests())
    assert second.output == "done"
    (told,) = _returns(second)
    assert told["toolcommit"] == "Answered" and told["happened"] == "yes", told
    assert told["result"] == {"id": "e1"}
    assert "never reached the user" in told["message"]
    assert len(bank.ledger) == 1  # before: 2 (the ack from the thread counted as heard)
    assert conforms(log, bank, tmp_path)

    third = agent.run_sync("one more refund", deps=3)  # told now: a new request is new
    assert _returns(third)[0] == {"id": "e2"} and len(bank.ledger) == 2
    log.close()


def test_pydantic_ai_sync_tool_whose_outcome_reached_the_model_is_heard(tmp_path):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from toolcommit.runtime.frameworks import pydantic_ai_tool

    bank = Bank()
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="agent", provider="stripe", wait=0.2)
    calls = iter(range(100))

    def model(messages, info):
        if next(calls) % 2 == 0:
            return ModelResponse(parts=[ToolCallPart("refund", {"amount": 20})])
        return ModelResponse(parts=[TextPart("ok")])

    def refund(amount: int) -> dict:
        """Refund."""
        return bank.refund_current({"amount": amount})

    tool = pydantic_ai_tool(
        log,
        refund,
        scope=lambda ctx, args: f"user:42:request:{ctx.deps}",
        principal="user:42",
        status=bank.status,
    )
    agent = Agent(FunctionModel(model), tools=[tool], deps_type=int)
    assert _returns(agent.run_sync("refund", deps=1)) == [{"id": "e1"}]
    assert _returns(agent.run_sync("another", deps=2)) == [{"id": "e2"}]  # heard: a new one
    assert len(bank.ledger) == 2
    log.close()


def test_openai_agents_sync_tool_past_its_timeout_then_a_re_ask_refunds_once(tmp_path):
    pytest.importorskip("agents", reason="the 'frameworks' extra is not installed")
    from agents import Agent, RunConfig, Runner

    from toolcommit.runtime.frameworks import openai_agents_tool

    from .test_framework_wrappers import _scripted_agent_model

    bank, go, request = Bank(), threading.Event(), {"id": 1}
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="agent", provider="stripe", wait=0.2)

    def refund(charge: str, amount: int) -> dict:
        """Refund the charge."""
        assert go.wait(10), "the test never released the refund"
        return bank.refund_current({"charge": charge, "amount": amount})

    tool = openai_agents_tool(
        log,
        refund,
        scope=lambda ctx, args: f"user:42:request:{request['id']}",
        principal="user:42",
        status=bank.status,
        timeout=0.05,  # the SDK's deadline: passes while the refund waits
    )
    agent = Agent(
        name="refunder",
        model=_scripted_agent_model([("refund", {"charge": "ch_1", "amount": 2000}, "c1")]),
        tools=[tool],
    )

    def outputs(result) -> list:
        items = result.to_input_list()
        return [i["output"] for i in items if i.get("type") == "function_call_output"]

    async def requests():
        off = RunConfig(tracing_disabled=True)
        first = await Runner.run(agent, "refund ch_1", run_config=off)
        assert "timed out" in outputs(first)[0] and log.records()[0].state == "DISPATCHED"
        go.set()  # the thread runs on and acks, unheard
        await _auntil(lambda: log.records()[0].state == "ACKED", "the abandoned refund acked")
        request["id"] = 2
        return await Runner.run(agent, "refund ch_1 please", run_config=off)  # the re-ask

    (told,) = outputs(asyncio.run(requests()))
    assert '"toolcommit": "Answered"' in told or "'toolcommit': 'Answered'" in told, told
    assert len(bank.ledger) == 1  # before: the SDK refused timeout= on a sync tool
    log.close()


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_an_outcome_unheard_answers_the_re_ask_and_heard_lets_the_next_proceed(
    tmp_path, request, store
):
    from toolcommit.runtime import Answered, guard
    from toolcommit.runtime.caller import hearing

    if store == "postgres":
        pytest.importorskip("psycopg", reason="the 'postgres' extra is not installed")
        pg = request.getfixturevalue("pg")
        log = IntentLog.postgres(pg.dsn, "w1", schema="t_told", provider="stripe", wait=0.2)
    else:
        log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="w1", provider="stripe", wait=0.2)
    bank = Bank()

    def call(scope):
        args = {"charge": "ch_1", "amount": 2000}
        return guard(
            log, "c", "refund", args, scope, bank.refund_current, bank.status, principal="user:42"
        )

    with hearing() as first:  # the caller gave up: what it collected is never marked heard
        assert call("user:42:request:1") == {"id": "e1"}
    with hearing() as second:  # the re-ask's answer, heard once it reached its caller
        with pytest.raises(Answered):
            call("user:42:request:2")
    assert first.keys == second.keys == [log.records()[0].key]
    second.heard(log)
    assert call("user:42:request:3") == {"id": "e2"}  # told: a new request is a new refund
    assert len(bank.ledger) == 2
    log.close()
