"""Traces produced now, offline, by the real frameworks (Pydantic AI with FunctionModel,
LangGraph with a fake chat model, two processes and a SQLite checkpointer for the crash;
the OpenAI Agents SDK with a custom Model; DBOS on SQLite killed inside a step and
recovered; Temporal histories built with the SDK's types, since no Temporal server runs
here, and replayed by its Replayer) give the verdicts pinned for the fixtures. Needs the
``frameworks`` extra; CI installs it."""

from __future__ import annotations

import importlib.util
import json

import pytest

from . import make_traces
from .traces import CASES, verdict_of

# real frameworks produce their traces afresh (about 19 s): with -m slow; the pinned
# fixtures' verdicts stay in the default suite (test_trace_fixtures.py)
pytestmark = pytest.mark.slow

# found, not imported: importing the frameworks takes seconds, which every worker would
# spend at collection; make_traces imports them when it runs
if any(
    importlib.util.find_spec(m) is None
    for m in (
        "pydantic_ai",
        "langgraph",
        "langgraph.checkpoint.sqlite",
        "agents",
        "dbos",
        "temporalio",
    )
):
    pytest.skip(
        "the frameworks extra is not installed (pip install -e '.[frameworks]')",
        allow_module_level=True,
    )

FRAMEWORK_CASES = [c for c in CASES if c["made_by"] == "frameworks"]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("traces")
    make_traces.main(str(out))
    return out


@pytest.mark.parametrize("case", FRAMEWORK_CASES, ids=[c["name"] for c in FRAMEWORK_CASES])
def test_freshly_produced_trace_gives_the_pinned_verdict(fresh, case):
    argv = [a.replace("{T}", str(fresh)) for a in case["argv"]]
    verdict, certain, possible, *_ = verdict_of(argv)
    assert (verdict, certain, possible) == (case["verdict"], case["certain"], case["possible"])


def test_pydantic_ai_reissues_a_retried_call_under_a_new_id(fresh):
    text = (fresh / "pydantic-reissue.otlp.json").read_text()
    assert '"pydantic_ai.tool.retry.cause"' in text
    assert [
        json.loads(line)["idempotency_key"]
        for line in (fresh / "pydantic-reissue-ledger.jsonl").read_text().splitlines()
    ] == ["call_A", "call_B"]


def test_langgraph_keeps_the_task_id_across_a_retry_and_a_resume(fresh):
    def tasks(name):
        return {
            json.loads(line)["metadata"]["langgraph_checkpoint_ns"]
            for line in (fresh / name).read_text().splitlines()
        }

    assert len(tasks("langgraph-retry.jsonl")) == 1
    assert tasks("langgraph-crash-1.jsonl") == tasks("langgraph-crash-2.jsonl")


def test_openai_agents_spans_carry_no_call_id_but_the_run_items_do(fresh):
    text = (fresh / "openai-agents-reissue.jsonl").read_text()
    spans = [json.loads(line) for line in text.splitlines()]
    functions = [s for s in spans if (s.get("span_data") or {}).get("type") == "function"]
    assert functions and not any("call_A" in json.dumps(s) for s in functions)
    items = json.loads((fresh / "openai-agents-reissue-items.json").read_text())
    assert [i["call_id"] for i in items if i.get("type") == "function_call"] == [
        "call_s",
        "call_A",
        "call_B",
    ]


def test_dbos_recovery_ran_the_killed_refund_step_again_under_one_key(fresh):
    keys = [
        json.loads(line)["idempotency_key"]
        for line in (fresh / "dbos-crash-ledger.jsonl").read_text().splitlines()
    ]
    assert keys == ["refund-o-7:2", "refund-o-7:2"]
    tables = json.loads((fresh / "dbos-crash.json").read_text())
    assert [w["recovery_attempts"] for w in tables["workflow_status"]] == [2]
    assert [s["function_name"] for s in tables["operation_outputs"]] == ["check_order", "refund"]


def test_the_system_database_is_read_without_a_write(fresh):
    db = fresh / "dbos-crash.sqlite"
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    verdict, *_ = verdict_of(["--from", "dbos", str(db), "--effectful", "refund"])
    assert verdict == "INCONCLUSIVE"
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before
    assert sorted(p.name for p in fresh.iterdir() if p.name.startswith("dbos-crash.sqlite")) == [
        "dbos-crash.sqlite"
    ]


def test_temporal_replayer_rejects_a_history_the_workflow_would_not_produce(fresh):
    """The check the built histories pass has teeth: drop the second scheduling of the
    resend history and the SDK's Replayer refuses it."""
    import temporal_runs

    history = json.loads((fresh / "temporal-resend.json").read_text())
    temporal_runs.replay(json.dumps(history))
    history["events"] = [
        e
        for e in history["events"]
        if e.get("activityTaskScheduledEventAttributes", {}).get("activityId") != "2"
    ]
    with pytest.raises(Exception, match="out of order|[Nn]ondetermin"):
        temporal_runs.replay(json.dumps(history))


def test_temporal_snake_case_json_reads_as_the_camel_case_json(fresh):
    """protobuf's other JSON spelling (preserving field names), made by protobuf's own
    serializer from the SDK's history, gives the same report."""
    from google.protobuf.json_format import MessageToJson
    from temporalio.api.history.v1 import History
    from temporalio.client import WorkflowHistory

    text = (fresh / "temporal-retry.json").read_text()
    h = WorkflowHistory.from_json("refund-o-7", text)
    snake = fresh / "temporal-retry-snake.json"
    snake.write_text(MessageToJson(History(events=h.events), preserving_proto_field_name=True))
    assert '"event_type"' in snake.read_text()
    assert (
        verdict_of(["--from", "temporal", str(snake)])[:3]
        == verdict_of(["--from", "temporal", str(fresh / "temporal-retry.json")])[:3]
    )


@pytest.mark.slow
def test_dbos_on_postgresql_killed_and_recovered_gives_the_sqlite_verdicts(tmp_path):
    """The same crash on a PostgreSQL system database (a throwaway server on a Unix
    socket), read through its postgresql:// URL."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    import dbos_runs

    from toolcommit.checker.torture.pgserver import NoPostgres, TempPostgres

    try:
        server = TempPostgres()
    except NoPostgres as e:
        pytest.skip(str(e))
    with server as pg:
        ledger = tmp_path / "ledger.jsonl"
        dbos_runs.run(
            f"postgresql+psycopg://toolcommit@/postgres?host={pg.dir}", str(ledger), crash=True
        )
        url = f"postgresql://toolcommit@/postgres?host={pg.dir}"
        alone = verdict_of(["--from", "dbos", url, "--effectful", "refund"])
        joined = verdict_of(
            ["--from", "dbos", url, "--effectful", "refund", "--ledger", str(ledger)]
        )
    assert alone[:3] == ("INCONCLUSIVE", [], ["I1"])
    assert joined[:3] == ("VIOLATES", ["I1", "P1"], [])
