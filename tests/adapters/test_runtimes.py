"""`validate --from openai-agents|dbos|temporal` on the pinned traces those runtimes made
(tests/fixtures/traces/, by make_traces.py), the library's own log against a ledger, the
ledger join's explanations, default scopes and the hint for a trace read as a log. Needs
no framework: changed traces are made from the pinned ones."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from toolcommit.checker.logs.adapters.rules import Rules
from toolcommit.checker.logs.adapters.trace import check_trace

from .traces import T, run, verdict_of

REFUND = Rules(effectful=frozenset({"refund"}))
OA = T / "openai-agents-reissue.jsonl"
ITEMS = T / "openai-agents-reissue-items.json"


def keys(tr):
    return [p.event["key"] for p in tr.events if p.event["type"] == "proposal"]


def notes(tr, needle):
    return [n for n in tr.notes if needle in n]


# ----- OpenAI Agents ---------------------------------------------------------------------
def test_openai_agents_call_ids_come_from_the_run_items():
    tr = check_trace("openai-agents", [str(OA)], REFUND, run_items=[str(ITEMS)])
    assert keys(tr) == ["call_A", "call_B"]
    assert not notes(tr, "carry no call id")


def test_openai_agents_without_run_items_each_span_is_its_own_call_and_says_so():
    tr = check_trace("openai-agents", [str(OA)], REFUND)
    assert all(k.startswith("span ") and k.endswith("(no call id)") for k in keys(tr))
    assert notes(tr, "function spans carry no call id")
    rows = {r.property: r.status for r in tr.judged}
    assert rows["P2"] == "not judgeable" and rows["CANON"] == "partly"


def test_openai_agents_spans_without_arguments_join_the_run_items_by_order(tmp_path):
    docs = [json.loads(line) for line in OA.read_text().splitlines()]
    for d in docs:
        if (d.get("span_data") or {}).get("type") == "function":
            d["span_data"]["input"] = None
    trace = tmp_path / "no-input.jsonl"
    trace.write_text("".join(json.dumps(d) + "\n" for d in docs))
    tr = check_trace("openai-agents", [str(trace)], REFUND, run_items=[str(ITEMS)])
    assert keys(tr) == ["call_A", "call_B"]
    assert notes(tr, "joined their run item by order alone")
    assert all(
        p.event["args"]["order"] == "o-7" for p in tr.events if p.event["type"] == "proposal"
    )


def test_openai_agents_a_span_exported_at_its_start_only_is_a_crash_inside_the_call(tmp_path):
    lines = (T / "openai-agents-clean.jsonl").read_text().splitlines()
    refund_end = next(
        i
        for i, line in enumerate(lines)
        if '"name": "refund"' in line and '"ended_at": null' not in line
    )
    trace = tmp_path / "died.jsonl"
    trace.write_text("\n".join(lines[:refund_end]) + "\n")
    tr = check_trace("openai-agents", [str(trace)], REFUND)
    assert [p.event["type"] for p in tr.events][-1] == "crash"
    assert tr.report.verdict.value == "INCONCLUSIVE"


def test_openai_agents_a_call_the_approval_flow_rejected_never_ran(tmp_path):
    docs = [json.loads(line) for line in (T / "openai-agents-clean.jsonl").read_text().splitlines()]
    for d in docs:
        if (d.get("span_data") or {}).get("name") == "refund" and d.get("ended_at"):
            d["error"] = {
                "message": "Tool execution rejected",
                "data": {
                    "tool_name": "refund",
                    "error": "Tool execution for call_A was manually rejected by user.",
                },
            }
    trace = tmp_path / "rejected.jsonl"
    trace.write_text("".join(json.dumps(d) + "\n" for d in docs))
    tr = check_trace("openai-agents", [str(trace)], REFUND)
    assert tr.stats["effectful_calls"] == 0 and notes(tr, "rejected by the approval flow")


def test_openai_agents_default_scope_is_the_group_id_and_a_scope_can_read_the_trace():
    tr = check_trace("openai-agents", [str(OA)], REFUND, run_items=[str(ITEMS)])
    assert {p.event["scope"] for p in tr.events if p.event["type"] == "proposal"} == {"user-42"}
    by_trace = check_trace(
        "openai-agents",
        [str(OA)],
        Rules(scope="trace_id", effectful=frozenset({"refund"})),
        run_items=[str(ITEMS)],
    )
    assert {p.event["scope"] for p in by_trace.events if p.event["type"] == "proposal"} == {
        json.loads(OA.read_text().splitlines()[0])["id"]
    }


def test_openai_agents_a_ledger_keyed_by_call_id_without_run_items_explains_why_it_joins_nothing():
    tr = check_trace(
        "openai-agents", [str(OA)], REFUND, ledgers=[str(T / "openai-agents-reissue-ledger.jsonl")]
    )
    why = notes(tr, "openai-agents-reissue-ledger.jsonl:1:")
    assert (
        why
        and "idempotency key call_A is no call's" in why[0]
        and "no call carries a key" in why[0]
    )


def test_run_items_without_function_calls_are_refused_with_their_file(tmp_path):
    items = tmp_path / "items.json"
    items.write_text('[{"role": "user", "content": "hi"}]\n')
    code, out, err = run(["--from", "openai-agents", str(OA), "--run-items", str(items)], fmt=None)
    assert code == 2 and f"{items}: no function_call items found" in err


# ----- DBOS ------------------------------------------------------------------------------
def test_dbos_the_database_and_its_json_export_give_one_report():
    db = check_trace("dbos", [str(T / "dbos-crash.sqlite")], REFUND)
    js = check_trace("dbos", [str(T / "dbos-crash.json")], REFUND)
    assert [f.to_json()["explanation"] for f in db.report.findings] == [
        f.to_json()["explanation"] for f in js.report.findings
    ]
    assert keys(db) == keys(js) == ["refund-o-7:2"]


def test_dbos_a_recovered_workflow_makes_its_first_rerun_step_a_possible_double_effect():
    tr = check_trace("dbos", [str(T / "dbos-crash.sqlite")])
    (f,) = tr.report.findings
    assert (f.property, f.key, f.certainty) == ("I1", "refund-o-7:2", "possible")
    assert "dispatched 2 times" in f.explanation
    writers = {
        p.event["key"]: p.event["writer"] for p in tr.events if p.event["type"] == "proposal"
    }
    assert writers == {"refund-o-7:1": "refund-o-7@1", "refund-o-7:2": "refund-o-7@2"}
    assert notes(tr, "step 2 (refund) is the first its last dispatch ran")


def test_dbos_a_workflow_never_recovered_names_no_suspect():
    tr = check_trace("dbos", [str(T / "dbos-clean.json")])
    assert tr.report.verdict.value == "CONFORMS" and not notes(tr, "dispatched")


def _tables(tmp_path, edit):
    data = json.loads((T / "dbos-crash.json").read_text())
    edit(data)
    path = tmp_path / "tables.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def test_dbos_without_start_times_the_suspect_is_a_note_only(tmp_path):
    def drop(d):
        for s in d["operation_outputs"]:
            s["started_at_epoch_ms"] = None

    tr = check_trace("dbos", [str(_tables(tmp_path, drop))], REFUND)
    assert tr.report.verdict.value == "CONFORMS" and notes(tr, "keep no start times")


def test_dbos_a_step_that_recorded_an_error_is_unsettled(tmp_path):
    def fail(d):
        d["operation_outputs"][1].update(output=None, error="gASVAAAA")
        d["workflow_status"][0]["recovery_attempts"] = 1

    verdict, certain, possible, *_ = verdict_of(
        ["--from", "dbos", str(_tables(tmp_path, fail)), "--effectful", "refund"]
    )
    assert (verdict, possible) == ("INCONCLUSIVE", ["UNSETTLED"])


def test_dbos_rows_of_dbos_operations_and_child_workflows_are_not_tool_calls(tmp_path):
    def extra(d):
        row = dict(d["operation_outputs"][0], function_id=3, function_name="DBOS.sleep")
        child = dict(
            d["operation_outputs"][0],
            function_id=4,
            function_name="child",
            child_workflow_id="refund-o-7-child",
        )
        d["operation_outputs"] += [row, child]

    tr = check_trace("dbos", [str(_tables(tmp_path, extra))])
    assert tr.stats["tool_calls"] == 2 and notes(tr, "2 row(s) of child workflows or DBOS")


@pytest.mark.parametrize(
    "make,needle",
    [
        (
            lambda p: p.write_text('[{"function_id": 1, "function_name": "refund"}]'),
            ":1: a step row without its workflow_uuid",
        ),
        (
            lambda p: p.write_text('{"workflow_status": [], "operation_outputs": []}'),
            "no DBOS step rows found",
        ),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.commit(),
            "cannot read the DBOS tables of this SQLite database",
        ),
    ],
)
def test_dbos_bad_sources_are_one_line_errors(tmp_path, make, needle):
    src = tmp_path / "sys.db"
    make(src)
    code, out, err = run(["--from", "dbos", str(src)], fmt=None)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_dbos_an_unreachable_postgresql_url_is_a_one_line_error_without_its_password():
    pytest.importorskip("psycopg", reason="the postgres extra is not installed")
    code, out, err = run(
        ["--from", "dbos", "postgresql://u:secret@/db?host=/nonexistent-toolcommit"], fmt=None
    )
    assert code == 2 and "cannot read the DBOS tables" in err and "secret" not in err
    assert len(err.strip().splitlines()) == 1


# ----- Temporal --------------------------------------------------------------------------
def test_temporal_attempts_are_retries_of_one_activity_key():
    tr = check_trace("temporal", [str(T / "temporal-retry.json")])
    moves = [
        (p.event.get("from"), p.event.get("to"))
        for p in tr.events
        if p.event["type"] == "transition"
    ]
    assert ("DISPATCHED", "UNKNOWN") in moves and ("UNKNOWN", "DISPATCHED") in moves
    assert tr.stats["call_ids"] == 1 and tr.stats["effectful_calls"] == 2
    (key,) = set(keys(tr))
    assert key.startswith("refund-o-7/") and key.endswith(":1")


def test_temporal_a_timed_out_activity_is_unknown_and_a_resend_is_another_key():
    tr = check_trace("temporal", [str(T / "temporal-resend.json")])
    assert [k.rsplit(":", 1)[1] for k in keys(tr)] == ["1", "2"]
    assert {p.event["args"]["args"][0] for p in tr.events if p.event["type"] == "proposal"} == {
        "o-7"
    }


def _history(tmp_path, name, edit):
    h = json.loads((T / f"temporal-{name}.json").read_text())
    edit(h)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(h))
    return path


def test_temporal_an_activity_of_a_running_workflow_is_pending_not_a_crash(tmp_path):
    def cut(h):
        i = next(
            i
            for i, e in enumerate(h["events"])
            if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        )
        h["events"] = h["events"][: i + 1]

    tr = check_trace("temporal", [str(_history(tmp_path, "clean", cut))])
    assert "crash" not in [p.event["type"] for p in tr.events]
    assert [f.property for f in tr.report.findings] == ["UNSETTLED"]


def test_temporal_pascal_case_event_types_read_like_the_sdk_enum_names(tmp_path):
    def pascal(h):
        for e in h["events"]:
            e["eventType"] = "".join(
                w.capitalize() for w in e["eventType"].removeprefix("EVENT_TYPE_").split("_")
            )

    a = verdict_of(["--from", "temporal", str(_history(tmp_path, "retry", pascal))])
    assert a[:3] == verdict_of(["--from", "temporal", str(T / "temporal-retry.json")])[:3]


def test_temporal_a_reset_copy_of_an_activity_is_read_once(tmp_path):
    text = (T / "temporal-clean.json").read_text()
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(json.loads(text)) + "\n" + json.dumps(json.loads(text)) + "\n")
    tr = check_trace("temporal", [str(twice)])
    assert tr.report.verdict.value == "CONFORMS" and notes(tr, "read once")


def test_temporal_undecodable_payloads_leave_the_arguments_unrecorded(tmp_path):
    def codec(h):
        for e in h["events"]:
            a = e.get("activityTaskScheduledEventAttributes")
            if a:
                for p in a["input"]["payloads"]:
                    p["metadata"]["encoding"] = "YmluYXJ5L2VuY3J5cHRlZA=="  # binary/encrypted

    *_, d = verdict_of(["--from", "temporal", str(_history(tmp_path, "resend", codec))])
    rows = {r["property"]: r["status"] for r in d["source"]["judged"]}
    assert rows["CANON"] == "not judgeable"


def test_a_file_without_a_history_is_refused(tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"workflowId": "w"}\n')
    code, _, err = run(["--from", "temporal", str(f)], fmt=None)
    assert code == 2 and "no workflow history found" in err


# ----- the library's log against a ledger ------------------------------------------------
@pytest.fixture
def library_log(tmp_path):
    """A log the intent-log library wrote for one refund (exported by `toolcommit export
    DB`, the way a user gets it), and the key it sent."""
    from toolcommit.checker.cli import main
    from toolcommit.runtime import IntentLog

    db = tmp_path / "intents.db"
    log = IntentLog.sqlite(str(db), writer="worker-1", provider="stripe")
    d = log.propose(
        "call_1", "refund", {"order": "o-7", "amount": 20}, "user:42", principal="user:1"
    )
    t = log.dispatch(d.key)
    log.ack(t, {"id": "re_1"})
    log.close()
    path = tmp_path / "intents.jsonl"
    assert main(["export", str(db), "-o", str(path)]) == 0
    return path, t.idempotency_key


def _ledger(tmp_path, rows):
    p = tmp_path / "ledger.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def test_the_library_log_with_one_applied_effect_conforms(tmp_path, library_log):
    log, key = library_log
    verdict, certain, possible, code, d = verdict_of(
        [str(log), "--ledger", _ledger(tmp_path, [{"idempotency_key": key, "effect_id": "re_1"}])]
    )
    assert (verdict, code) == ("CONFORMS", 0) and d["ledger"]["effects_joined"] == 1


def test_the_library_log_with_two_effects_for_its_key_violates(tmp_path, library_log):
    log, key = library_log
    rows = [
        {"idempotency_key": key, "effect_id": "re_1"},
        {"idempotency_key": key, "effect_id": "re_2"},
    ]
    verdict, certain, *_ = verdict_of([str(log), "--ledger", _ledger(tmp_path, rows)])
    assert verdict == "VIOLATES" and certain == ["I1", "P1"]


def test_the_library_log_joins_a_ledger_by_canonical_intent_and_explains_the_rest(
    tmp_path, library_log
):
    log, _ = library_log
    rows = [
        {"tool": "refund", "args": {"amount": 20.0, "order": "o-7"}, "scope": "user:42"},
        {"tool": "refund", "args": {"amount": 20, "order": "o-7"}, "scope": "user:43"},
        {"idempotency_key": "k-unknown"},
    ]
    code, out, err = run([str(log), "--ledger", _ledger(tmp_path, rows)], fmt=None)
    assert code == 3 and out.startswith("INCONCLUSIVE: 0 certain, 2 possible")  # never CONFORMS
    assert out.count("ORPHAN_EFFECT [possible]") == 2
    assert "Ledger: 1 effect(s) joined to the log's keys" in out
    assert "ledger.jsonl:2: its scope 'user:43' is not the scope of the calls of refund" in out
    assert "ledger.jsonl:3: its idempotency key k-unknown is no call's" in out


def test_two_ledger_effects_no_call_explains_never_conform(tmp_path, library_log):
    """The provider applied two refunds under keys the client library minted itself (the
    tool did not send the log's key): no call explains them, so the run cannot conform."""
    log, key = library_log
    rows = [
        {"idempotency_key": key, "effect_id": "re_1"},
        {"idempotency_key": "stripe-minted-1", "effect_id": "re_2"},
        {"idempotency_key": "stripe-minted-2", "effect_id": "re_3"},
    ]
    verdict, certain, possible, code, d = verdict_of(
        [str(log), "--ledger", _ledger(tmp_path, rows)]
    )
    assert (verdict, code, possible) == ("INCONCLUSIVE", 3, ["ORPHAN_EFFECT"])
    assert sorted(f["key"] for f in d["findings"]) == ["stripe-minted-1", "stripe-minted-2"]
    tr = check_trace(
        "openai-agents",
        [str(T / "guarded-openai-agents.jsonl")],
        REFUND,
        ledgers=[_ledger(tmp_path, rows[1:])],
        logs=[str(T / "guarded-openai-agents-log.jsonl")],
    )
    assert tr.report.verdict.value == "INCONCLUSIVE"
    assert [f.property for f in tr.report.findings] == ["ORPHAN_EFFECT"] * 2


GUARDED_OA = [str(T / "guarded-openai-agents.jsonl")]
GUARDED_LOG = [str(T / "guarded-openai-agents-log.jsonl")]


def test_a_guarded_trace_is_judged_by_the_log_beside_it_which_still_sees_a_second_effect(tmp_path):
    key = json.loads((T / "guarded-openai-agents-ledger.jsonl").read_text())["idempotency_key"]
    tr = check_trace("openai-agents", GUARDED_OA, REFUND, logs=GUARDED_LOG)
    assert tr.report.verdict.value == "CONFORMS" and tr.stats["judged_by_log"] == 2
    assert notes(tr, "2 call(s) of refund judged by the intent log")
    twice = [
        {"idempotency_key": key, "effect_id": "re_1"},
        {"idempotency_key": key, "effect_id": "re_2"},
    ]
    tr = check_trace(
        "openai-agents", GUARDED_OA, REFUND, ledgers=[_ledger(tmp_path, twice)], logs=GUARDED_LOG
    )
    assert tr.report.verdict.value == "VIOLATES"
    assert {f.property for f in tr.report.findings if f.certainty == "certain"} == {"I1", "P1"}


GUARDED_OTEL = T / "guarded-pydantic.otlp.json"


def _spans_without(tmp_path, drop):
    """The guarded Pydantic AI trace without the span events `drop(name, index)` picks."""
    doc = json.loads(GUARDED_OTEL.read_text())
    n = 0
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                kept = []
                for ev in sp.get("events", []):
                    n += 1
                    if not drop(ev["name"], n):
                        kept.append(ev)
                sp["events"] = kept
    path = tmp_path / "spans.otlp.json"
    path.write_text(json.dumps(doc) + "\n")
    return str(path)


def test_a_guarded_otel_trace_is_judged_by_the_guard_lines_on_its_spans(tmp_path):
    tr = check_trace("otel", [str(GUARDED_OTEL)], REFUND)
    assert tr.report.verdict.value == "CONFORMS" and tr.stats["judged_by_log"] == 2
    assert notes(tr, "judged by the guard's toolcommit.* span events")
    assert {p.event.get("decision") for p in tr.events if p.event["type"] == "proposal"} == {
        "accepted",
        "duplicate",
    }
    plain = check_trace("otel", [_spans_without(tmp_path, lambda name, n: True)], REFUND)
    assert plain.report.verdict.value == "VIOLATES"  # the same run, read as a chat runtime


def test_a_live_pydantic_run_with_the_guards_own_spans_is_judged_as_before(tmp_path):
    """The guard's own span (toolcommit.runtime.otel) inside each of Pydantic AI's tool
    spans is folded into it: the same three calls, judged by the guard's lines."""
    pytest.importorskip("pydantic_ai", reason="the 'frameworks' extra is not installed")
    import guarded_runs

    p = guarded_runs.pydantic_ai(str(tmp_path), guard_spans=True)
    doc = json.loads(Path(p["trace"]).read_text())
    guards = [
        sp
        for rs in doc["resourceSpans"]
        for ss in rs["scopeSpans"]
        for sp in ss["spans"]
        if ss["scope"]["name"] == "toolcommit.runtime" and sp["name"] == "execute_tool refund"
    ]
    assert len(guards) == 2 and all(sp.get("parentSpanId") for sp in guards)
    tr = check_trace("otel", [p["trace"]], REFUND, ledgers=[p["ledger"]])
    assert tr.report.verdict.value == "CONFORMS"
    assert (tr.stats["tool_calls"], tr.stats["judged_by_log"]) == (3, 2)


def test_a_guard_line_lost_from_the_spans_leaves_the_run_unproven(tmp_path):
    trace = _spans_without(tmp_path, lambda name, n: name == "toolcommit.transition" and n == 3)
    tr = check_trace("otel", [trace], REFUND)
    assert tr.report.verdict.value == "INCONCLUSIVE"
    assert "SEQ_GAP" in {f.property for f in tr.report.findings}


def test_a_trace_with_more_attempts_than_the_log_proposed_cannot_conform(library_log):
    """Two refund calls in the trace, one proposal in the log: one ran around the guard
    (or the log is another run's), and what it did is not judged."""
    log, _ = library_log
    tr = check_trace("openai-agents", GUARDED_OA, REFUND, logs=[str(log)])
    assert tr.report.verdict.value == "INCONCLUSIVE"
    assert any("2 attempt(s) of refund in the trace, 1 proposal(s)" in m for m in tr.missing)


def test_log_beside_a_trace_needs_from_and_a_file(library_log):
    log, _ = library_log
    code, out, err = run([str(log), "--log", str(log)], fmt=None)
    assert code == 2 and "--log needs --from SOURCE" in err
    code, out, err = run(["--from", "openai-agents", *GUARDED_OA, "--log", "-"], fmt=None)
    assert code == 2 and "--log -: give the intent log as a file" in err


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--jobs", "2"], "--jobs 2: with --ledger the log is checked in this process"),
        (["--engine", "dask"], "not on --engine dask"),
    ],
)
def test_a_ledger_with_an_intent_log_refuses_what_it_cannot_honour(
    tmp_path, library_log, extra, needle
):
    log, key = library_log
    code, out, err = run(
        [str(log), "--ledger", _ledger(tmp_path, [{"idempotency_key": key}])] + extra, fmt=None
    )
    assert code == 2 and needle in err


# ----- scopes and hints ------------------------------------------------------------------
def test_langsmith_spans_default_to_the_thread_id_which_survives_a_resume():
    tr = check_trace("otel", [str(T / "langsmith-reissue.otlp.json")])
    assert {p.event["scope"] for p in tr.events if p.event["type"] == "proposal"} == {"user-42"}


def test_a_scope_function_is_imported_from_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "my_rules_tc20.py").write_text(
        "def by_order(view):\n    return view['args']['order']\n"
    )
    monkeypatch.chdir(tmp_path)
    verdict, certain, *_ = verdict_of(
        [
            "--from",
            "langgraph",
            str(T / "langgraph-reissue.jsonl"),
            "--scope",
            "my_rules_tc20:by_order",
        ]
    )
    assert verdict == "VIOLATES" and certain == ["CANON"]
    import sys

    assert str(tmp_path) not in sys.path


@pytest.mark.parametrize(
    "name,source",
    [
        ("openai-agents-clean.jsonl", "openai-agents"),
        ("dbos-crash.sqlite", "dbos"),
        ("dbos-crash.json", "dbos"),
        ("temporal-clean.json", "temporal"),
        ("langgraph-clean.jsonl", "langgraph"),
        ("pydantic-reissue.otlp.json", "otel"),
        ("pydantic-clean.console.json", "otel"),
    ],
)
def test_a_trace_read_as_an_intent_log_names_the_source_to_read_it_with(name, source):
    code, out, err = run([str(T / name)], fmt=None)
    assert code == 2 and err.rstrip().endswith(f"add --from {source}")
    assert len(err.strip().splitlines()) == 1


def test_every_source_documents_its_default_scope_and_view():
    from toolcommit.checker.logs.adapters import capability
    from toolcommit.checker.logs.adapters.trace import READERS

    t = capability.table()
    assert sorted(t["sources"]) == sorted(READERS)
    for source in READERS:
        assert t["sources"][source]["default_scope"] and t["sources"][source]["view"]


def test_the_docs_scope_table_is_the_one_in_spec_sources():
    from toolcommit.checker.logs.adapters import capability

    page = (Path(__file__).parents[2] / "docs" / "validate.md").read_text()
    table = page.split("| `--from` | default scope | view |\n|---|---|---|\n", 1)[1]
    rows = {}
    for line in table.split("\n\n", 1)[0].splitlines():
        source, scope, view = (c.strip() for c in line.strip("|").split(" | "))
        rows[source.strip("`")] = (scope, view)
    t = capability.table()["sources"]
    assert rows == {s: (t[s]["default_scope"], t[s]["view"]) for s in t}
