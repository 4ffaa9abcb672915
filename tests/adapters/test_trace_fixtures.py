"""`validate --from otel|langgraph` on pinned traces that Pydantic AI and LangGraph exported
(tests/fixtures/traces/; made by make_traces.py): verdicts, what each source lets the
checker judge, ledgers, scope rules and bad input. Needs no framework."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcommit.checker.logs.adapters import capability
from toolcommit.checker.logs.adapters.rules import Rules
from toolcommit.checker.logs.adapters.trace import check_trace

from .traces import CASES, T, run, verdict_of


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_trace_fixture_verdict_matches_the_manifest(case):
    verdict, certain, possible, code, _ = verdict_of(case["argv"])
    assert (verdict, certain, possible) == (case["verdict"], case["certain"], case["possible"])
    assert code == {"CONFORMS": 0, "VIOLATES": 1, "INCONCLUSIVE": 3}[verdict]


@pytest.mark.parametrize("source", ["pydantic", "langgraph"])
def test_clean_run_conforms_and_reissue_violates_with_the_double_effect_certain_once_joined(source):
    src = "otel" if source == "pydantic" else "langgraph"
    clean = (
        f"{{T}}/{source}-clean.console.json"
        if source == "pydantic"
        else f"{{T}}/{source}-clean.jsonl"
    )
    bad = (
        f"{{T}}/{source}-reissue.otlp.json"
        if source == "pydantic"
        else f"{{T}}/{source}-reissue.jsonl"
    )
    base = ["--from", src, "--effectful", "refund"]
    assert verdict_of(base + [clean])[0] == "CONFORMS"
    alone = verdict_of(base + [bad])
    joined = verdict_of(base + [bad, "--ledger", f"{{T}}/{source}-reissue-ledger.jsonl"])
    assert "I1" in alone[2] and "I1" not in alone[1]  # possible from the trace alone
    assert joined[0] == "VIOLATES" and "I1" in joined[1]  # certain with the ledger


def test_text_report_states_every_property_the_source_cannot_judge():
    code, out, _ = run(["--from", "otel", "{T}/pydantic-clean.console.json"], fmt=None)
    assert code == 0
    assert "  FENCE: not judgeable: no fence in this source" in out.splitlines()
    for prop in capability.table()["properties"]:
        assert any(line.startswith(f"  {prop}: ") for line in out.splitlines()), prop


def test_json_report_carries_the_capability_table_as_data():
    *_, d = verdict_of(
        [
            "--from",
            "langgraph",
            "{T}/langgraph-retry.jsonl",
            "--ledger",
            "{T}/langgraph-retry-ledger.jsonl",
        ]
    )
    rows = {r["property"]: r for r in d["source"]["judged"]}
    assert rows["I1"]["status"] == "judged" and rows["P1"]["status"] == "judged"
    assert rows["FENCE"]["status"] == "not judgeable"
    assert d["source"]["stats"]["effects_joined"] == 2


def test_without_a_ledger_effects_are_not_judgeable_per_key():
    rows = {r.property: r for r in capability.judged("otel", ledger=False, args_recorded=True)}
    assert rows["P1"].status == "not judgeable" and rows["I1"].status == "partly"


def test_findings_cite_the_trace_files_and_lines():
    *_, d = verdict_of(["--from", "langgraph", "{T}/langgraph-retry.jsonl"])
    p2 = next(f for f in d["findings"] if f["property"] == "P2")
    assert {loc["file"].rsplit("/", 1)[-1] for loc in p2["locations"]} == {"langgraph-retry.jsonl"}
    assert [loc["line"] for loc in p2["locations"]] == [1, 2, 3]


def test_resumed_run_after_a_crash_is_a_blind_retry_of_the_same_call_id():
    tr = check_trace(
        "langgraph",
        [str(T / "langgraph-crash-1.jsonl"), str(T / "langgraph-crash-2.jsonl")],
        checkpoints=[str(T / "langgraph-crash-checkpoints.jsonl")],
    )
    kinds = [(p.event["type"], p.event.get("from"), p.event.get("to")) for p in tr.events]
    assert ("crash", None, None) in kinds
    assert ("transition", "DISPATCHED", "UNKNOWN") in kinds
    assert ("transition", "UNKNOWN", "DISPATCHED") in kinds
    assert tr.stats["call_ids"] == 1
    assert any("never ended" in n for n in tr.notes)


def test_emitted_log_is_an_intent_log_with_the_same_verdict(tmp_path):
    log = tmp_path / "derived.jsonl"
    argv = [
        "--from",
        "otel",
        "{T}/pydantic-reissue.otlp.json",
        "--effectful",
        "refund",
        "--ledger",
        "{T}/stripe-events.json",
        "--emit",
        str(log),
    ]
    verdict, certain, possible, *_ = verdict_of(argv)
    code, out, err = run([str(log)])
    d = json.loads(out)
    assert d["verdict"] == verdict
    assert sorted({f["property"] for f in d["findings"] if f["certainty"] == "certain"}) == certain


def test_ledger_effects_that_join_no_call_are_left_out_and_counted():
    tr = check_trace(
        "otel",
        [str(T / "pydantic-reissue.otlp.json")],
        Rules(effectful=frozenset({"refund"})),
        [str(T / "stripe-events.json")],
    )
    assert tr.stats["effects_joined"] == 2  # req_A, req_B; req_Z is another customer
    assert any("1 ledger effect(s) join no call" in n for n in tr.notes)


def test_an_inprogress_idempotency_record_is_a_note_not_an_effect():
    tr = check_trace(
        "otel",
        [str(T / "pydantic-reissue.otlp.json")],
        Rules(effectful=frozenset({"refund"})),
        [str(T / "powertools-records.jsonl")],
    )
    assert tr.stats["effects_joined"] == 2
    assert any("INPROGRESS" in n and "refund#call_Q" in n for n in tr.notes)


def test_a_scope_rule_that_makes_every_call_its_own_intent_still_shows_the_reissue():
    """Each call its own scope, the keys no longer meet (no CANON), but the requests pass
    still groups the two equal calls: the second was accepted while the first was in doubt
    (possible, since the trace names no principal)."""
    argv = ["--from", "otel", "{T}/pydantic-reissue.otlp.json", "--effectful", "refund"]
    per_call = verdict_of(argv + ["--scope", "attributes.gen_ai.tool.call.id"])
    assert "CANON" not in per_call[1] and "I1" in per_call[2]


def test_a_scope_function_names_the_intent():
    verdict, certain, *_ = verdict_of(
        ["--from", "langgraph", "{T}/langgraph-reissue.jsonl", "--scope", "scopes:by_order"]
    )
    assert verdict == "VIOLATES" and certain == ["CANON"]


def test_non_effectful_tools_are_left_out():
    tr = check_trace(
        "otel", [str(T / "pydantic-clean.console.json")], Rules(effectful=frozenset({"refund"}))
    )
    assert tr.stats == {"tool_calls": 2, "effectful_calls": 1, "call_ids": 1, "effects_joined": 0}
    assert any("order_status (1 call)" in n for n in tr.notes)


def test_unrecorded_arguments_make_canon_not_judgeable(tmp_path):
    docs = [json.loads(line) for line in (T / "langgraph-reissue.jsonl").read_text().splitlines()]
    for d in docs:
        d["data"].pop("input", None)
    trace = tmp_path / "no-args.jsonl"
    trace.write_text("".join(json.dumps(d) + "\n" for d in docs))
    verdict, certain, possible, _, d = verdict_of(["--from", "langgraph", str(trace)])
    assert "CANON" not in certain
    rows = {r["property"]: r["status"] for r in d["source"]["judged"]}
    assert rows["CANON"] == "not judgeable"


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            ["--from", "otel", "{T}/pydantic-clean.console.json", "--scope", "attributes.nope"],
            "--scope attributes.nope: the call",
        ),
        (
            ["--from", "otel", "{T}/pydantic-clean.console.json", "--scope", "no_such_module:f"],
            "cannot load f from module no_such_module",
        ),
        (
            ["--from", "langgraph", "{T}/langgraph-clean.jsonl", "--scope", "scopes:broken"],
            "--scope scopes:broken: the function raised KeyError",
        ),
        (
            ["--from", "otel", "{T}/pydantic-clean.console.json", "--key", "call_A"],
            "--key is for intent logs",
        ),
        (
            ["{T}/langgraph-clean.jsonl", "--ledger", "{T}/langgraph-clean-ledger.jsonl"],
            "the file looks like what --from langgraph reads, not an intent log",
        ),
        (
            ["{T}/langgraph-clean.jsonl", "--run-items", "{T}/langgraph-clean.jsonl"],
            "--run-items needs --from SOURCE",
        ),
        (
            [
                "--from",
                "otel",
                "{T}/pydantic-clean.console.json",
                "--run-items",
                "{T}/pydantic-clean.console.json",
            ],
            "--run-items is for --from openai-agents",
        ),
        (["--from", "otel", "{T}/langgraph-clean.jsonl"], "no spans found"),
        (["--from", "langgraph", "{T}/pydantic-clean.console.json"], "no LangGraph stream events"),
        (
            [
                "--from",
                "otel",
                "{T}/pydantic-clean.console.json",
                "--checkpoints",
                "{T}/langgraph-crash-checkpoints.jsonl",
            ],
            "--checkpoints is for --from langgraph",
        ),
        (["--from", "otel", "{T}/missing.json"], "no such file"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, needle):
    code, out, err = run(argv, fmt=None)
    assert code == 2 and out == ""
    assert needle in err and len(err.strip().splitlines()) == 1


def test_a_trace_that_is_not_json_names_its_line(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"resourceSpans": []}\n{not json\n')
    code, _, err = run(["--from", "otel", str(bad)], fmt=None)
    assert code == 2 and f"{bad}:2: not JSON" in err


def test_a_ledger_line_with_nothing_to_join_by_names_its_line(tmp_path):
    led = tmp_path / "l.jsonl"
    led.write_text('{"effect_id": "x"}\n')
    code, _, err = run(
        ["--from", "langgraph", "{T}/langgraph-clean.jsonl", "--ledger", str(led)], fmt=None
    )
    assert code == 2 and f"{led}:1: a ledger line needs an idempotency_key" in err


def test_a_span_exported_twice_is_one_attempt_not_a_retry(tmp_path):
    twice = tmp_path / "twice.json"
    text = (T / "pydantic-reissue.otlp.json").read_text()
    twice.write_text(text + text)
    once = verdict_of(["--from", "otel", "{T}/pydantic-reissue.otlp.json", "--effectful", "refund"])
    again = verdict_of(["--from", "otel", str(twice), "--effectful", "refund"])
    assert again[:3] == once[:3] and "P2" not in again[1]
    assert any("exported more than once" in n for n in again[4]["source"]["notes"])


def test_an_events_file_given_twice_is_read_once():
    f = "{T}/langgraph-reissue.jsonl"
    assert (
        verdict_of(["--from", "langgraph", f, f])[:3] == verdict_of(["--from", "langgraph", f])[:3]
    )


@pytest.mark.parametrize(
    "source,doc",
    [
        ("otel", {"resourceSpans": [{"scopeSpans": [{"spans": ["not a span"]}]}]}),
        ("otel", {"name": "x", "context": {}, "start_time": "yesterday"}),
        ("langgraph", {"event": "on_tool_start", "run_id": "r1", "data": "not a dict"}),
    ],
)
def test_a_document_of_the_wrong_shape_is_one_line_naming_its_line(tmp_path, source, doc):
    bad = tmp_path / "bad.json"
    bad.write_text("\n" + json.dumps(doc) + "\n")
    code, out, err = run(["--from", source, str(bad)], fmt=None)
    assert code == 2 and f"{bad}:2: not a" in err and len(err.strip().splitlines()) == 1


def test_every_source_states_every_property():
    t = capability.table()
    for source in capability.sources():
        for prop in t["properties"]:
            entry = t["sources"][source][prop]
            for pick in [entry] + [entry[k] for k in ("with_ledger", "no_args") if k in entry]:
                assert pick["status"] in ("judged", "partly", "not judgeable") and pick["why"]


@pytest.mark.parametrize("flag", ["-o", "--emit"])
def test_neither_report_nor_derived_log_replaces_a_file_it_reads(tmp_path, flag):
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text((T / "langgraph-retry-ledger.jsonl").read_text())
    before = ledger.read_text()
    code, _, err = run(
        [
            "--from",
            "langgraph",
            "{T}/langgraph-retry.jsonl",
            "--ledger",
            str(ledger),
            flag,
            str(ledger),
        ],
        fmt=None,
    )
    assert code == 2 and "input" in err and ledger.read_text() == before


def test_jobs_with_from_is_refused_not_ignored(capsys):
    """Every limit the user sets is honoured: the derived log is checked in one process, so
    --jobs 2 with --from is an error that says how to shard it, never silently dropped."""
    from toolcommit.checker.cli import main

    trace = str(
        Path(__file__).resolve().parents[1] / "fixtures" / "traces" / "langgraph-clean.jsonl"
    )
    assert (
        main(["validate", "--from", "langgraph", trace, "--effectful", "refund", "--jobs", "2"])
        == 2
    )
    err = capsys.readouterr().err
    assert "--jobs 2 shards intent logs" in err and "--emit" in err and "Traceback" not in err
