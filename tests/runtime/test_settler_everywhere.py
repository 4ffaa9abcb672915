"""A settler wherever a tool is guarded (issue 39): under each framework wrapper, with the real
framework offline, a call whose every answer is lost (the refund applied) tells the model
InDoubt; the log's settler, started when the tool was wrapped or first called, then reads the
refund once the design's delay bound has passed and records it ACKED, in the same live
process, with nobody calling recover. CrewAI's case runs in its own interpreter
(`test_framework_crewai`). Needs the 'frameworks' extra."""

import asyncio
import threading
import time

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


# ----- close() never releases a lease under a replay in flight -------------------------------
def _replay_in_flight(tmp_path):
    """A pod restarted after a crash (the record taken over, UNKNOWN) whose settler is
    replaying the refund, held in flight until `release` is set."""
    from toolcommit.runtime import IntentLog, current_ticket, effectful

    from .ledger import Bank

    db, bank = str(tmp_path / "i.db"), Bank()
    dead = IntentLog.sqlite(db, "pod-a", provider="stripe", settler=False)
    d = dead.propose("t1", "refund", ARGS, "user:42:request:7", principal="u1", dispatch=True)
    bank.refund(d.ticket, ARGS)  # applied; then the pod died before its ack
    dead.store.close()
    log = IntentLog.sqlite(db, "pod-a", provider="stripe", lease=30, settle_every=EVERY)
    in_flight, release = threading.Event(), threading.Event()

    @effectful(log, tool="refund", scope="user:42:request:7", status=bank.status, principal="u1")
    def refund(order: str, amount: float) -> dict:
        in_flight.set()
        assert release.wait(60), "the test never released the replay"
        return bank.refund(current_ticket(), {"order": order, "amount": amount})

    assert in_flight.wait(30), "the settler never replayed the record it took over"
    return db, log, release, bank


def test_close_waits_for_a_replay_under_way_then_releases_the_settled_record(tmp_path):
    from toolcommit.runtime import IntentLog

    db, log, release, bank = _replay_in_flight(tmp_path)
    closing = threading.Thread(target=log.close)
    closing.start()
    end = time.monotonic() + 30
    while not log.closing:  # close began: it waits for the settle pass under way
        assert time.monotonic() < end, "close never began"
        time.sleep(0.001)
    release.set()
    closing.join(30)
    assert not closing.is_alive()
    after = IntentLog.sqlite(db, "reader", provider="stripe", settler=False)
    assert [(r.state, r.result) for r in after.records()] == [("ACKED", {"id": "e1"})]
    assert len(bank.ledger) == 1
    after.close()


def test_close_hands_a_replay_still_in_flight_back_with_its_lease(tmp_path):
    """close() waits at most 5 s for the settler; a replay still in flight then keeps its
    lease (before: released under it, so another pod took the record and replayed it while
    the first replay was still on its way)."""
    from toolcommit.runtime import IntentLog

    db, log, release, bank = _replay_in_flight(tmp_path)
    try:
        log.close()  # the replay is still in flight after close's bounded wait
        other = IntentLog.sqlite(db, "pod-b", provider="stripe", settler=False)
        (rec,) = other.records()
        assert (rec.state, rec.owner) == ("RECONCILING", "pod-a")
        assert other.lease_left(rec.key) > 0 and other.recover() == []  # not taken under it
        other.close()
    finally:
        release.set()


# ----- recover --tools MODULE finds framework-wrapped tools by their module ------------------
TOOLS = """
import json, os
from toolcommit.runtime import IntentLog, current_ticket
from toolcommit.runtime.frameworks import temporal_activity

LEDGER = os.environ["BANK"]


def open_log():
    return IntentLog.sqlite(os.environ["DB"], "pod-a", provider="stripe")


def status(t):
    found = [e for e in effects() if e["key"] == t.key]
    return found[0]["answer"] if found else None


def effects():
    try:
        return [json.loads(x) for x in open(LEDGER)]
    except FileNotFoundError:
        return []


def refund(order: str, amount: float) -> dict:
    t = current_ticket()
    if status(t) is None:
        with open(LEDGER, "a") as f:
            f.write(json.dumps({"key": t.key, "answer": {"id": "re_1"}}) + "\\n")
    return status(t)


refund_activity = temporal_activity(open_log, refund, status=status, principal="u1")
"""


def test_recover_tools_finds_a_framework_wrapped_tool_by_its_module(tmp_path, monkeypatch, capsys):
    """The module (wrapping its refund with `temporal_activity`, its log given as a function
    as the docs show) was imported before recover ran in this process: recover --tools
    finds its tool by the module it was written in, no shims.register, and replays the
    dead pod's refund once."""
    pytest.importorskip("temporalio", reason="the 'frameworks' extra is not installed")
    import importlib

    from toolcommit.checker.cli import main
    from toolcommit.runtime import IntentLog

    (tmp_path / "settler_refunds.py").write_text(TOOLS)
    monkeypatch.setenv("BANK", str(tmp_path / "bank.jsonl"))
    monkeypatch.setenv("DB", str(tmp_path / "i.db"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module("settler_refunds")  # imported before recover runs
    dead = IntentLog.sqlite(str(tmp_path / "i.db"), "pod-a", provider="stripe", settler=False)
    d = dead.propose("t1", "refund", ARGS, "wf-1", principal="u1", dispatch=True)
    dead.expire_leases("pod-a")
    dead.store.close()  # the pod died holding it, its lease run out
    argv = ["recover", str(tmp_path / "i.db"), "--provider", "stripe", "--tools", mod.__name__]
    assert main([*argv, "--writer", "sweeper"]) == 0, capsys.readouterr()
    assert "1 record(s) of dead writers taken over: 1 ACKED" in capsys.readouterr().out
    after = IntentLog.sqlite(str(tmp_path / "i.db"), "reader", provider="stripe", settler=False)
    assert [(r.key, r.state, r.result) for r in after.records()] == [
        (d.key, "ACKED", {"id": "re_1"})
    ]
    assert len(mod.effects()) == 1
    after.close()
