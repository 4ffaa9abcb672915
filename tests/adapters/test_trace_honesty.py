"""`validate --from` never conforms for want of looking: a run that judged nothing, a ledger
that joined nothing or came in part, records without ids, writers of one file name, and the
order of the files on the command line (reproductions of the reliability issue)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from .traces import T, run, verdict_of

REFUND = ["--from", "otel", "{T}/pydantic-clean.console.json", "--effectful", "refund"]
CRASH = ["{T}/langgraph-crash-1.jsonl", "{T}/langgraph-crash-2.jsonl"]
CRASH_OPTS = ["--checkpoints", "{T}/langgraph-crash-checkpoints.jsonl", "--effectful", "refund"]


def stripe_page(tmp_path, name, has_more, request, url="/v1/events"):
    p = tmp_path / name
    p.write_text(
        json.dumps(
            {
                "object": "list",
                "url": url,
                "has_more": has_more,
                "data": [
                    {
                        "id": f"evt_{request}",
                        "object": "event",
                        "type": "refund.created",
                        "request": {"id": request, "idempotency_key": "call_A"},
                        "data": {"object": {"id": f"re_{request}", "object": "refund"}},
                    }
                ],
            }
        )
    )
    return str(p)


# ----- nothing judged, nothing joined ----------------------------------------------------------
def test_effectful_naming_no_tool_of_the_trace_is_a_usage_error_listing_the_tools_it_has():
    code, out, err = run(
        [
            "--from",
            "otel",
            "{T}/pydantic-reissue.otlp.json",
            "--effectful",
            "refnd",
            "--ledger",
            "{T}/stripe-events.json",
        ],
        fmt=None,
    )
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "refnd" in err and "refund (2 calls)" in err and "order_status (1 call)" in err


def test_a_trace_without_a_tool_call_is_inconclusive_and_judges_nothing(tmp_path):
    doc = json.loads((T / "pydantic-reissue.otlp.json").read_text())
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            ss["spans"] = [s for s in ss["spans"] if not s["name"].startswith("execute_tool")]
    p = tmp_path / "chat-only.otlp.json"
    p.write_text(json.dumps(doc))
    verdict, certain, possible, code, d = verdict_of(["--from", "otel", str(p)])
    assert (verdict, code) == ("INCONCLUSIVE", 3)
    assert d["source"]["missing"] == ["the trace holds no tool call: nothing was judged"]
    assert {r["status"] for r in d["source"]["judged"]} == {"not judged"}


def test_a_ledger_that_joins_no_call_makes_a_clean_run_inconclusive(tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text('{"idempotency_key": "someone-else", "tool": "x", "args": {}}\n')
    verdict, _, _, code, d = verdict_of(REFUND + ["--ledger", str(other)])
    assert (verdict, code) == ("INCONCLUSIVE", 3)
    assert "no effect of the ledger joins a call" in d["source"]["missing"][0]
    i1 = next(r for r in d["source"]["judged"] if r["property"] == "I1")
    assert i1["status"] != "judged"
    code, out, _ = run(REFUND + ["--ledger", str(other)], fmt=None)
    assert "Missing, so this run cannot conform:" in out and "Every logged transition" not in out


def test_a_ledger_that_joins_its_calls_still_conforms():
    assert verdict_of(REFUND + ["--ledger", "{T}/pydantic-clean-ledger.jsonl"])[0] == "CONFORMS"


# ----- partial lists ---------------------------------------------------------------------------
def test_a_stripe_page_with_has_more_is_inconclusive_until_its_last_page_is_given(tmp_path):
    page1 = stripe_page(tmp_path, "page1.json", True, "req_2")
    page2 = stripe_page(tmp_path, "page2.json", False, "req_1")
    verdict, _, _, code, d = verdict_of(REFUND + ["--ledger", page1])
    assert (verdict, code) == ("INCONCLUSIVE", 3)
    assert (
        "has_more: true" in d["source"]["missing"][0] and "page1.json" in d["source"]["missing"][0]
    )
    verdict, certain, _, code, _ = verdict_of(REFUND + ["--ledger", page1, "--ledger", page2])
    assert (verdict, code) == ("VIOLATES", 1) and {"I1", "P1"} <= set(certain)


def test_a_whole_one_page_stripe_list_is_not_partial(tmp_path):
    whole = stripe_page(tmp_path, "whole.json", False, "req_1")
    verdict, _, _, _, d = verdict_of(REFUND + ["--ledger", whole])
    assert verdict == "CONFORMS" and d["source"]["missing"] == []


def test_stripe_events_of_one_request_on_two_pages_are_one_effect(tmp_path):
    page1 = stripe_page(tmp_path, "page1.json", True, "req_1")
    page2 = stripe_page(tmp_path, "page2.json", False, "req_1")
    verdict, _, _, _, d = verdict_of(REFUND + ["--ledger", page1, "--ledger", page2])
    assert verdict == "CONFORMS" and d["source"]["stats"]["effects_joined"] == 1


def test_a_dynamodb_scan_page_with_a_last_evaluated_key_is_partial(tmp_path):
    p = tmp_path / "scan.json"
    p.write_text(
        json.dumps(
            {
                "Items": [
                    {
                        "id": {"S": "call_A"},
                        "status": {"S": "COMPLETED"},
                        "expiration": {"N": "17e8"},
                    }
                ],
                "LastEvaluatedKey": {"id": {"S": "call_A"}},
            }
        )
    )
    verdict, _, _, code, d = verdict_of(REFUND + ["--ledger", str(p)])
    assert (verdict, code) == ("INCONCLUSIVE", 3) and "LastEvaluatedKey" in d["source"]["missing"][
        0
    ]


# ----- records without ids ---------------------------------------------------------------------
def test_otel_spans_without_ids_are_never_taken_for_one_another(tmp_path):
    doc = json.loads((T / "pydantic-reissue.otlp.json").read_text())
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                del s["spanId"], s["traceId"]
    p = tmp_path / "no-ids.otlp.json"
    p.write_text(json.dumps(doc))
    base = ["--effectful", "refund", "--ledger", "{T}/pydantic-reissue-ledger.jsonl"]
    with_ids = verdict_of(["--from", "otel", "{T}/pydantic-reissue.otlp.json"] + base)
    without = verdict_of(["--from", "otel", str(p)] + base)
    assert without[:3] == with_ids[:3] and without[0] == "VIOLATES"
    assert any("without a trace id or span id" in n for n in without[4]["source"]["notes"])


def test_langgraph_events_without_run_ids_are_refused_not_merged(tmp_path):
    p = tmp_path / "no-run-ids.jsonl"
    p.write_text(
        "".join(
            json.dumps({k: v for k, v in json.loads(line).items() if k != "run_id"}) + "\n"
            for line in (T / "langgraph-retry.jsonl").read_text().splitlines()
        )
    )
    code, out, err = run(["--from", "langgraph", str(p), "--effectful", "refund"], fmt=None)
    assert code == 2 and out == "" and "without a run_id" in err and f"{p}:2:" in err


def test_langgraph_starts_without_run_ids_are_runs_of_their_own(tmp_path):
    start = json.loads((T / "langgraph-crash-1.jsonl").read_text())
    del start["run_id"]
    p = tmp_path / "starts.jsonl"
    p.write_text(json.dumps(start) + "\n" + json.dumps(start) + "\n")
    verdict, _, _, _, d = verdict_of(["--from", "langgraph", str(p), "--effectful", "refund"])
    assert d["stats"]["keys"] == 2 and verdict != "CONFORMS"
    assert any("without a run_id" in n for n in d["source"]["notes"])


# ----- writers named by their files, in any order ------------------------------------------------
def test_event_files_of_one_name_in_two_folders_are_two_writers(tmp_path):
    for folder, src in (("a", "langgraph-crash-1.jsonl"), ("b", "langgraph-crash-2.jsonl")):
        (tmp_path / folder).mkdir()
        shutil.copy(T / src, tmp_path / folder / "events.jsonl")
    same = verdict_of(
        [
            "--from",
            "langgraph",
            str(tmp_path / "a" / "events.jsonl"),
            str(tmp_path / "b" / "events.jsonl"),
        ]
        + CRASH_OPTS
    )
    distinct = verdict_of(["--from", "langgraph"] + CRASH + CRASH_OPTS)
    assert same[:3] == distinct[:3] and same[4]["stats"]["writers"] == 2
    assert same[4]["stats"]["crash"] == 1


def test_the_order_of_the_event_files_changes_no_finding():
    for extra in ([], ["--ledger", "{T}/langgraph-crash-ledger.jsonl"]):
        forward = verdict_of(["--from", "langgraph"] + CRASH + CRASH_OPTS + extra)
        backward = verdict_of(["--from", "langgraph"] + CRASH[::-1] + CRASH_OPTS + extra)
        assert forward[:3] == backward[:3] and "P2" in forward[1]
        assert [f["property"] for f in forward[4]["findings"]] == [
            f["property"] for f in backward[4]["findings"]
        ]


def test_attempts_of_one_call_in_two_files_without_timed_run_ids_are_refused(tmp_path):
    paths = []
    for i, src in enumerate(CRASH):
        p = tmp_path / f"run-{i}.jsonl"
        p.write_text(
            "".join(
                json.dumps({**json.loads(line), "run_id": f"run-{i}"}) + "\n"
                for line in Path(src.replace("{T}", str(T))).read_text().splitlines()
            )
        )
        paths.append(str(p))
    code, out, err = run(["--from", "langgraph"] + paths + CRASH_OPTS, fmt=None)
    assert code == 2 and "call id call_1" in err and "UUIDv7" in err and len(err.splitlines()) == 1


# ----- options honoured ------------------------------------------------------------------------
def test_max_line_bytes_is_honoured_with_from():
    code, out, err = run(
        ["--from", "langgraph", "{T}/langgraph-retry.jsonl", "--max-line-bytes", "300"], fmt=None
    )
    assert code == 2 and "langgraph-retry.jsonl:1: line longer than 300 bytes" in err
    assert (
        run(["--from", "langgraph", "{T}/langgraph-retry.jsonl", "--max-line-bytes", "100000"])[0]
        == 1
    )


def test_emit_to_a_dash_is_a_usage_error_not_a_file_named_dash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(
        ["--from", "langgraph", "{T}/langgraph-retry.jsonl", "--emit", "-"], fmt=None
    )
    assert code == 2 and "--emit -" in err and not (tmp_path / "-").exists()


def test_a_scope_module_in_the_working_directory_is_found(tmp_path, monkeypatch):
    (tmp_path / "myscopes.py").write_text(
        "def by_order(view):\n    return view['args']['order']\n"
        "def nothing(view):\n    return None\n"
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = run(
        ["--from", "langgraph", "{T}/langgraph-retry.jsonl", "--scope", "myscopes:by_order"]
    )
    assert code == 1 and err == ""
    _, _, _, _, d = verdict_of(
        ["--from", "langgraph", "{T}/langgraph-retry.jsonl", "--scope", "myscopes:nothing"]
    )
    assert any("returned None for 2 call(s)" in n for n in d["source"]["notes"])


def test_a_scope_rule_without_a_module_is_one_line():
    code, out, err = run(
        ["--from", "langgraph", "{T}/langgraph-retry.jsonl", "--scope", ":by_order"], fmt=None
    )
    assert code == 2 and "MODULE:FUNCTION" in err and len(err.splitlines()) == 1


def test_a_byte_order_mark_is_read_as_nothing_in_traces_and_csv_ledgers(tmp_path):
    bom = b"\xef\xbb\xbf"
    trace, ledger = tmp_path / "bom.jsonl", tmp_path / "bom.csv"
    trace.write_bytes(bom + (T / "langgraph-retry.jsonl").read_bytes())
    ledger.write_bytes(bom + (T / "langgraph-retry-ledger.csv").read_bytes())
    plain = verdict_of(
        [
            "--from",
            "langgraph",
            "{T}/langgraph-retry.jsonl",
            "--effectful",
            "refund",
            "--ledger",
            "{T}/langgraph-retry-ledger.csv",
        ]
    )
    marked = verdict_of(
        ["--from", "langgraph", str(trace), "--effectful", "refund", "--ledger", str(ledger)]
    )
    assert marked[:3] == plain[:3] == ("VIOLATES", ["I1", "P1", "P2"], [])


def test_hostile_values_in_traces_ledgers_and_checkpoints_are_one_line_each(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    big = tmp_path / "big.jsonl"
    line = json.loads((T / "langgraph-retry.jsonl").read_text().splitlines()[0])
    line["data"]["input"]["amount"] = 10**400
    big.write_text(json.dumps(line) + "\n")
    huge = tmp_path / "huge.jsonl"
    huge.write_text(json.dumps(line).replace("9" * 400, "9" * 5000) + "\n")
    lg = ["--from", "langgraph", "{T}/langgraph-retry.jsonl"]
    for argv in (
        ["--from", "otel", str(deep)],
        ["--from", "langgraph", str(deep)],
        lg + ["--ledger", str(deep)],
        lg + ["--checkpoints", str(deep)],
        ["--from", "langgraph", str(big)],
        ["--from", "langgraph", str(huge)],
    ):
        code, out, err = run(argv, fmt=None)
        assert code == 2 and "Traceback" not in err and len(err.splitlines()) == 1, (argv, err)
    ledger = tmp_path / "big-ledger.jsonl"
    ledger.write_text(json.dumps({"tool": "refund", "args": {"amount": 10**400}}) + "\n")
    assert run(lg + ["--ledger", str(ledger)])[0] in (1, 3)  # joins nothing, said so


def test_a_dynamodb_number_with_an_exponent_is_read_and_a_bad_one_is_one_line(tmp_path):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    rec = {"id": {"S": "call_A"}, "status": {"S": "COMPLETED"}, "expiration": {"N": "17e8"}}
    good.write_text(json.dumps(rec) + "\n")
    bad.write_text(json.dumps({**copy.deepcopy(rec), "expiration": {"N": "soon"}}) + "\n")
    assert verdict_of(REFUND + ["--ledger", str(good)])[0] == "CONFORMS"
    code, _, err = run(REFUND + ["--ledger", str(bad)], fmt=None)
    assert code == 2 and f"{bad}:1:" in err and "DynamoDB number" in err
