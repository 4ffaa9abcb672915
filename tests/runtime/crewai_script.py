"""The CrewAI wrapper's cases, run by test_framework_crewai.py under CrewAI's own interpreter
(``.venv-crewai``: CrewAI's pins clash with the 'frameworks' and 'gateway' extras), offline:
a scripted CrewAI LLM (native function calling) drives an Agent in a Crew that calls the
refund tool, then calls it again under a new call id, as a model retries after a lost answer.

Usage: python crewai_script.py TMPDIR CASE... ; prints one JSON line per case:
{"case": name, "ok": bool, "error": traceback or null}. A case is ``KIND-FORM`` (`fw_cases`'
kinds; FORM: function, async (under ``akickoff``), subclass: a BaseTool with ``_run`` and
``_arun``, under a Crew; arun: that tool's ``arun`` called twice), ``unguarded`` (the hazard: CrewAI alone refunds
twice), ``recovery-FORM`` (the live pod's settler runs the registered tool once for a dead
pod's record) or ``settler-FORM`` (a lost ack settled by the live pod's settler, nobody
calling recover)."""

import asyncio
import json
import os
import socket
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
# no telemetry, no tracing prompt; and no connection leaves loopback (offline, checked)
os.environ.update(
    CREWAI_DISABLE_TELEMETRY="true",
    OTEL_SDK_DISABLED="true",
    CREWAI_TRACING_ENABLED="false",
    CREWAI_DISABLE_TRACKING="true",
)
_connect = socket.socket.connect


def _loopback_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if (
        isinstance(host, str)
        and host not in ("127.0.0.1", "::1", "localhost")
        and self.family in (socket.AF_INET, socket.AF_INET6)
    ):
        raise ConnectionRefusedError(f"offline test: no connection to {address!r}")
    return _connect(self, address)


socket.socket.connect = _loopback_only

from crewai import Agent, Crew, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402
from crewai.tools import BaseTool  # noqa: E402
from crewai.tools import tool as crewai_tool_decorator  # noqa: E402

from tests.runtime.fw_cases import ARGS, CASES, Case, decoded, settled_by_the_settler  # noqa: E402
from toolcommit.runtime import IntentLog, registry  # noqa: E402
from toolcommit.runtime.frameworks import crewai_tool  # noqa: E402

CALLS = [("refund", {"order": "o-7", "amount": 20}, "call_A"), ("refund", ARGS, "call_B")]
FORMS = ("function", "async", "subclass", "arun")


class Scripted(BaseLLM):
    """One native tool call per turn (by how many tool answers the conversation holds),
    then text; keeps the last conversation it was given."""

    last: list = []

    def call(
        self,
        messages,
        tools=None,
        callbacks=None,
        available_functions=None,
        from_task=None,
        from_agent=None,
        response_model=None,
    ):
        msgs = messages if isinstance(messages, list) else []
        self.last = list(msgs)
        turn = sum(1 for m in msgs if m.get("role") == "tool")
        if turn < len(CALLS):
            name, args, cid = CALLS[turn]
            return [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        return "done"

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 8192


def _tool(case: Case, form: str):
    """The refund tool as the user has it: a function, an ``async def``, a BaseTool."""
    if form == "function":

        def refund(order: str, amount: float) -> dict:
            """Refund an order."""
            return case.refund(order, amount)

        return refund
    if form == "async":

        async def refund(order: str, amount: float) -> dict:
            """Refund an order."""
            return case.refund(order, amount)

        return refund

    class Refund(BaseTool):
        name: str = "refund"
        description: str = "Refund an order."

        def _run(self, order: str, amount: float) -> dict:
            return case.refund(order, amount)

        async def _arun(self, order: str, amount: float) -> dict:
            return case.refund(order, amount)

    return Refund()


def _told(value):
    """What CrewAI shows the model for a tool's return (a ToolFailure's message)."""
    from crewai.tools.tool_failure import ToolFailure

    return value.as_agent_message() if isinstance(value, ToolFailure) else value


def _crew(tool) -> tuple:
    llm = Scripted(model="scripted")
    agent = Agent(
        role="refunder", goal="refund orders", backstory="a support agent", llm=llm, tools=[tool]
    )
    task = Task(description="refund o-7", expected_output="done", agent=agent)
    return Crew(agents=[agent], tasks=[task]), llm


def one_refund_and_the_truth(kind: str, form: str, tmp: Path) -> None:
    case = Case(kind, tmp)
    tool = crewai_tool(
        case.log,
        _tool(case, "subclass" if form == "arun" else form),
        scope="user:42:request:7",
        status=case.status,
        principal="user:1",
    )
    if form == "arun":
        case.check([_told(asyncio.run(tool.arun(**args))) for _, args, _ in CALLS])
        return
    crew, llm = _crew(tool)
    out = asyncio.run(crew.akickoff()) if form == "async" else crew.kickoff()
    assert out.raw == "done", out.raw
    told = [m for m in llm.last if m.get("role") == "tool"]
    assert [m["tool_call_id"] for m in told] == ["call_A", "call_B"], told
    case.check([m["content"] for m in told])
    failures = out.tasks_output[0].tool_failures
    assert len(failures) == (0 if kind == "lost_ack" else 2), failures
    assert "refund" in registry.registered()


def unguarded(tmp: Path) -> None:
    """The hazard: CrewAI alone runs the refund again after its lost answer."""
    applied = []

    @crewai_tool_decorator
    def refund(order: str, amount: float) -> str:
        """Refund an order."""
        applied.append((order, amount))
        if len(applied) == 1:
            raise TimeoutError("the answer was lost")
        return "refunded"

    crew, _ = _crew(refund)
    crew.kickoff()
    assert applied == [("o-7", 20.0)] * 2, applied


def recovery(form: str, tmp: Path) -> None:
    """A record a dead writer left RECORDED is settled by the settler of the wrapped tool's
    log, through the wrapper's registration with it, nobody calling recover: the refund
    applied once, ACKED."""
    case = Case("lost_ack", tmp, writer="pod-a", settle_every=0.05)
    dying = IntentLog.sqlite(
        str(tmp / "lost_ack.db"), writer="pod-b", lease=0.05, provider="stripe"
    )
    dying.propose("call_A", "refund", ARGS, "s", principal="user:1")  # then pod-b died
    crewai_tool(case.log, _tool(case, form), scope="s", status=case.status, principal="user:1")
    deadline = time.monotonic() + 30
    while not case.log.records()[0].settled:  # pod-b's lease runs out, then the settler
        assert time.monotonic() < deadline, "the settler never settled pod-b's record"
        time.sleep(0.01)
    (rec,) = case.log.records()
    assert (rec.state, rec.owner, rec.result) == ("ACKED", "pod-a", {"id": "e1"}), rec
    assert len(case.bank.ledger) == 1
    case.log.close()


def settler(form: str, tmp: Path) -> None:
    """A call whose every answer is lost (the refund applied) tells the model InDoubt; the
    log's settler, started when the tool was wrapped, reads the refund once the delay
    bound (0.5 s) has passed and records it ACKED, nobody calling recover."""
    case = Case("in_doubt", tmp, writer="pod-a", delay_bound=0.5, settle_every=0.05)
    tool = crewai_tool(
        lambda: case.log,  # opened lazily: the settler starts at the first call
        _tool(case, form),
        scope="user:42:request:7",
        status=case.status,
        principal="user:1",
    )
    out = asyncio.run(tool.arun(**ARGS)) if form == "async" else tool.run(**ARGS)
    told = decoded(_told(out))
    assert told["toolcommit"] == "InDoubt" and told["state"] == "RECONCILING", told
    settled_by_the_settler(case)
    case.log.close()


def run(name: str, tmp: Path) -> None:
    if name == "unguarded":
        return unguarded(tmp)
    if name.startswith("recovery-"):
        return recovery(name.split("-", 1)[1], tmp)
    if name.startswith("settler-"):
        return settler(name.split("-", 1)[1], tmp)
    kind, form = name.split("-")
    assert kind in CASES and form in FORMS, name
    return one_refund_and_the_truth(kind, form, tmp)


def main(argv: list) -> int:
    base = Path(argv[0])
    for name in argv[1:]:
        tmp = base / name
        tmp.mkdir(parents=True)
        try:
            run(name, tmp)
            line = {"case": name, "ok": True, "error": None}
        except Exception:
            line = {"case": name, "ok": False, "error": traceback.format_exc()}
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
