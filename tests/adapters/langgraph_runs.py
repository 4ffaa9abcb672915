"""LangGraph runs, offline (a fake chat model), dumped as astream_events v2 and checkpoints.

A refund tool that writes what it applies to a plain ledger (tool, args and scope: it
sends no idempotency key), a ToolNode, and a scripted model. The crash run uses two real
processes sharing a SQLite checkpointer: the first dies (os._exit) inside the tool, after
the refund applied; the second resumes from the checkpoint. Needs the ``frameworks`` extra.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import RetryPolicy

from toolcommit.checker.logs.adapters.langgraph import jsonable

THREAD = "user-42"
ORDER = {"order": "o-7", "amount": 20}


class _Model(FakeMessagesListChatModel):
    """langchain's fake chat model, answering by the conversation so far (the n-th answer
    after n AI messages), so a process that resumes a thread answers as the model would."""

    def bind_tools(self, tools, **kw):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        from langchain_core.outputs import ChatGeneration, ChatResult

        turn = sum(isinstance(m, AIMessage) for m in messages)
        return ChatResult(generations=[ChatGeneration(message=self.responses[turn])])


def _call(cid, args=ORDER):
    return AIMessage(content="", tool_calls=[{"name": "refund", "args": dict(args), "id": cid}])


def graph(responses, ledger_path, fail, retry=False, handle_errors=False, checkpointer=None):
    """The agent graph. `fail(attempt)` runs after the refund applied, on attempt 1, 2...:
    it may raise (a timeout) or kill the process. The tool is async and yields to the event
    loop before `fail`, so the stream has written the tool's start by then (deterministic:
    one thread, no clock)."""
    attempts = []

    @tool
    async def refund(order: str, amount: float) -> str:
        """Refund an order."""
        with open(ledger_path, "a") as f:
            f.write(
                json.dumps(
                    {"tool": "refund", "args": {"order": order, "amount": amount}, "scope": THREAD}
                )
                + "\n"
            )
        attempts.append(1)
        for _ in range(20):
            await asyncio.sleep(0)
        fail(len(attempts))
        return f"refunded {amount}"

    model = _Model(responses=responses)
    g = StateGraph(MessagesState)
    g.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    g.add_node(
        "tools",
        ToolNode([refund], handle_tool_errors=handle_errors),
        retry_policy=RetryPolicy(
            max_attempts=3, initial_interval=0.01, jitter=False, retry_on=TimeoutError
        )
        if retry
        else None,
    )
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g.compile(checkpointer=checkpointer)


async def _stream(app, inp, cfg, events_path):
    with open(events_path, "a") as f:
        async for ev in app.astream_events(inp, cfg, version="v2", durability="sync"):
            if ev["event"].startswith("on_tool_"):
                f.write(json.dumps(ev, default=jsonable) + "\n")
                f.flush()


def run(responses, events_path, ledger_path, fail=lambda n: None, **kw):
    """One in-process run streamed to `events_path`; returns the checkpointer."""
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    app = graph(responses, ledger_path, fail, checkpointer=saver, **kw)
    asyncio.run(
        _stream(
            app,
            {"messages": [HumanMessage("refund order o-7")]},
            {"configurable": {"thread_id": THREAD}},
            events_path,
        )
    )
    return saver


def dump_checkpoints(saver, path):
    with open(path, "w") as f:
        for t in saver.list({"configurable": {"thread_id": THREAD}}):
            f.write(json.dumps(t, default=jsonable) + "\n")


def timeout_once(n):
    if n == 1:
        raise TimeoutError("provider timed out after applying")


CLEAN = [_call("call_1"), AIMessage(content="done")]
REISSUED = [
    _call("call_1"),
    _call("call_2", {"order": "o-7", "amount": 20.0}),
    AIMessage(content="done"),
]


def crash_run(workdir, events1, events2, ledger_path, checkpoints_path):
    """Two processes: the first dies inside the refund after it applied, the second
    resumes the thread from the SQLite checkpoint."""
    db = os.path.join(workdir, "checkpoints.sqlite")
    for phase, events in (("first", events1), ("resume", events2)):
        subprocess.run(
            [sys.executable, __file__, phase, db, events, ledger_path, checkpoints_path],
            check=phase == "resume",
            timeout=120,
            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
        )


def _crash_main(phase, db, events, ledger_path, checkpoints_path):
    asyncio.run(_crash_phase(phase, db, events, ledger_path, checkpoints_path))


async def _crash_phase(phase, db, events, ledger_path, checkpoints_path):
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    cfg = {"configurable": {"thread_id": THREAD}}
    async with AsyncSqliteSaver.from_conn_string(db) as saver:
        die = (lambda n: os._exit(137)) if phase == "first" else (lambda n: None)
        app = graph(CLEAN, ledger_path, die, checkpointer=saver)
        inp = {"messages": [HumanMessage("refund order o-7")]} if phase == "first" else None
        await _stream(app, inp, cfg, events)
        with open(checkpoints_path, "w") as f:
            async for t in saver.alist(cfg):
                f.write(json.dumps(t, default=jsonable) + "\n")


if __name__ == "__main__":
    _crash_main(*sys.argv[1:])
