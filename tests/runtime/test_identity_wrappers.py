"""Each framework wrapper takes `principal=` and `identity=` as `effectful` does: a tool
wrapped with no principal on a log whose design holds a re-ask (every shipped design) is
refused when it is wrapped, and identity fields its framework's schema does not declare are
refused there too; the identity comes from the framework's own schema (Pydantic AI's
signature, LangChain's ``args_schema``, the Agents SDK's ``params_json_schema``, the
function's annotations for Temporal and DBOS). Needs the 'frameworks' extra."""

import asyncio

import pytest

from toolcommit.runtime import IdentityError, IntentLog, IntentLogError

pytest.importorskip("langchain_core", reason="the 'frameworks' extra is not installed")


def refund(order: str, amount: int, note: str = "") -> dict:
    """Refund an order."""
    return {"id": "re_1"}


def _pydantic(log, **kw):
    from toolcommit.runtime.frameworks import pydantic_ai_tool

    return pydantic_ai_tool(log, refund, scope="r", status=lambda t: None, **kw)


def _langgraph(log, **kw):
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime.frameworks import langgraph_tool_node

    if "identity" in kw:
        kw["identity"] = {"refund": kw["identity"]}
    tool = StructuredTool.from_function(refund)
    return langgraph_tool_node(log, [tool], scope="r", status=lambda t: None, **kw)


def _langchain(log, **kw):
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime.frameworks import langchain_tool

    tool = StructuredTool.from_function(refund)
    return langchain_tool(log, tool, scope="r", status=lambda t: None, **kw)


def _agents(log, **kw):
    from toolcommit.runtime.frameworks import openai_agents_tool

    return openai_agents_tool(log, refund, scope="r", status=lambda t: None, **kw)


def _temporal(log, **kw):
    from toolcommit.runtime.frameworks import temporal_activity

    return temporal_activity(log, refund, scope="r", status=lambda t: None, **kw)


def _dbos(log, **kw):
    from toolcommit.runtime.frameworks import dbos_step

    return dbos_step(log, refund, scope="r", status=lambda t: None, **kw)


WRAPPERS = {
    "pydantic_ai": _pydantic,
    "langgraph": _langgraph,
    "langchain": _langchain,
    "openai_agents": _agents,
    "temporal": _temporal,
    "dbos": _dbos,
}


@pytest.fixture
def log(tmp_path):
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="w1", provider="stripe")
    yield log
    log.close()


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_a_wrapper_with_no_principal_is_refused_when_wrapped(log, name):
    with pytest.raises(IntentLogError, match="pass principal="):
        WRAPPERS[name](log)
    assert log.events() == []


@pytest.mark.parametrize("name", list(WRAPPERS))
def test_a_wrappers_identity_is_checked_against_its_frameworks_schema(log, name):
    with pytest.raises(IdentityError, match="names amt, which the tool does not declare"):
        WRAPPERS[name](log, principal="user:42", identity=("order", "amt"))
    WRAPPERS[name](log, principal="user:42", identity=("order", "amount"))  # declared: taken


def test_the_temporal_activity_normalizes_by_the_functions_annotations(log):
    """A re-run of the activity with ``"20"`` for the int amount and the note given as its
    default is the same intent: the saved answer, no second effect."""
    pytest.importorskip("temporalio")
    from temporalio.testing import ActivityEnvironment

    from toolcommit.runtime.frameworks import temporal_activity

    sent = []

    def pay(order: str, amount: int, note: str = "") -> dict:
        sent.append((order, amount, note))
        return {"id": f"re_{len(sent)}"}

    act = temporal_activity(log, pay, status=lambda t: None, principal=lambda info, args: "u:1")
    env = ActivityEnvironment()
    first = env.run(act, "o1", 20)
    again = env.run(act, "o1", "20", "")
    assert first == again == {"id": "re_1"} and sent == [("o1", 20, "")]
    line = [e for e in log.events() if e["type"] == "proposal"][-1]
    assert line["principal"] == "u:1" and line["args"] == {"order": "o1", "amount": 20, "note": ""}


def test_the_langchain_tool_takes_its_identity_from_the_args_schema(log):
    from langchain_core.tools import StructuredTool

    from toolcommit.runtime.frameworks import langchain_tool

    sent = []

    def pay(order: str, amount: int, note: str = "") -> str:
        """Pay."""
        sent.append(amount)
        return "re_1"

    tool = langchain_tool(
        log,
        StructuredTool.from_function(pay),
        scope="r",
        status=lambda t: None,
        principal="u:1",
        identity=("order", "amount"),
    )
    assert tool.invoke({"order": "o1", "amount": 20}) == "re_1"
    assert asyncio.run(tool.ainvoke({"order": "o1", "amount": 20, "note": "again"})) == "re_1"
    assert sent == [20]
    line = [e for e in log.events() if e["type"] == "proposal"][-1]
    assert line["identity"] == ["order", "amount"] and line["decision"] == "duplicate"
