"""Whose call it is, over HTTP with the SDK's client: each client token names a principal,
two principals' equal refunds are two refunds (each told its own outcome), one client's
sessions share its intents, in either revision of MCP, and without client tokens two
sessions are never merged. A
client's claim about itself names nobody unless the operator trusts it, in so many words."""

from __future__ import annotations

import pytest

from .gw import LIMIT, http_client, run, text

httpx = pytest.importorskip("httpx")

REFUND = {"order": "o-7", "amount": 20}
ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef01"


def ask(url, *tokens, args=REFUND, info=None, mode="legacy"):
    """One refund call per token in `tokens`, each in a session of its own (`mode`
    ``legacy``; ``auto``: each on a sessionless connection of its own), in order."""

    async def scenario():
        answers = []
        for token in tokens:
            async with http_client(url, token, info, mode) as c:
                answers.append(await c.call_tool("refund", args))
        return answers

    return run(scenario)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_two_clients_asking_equal_refunds_are_each_refunded_once_and_told_their_own(
    gateway_env, mode
):
    """Alice, Bob, then each again in a new session: two refunds, one per principal; each
    retry is its own principal's recorded answer (its key), never the other's."""
    e = gateway_env
    tokens = e.client_tokens(alice=ALICE, bob=BOB)
    with e.http("--client-tokens", tokens) as (url, _):
        alice, bob, alice2, bob2 = ask(url, ALICE, BOB, ALICE, BOB, mode=mode)
    assert len(e.applied("o-7")) == 2
    assert [r.meta["toolcommit/replayed"] for r in (alice, bob, alice2, bob2)] == [
        False,
        False,
        True,
        True,
    ]
    assert alice.meta["toolcommit/key"] != bob.meta["toolcommit/key"]
    assert alice2.meta["toolcommit/key"] == alice.meta["toolcommit/key"]
    assert bob2.meta["toolcommit/key"] == bob.meta["toolcommit/key"]
    ledger = {r["idempotency_key"] for r in e.applied("o-7")}
    assert ledger == {alice.meta["toolcommit/key"], bob.meta["toolcommit/key"]}
    accepted = [(x["principal"], x["key"]) for x in e.proposals() if x["decision"] == "accepted"]
    assert sorted(accepted) == [
        ("alice", alice.meta["toolcommit/key"]),
        ("bob", bob.meta["toolcommit/key"]),
    ]


def test_without_client_tokens_two_sessions_are_two_principals(gateway_env):
    """The default never merges two sessions: the same refund in two sessions is two
    refunds, and neither session is answered with the other's outcome."""
    e = gateway_env
    with e.http() as (url, _):
        first, second = ask(url, None, None)
    assert len(e.applied("o-7")) == 2
    assert [r.meta["toolcommit/replayed"] for r in (first, second)] == [False, False]
    assert first.meta["toolcommit/key"] != second.meta["toolcommit/key"]


def test_a_session_belongs_to_the_token_that_opened_it(gateway_env):
    """Raw requests: Bob's token in Alice's session finds no session (404), no token is
    401, Alice's own token is served."""
    e = gateway_env
    tokens = e.client_tokens(alice=ALICE, bob=BOB)
    accept = {"Accept": "application/json, text/event-stream"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    def post(body, **headers):
        return httpx.post(url, json=body, headers=headers, timeout=LIMIT)

    with e.http("--client-tokens", tokens) as (url, _):
        opened = post(init, **accept, Authorization=f"Bearer {ALICE}")
        sid = {"Mcp-Session-Id": opened.headers["mcp-session-id"], **accept}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        post(initialized, **sid, Authorization=f"Bearer {ALICE}")
        as_bob = post(listing, **sid, Authorization=f"Bearer {BOB}")
        as_nobody = post(listing, **sid)
        as_alice = post(listing, **sid, Authorization=f"Bearer {ALICE}")
    assert opened.status_code == 200
    assert (as_bob.status_code, as_nobody.status_code, as_alice.status_code) == (404, 401, 200)


def test_a_claimed_name_merges_only_where_the_operator_trusts_it(gateway_env):
    """Two sessions claiming one clientInfo name: two refunds by default; with
    --trust-client-claim client.name (unsafe, the operator's word) one, the second told the
    first's outcome; and within client tokens a claim divides a client, never joins two."""
    from mcp_types import Implementation

    e = gateway_env
    same = Implementation(name="shared-name", version="1")
    with e.http() as (url, _):
        untrusted = ask(url, None, None, info=same)
    assert len(e.applied("o-7")) == 2
    with e.http("--trust-client-claim", "client.name") as (url, _):
        trusted = ask(url, None, None, args={"order": "o-8", "amount": 20}, info=same)
    assert len(e.applied("o-8")) == 1
    assert [r.meta["toolcommit/replayed"] for r in trusted] == [False, True]
    tokens = e.client_tokens(alice=ALICE, bob=BOB)
    with e.http("--client-tokens", tokens, "--trust-client-claim", "client.name") as (url, _):
        within = ask(url, ALICE, BOB, args={"order": "o-9", "amount": 20}, info=same)
    assert len(e.applied("o-9")) == 2
    assert [r.meta["toolcommit/replayed"] for r in untrusted + within] == [False] * 4
    assert not any(r.is_error for r in untrusted + trusted + within), [
        text(r) for r in untrusted + trusted + within
    ]
