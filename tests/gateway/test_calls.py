"""The gateway's per-intent locks: calls of one intent run one at a time, and an intent's
lock goes with its last call (a long-running gateway holds locks only for live intents).
The downstream here is an async function that applies the call to a list (and lists the
refund tool, `listing`): the lock table is what is under test; the real server and client
are in test_gateway.py."""

from __future__ import annotations

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")
from mcp_types import JSONRPCResponse  # noqa: E402

from toolcommit.gateway.calls import Effectful  # noqa: E402
from toolcommit.runtime import IntentLog  # noqa: E402

# real gateway, server and client processes under faults: with -m slow (test_gateway.py and
# test_http.py keep the gateway's default coverage)
pytestmark = pytest.mark.slow

SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order", "amount"],
}


def listing(send):
    """`send`, answering ``tools/list`` itself with the refund tool's schema."""

    async def both(method, params):
        if method == "tools/list":
            tools = [{"name": "refund", "inputSchema": SCHEMA}]
            return JSONRPCResponse(jsonrpc="2.0", id=1, result={"tools": tools})
        return await send(method, params)

    return both


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
                tg.start_soon(gw.call, call, rid, "s1", None, listing(send))

    try:
        anyio.run(scenario)
    finally:
        log.close()
    assert applied == [{"order": "o-7", "amount": 20}] and peak == [1]
    assert gw._locks == {}


def answer(text="done"):
    return JSONRPCResponse(
        jsonrpc="2.0", id=1, result={"content": [{"type": "text", "text": text}], "isError": False}
    )


CALL = {"name": "refund", "arguments": {"order": "o-7", "amount": 20}}


def test_a_superseded_gateway_reports_its_sent_call_in_doubt_and_writes_nothing(tmp_path):
    """Another process opens the gateway's writer name while a call is at the server: the
    answer cannot be recorded, so the client is told the call may have happened (never
    "nothing was sent"); the superseded gateway writes no line, and sends nothing more."""
    db = str(tmp_path / "i.db")
    log = IntentLog.sqlite(db, writer="gw", provider="email")
    gw, sent, seen = Effectful(log, frozenset({"refund"})), [], {}

    async def send(method, params):
        sent.append(params["arguments"])
        other = IntentLog.sqlite(db, writer="gw", provider="email")  # the same name
        seen["lines"] = len(other.events())
        other.close()  # its leases released: the record can be taken
        return answer()

    async def scenario():
        first = await gw.call(CALL, 1, "s1", None, listing(send))
        second = await gw.call(
            {**CALL, "arguments": {"order": "o-8", "amount": 1}}, 2, "s1", None, listing(send)
        )
        return first, second

    try:
        first, second = anyio.run(scenario)
    finally:
        log.close()
    assert first["isError"] and "may have taken effect" in first["content"][0]["text"]
    assert "superseded" in first["content"][0]["text"]
    assert second["isError"] and "was not sent" in second["content"][0]["text"]
    assert len(sent) == 1
    reader = IntentLog.sqlite(db, writer="reader", provider="email")
    try:
        assert len(reader.events()) == seen["lines"]  # nothing written since
    finally:
        reader.close()


def recover_during_a_long_call(tmp_path, renew: bool, monkeypatch=None):
    """A call of about 5 s under a lease of 2 s, `toolcommit recover` run against the log
    every 0.4 s meanwhile: the answer and the record's state."""
    from ..incli import cli

    db = str(tmp_path / "i.db")
    log = IntentLog.sqlite(db, writer="gw", provider="email", lease=2.0)
    gw = Effectful(log, frozenset({"refund"}))
    if not renew:  # the library's heartbeat (the guard's) beats on, renewing nothing
        from toolcommit.runtime.leases import Leases

        monkeypatch.setattr(Leases, "_renew", lambda self, which, params: 0)

    async def send(method, params):
        for _ in range(12):
            await anyio.sleep(0.4)
            await anyio.to_thread.run_sync(cli, "recover", db, "--provider", "email")
        return answer()

    try:
        got = anyio.run(gw.call, CALL, 1, "s1", None, listing(send))
        return got, [r.state for r in log.records()]
    finally:
        log.close()


def test_a_long_call_renews_its_lease_so_recover_never_takes_it(tmp_path):
    got, states = recover_during_a_long_call(tmp_path, renew=True)
    assert not got["isError"] and states == ["ACKED"]


def test_without_the_heartbeat_recover_would_take_the_live_call(tmp_path, monkeypatch):
    """The control: the test above is not vacuous (the sweeper does take an expired lease,
    and the call is then in doubt, not acknowledged)."""
    got, states = recover_during_a_long_call(tmp_path, renew=False, monkeypatch=monkeypatch)
    assert got["isError"] and "may have taken effect" in got["content"][0]["text"]
    assert states == ["DEAD_LETTER"]
