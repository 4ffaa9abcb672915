"""The gateway's per-intent locks: calls of one intent run one at a time, and an intent's
lock goes with its last call (a long-running gateway holds locks only for live intents).
The downstream here is an async function that applies the call to a list: the lock table is
what is under test; the real server and client are in test_gateway.py."""
from __future__ import annotations

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")
from mcp_types import JSONRPCResponse                        # noqa: E402

from toolcommit.checker.gateway.calls import Effectful       # noqa: E402
from toolcommit.runtime import IntentLog                     # noqa: E402


def test_two_calls_of_one_intent_apply_once_and_leave_no_lock_behind(tmp_path):
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="gw", provider="email")
    gw, applied, peak = Effectful(log, frozenset({"refund"})), [], []

    async def send(method, params):
        peak.append(len(gw._locks))
        applied.append(params["arguments"])
        await anyio.sleep(0)
        return JSONRPCResponse(jsonrpc="2.0", id=1, result={"content": [], "isError": False})

    async def scenario():
        call = {"name": "refund", "arguments": {"order": "o-7", "amount": 20}}
        async with anyio.create_task_group() as tg:
            for rid in (1, 2):
                tg.start_soon(gw.call, call, rid, "s1", None, send)

    try:
        anyio.run(scenario)
    finally:
        log.close()
    assert applied == [{"order": "o-7", "amount": 20}] and peak == [1]
    assert gw._locks == {}
