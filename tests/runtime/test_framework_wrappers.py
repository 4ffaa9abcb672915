"""The wrappers for the OpenAI Agents SDK, LangChain tools, Temporal activities and DBOS
steps, each with the real framework offline (a scripted model where the framework has one,
Temporal's ActivityEnvironment, DBOS on SQLite), sync and async, under the cases of
`fw_cases`: a lost ack plus a retry under a new call id is one refund; InDoubt and GaveUp
reach the model (or the workflow) as the truth. Needs the 'frameworks' extra."""

import asyncio
import json
import time

import pytest

from toolcommit.runtime import registry

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
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    class Scripted(Model):
        """Emits one function call per turn (by how many are in the conversation), then
        text."""

        async def get_response(self, system_instructions, input, *a, **kw):
            items = input if isinstance(input, list) else []
            turn = sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call")
            if turn < len(calls):
                name, args, cid = calls[turn]
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
                    id="msg",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                )
            return ModelResponse(output=[out], usage=Usage(), response_id=None)

        def stream_response(self, *a, **kw):
            raise NotImplementedError("the scripted model does not stream")

    return Scripted()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", CASES)
def test_openai_agents_tool_one_refund_and_the_truth(kind, form, tmp_path):
    pytest.importorskip("agents", reason="the 'frameworks' extra is not installed")
    from agents import Agent, RunConfig, Runner

    from toolcommit.runtime.frameworks import openai_agents_tool

    case = Case(kind, tmp_path)
    tool = openai_agents_tool(
        case.log,
        _body(case, form),
        scope="user:42:request:7",
        status=case.status,
        principal="user:1",
    )
    model = _scripted_agent_model(
        [("refund", {"order": "o-7", "amount": 20}, "call_A"), ("refund", ARGS, "call_B")]
    )
    # tracing off for this run only: the SDK's switch is global, and other tests trace
    result = Runner.run_sync(
        Agent(name="refunder", model=model, tools=[tool]),
        "refund o-7",
        run_config=RunConfig(tracing_disabled=True),
    )
    assert result.final_output == "done"
    items = result.to_input_list()
    assert [i["call_id"] for i in items if i.get("type") == "function_call_output"] == [
        "call_A",
        "call_B",
    ]
    case.check([i["output"] for i in items if i.get("type") == "function_call_output"])
    assert "refund" in registry.registered()


# ----- LangChain tools, under create_agent and its ToolRetryMiddleware -----------------------
def _scripted_chat_model(calls):
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class Scripted(BaseChatModel):
        """One tool call per turn (by how many tool answers the conversation holds), then
        text; binding tools changes nothing."""

        @property
        def _llm_type(self) -> str:
            return "scripted"

        def bind_tools(self, tools, **kw):
            return self

        def _generate(self, messages, stop=None, run_manager=None, **kw):
            turn = sum(isinstance(m, ToolMessage) for m in messages)
            if turn < len(calls):
                name, args, cid = calls[turn]
                msg = AIMessage("", tool_calls=[{"name": name, "args": args, "id": cid}])
            else:
                msg = AIMessage("done")
            return ChatResult(generations=[ChatGeneration(message=msg)])

    return Scripted()


def _agent(tool):
    from langchain.agents import create_agent
    from langchain.agents.middleware import ToolRetryMiddleware

    model = _scripted_chat_model(
        [("refund", {"order": "o-7", "amount": 20}, "call_A"), ("refund", ARGS, "call_B")]
    )
    retry = ToolRetryMiddleware(max_retries=2, initial_delay=0, jitter=False)
    return create_agent(model, [tool], middleware=[retry])


def _run(agent, form):
    question = {"messages": [("user", "refund o-7")]}
    out = agent.invoke(question) if form == "sync" else asyncio.run(agent.ainvoke(question))
    return [m for m in out["messages"] if m.type == "tool"]


def test_tool_retry_middleware_alone_refunds_twice_after_a_lost_ack():
    """The hazard: ToolRetryMiddleware retries a tool whose answer was lost."""
    pytest.importorskip("langchain.agents", reason="the 'frameworks' extra is not installed")
    from langchain_core.tools import tool as lc_tool

    applied = []

    @lc_tool
    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        applied.append((order, amount))
        if len(applied) == 1:
            raise TimeoutError("the answer was lost")
        return "refunded"

    _run(_agent(refund), "sync")
    assert len(applied) == 3  # the middleware's retry, then the model's


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", CASES)
def test_langchain_tool_under_tool_retry_middleware_one_refund_and_the_truth(kind, form, tmp_path):
    pytest.importorskip("langchain.agents", reason="the 'frameworks' extra is not installed")
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime.frameworks import langchain_tool

    case = Case(kind, tmp_path)
    fn = _body(case, form)
    inner = (
        StructuredTool.from_function(fn)
        if form == "sync"
        else StructuredTool.from_function(coroutine=fn)
    )
    tool = langchain_tool(
        case.log,
        inner,
        scope=lambda args, config: "user:42:request:7",
        status=case.status,
        principal="user:1",
    )
    told = _run(_agent(tool), form)
    assert [m.tool_call_id for m in told] == ["call_A", "call_B"]
    assert [m.status for m in told] == ["success" if kind == "lost_ack" else "error"] * 2
    case.check([m.content for m in told])
    assert "refund" in registry.registered()


def test_tool_retry_middleware_retry_after_the_ack_meets_the_record(tmp_path):
    """An exception after the effect does reach the middleware (here the log's sink, a
    shipper of its lines, fails once after the ACK is committed): its retry, the same call,
    meets the ACKED record and gets the saved result; the provider saw one request."""
    pytest.importorskip("langchain.agents", reason="the 'frameworks' extra is not installed")
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime import IntentLog
    from toolcommit.runtime.frameworks import langchain_tool

    case = Case("lost_ack", tmp_path)
    case.bank.lose = False
    failures = []

    def shipper(line):
        if line.get("to") == "ACKED" and not failures:
            failures.append(line)
            raise ConnectionError("the log shipper is down")

    log = IntentLog.sqlite(
        str(tmp_path / "shipped.db"), writer="agent", provider="stripe", sinks=[shipper]
    )
    tool = langchain_tool(
        log,
        StructuredTool.from_function(_body(case, "sync")),
        scope="user:42:request:7",
        status=case.status,
        principal="user:1",
    )
    told = _run(_agent(tool), "sync")
    assert failures and len(case.bank.requests) == 1 and len(case.bank.ledger) == 1
    assert [m.content for m in told] == [json.dumps({"id": "e1"})] * 2
    assert [e["call_id"] for e in log.events() if e["type"] == "proposal"] == [
        "call_A",
        "call_A",
        "call_B",
    ]


def test_langchain_async_only_tool_under_sync_invoke_is_refused_before_sending(tmp_path):
    pytest.importorskip("langchain_core", reason="the 'frameworks' extra is not installed")
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime import IntentLogError
    from toolcommit.runtime.frameworks import langchain_tool

    case = Case("lost_ack", tmp_path)
    tool = langchain_tool(
        case.log,
        StructuredTool.from_function(coroutine=_body(case, "async")),
        scope="user:42:request:7",
        status=case.status,
        principal="user:1",
    )
    with pytest.raises(IntentLogError, match="nothing was sent"):
        tool.invoke(ARGS)
    assert case.bank.requests == [] and case.log.records() == []


# ----- Temporal activities, in the SDK's ActivityEnvironment (no server) --------------------
def _activity_run(activity_fn, activity_id: str, form: str):
    import dataclasses

    from temporalio.testing import ActivityEnvironment

    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        activity_id=activity_id,
        activity_type="refund",
        workflow_id="refund-o-7",
        workflow_type="RefundWorkflow",
    )
    out = env.run(activity_fn, "o-7", 20.0)
    return asyncio.run(out) if form == "async" else out


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", CASES)
def test_temporal_activity_rescheduled_under_a_new_id_one_refund_and_the_truth(
    kind, form, tmp_path
):
    pytest.importorskip("temporalio", reason="the 'frameworks' extra is not installed")
    from temporalio.exceptions import ApplicationError

    from toolcommit.runtime.frameworks import temporal_activity

    case = Case(kind, tmp_path, writer="worker-1")
    act = temporal_activity(case.log, _body(case, form), status=case.status, principal="user:1")
    told = []
    for activity_id in ("1", "2"):  # the workflow schedules it again: a new activity id
        try:
            told.append(_activity_run(act, activity_id, form))
        except ApplicationError as e:
            assert e.type == ("InDoubt" if kind == "in_doubt" else "GaveUp")
            assert e.non_retryable == (kind == "gave_up")
            assert "may or may not have happened" in e.message
            told.append(e.details[0])
    case.check(told)
    assert {r.scope for r in case.log.records()} == {"refund-o-7"}
    assert [e["call_id"] for e in case.log.events() if e["type"] == "proposal"] == ["1", "2"]
    assert "refund" in registry.registered()


# ----- DBOS steps, DBOS on SQLite ------------------------------------------------------------
@pytest.fixture(scope="module")
def dbos_flows(tmp_path_factory):
    """DBOS launched once on a SQLite system database, with a workflow per form that calls
    the refund step twice (each a new step id) and returns what each call gave."""
    pytest.importorskip("dbos", reason="the 'frameworks' extra is not installed")
    from dbos import DBOS

    from toolcommit.runtime import EffectError, tell
    from toolcommit.runtime.frameworks import dbos_step

    now: dict = {}
    db = tmp_path_factory.mktemp("dbos") / "dbos.sqlite"
    DBOS(config={"name": "toolcommit-fw", "system_database_url": f"sqlite:///{db}"})

    def log():
        return now["case"].log

    def status(t):
        return now["case"].bank.status(t)

    def refund_sync(order: str, amount: float) -> dict:
        return now["case"].refund(order, amount)

    async def refund_async(order: str, amount: float) -> dict:
        return now["case"].refund(order, amount)

    step_sync = dbos_step(log, refund_sync, name="refund", status=status, principal="user:1")
    step_async = dbos_step(
        log, refund_async, name="refund_async", status=status, principal="user:1"
    )

    @DBOS.workflow()
    def flow_sync(order: str, amount: float) -> list:
        told = []
        for _ in range(2):
            try:
                told.append(step_sync(order, amount))
            except EffectError as e:
                told.append(tell(e))
        return told

    @DBOS.workflow()
    async def flow_async(order: str, amount: float) -> list:
        told = []
        for _ in range(2):
            try:
                told.append(await step_async(order, amount))
            except EffectError as e:
                told.append(tell(e))
        return told

    DBOS.launch()
    yield now, {"sync": flow_sync, "async": flow_async}
    DBOS.destroy()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", CASES)
def test_dbos_step_called_again_one_refund_and_the_truth(kind, form, tmp_path, dbos_flows):
    from dbos import SetWorkflowID

    now, flows = dbos_flows
    case = now["case"] = Case(kind, tmp_path, writer="dbos-1")
    with SetWorkflowID(f"refund-o-7-{kind}-{form}"):
        out = flows[form]("o-7", 20.0)
        told = asyncio.run(out) if form == "async" else out
    case.check(told)
    assert {r.scope for r in case.log.records()} == {f"refund-o-7-{kind}-{form}"}
    calls = [e["call_id"] for e in case.log.events() if e["type"] == "proposal"]
    assert len(set(calls)) == 2 and all(c.startswith(f"refund-o-7-{kind}-{form}:") for c in calls)
    assert {"refund", "refund_async"} <= registry.registered()


# ----- recovery through the registered tools -------------------------------------------------
def _openai_tool(case, form):
    from toolcommit.runtime.frameworks import openai_agents_tool

    openai_agents_tool(
        case.log, _body(case, form), scope="s", status=case.status, principal="user:1"
    )


def _langchain_tool(case, form):
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime.frameworks import langchain_tool

    fn = _body(case, form)
    inner = (
        StructuredTool.from_function(fn)
        if form == "sync"
        else StructuredTool.from_function(coroutine=fn)
    )
    langchain_tool(case.log, inner, scope="s", status=case.status, principal="user:1")


def _temporal_activity(case, form):
    from toolcommit.runtime.frameworks import temporal_activity

    temporal_activity(case.log, _body(case, form), status=case.status, principal="user:1")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize(
    "wrap",
    [_openai_tool, _langchain_tool, _temporal_activity],
    ids=["openai-agents", "langchain", "temporal"],
)
def test_a_wrapped_tool_is_registered_and_its_logs_settler_runs_it_once(wrap, form, tmp_path):
    """A record a dead writer left RECORDED (its process died before sending) is settled by
    the settler of the wrapped tool's log, through the wrapper's registration with that log,
    with nobody calling recover: the refund applied once, ACKED."""
    pytest.importorskip("agents", reason="the 'frameworks' extra is not installed")
    pytest.importorskip("langchain_core", reason="the 'frameworks' extra is not installed")
    pytest.importorskip("temporalio", reason="the 'frameworks' extra is not installed")
    from toolcommit.runtime import IntentLog

    case = Case("lost_ack", tmp_path, writer="pod-a", settle_every=0.05)
    dying = IntentLog.sqlite(
        str(tmp_path / "lost_ack.db"), writer="pod-b", lease=0.05, provider="stripe"
    )
    dying.propose("call_A", "refund", ARGS, "s", principal="user:1")  # then pod-b died
    wrap(case, form)  # the live pod wraps its tool: its log's settler starts
    deadline = time.monotonic() + 30
    while not case.log.records()[0].settled:  # pod-b's lease runs out, then the settler
        assert time.monotonic() < deadline, "the settler never settled pod-b's record"
        time.sleep(0.01)
    (rec,) = case.log.records()
    assert (rec.state, rec.owner, rec.result) == ("ACKED", "pod-a", {"id": "e1"})
    assert len(case.bank.ledger) == 1
    assert [e["to"] for e in case.log.events() if e.get("type") == "transition"][-1] == "ACKED"
    case.log.close()
