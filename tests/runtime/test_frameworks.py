"""The framework wrappers: a call re-issued by the model under a new id (or paraphrased)
after a lost ack meets the first record, and the provider applies the effect once.

Real frameworks run offline: Pydantic AI with its FunctionModel, LangGraph's ToolNode in a
graph. They are the optional extra 'frameworks'; without it these tests skip."""

import json

import pytest

from toolcommit.runtime import IntentLog

from .ledger import Bank, conforms

pydantic_ai = pytest.importorskip("pydantic_ai", reason="the 'frameworks' extra is not installed")


def test_pydantic_ai_reissued_refund_after_lost_ack_applies_once(tmp_path):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from toolcommit.runtime.frameworks import pydantic_ai_tool

    bank = Bank(lose_first_ack=True)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="agent", provider="ideal")
    script = iter(
        [
            [ToolCallPart("refund", {"amount": 20}, tool_call_id="t1")],
            [ToolCallPart("refund", {"amount": 20.0}, tool_call_id="t2")],
            [TextPart("refunded")],
        ]
    )

    def model(messages, info):
        return ModelResponse(parts=next(script))

    def refund(amount: float) -> dict:
        """Refund the order."""
        return bank.refund_current({"amount": amount})

    tool = pydantic_ai_tool(
        log, refund, scope="user:42:checkout:7", status=bank.status, principal="user:1"
    )
    agent = Agent(FunctionModel(model), tools=[tool])
    result = agent.run_sync("refund my order")
    assert result.output == "refunded"
    assert len(bank.ledger) == 1
    assert [e["decision"] for e in log.events() if e["type"] == "proposal"] == [
        "accepted",
        "duplicate",
    ]
    assert conforms(log, bank, tmp_path)


@pytest.mark.slow
def test_langgraph_tool_node_retry_under_new_id_applies_once(tmp_path):
    pytest.importorskip("langgraph", reason="the 'frameworks' extra is not installed")
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool

    from toolcommit.runtime.frameworks import langgraph_tool_node

    bank = Bank(lose_first_ack=True)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="graph", provider="ideal")

    @lc_tool
    def refund(amount: float) -> str:
        """Refund the order."""
        return json.dumps(bank.refund_current({"amount": amount}))

    from langgraph.graph import END, START, MessagesState, StateGraph

    node = langgraph_tool_node(
        log,
        [refund],
        scope=lambda req: "user:42:checkout:7",
        status=bank.status,
        principal="user:1",
    )
    g = StateGraph(MessagesState)
    g.add_node("tools", node)
    g.add_edge(START, "tools")
    g.add_edge("tools", END)
    graph = g.compile()
    first = graph.invoke(
        {
            "messages": [
                AIMessage("", tool_calls=[{"name": "refund", "args": {"amount": 20}, "id": "t1"}])
            ]
        }
    )
    second = graph.invoke(
        {
            "messages": [
                AIMessage("", tool_calls=[{"name": "refund", "args": {"amount": 20.0}, "id": "t2"}])
            ]
        }
    )
    assert len(bank.ledger) == 1
    assert first["messages"][-1].tool_call_id == "t1"
    assert second["messages"][-1].tool_call_id == "t2"
    assert json.loads(second["messages"][-1].content) == {"id": "e1"}
    assert conforms(log, bank, tmp_path)


def test_pydantic_ai_async_tool_runs_inside_the_guard_with_its_key(tmp_path):
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from toolcommit.runtime.frameworks import pydantic_ai_tool

    bank = Bank(lose_first_ack=True)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="agent", provider="stripe")
    script = iter(
        [
            [ToolCallPart("refund", {"amount": 20}, tool_call_id="t1")],
            [ToolCallPart("refund", {"amount": 20.0}, tool_call_id="t2")],
            [TextPart("refunded")],
        ]
    )

    async def refund(amount: float) -> dict:
        """Refund the order."""
        return bank.refund_current({"amount": amount})

    tool = pydantic_ai_tool(
        log, refund, scope="user:42:request:7", status=bank.status, principal="user:1"
    )
    agent = Agent(FunctionModel(lambda m, i: ModelResponse(parts=next(script))), tools=[tool])
    assert agent.run_sync("refund my order").output == "refunded"
    assert [p for p, _, _ in bank.requests] == ["apply", "replay"] and len(bank.ledger) == 1
    (rec,) = log.records()
    assert rec.state == "ACKED" and rec.result == {"id": "e1"}
    assert conforms(log, bank, tmp_path)


def _graph(node):
    from langgraph.graph import END, START, MessagesState, StateGraph

    g = StateGraph(MessagesState)
    g.add_node("tools", node)
    g.add_edge(START, "tools")
    g.add_edge("tools", END)
    return g.compile()


def _async_refund_graph(tmp_path):
    """A bank, a log and a graph whose ToolNode runs an async-only refund tool."""
    pytest.importorskip("langgraph", reason="the 'frameworks' extra is not installed")
    from langchain_core.tools import tool as lc_tool

    from toolcommit.runtime.frameworks import langgraph_tool_node

    bank = Bank()
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="graph", provider="stripe")

    @lc_tool
    async def refund(amount: float) -> str:
        """Refund the order."""
        return json.dumps(bank.refund_current({"amount": amount}))

    return (
        bank,
        log,
        _graph(
            langgraph_tool_node(
                log, [refund], scope="user:42:request:7", status=bank.status, principal="user:1"
            )
        ),
    )


def test_langgraph_async_tool_node_awaits_the_tool_inside_the_guard(tmp_path):
    import asyncio

    from langchain_core.messages import AIMessage

    bank, log, graph = _async_refund_graph(tmp_path)
    for i in ("t1", "t2"):
        out = asyncio.run(
            graph.ainvoke(
                {
                    "messages": [
                        AIMessage(
                            "", tool_calls=[{"name": "refund", "args": {"amount": 20}, "id": i}]
                        )
                    ]
                }
            )
        )
        assert json.loads(out["messages"][-1].content) == {"id": "e1"}
    assert len(bank.requests) == 1
    assert log.records()[0].state == "ACKED"


def _crashed_mid_refund(tmp_path, amount):
    """A writer that died after dispatching a refund (its lease expired): the record a
    recovery through the registered tool must settle."""
    dead = IntentLog.sqlite(str(tmp_path / "i.db"), writer="dead", provider="stripe")
    d = dead.propose("t1", "refund", {"amount": amount}, "user:42:request:7", principal="user:1")
    dead.dispatch(d.key)
    dead.expire_leases("dead")
    return d.key


def test_pydantic_ai_tool_checks_status_when_wrapped_and_registers_for_recovery(tmp_path):
    from toolcommit.runtime import IntentLogError
    from toolcommit.runtime.frameworks import pydantic_ai_tool
    from toolcommit.runtime.shims import recover_settle

    bank = Bank()
    key = _crashed_mid_refund(tmp_path, 20)
    # the settler off: recovery by hand through the registration (the settler's own test:
    # test_settler_everywhere)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="agent", provider="stripe", settler=False)

    def refund(amount: float) -> dict:
        """Refund the order."""
        return bank.refund_current({"amount": amount})

    with pytest.raises(IntentLogError, match="pass status="):
        pydantic_ai_tool(log, refund, scope="user:42:request:7", principal="user:1")
    pydantic_ai_tool(log, refund, scope="user:42:request:7", status=bank.status, principal="user:1")
    assert recover_settle(log) == {key: "ACKED"}
    assert [p for p, _, _ in bank.requests] == ["replay"] and len(bank.ledger) == 1


def test_langgraph_refuses_an_async_tool_under_sync_invoke_before_anything_is_sent(tmp_path):
    from langchain_core.messages import AIMessage

    from toolcommit.runtime import IntentLogError

    bank, log, graph = _async_refund_graph(tmp_path)
    with pytest.raises(IntentLogError, match="nothing was sent") as e:
        graph.invoke(
            {
                "messages": [
                    AIMessage(
                        "", tool_calls=[{"name": "refund", "args": {"amount": 20}, "id": "t1"}]
                    )
                ]
            }
        )
    assert "graph.ainvoke" in str(e.value) and "may" not in str(e.value)
    assert bank.requests == [] and log.records() == []


def test_langgraph_tool_node_checks_status_when_built_and_registers_for_recovery(tmp_path):
    pytest.importorskip("langgraph", reason="the 'frameworks' extra is not installed")
    from langchain_core.tools import tool as lc_tool

    from toolcommit.runtime import IntentLogError
    from toolcommit.runtime.frameworks import langgraph_tool_node
    from toolcommit.runtime.shims import recover_settle

    bank = Bank()
    key = _crashed_mid_refund(tmp_path, 20)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="graph", provider="stripe", settler=False)

    @lc_tool
    def refund(amount: float) -> str:
        """Refund the order."""
        return json.dumps(bank.refund_current({"amount": amount}))

    with pytest.raises(IntentLogError, match="pass status="):
        langgraph_tool_node(log, [refund], scope="user:42:request:7", principal="user:1")
    langgraph_tool_node(
        log, [refund], scope="user:42:request:7", status=bank.status, principal="user:1"
    )
    assert recover_settle(log) == {key: "ACKED"}
    assert [p for p, _, _ in bank.requests] == ["replay"] and len(bank.ledger) == 1
