"""An intent log checked against a ledger that is empty, or given in part (a Stripe page
with more to come): INCONCLUSIVE, as docs/validate.md promises, never CONFORMS."""

from __future__ import annotations

import json
from pathlib import Path

from tests.incli import cli

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"


def events(name: str) -> list[dict]:
    return [json.loads(line) for line in (LOGS / name).read_text().splitlines()]


def _without_effects(tmp_path) -> str:
    p = tmp_path / "log.jsonl"
    lines = (LOGS / "ack_loss-ok.jsonl").read_text().splitlines()
    p.write_text("".join(x + "\n" for x in lines if '"effect"' not in x))
    return str(p)


def test_an_empty_ledger_is_inconclusive_not_conforming(tmp_path):
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text("")
    code, out, _ = cli("validate", _without_effects(tmp_path), "--ledger", str(ledger))
    assert code == 3 and out.startswith("INCONCLUSIVE")
    assert "Missing, so this run cannot conform:" in out and "no effect of the ledger" in out


def test_a_stripe_page_with_more_to_come_is_inconclusive(tmp_path):
    log = _without_effects(tmp_path)
    key = next(e["key"] for e in events("ack_loss-ok.jsonl") if e["type"] == "proposal")
    event = {
        "object": "event",
        "type": "refund.created",
        "request": {"id": "req_1", "idempotency_key": key},
        "data": {"object": {"object": "refund", "amount": 2000}},
    }
    page = tmp_path / "events.json"
    page.write_text(
        json.dumps({"object": "list", "url": "/v1/events", "has_more": True, "data": [event]})
    )
    code, out, _ = cli("validate", log, "--ledger", str(page), "--format", "json")
    data = json.loads(out)
    assert code == 3 and data["verdict"] == "INCONCLUSIVE" and not data["findings"]
    assert "has_more: true" in data["ledger"]["missing"][0]
    whole = tmp_path / "whole.json"
    whole.write_text(
        json.dumps({"object": "list", "url": "/v1/events", "has_more": False, "data": [event]})
    )
    assert cli("validate", log, "--ledger", str(whole))[0] == 0
