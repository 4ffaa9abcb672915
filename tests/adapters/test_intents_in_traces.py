"""Traces judged by intent, not only by key (issue 38): what the ledger shows of a call whose
arguments the source did not record, an effect joined by key with other arguments, and keys
derived from a per-attempt id, named with the field they came from."""

from __future__ import annotations

import json

from toolcommit.checker.logs.adapters.rules import Rules
from toolcommit.checker.logs.adapters.trace import check_trace

from .traces import T, verdict_of

REFUND = Rules(effectful=frozenset({"refund"}))
REISSUE = ["--from", "dbos", "{T}/dbos-reissue.json", "--effectful", "refund"]


def test_dbos_three_refunds_of_one_intent_are_counted_from_the_ledger():
    """The refund step swallowed the provider's silence twice and the workflow called it
    again: three steps, three keys, three refunds. DBOS records no step inputs; the ledger
    records each refund's arguments, and they are one intent."""
    verdict, certain, possible, code, data = verdict_of(
        REISSUE + ["--ledger", "{T}/dbos-reissue-ledger.jsonl"]
    )
    assert (verdict, certain, possible, code) == ("VIOLATES", ["I1"], [], 1)
    (f,) = data["findings"]
    assert f["key"] == "refund-o-7:2 + refund-o-7:3 + refund-o-7:4"
    assert "applied 3 effects for one canonical intent" in f["explanation"]


def test_dbos_keys_are_named_per_attempt_with_the_field_they_come_from():
    tr = check_trace(
        "dbos",
        [str(T / "dbos-reissue.json")],
        REFUND,
        [str(T / "dbos-reissue-ledger.jsonl")],
    )
    (note,) = [n for n in tr.notes if "per-attempt" in n]
    assert "under 3 keys" in note and "DBOS.step_id" in note


def test_a_chat_runtimes_call_ids_are_named_per_attempt():
    tr = check_trace(
        "otel",
        [str(T / "pydantic-reissue.otlp.json")],
        REFUND,
        [str(T / "stripe-events.json")],
    )
    (note,) = [n for n in tr.notes if "per-attempt" in n]
    assert "(call_A, call_B)" in note and "gen_ai.tool.call.id" in note


def test_an_idempotency_key_path_is_named_when_it_changed_between_attempts():
    rules = Rules(effectful=frozenset({"refund"}), idempotency_key="call_id")
    tr = check_trace(
        "dbos", [str(T / "dbos-reissue.json")], rules, [str(T / "dbos-reissue-ledger.jsonl")]
    )
    (note,) = [n for n in tr.notes if "per-attempt" in n]
    assert "call_id (--idempotency-key)" in note


def test_a_plain_ledger_effect_with_another_amount_under_a_calls_key_is_a_finding(tmp_path):
    """The OpenAI Agents clean run's refund, applied by the provider with another amount
    under the call's own key."""
    items = json.loads((T / "openai-agents-clean-items.json").read_text())
    call = next(i for i in items if i.get("type") == "function_call" and i["name"] == "refund")
    args = json.loads(call["arguments"])
    changed = {**args, **{k: v * 10 for k, v in args.items() if isinstance(v, (int, float))}}
    assert changed != args
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text(
        json.dumps({"idempotency_key": call["call_id"], "tool": "refund", "args": changed}) + "\n"
    )
    argv = ["--from", "openai-agents", "{T}/openai-agents-clean.jsonl"]
    argv += ["--run-items", "{T}/openai-agents-clean-items.json", "--effectful", "refund"]
    verdict, certain, *_ = verdict_of(argv + ["--ledger", str(ledger)])
    assert verdict == "VIOLATES" and certain == ["EFFECT_ARGS"]
    same = tmp_path / "same.jsonl"
    same.write_text(
        json.dumps({"idempotency_key": call["call_id"], "tool": "refund", "args": args}) + "\n"
    )
    assert verdict_of(argv + ["--ledger", str(same)])[0] == "CONFORMS"
