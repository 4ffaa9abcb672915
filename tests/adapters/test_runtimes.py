"""The library's own log against a ledger, the ledger join's explanations, default scopes
and the hint for a trace read as a log. Needs no framework."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_trace_fixtures import T, run, verdict_of
from toolcommit.checker.logs.adapters import check_trace


# ----- the library's log against a ledger ------------------------------------------------
@pytest.fixture
def library_log(tmp_path):
    """A log the intent-log library wrote for one refund, and the key it sent."""
    from toolcommit.runtime import IntentLog
    log = IntentLog.sqlite(str(tmp_path / "intents.db"), writer="worker-1")
    d = log.propose("call_1", "refund", {"order": "o-7", "amount": 20}, "user:42")
    t = log.dispatch(d.key)
    log.ack(t, {"id": "re_1"})
    path = tmp_path / "intents.jsonl"
    with open(path, "w") as f:
        log.export(f)
    log.close()
    return path, t.idempotency_key


def _ledger(tmp_path, rows):
    p = tmp_path / "ledger.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(p)


def test_the_library_log_with_one_applied_effect_conforms(tmp_path, library_log):
    log, key = library_log
    verdict, certain, possible, code, d = verdict_of(
        [str(log), "--ledger", _ledger(tmp_path, [{"idempotency_key": key, "effect_id": "re_1"}])])
    assert (verdict, code) == ("CONFORMS", 0) and d["ledger"]["effects_joined"] == 1


def test_the_library_log_with_two_effects_for_its_key_violates(tmp_path, library_log):
    log, key = library_log
    rows = [{"idempotency_key": key, "effect_id": "re_1"},
            {"idempotency_key": key, "effect_id": "re_2"}]
    verdict, certain, *_ = verdict_of([str(log), "--ledger", _ledger(tmp_path, rows)])
    assert verdict == "VIOLATES" and certain == ["I1", "P1"]


def test_the_library_log_joins_a_ledger_by_canonical_intent_and_explains_the_rest(tmp_path,
                                                                                  library_log):
    log, _ = library_log
    rows = [{"tool": "refund", "args": {"amount": 20.0, "order": "o-7"}, "scope": "user:42"},
            {"tool": "refund", "args": {"amount": 20, "order": "o-7"}, "scope": "user:43"},
            {"idempotency_key": "k-unknown"}]
    code, out, err = run([str(log), "--ledger", _ledger(tmp_path, rows)], fmt=None)
    assert code == 0
    assert "Ledger: 1 effect(s) joined to the log's keys" in out
    assert "ledger.jsonl:2: its scope 'user:43' is not the scope of the calls of refund" in out
    assert "ledger.jsonl:3: its idempotency key k-unknown is no call's" in out


@pytest.mark.parametrize("extra,needle", [
    (["--jobs", "2"], "--jobs 2: with --ledger the log is checked in this process"),
    (["--engine", "dask"], "not on --engine dask"),
])
def test_a_ledger_with_an_intent_log_refuses_what_it_cannot_honour(tmp_path, library_log,
                                                                   extra, needle):
    log, key = library_log
    code, out, err = run([str(log), "--ledger", _ledger(tmp_path, [{"idempotency_key": key}])]
                         + extra, fmt=None)
    assert code == 2 and needle in err


# ----- scopes and hints ------------------------------------------------------------------
def test_langsmith_spans_default_to_the_thread_id_which_survives_a_resume():
    tr = check_trace("otel", [str(T / "langsmith-reissue.otlp.json")])
    assert {p.event["scope"] for p in tr.events if p.event["type"] == "proposal"} == {"user-42"}


def test_a_scope_function_is_imported_from_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "my_rules_tc20.py").write_text(
        "def by_order(view):\n    return view['args']['order']\n")
    monkeypatch.chdir(tmp_path)
    verdict, certain, *_ = verdict_of(["--from", "langgraph", str(T / "langgraph-reissue.jsonl"),
                                       "--scope", "my_rules_tc20:by_order"])
    assert verdict == "VIOLATES" and certain == ["CANON"]
    import sys
    assert str(tmp_path) not in sys.path


@pytest.mark.parametrize("name,source", [
    ("langgraph-clean.jsonl", "langgraph"), ("pydantic-reissue.otlp.json", "otel"),
    ("pydantic-clean.console.json", "otel")])
def test_a_trace_read_as_an_intent_log_names_the_source_to_read_it_with(name, source):
    code, out, err = run([str(T / name)], fmt=None)
    assert code == 2 and err.rstrip().endswith(f"add --from {source}")
    assert len(err.strip().splitlines()) == 1


def test_every_source_documents_its_default_scope_and_view():
    from toolcommit.checker.logs.adapters import READERS, capability
    t = capability.table()
    assert sorted(t["sources"]) == sorted(READERS)
    for source in READERS:
        assert t["sources"][source]["default_scope"] and t["sources"][source]["view"]


def test_the_readme_scope_table_is_the_one_in_spec_sources():
    from toolcommit.checker.logs.adapters import capability
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    table = readme.split("| `--from` | default scope | view |\n|---|---|---|\n", 1)[1]
    rows = {}
    for line in table.split("\n\n", 1)[0].splitlines():
        source, scope, view = (c.strip() for c in line.strip("|").split(" | "))
        rows[source.strip("`")] = (scope, view)
    t = capability.table()["sources"]
    assert rows == {s: (t[s]["default_scope"], t[s]["view"]) for s in t}
