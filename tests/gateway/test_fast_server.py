"""The SDK-free refund server most gateway tests start (fast_refund_server.py) answers as
the MCP SDK's refund server (refund_server.py) does: one sequence of requests, sent to
each over stdio, gets equal answers (an error's wording aside) and equal ledgers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the 'gateway' extra is not installed")

HERE = Path(__file__).parent
CLIENT = {"name": "t", "version": "1"}
ASK = [
    ("initialize", {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": CLIENT}),
    ("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}),
    ("notifications/initialized", None),
    ("tools/list", {}),
    ("ping", {}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": 7}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": "7"}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": True}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": 1, "note": "n"}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": 2, "x": 1}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o"}}),
    ("tools/call", {"name": "refund", "arguments": {"order": 5, "amount": 1}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": "lots"}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": [1]}}),
    ("tools/call", {"name": "refund", "arguments": {"order": "o", "amount": 3, "note": 4}}),
    (
        "tools/call",
        {
            "name": "refund",
            "arguments": {"order": "p", "amount": 1.5},
            "_meta": {"toolcommit/idempotency_key": "tc-k"},
        },
    ),
    ("tools/call", {"name": "balance", "arguments": {"order": "o"}}),
    ("tools/call", {"name": "balance", "arguments": {}}),
    ("tools/call", {"name": "nope", "arguments": {}}),
    ("resources/list", {}),
    ("prompts/list", {}),
]


def conversation(server: Path, tmp: Path) -> tuple[list, list]:
    """(the answers to `ASK`, one request at a time, the errors' wording dropped; the ledger
    lines without their effect ids) from `server`."""
    ledger = tmp / f"{server.stem}.jsonl"
    p = subprocess.Popen(
        [sys.executable, str(server)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, REFUND_LEDGER=str(ledger)),
    )
    answers = []
    try:
        for n, (method, params) in enumerate(ASK):
            msg = {"jsonrpc": "2.0", "method": method}
            msg.update({"id": n, "params": params} if params is not None else {})
            p.stdin.write(json.dumps(msg) + "\n")
            p.stdin.flush()
            if params is None:  # a notification: no answer
                continue
            got = json.loads(p.stdout.readline())
            result = got.get("result") or {}
            if result.get("isError"):
                result = {**result, "content": "an error"}
            answers.append(result if "result" in got else got["error"]["code"])
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    return answers, [{k: v for k, v in e.items() if k != "effect_id"} for e in lines]


def test_the_fast_server_answers_and_applies_as_the_sdks_server(tmp_path):
    sdk = conversation(HERE / "refund_server.py", tmp_path)
    fast = conversation(HERE / "fast_refund_server.py", tmp_path)
    assert fast == sdk
    assert len(sdk[1]) == 6 and sdk[1][-1]["idempotency_key"] == "tc-k"  # it exercised them
    assert sum(1 for a in sdk[0] if isinstance(a, dict) and a.get("isError")) == 7
