"""Intent identity survives the transport: a reconnect after the gateway was SIGKILLed (the
operator's --principal names the stdio client), two HTTP sessions of one client token at
once and a second gateway process all meet the same intent (the principal, the tool and
its canonical arguments); a client that wants a second, distinct
refund names a new intent in the request's ``_meta``, and gets the name echoed back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .gw import LIMIT, anyio, http_client, run, text, until

# real gateway, server and client processes under faults: with -m slow (test_gateway.py and
# test_http.py keep the gateway's default coverage)
pytestmark = pytest.mark.slow

REFUND = {"order": "o-7", "amount": 20}
DESK = ("--principal", "desk")  # the one stdio client, the same across its reconnects


async def sigkilled_mid_call(e, then=None, command=None):
    """A refund applied and held by the server (deaf to its stdin meanwhile; started by
    `command`, default: the interpreter); the gateway SIGKILLed there, for real; then
    `await then()` if given, while the server still holds. The caller unlinks the hold
    file."""
    Path(f"{e.ledger}.hold").touch()
    async with e.client(*DESK, command=command) as c:
        async with anyio.create_task_group() as tg:

            async def call():
                with anyio.move_on_after(LIMIT / 3):
                    try:
                        await c.call_tool("refund", REFUND)
                    except Exception:  # noqa: BLE001 - the connection is gone
                        pass

            tg.start_soon(call)
            await until(Path(f"{e.ledger}.entered").exists)
            os.kill(e.gateway_pid(), signal.SIGKILL)
            if then is not None:
                await then()
            tg.cancel_scope.cancel()


def test_a_gateway_sigkilled_mid_call_then_a_reconnected_retry_applies_once(gateway_env):
    """The refund is applied, the gateway is SIGKILLed before it records the answer; the
    client reconnects (a new gateway process, a new session) and retries: the restarted
    gateway finds the dead incarnation's record in doubt and gives it up visibly; the
    refund is not sent again."""
    e = gateway_env

    async def scenario():
        await sigkilled_mid_call(e)
        Path(f"{e.ledger}.hold").unlink()
        async with e.client(*DESK) as c:  # the client reconnects and retries
            return await c.call_tool("refund", REFUND)

    retry = run(scenario)
    assert retry.is_error and "was not sent" in text(retry) and "may have happened" in text(retry)
    assert len(e.applied("o-7")) == 1
    assert [r.state for r in e.records()] == ["DEAD_LETTER"]


def running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


WRAPPED = f"{sys.executable} {Path(__file__).parent / 'refund_server.py'}; true"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tether is Linux's")
@pytest.mark.parametrize("command", [None, ["sh", "-c", WRAPPED]], ids=["direct", "sh -c"])
def test_a_sigkilled_gateway_leaves_no_server_running(gateway_env, command):
    """The server is mid-call, deaf to its stdin (it holds after applying), when the
    gateway is SIGKILLed: the server goes with it, instead of running on unowned, also
    when a wrapper that forks (``sh -c '...; true'`` stays its parent) started it."""
    e = gateway_env
    server = []

    async def gone():
        server.append(e.server_pid())
        await until(lambda: not running(server[0]))  # bounded by run's LIMIT

    try:
        run(lambda: sigkilled_mid_call(e, gone, command))
    finally:
        Path(f"{e.ledger}.hold").unlink()
    assert not running(server[0])


def test_two_http_sessions_of_one_client_at_once_apply_one_refund(gateway_env):
    """Two sessions of one client token call the same refund at the same time; one call
    reaches the server, the other gets its recorded answer and is told so."""
    e = gateway_env
    token = "one-client-token-0123456789"
    with e.http("--client-tokens", e.client_tokens(app=token)) as (url, _):

        async def scenario():
            got = []

            async def one():
                async with http_client(url, token) as c:
                    got.append(await c.call_tool("refund", REFUND))

            async with anyio.create_task_group() as tg:
                tg.start_soon(one)
                tg.start_soon(one)
            return got

        a, b = run(scenario)
    assert len(e.applied("o-7")) == 1
    assert text(a) == text(b) and not a.is_error
    assert sorted(r.meta["toolcommit/replayed"] for r in (a, b)) == [False, True]


def test_a_client_named_intent_is_a_new_refund_and_is_echoed(gateway_env):
    """A user who really wants a second refund of the same amount: the client names a new
    intent in `_meta["toolcommit/intent"]`; the same name again is the same intent."""
    e = gateway_env

    async def scenario():
        async with e.client() as c:
            plain = await c.call_tool("refund", REFUND)
            second = await c.call_tool("refund", REFUND, meta={"toolcommit/intent": "ask-2"})
            again = await c.call_tool("refund", REFUND, meta={"toolcommit/intent": "ask-2"})
            return plain, second, again

    plain, second, again = run(scenario)
    assert len(e.applied("o-7")) == 2
    assert second.meta["toolcommit/intent"] == "ask-2" == again.meta["toolcommit/intent"]
    assert [x.meta["toolcommit/replayed"] for x in (plain, second, again)] == [False, False, True]
    assert "toolcommit/intent" not in plain.meta
    assert plain.meta["toolcommit/key"] != second.meta["toolcommit/key"]


def test_a_second_gateway_on_one_db_and_writer_is_refused_in_one_line(gateway_env):
    """Default --writer: a second gateway would supersede the first (whose answers would
    then be refused); it is refused at start instead, and the first keeps serving. Another
    --writer may share the log."""
    e = gateway_env

    async def scenario():
        async with e.client() as c:
            await c.call_tool("balance", {"order": "o-7"})  # the first one is up
            second = subprocess.run(
                [sys.executable, *e.argv()],
                env=e.env,
                cwd=e.tmp,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=LIMIT,
            )
            other = subprocess.run(
                [sys.executable, *e.argv("--writer", "gw-2")],
                env=e.env,
                cwd=e.tmp,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=LIMIT,
            )
            return second, other, await c.call_tool("refund", REFUND)

    second, other, answer = run(scenario)
    assert second.returncode == 2 and len(second.stderr.splitlines()) == 1
    assert "another gateway" in second.stderr and "--writer" in second.stderr
    assert other.returncode == 0, other.stderr  # stdin at EOF: it ends at once
    assert not answer.is_error and len(e.applied("o-7")) == 1


def test_a_client_that_cancelled_did_not_hear_so_its_re_ask_is_not_a_new_refund(gateway_env):
    """Told from the client's side: the refund is sent, the client cancels before the
    answer (the call runs on and is recorded), so the client never heard it. Its re-ask,
    even under a new intent name, meets that outcome instead of refunding again; a client
    that was answered and then names a new intent gets a new refund (the test above)."""
    e = gateway_env
    hold = Path(f"{e.ledger}.hold")

    async def scenario():
        async with e.client(*DESK) as c:
            hold.touch()
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(c.call_tool, "refund", REFUND)
                    await until(Path(f"{e.ledger}.entered").exists)
                    scope.cancel()  # the SDK sends notifications/cancelled
            hold.unlink()
            await until(lambda: [r.state for r in e.records()] == ["ACKED"])
            reask = await c.call_tool("refund", REFUND, meta={"toolcommit/intent": "ask-2"})
            applied = len(e.applied("o-7"))
            # the re-ask's answer reached the client: its next request is a new refund
            third = await c.call_tool("refund", REFUND, meta={"toolcommit/intent": "ask-3"})
            return reask, applied, third

    reask, applied, third = run(scenario)
    assert applied == 1 and len(e.applied("o-7")) == 2
    assert not third.is_error and not third.meta["toolcommit/replayed"]
    assert not reask.is_error and json.loads(text(reask)) == {"refunded": 20.0, "order": "o-7"}
    assert reask.meta["toolcommit/replayed"] and reask.meta["toolcommit/intent"] == "ask-2"
    assert "never reached the user" in reask.meta["toolcommit/answered"]
