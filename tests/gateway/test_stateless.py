"""Both MCP revisions over HTTP: the sessionless one (2026-07-28: no initialize, each
request on its own) served natively beside sessions, with one guarantee: the SDK's client
in each mode, retrying a refund on a new connection, gets one refund; a raw sessionless
request (httpx, no SDK) is served."""

from __future__ import annotations

import pytest

from .gw import LIMIT, http_client, run, text

pytest.importorskip("mcp")
httpx = pytest.importorskip("httpx")
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from .gw import httpx2  # noqa: E402

TOKEN = "app-token-0123456789abcdef"
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def client(url: str, mode: str) -> Client:
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(LIMIT)
    )
    return Client(streamable_http_client(url, http_client=http), mode=mode)


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_the_sdk_client_retrying_a_refund_in_either_revision_gets_one_refund(gateway_env, mode):
    e = gateway_env
    with e.http("--client-tokens", e.client_tokens(app=TOKEN)) as (url, _):

        async def scenario():
            answers = []
            for _ in range(2):  # the retry comes on a new connection (a new session)
                async with client(url, mode) as c:
                    answers.append(await c.call_tool("refund", {"order": "o-1", "amount": 5}))
            return answers

        first, retry = run(scenario)
    assert [first.is_error, retry.is_error] == [False, False]
    assert first.meta["toolcommit/replayed"] is False and retry.meta["toolcommit/replayed"]
    assert first.meta["toolcommit/key"] == retry.meta["toolcommit/key"]
    assert len(e.applied("o-1")) == 1
    assert {p["principal"] for p in e.proposals()} == {"app"}


def post(url, method, params, **headers):
    body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": ENVELOPE}}
    head = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        **headers,
    }
    return httpx.post(url, json=body, headers=head, timeout=LIMIT)


def test_a_raw_sessionless_request_is_served_without_initialize(gateway_env):
    e = gateway_env
    with e.http("--client-tokens", e.client_tokens(app=TOKEN)) as (url, _):
        auth = {"Authorization": f"Bearer {TOKEN}"}
        listed = post(url, "tools/list", {}, **auth)
        discovered = post(url, "server/discover", {}, **auth)
        call = {"name": "refund", "arguments": {"order": "o-2", "amount": "7"}}
        refunds = [post(url, "tools/call", call, **auth, **{"Mcp-Name": "refund"}) for _ in "ab"]
        anonymous = post(url, "tools/list", {})
        mismatched = post(url, "tools/list", {}, **{**auth, "Mcp-Method": "tools/call"})
    assert listed.status_code == 200 and "mcp-session-id" not in listed.headers
    assert {t["name"] for t in listed.json()["result"]["tools"]} == {"refund", "balance"}
    assert discovered.json()["result"]["supportedVersions"] == [MODERN]
    results = [r.json()["result"] for r in refunds]
    assert [r["_meta"]["toolcommit/replayed"] for r in results] == [False, True]
    assert len(e.applied("o-2")) == 1 and e.applied("o-2")[0]["args"]["amount"] == 7
    assert anonymous.status_code == 401
    assert mismatched.json()["error"]["code"] == -32020  # HEADER_MISMATCH: the method header


def test_without_a_token_or_principal_an_effectful_sessionless_call_is_not_sent(gateway_env):
    """Two users' equal sessionless calls, with no token to tell them apart, would be one
    intent: one would be told of the other's refund. The call is refused, nothing sent."""
    e = gateway_env
    with e.http() as (url, proc):

        async def scenario():
            async with http_client(url) as c:  # auto: discovers the sessionless revision
                listed = await c.list_tools()
                return listed, await c.call_tool("refund", {"order": "o-3", "amount": 1})

        listed, refused = run(scenario)
        warning = proc.stderr.readline()
    assert "refund" in {t.name for t in listed.tools}  # what has no effect is served
    assert refused.is_error and "was not sent" in text(refused)
    assert "--client-tokens FILE" in text(refused) and "--principal NAME" in text(refused)
    assert e.applied("o-3") == [] and e.proposals() == []
    assert "warning: no --client-tokens or --token-file" in warning


def test_with_a_principal_sessionless_calls_on_two_connections_are_one_intent(gateway_env):
    e = gateway_env
    with e.http("--principal", "alice") as (url, _):

        async def scenario():
            out = []
            for _ in range(2):
                async with http_client(url) as c:
                    out.append(await c.call_tool("refund", {"order": "o-4", "amount": 1}))
            return out

        first, retry = run(scenario)
    assert not first.is_error and retry.meta["toolcommit/replayed"]
    assert len(e.applied("o-4")) == 1
    assert {p["principal"] for p in e.proposals()} == {"alice"}
