"""A settler wherever a tool is guarded (issue 39): under each framework wrapper, with the real
framework offline, a call whose every answer is lost (the refund applied) tells the model
InDoubt; the log's settler, started when the tool was wrapped or first called, then reads the
refund once the design's delay bound has passed and records it ACKED, in the same live
process, with nobody calling recover. CrewAI's case runs in its own interpreter
(`test_framework_crewai`). Needs the 'frameworks' extra."""

import asyncio

import pytest

from .fw_cases import ARGS, Case, decoded, settled_by_the_settler
from .test_framework_wrappers import (
    _activity_run,
    _body,
    _scripted_agent_model,
    _scripted_chat_model,
)

DELAY = 0.5  # the design's delay bound (seconds): the status read waits it out
EVERY = 0.05  # the settler's longest pause


def _case(tmp_path) -> Case:
    return Case("in_doubt", tmp_path, writer="pod-a", delay_bound=DELAY, settle_every=EVERY)


def _pydantic_ai(case, form):
    pytest.importorskip("pydantic_ai", reason="the 'frameworks' extra is not installed")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from toolcommit.runtime.frameworks import pydantic_ai_tool

    script = iter([[ToolCallPart("refund", ARGS, tool_call_id="call_A")], [TextPart("done")]])
    told = []

    def model(messages, info):
        told.extend(
            p.content
            for m in messages
            for p in m.parts
            if getattr(p, "part_kind", "") == "tool-return"
        )
        return ModelResponse(parts=next(script))

    tool = pydantic_ai_tool(
        case.log, _body(case, form), scope="user:42:request:7", status=case.status, principal="u1"
    )
    agent = Agent(FunctionModel(model), tools=[tool])
    if form == "sync":
        agent.run_sync("refund o-7")
    else:
        asyncio.run(agent.run("refund o-7"))
    return told[0]


def _langgraph(case, form):
    pytest.importorskip("langgraph", reason="the 'frameworks' extra is not installed")
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime.frameworks import langgraph_tool_node

    from .test_frameworks import _graph

    fn = _body(case, form)
    inner = (
        StructuredTool.from_function(fn)
        if form == "sync"
        else StructuredTool.from_function(coroutine=fn)
    )
    graph = _graph(
        langgraph_tool_node(
            case.log, [inner], scope="user:42:request:7", status=case.status, principal="u1"
        )
    )
    ask = {"messages": [AIMessage("", tool_calls=[{"name": "refund", "args": ARGS, "id": "A"}])]}
    out = graph.invoke(ask) if form == "sync" else asyncio.run(graph.ainvoke(ask))
    return out["messages"][-1].content


def _openai_agents(case, form):
    pytest.importorskip("agents", reason="the 'frameworks' extra is not installed")
    from agents import Agent, RunConfig, Runner

    from toolcommit.runtime.frameworks import openai_agents_tool

    tool = openai_agents_tool(
        lambda: case.log,  # opened lazily: the settler starts at the first call
        _body(case, form),
        scope="user:42:request:7",
        status=case.status,
        principal="u1",
    )
    result = Runner.run_sync(
        Agent(name="refunder", model=_scripted_agent_model([("refund", ARGS, "A")]), tools=[tool]),
        "refund o-7",
        run_config=RunConfig(tracing_disabled=True),
    )
    (out,) = [i for i in result.to_input_list() if i.get("type") == "function_call_output"]
    return out["output"]


def _langchain(case, form):
    pytest.importorskip("langchain.agents", reason="the 'frameworks' extra is not installed")
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime.frameworks import langchain_tool

    fn = _body(case, form)
    inner = (
        StructuredTool.from_function(fn)
        if form == "sync"
        else StructuredTool.from_function(coroutine=fn)
    )
    tool = langchain_tool(
        case.log, inner, scope="user:42:request:7", status=case.status, principal="u1"
    )
    agent = create_agent(_scripted_chat_model([("refund", ARGS, "A")]), [tool])
    ask = {"messages": [("user", "refund o-7")]}
    out = agent.invoke(ask) if form == "sync" else asyncio.run(agent.ainvoke(ask))
    (told,) = [m for m in out["messages"] if m.type == "tool"]
    return told.content


def _temporal(case, form):
    pytest.importorskip("temporalio", reason="the 'frameworks' extra is not installed")
    from temporalio.exceptions import ApplicationError

    from toolcommit.runtime.frameworks import temporal_activity

    act = temporal_activity(lambda: case.log, _body(case, form), status=case.status, principal="u1")
    try:
        return _activity_run(act, "1", form)
    except ApplicationError as e:
        return e.details[0]


@pytest.fixture(scope="module")
def dbos_flow(tmp_path_factory):
    """DBOS on a SQLite system database, a workflow per form calling the refund step once."""
    pytest.importorskip("dbos", reason="the 'frameworks' extra is not installed")
    from dbos import DBOS

    from toolcommit.runtime import EffectError, tell
    from toolcommit.runtime.frameworks import dbos_step

    now: dict = {}
    db = tmp_path_factory.mktemp("dbos") / "dbos.sqlite"
    DBOS(config={"name": "toolcommit-settler", "system_database_url": f"sqlite:///{db}"})

    def refund_sync(order: str, amount: float) -> dict:
        return now["case"].refund(order, amount)

    async def refund_async(order: str, amount: float) -> dict:
        return now["case"].refund(order, amount)

    def opener():
        return now["case"].log

    def status(t):
        return now["case"].bank.status(t)

    kw = {"status": status, "principal": "u1"}
    step_sync = dbos_step(opener, refund_sync, name="refund", **kw)
    step_async = dbos_step(opener, refund_async, name="refund_async", **kw)

    @DBOS.workflow()
    def once_sync(order: str, amount: float):
        try:
            return step_sync(order, amount)
        except EffectError as e:
            return tell(e)

    @DBOS.workflow()
    async def once_async(order: str, amount: float):
        try:
            return await step_async(order, amount)
        except EffectError as e:
            return tell(e)

    DBOS.launch()
    yield now, {"sync": once_sync, "async": once_async}
    DBOS.destroy()


def _dbos(case, form, flow):
    from dbos import SetWorkflowID

    now, flows = flow
    now["case"] = case
    with SetWorkflowID(f"settler-{form}"):
        out = flows[form](*ARGS.values())
        return asyncio.run(out) if form == "async" else out


WRAPPERS = {
    "pydantic-ai": _pydantic_ai,
    "langgraph": _langgraph,
    "openai-agents": _openai_agents,
    "langchain": _langchain,
    "temporal": _temporal,
    "dbos": _dbos,
}


@pytest.mark.parametrize("form", ("sync", "async"))
@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_a_lost_ack_under_each_wrapper_is_settled_by_the_live_pods_settler(
    wrapper, form, tmp_path, request
):
    case = _case(tmp_path)
    extra = [request.getfixturevalue("dbos_flow")] if wrapper == "dbos" else []
    told = decoded(WRAPPERS[wrapper](case, form, *extra))
    assert isinstance(told, dict) and told["toolcommit"] == "InDoubt", told  # the truth
    assert "may or may not have happened" in told["message"]
    assert told["state"] == "RECONCILING"  # in doubt when the call returned ...
    settled_by_the_settler(case)  # ... then settled by the pod's settler, no recover
    case.log.close()
    assert not any(t.is_alive() for t in case.log._threads.values())
