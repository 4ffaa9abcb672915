"""The HTTP transport is hostile-facing: loopback Host and Origin only unless allowed (403
for a foreign Origin, as MCP's streamable HTTP security rules ask against DNS rebinding),
an optional bearer token (401), a session (and its server process) only from an
``initialize``, a cap on sessions and an idle timeout; a malformed request in a session
gets a JSON-RPC error. Raw requests with httpx, the MCP client where a session is needed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from .gw import LIMIT, run, text

pytest.importorskip("mcp")
httpx = pytest.importorskip("httpx")
from mcp import Client  # noqa: E402

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
REFUND = {"order": "o-7", "amount": 999}


def post(url, body, **headers):
    return httpx.post(url, json=body, headers={**ACCEPT, **headers}, timeout=LIMIT)


def messages(response) -> list:
    """The JSON-RPC messages of a response (a JSON body or an SSE stream)."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return [response.json()]
    return [
        json.loads(line[5:])
        for line in response.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


def session(url, **headers) -> dict:
    r = post(url, INIT, **headers)
    assert r.status_code == 200, r.text
    sid = {"Mcp-Session-Id": r.headers["mcp-session-id"], **headers}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **sid)
    return sid


def test_a_foreign_origin_is_refused_and_applies_nothing(gateway_env):
    e = gateway_env
    with e.http() as (url, _):
        evil = post(url, INIT, Origin="http://evil.example")
        call = post(
            url,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "refund", "arguments": REFUND},
            },
            Origin="http://evil.example",
        )
        rebound = post(url, INIT, Host="evil.example:80")
        local = post(url, INIT, Origin="http://localhost:5173")
    assert (evil.status_code, call.status_code, rebound.status_code) == (403, 403, 421)
    assert "--allow-origin" in evil.json()["error"]["message"]
    assert local.status_code == 200  # a loopback origin is allowed
    assert e.applied() == []


def test_an_allowed_host_and_origin_and_the_bearer_token(gateway_env):
    e = gateway_env
    token = "s3cret-token-0123456789"
    (e.tmp / "token").write_text(token + "\n")
    with e.http(
        "--token-file",
        str(e.tmp / "token"),
        "--allow-host",
        "gw.example",
        "--allow-origin",
        "https://app.example",
    ) as (url, _):
        missing = post(url, INIT, Origin="https://app.example")
        wrong = post(url, INIT, Authorization="Bearer " + "x" * len(token))
        good = post(url, INIT, Origin="https://app.example", Authorization=f"Bearer {token}")
        named = post(url, INIT, Host="gw.example:8808", Authorization=f"Bearer {token}")
        other = post(url, INIT, Origin="https://app.example.evil", Authorization=f"Bearer {token}")

        async def scenario():
            async with Client(url) as c:  # no token: the client cannot connect
                await c.call_tool("refund", REFUND)

        with pytest.raises(Exception):
            run(scenario)
    assert (missing.status_code, wrong.status_code, good.status_code) == (401, 401, 200)
    assert (named.status_code, other.status_code) == (200, 403)
    assert missing.headers["www-authenticate"] == "Bearer"
    assert e.applied() == []


def test_twenty_bare_requests_without_a_session_start_no_server(gateway_env):
    e = gateway_env
    with e.http("--max-sessions", "1") as (url, _):
        codes = [httpx.get(url, headers=ACCEPT, timeout=LIMIT).status_code for _ in range(20)]
        codes += [
            httpx.options(url, timeout=LIMIT).status_code,
            httpx.delete(url, timeout=LIMIT).status_code,
            post(url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).status_code,
            httpx.post(url, content=b"{nope", headers=ACCEPT, timeout=LIMIT).status_code,
        ]
        refused = httpx.post(
            url, json=INIT, headers={"Accept": "text/plain"}, timeout=LIMIT
        )  # the SDK's transport says 406
        started = (e.tmp / "ledger.jsonl.pid").exists()
        codes_after = post(url, INIT).status_code  # no session was left open
    assert set(codes) == {400} and len(codes) == 24
    assert refused.status_code == 406 and codes_after == 200
    assert not started


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_sessions_are_capped_and_an_idle_one_is_closed(gateway_env):
    e = gateway_env
    with e.http("--max-sessions", "1", "--idle-timeout", "3") as (url, _):
        first = session(url)
        over = post(url, INIT)
        pid = e.server_pid()
        deadline = time.monotonic() + LIMIT
        while alive(pid):  # no request: the session is idle
            assert time.monotonic() < deadline, "the idle session stayed"
            time.sleep(0.05)
        gone = post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **first)
        again = session(url)  # the slot is free again
    assert over.status_code == 503 and gone.status_code == 404
    assert again["Mcp-Session-Id"] != first["Mcp-Session-Id"]
    assert e.server_pid() != pid  # the new session has its own server


def test_malformed_requests_in_a_session_get_json_rpc_errors(gateway_env):
    e = gateway_env
    with e.http() as (url, _):
        sid = session(url)
        bad = [
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": ["refund"], "arguments": REFUND},
            },
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "refund", "arguments": REFUND, "_meta": "x"},
            },
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "refund", "arguments": [1]},
            },
        ]
        answers = [messages(post(url, body, **sid)) for body in bad]
        cancel = post(
            url,
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [2]}},
            **sid,
        )
        good = messages(
            post(
                url,
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "tools/call",
                    "params": {"name": "refund", "arguments": REFUND},
                },
                **sid,
            )
        )
    assert [a[-1]["id"] for a in answers] == [2, 3, 4]
    assert all(a[-1]["error"]["code"] == -32602 for a in answers)
    assert cancel.status_code == 202
    assert good[-1]["id"] == 5 and not good[-1]["result"]["isError"]
    assert len(e.applied("o-7")) == 1


def test_a_port_in_use_is_one_line_and_exit_2(gateway_env):
    e = gateway_env
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        p = subprocess.run(
            [sys.executable, *e.argv("--http", str(port))],
            env=e.env,
            cwd=e.tmp,
            capture_output=True,
            text=True,
            timeout=LIMIT,
        )
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in p.stderr


def test_the_mcp_client_works_over_http_with_the_defaults_and_one_principal(gateway_env):
    """The SDK's client as it comes (the sessionless revision): a gateway that knows whose
    calls it serves (--principal, here) refunds; without it, see test_stateless.py."""
    e = gateway_env
    with e.http("--principal", "app") as (url, _):

        async def scenario():
            async with Client(url) as c:
                return await c.call_tool("refund", REFUND)

        answer = run(scenario)
    assert not answer.is_error and json.loads(text(answer))["refunded"] == 999
