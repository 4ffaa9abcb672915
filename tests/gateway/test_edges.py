"""Truthful outcomes at the edges, over HTTP with raw requests: a call the gateway could not
write to a server (it died or hung at its start) is "not sent" and holds no record; a
dispatched call runs to its answer when its session is deleted, and the answer is
recorded for the retry; a result that is no result is said at once; a server's line that
is not JSON-RPC is one line on stderr, with no traceback."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest

from .gw import FAULTY, LIMIT
from .test_http import REFUND, session
from .test_http import post as session_post
from .test_stateless import TOKEN, post

httpx = pytest.importorskip("httpx")
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def refund(url, order: str) -> dict:
    """A sessionless refund of `order` (the tokens' client `app`): its result."""
    call = {"name": "refund", "arguments": {"order": order, "amount": 1}}
    r = post(url, "tools/call", call, **AUTH, **{"Mcp-Name": "refund"})
    assert r.status_code == 200, r.text
    return r.json()["result"]


def stopped(proc) -> str:
    """SIGTERM to the gateway: its whole stderr after the first line."""
    proc.send_signal(signal.SIGTERM)
    return proc.stderr.read()


def poll(predicate, what: str) -> None:
    deadline = time.monotonic() + LIMIT
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.mark.parametrize("start", ["exit", "hang"])
def test_a_call_the_server_never_got_is_not_sent_and_holds_no_record(gateway_env, start):
    """o-1 hangs past --call-timeout (in doubt; the gateway restarts the server); the next
    server dies or hangs at its start, so o-2 is never written: "not sent", no record;
    asked again once servers start, o-2 is sent and applied once."""
    e = gateway_env
    tokens = e.client_tokens(app=TOKEN)
    env = {"FAULT": "hang", "FAULT_ORDER": "o-1"}
    with e.http("--client-tokens", tokens, "--call-timeout", "2", server=FAULTY, env=env) as (
        url,
        proc,
    ):
        hung = threading.Thread(target=refund, args=(url, "o-1"))
        hung.start()
        poll(lambda: e.applied("o-1"), "o-1 never reached the server")
        Path(f"{e.ledger}.start").write_text(start)  # the next server fails at its start
        hung.join(LIMIT)
        unsent = refund(url, "o-2")
        Path(f"{e.ledger}.start").unlink()
        sent = refund(url, "o-2")
        stopped(proc)
    assert unsent["isError"] and "was not sent" in unsent["content"][0]["text"]
    assert "may have taken effect" not in unsent["content"][0]["text"]
    assert not sent["isError"] and sent["_meta"]["toolcommit/replayed"] is False
    assert len(e.applied("o-2")) == 1
    states = {r.args["order"]: r.state for r in e.records()}
    assert states == {"o-1": "DEAD_LETTER", "o-2": "ACKED"}


def test_a_dispatched_call_runs_to_its_answer_when_its_session_is_deleted(gateway_env):
    e = gateway_env
    tokens = e.client_tokens(app=TOKEN)
    Path(f"{e.ledger}.hold").touch()
    with e.http("--client-tokens", tokens) as (url, _):
        sid = session(url, **AUTH)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
        call["params"] = {"name": "refund", "arguments": REFUND}
        out = []
        caller = threading.Thread(target=lambda: out.append(session_post(url, call, **sid)))
        caller.start()
        poll(Path(f"{e.ledger}.entered").exists, "the refund never reached the server")
        deleted = httpx.delete(url, headers=sid, timeout=LIMIT)
        Path(f"{e.ledger}.hold").unlink()
        poll(lambda: [r.state for r in e.records()] == ["ACKED"], "the answer was not recorded")
        caller.join(LIMIT)
        retry = refund_of(url, REFUND)
    assert deleted.status_code == 200
    assert not retry["isError"] and retry["_meta"]["toolcommit/replayed"] is True
    assert len(e.applied("o-7")) == 1


def refund_of(url, args) -> dict:
    call = {"name": "refund", "arguments": args}
    return post(url, "tools/call", call, **AUTH, **{"Mcp-Name": "refund"}).json()["result"]


def test_an_invalid_result_is_said_at_once(gateway_env):
    """The server answers with a result that is no object; the call has --call-timeout
    600 and the scenario at most LIMIT seconds: told at once, in doubt, never re-sent."""
    e = gateway_env
    tokens = e.client_tokens(app=TOKEN)
    env = {"FAULT": "invalid"}
    with e.http("--client-tokens", tokens, "--call-timeout", "600", server=FAULTY, env=env) as (
        url,
        proc,
    ):
        first, retry = refund(url, "o-3"), refund(url, "o-3")
        err = stopped(proc)
    assert first["isError"] and "not a valid JSON-RPC response" in first["content"][0]["text"]
    assert "may have taken effect" in first["content"][0]["text"]
    assert retry["isError"] and "was not sent" in retry["content"][0]["text"]
    assert len(e.applied("o-3")) == 1
    assert "Traceback" not in err


def test_a_server_line_that_is_not_json_rpc_is_one_line_on_stderr(gateway_env):
    e = gateway_env
    tokens = e.client_tokens(app=TOKEN)
    env = {"FAULT": "garbage"}
    with e.http("--client-tokens", tokens, "--call-timeout", "2", server=FAULTY, env=env) as (
        url,
        proc,
    ):
        got = refund(url, "o-4")
        err = stopped(proc)
    assert got["isError"] and "may have taken effect" in got["content"][0]["text"]
    said = [line for line in err.splitlines() if "not a valid JSON-RPC message" in line]
    assert len(said) == 1 and "Traceback" not in err, err
