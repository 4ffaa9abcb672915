"""Time limits and bad input: a downstream server that hangs, closes its stdout or answers
garbage costs one call its answer (a tool error saying it may have happened, within the
--call-timeout), never the session; malformed client messages get JSON-RPC errors; the
gateway ends (exit 0, the log consistent) at EOF and at SIGTERM or SIGINT with stdin open,
and refuses a --db another process keeps locked in one line."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ..incli import cli
from .gw import FAULTY, LIMIT, anyio, run, text, until

# real gateway, server and client processes under faults: with -m slow (test_gateway.py and
# test_http.py keep the gateway's default coverage)
pytestmark = pytest.mark.slow

REFUND = {"order": "o-7", "amount": 20}


@pytest.mark.parametrize("fault", ["hang", "close", "garbage"])
def test_a_misbehaving_server_costs_one_call_its_answer_not_the_session(gateway_env, fault):
    e = gateway_env

    async def scenario():
        async with e.client("--call-timeout", "1", server=FAULTY, env={"FAULT": fault}) as c:
            first = await c.call_tool("refund", REFUND)
            retry = await c.call_tool("refund", REFUND)
            tools = await c.list_tools()  # the session keeps serving
            other = await c.call_tool("balance", {"order": "o-7"})
            return first, retry, tools, other

    first, retry, tools, other = run(scenario)
    assert first.is_error and "may have taken effect" in text(first)
    if fault != "close":
        assert "did not answer within 1 s" in text(first)
    assert retry.is_error and "was not sent" in text(retry)  # never re-sent blindly
    assert [t.name for t in tools.tools] == ["refund", "balance"]
    assert not other.is_error and len(e.applied("o-7")) == 1
    assert [r.state for r in e.records()] == ["DEAD_LETTER"]


def test_39_hung_calls_do_not_stop_tools_list(gateway_env):
    """39 calls of distinct intents to a hung server: every one is answered within the
    limit, tools/list is answered meanwhile (an error if the server it waited on was
    restarted), and afterwards the session serves as before."""
    e = gateway_env

    async def scenario():
        async with e.client("--call-timeout", "2", server=FAULTY, env={"FAULT": "hang"}) as c:
            answers, listed = [], []

            async def call(i):
                answers.append(await c.call_tool("refund", {"order": f"o-{i}", "amount": 1}))

            async def tools_list():
                try:
                    listed.append(await c.list_tools())
                except Exception as x:  # noqa: BLE001 - lost in the restart
                    listed.append(x)

            async with anyio.create_task_group() as tg:
                for i in range(39):
                    tg.start_soon(call, i)
                tg.start_soon(tools_list)
            return answers, listed, await c.list_tools()

    answers, listed, after = run(scenario)
    assert len(answers) == 39 and all(a.is_error for a in answers)
    assert all("may have taken effect" in text(a) for a in answers)
    assert len(listed) == 1 and [t.name for t in after.tools] == ["refund", "balance"]
    orders = [r["args"]["order"] for r in e.applied()]
    assert orders and len(orders) == len(set(orders))  # no intent applied twice


def raw_gateway(e, *extra):
    return e.popen(
        *extra, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


class Wire:
    """A client writing raw lines to a gateway's stdin and reading its stdout."""

    def __init__(self, proc):
        self.proc = proc

    def send(self, msg) -> None:
        self.proc.stdin.write((msg if isinstance(msg, str) else json.dumps(msg)) + "\n")
        self.proc.stdin.flush()

    def recv(self) -> dict:
        return json.loads(self.proc.stdout.readline())

    def handshake(self) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert "result" in self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_malformed_messages_get_json_rpc_errors_and_eof_ends_the_gateway(gateway_env):
    e = gateway_env
    p = raw_gateway(e)
    w = Wire(p)
    w.handshake()
    call = {"jsonrpc": "2.0", "method": "tools/call"}
    w.send({**call, "id": 1, "params": {"name": ["refund"], "arguments": REFUND}})
    w.send({**call, "id": 2, "params": {"name": "refund", "arguments": REFUND, "_meta": "x"}})
    w.send({**call, "id": 3, "params": {"name": "refund", "arguments": "o-7"}})
    w.send(
        {
            **call,
            "id": 4,
            "params": {"name": "refund", "arguments": REFUND, "_meta": {"toolcommit/intent": 7}},
        }
    )
    w.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}})
    w.send("{this is not json")
    w.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": "refund"})
    errors = [w.recv() for _ in range(6)]
    w.send({**call, "id": 6, "params": {"name": "refund", "arguments": REFUND}})
    good = w.recv()
    p.stdin.close()  # EOF: the client is gone
    assert p.wait(timeout=LIMIT) == 0
    assert [(x["id"], x["error"]["code"]) for x in errors] == [
        (1, -32602),
        (2, -32602),
        (3, -32602),
        (4, -32602),
        (None, -32700),
        (5, -32600),
    ]
    assert good["id"] == 6 and not good["result"]["isError"]
    assert "Traceback" not in p.stderr.read()
    assert len(e.applied("o-7")) == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_with_stdin_open_ends_the_gateway_and_leaves_the_log_consistent(gateway_env, sig):
    """Stopped while a refund is in flight (applied, not answered): exit 0, and the log,
    exported, conforms to the server's ledger (the call is given up: it may have
    happened)."""
    e = gateway_env
    hold, entered = Path(f"{e.ledger}.hold"), Path(f"{e.ledger}.entered")
    p = raw_gateway(e)
    w = Wire(p)
    w.handshake()
    hold.touch()
    w.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "refund", "arguments": REFUND},
        }
    )

    async def wait_entered():
        with anyio.fail_after(LIMIT):
            await until(entered.exists)

    anyio.run(wait_entered)
    p.send_signal(sig)
    assert p.wait(timeout=LIMIT) == 0
    hold.unlink()
    assert "Traceback" not in p.stderr.read()
    assert [r.state for r in e.records()] in (["DEAD_LETTER"], ["UNKNOWN"], ["DISPATCHED"])
    assert cli("export", str(e.db), "-o", str(e.tmp / "log.jsonl"))[0] == 0
    code, out, _ = cli("validate", str(e.tmp / "log.jsonl"), "--ledger", str(e.ledger))
    assert code == 0 and out.startswith("CONFORMS"), out


@pytest.mark.slow
def test_a_db_another_process_keeps_locked_is_one_line_and_exit_2(gateway_env):
    """SQLite's busy wait (30 s) runs out: one line, exit 2, no StoreError traceback."""
    e = gateway_env
    holder = sqlite3.connect(e.db, isolation_level=None)
    try:
        holder.execute("CREATE TABLE IF NOT EXISTS tc_writers (writer TEXT)")
        holder.execute("BEGIN EXCLUSIVE")
        p = subprocess.run(
            [sys.executable, *e.argv()],
            env=e.env,
            cwd=e.tmp,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=4 * LIMIT,
        )
    finally:
        holder.close()
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("toolcommit: --db") or "--db" in p.stderr
