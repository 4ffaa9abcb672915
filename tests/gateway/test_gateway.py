"""`toolcommit gateway` with a real MCP client (the SDK's) and a real MCP server
(refund_server.py, which applies every call it gets): through the gateway a refund is
applied at most once per intent, across retries, a SIGKILLed server and a cancel.

Processes: the client starts the gateway (its own process group, stopped by the SDK), the
gateway starts the server (a group of its own); `gateway_env` kills any server still alive
at the end. Everything listens on 127.0.0.1. Needs the ``gateway`` extra."""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .gw import LIMIT, anyio, cli, run, text, until

pytest.importorskip("mcp")
from mcp import Client                                       # noqa: E402
from mcp.client.stdio import StdioServerParameters           # noqa: E402


def test_a_refund_called_twice_with_the_same_arguments_is_applied_once(gateway_env):
    e = gateway_env

    async def scenario():
        async with e.client() as c:
            first = await c.call_tool("refund", {"order": "o-7", "amount": 20})
            again = await c.call_tool("refund", {"amount": 20.0, "order": "o-7"})
            other = await c.call_tool("refund", {"order": "o-8", "amount": 5})
            balance = await c.call_tool("balance", {"order": "o-7"})    # passed through
            return first, again, other, balance
    first, again, other, balance = run(scenario)
    assert not first.is_error and text(again) == text(first)
    assert (first.meta["toolcommit/replayed"], again.meta["toolcommit/replayed"]) == (False, True)
    assert first.meta["toolcommit/key"] == again.meta["toolcommit/key"]
    assert len(e.applied("o-7")) == 1 and len(e.applied("o-8")) == 1
    assert json.loads(text(balance))["refunds"] == 1
    assert sorted(r.state for r in e.records()) == ["ACKED", "ACKED"]
    assert e.applied("o-7")[0]["idempotency_key"] == \
        next(r.key for r in e.records() if r.args["order"] == "o-7")
    # the gateway's log, exported, against what the server applied: it conforms
    assert cli("export", str(e.db), "-o", str(e.tmp / "log.jsonl"))[0] == 0
    code, out, _ = cli("validate", str(e.tmp / "log.jsonl"), "--ledger", str(e.ledger))
    assert code == 0 and out.startswith("CONFORMS")
    assert "Ledger: 2 effect(s) joined to the log's keys" in out


def test_a_server_killed_after_applying_is_restarted_and_the_refund_is_applied_once(
        gateway_env):
    e = gateway_env
    hold = Path(str(e.ledger) + ".hold")

    async def scenario():
        async with e.client() as c:
            await c.call_tool("balance", {"order": "o-7"})           # the server is up
            hold.touch()
            got = {}

            async def call():
                got["first"] = await c.call_tool("refund", {"order": "o-7", "amount": 20})
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await until(lambda: Path(str(e.ledger) + ".entered").exists())
                killed = e.server_pid()
                os.kill(killed, signal.SIGKILL)                      # applied, not answered
            hold.unlink()
            got["retry"] = await c.call_tool("refund", {"order": "o-7", "amount": 20})
            got["balance"] = await c.call_tool("balance", {"order": "o-7"})
            got["restarted"] = e.server_pid() != killed
            return got
    got = run(scenario)
    assert got["first"].is_error and "may have taken effect" in text(got["first"])
    assert got["retry"].is_error and "was not sent" in text(got["retry"])
    assert got["restarted"] and json.loads(text(got["balance"]))["refunds"] == 1
    assert len(e.applied("o-7")) == 1
    assert [r.state for r in e.records()] == ["DEAD_LETTER"]


def test_a_call_cancelled_after_dispatch_runs_to_its_end_and_its_retry_gets_the_answer(
        gateway_env):
    """A cancel after dispatch is no cancel (spec/PROTOCOL.md): the gateway does not pass
    it on, records the server's answer, and the retry gets it without a second refund."""
    e = gateway_env
    hold = Path(str(e.ledger) + ".hold")

    async def scenario():
        async with e.client() as c:
            hold.touch()
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(c.call_tool, "refund", {"order": "o-7", "amount": 20})
                    await until(lambda: Path(str(e.ledger) + ".entered").exists())
                    scope.cancel()                   # the SDK sends notifications/cancelled
            hold.unlink()
            return await c.call_tool("refund", {"order": "o-7", "amount": 20})
    retry = run(scenario)
    assert not retry.is_error and json.loads(text(retry)) == {"refunded": 20.0, "order": "o-7"}
    assert len(e.applied("o-7")) == 1
    assert [r.state for r in e.records()] == ["ACKED"]


def test_over_http_a_scope_rule_makes_a_retry_in_a_new_session_apply_once(gateway_env):
    """Streamable HTTP on 127.0.0.1 with `--scope args.order` (an operator's rule): the
    second session's call is the first one's intent and gets its recorded answer."""
    e = gateway_env
    with e.http("--scope", "args.order") as (url, proc):
        async def scenario():
            answers = []
            for _ in range(2):                       # two sessions, one after the other
                async with Client(url) as c:
                    answers.append(await c.call_tool("refund", {"order": "o-7", "amount": 20}))
            return answers
        a, b = run(scenario)
        assert text(a) == text(b) and len(e.applied("o-7")) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=LIMIT) == 0


@pytest.mark.parametrize("argv,needle", [
    (["--effectful", "refund", "--db", "x.db"], "give the downstream server's command after --"),
    (["--effectful", ",", "--db", "x.db", "--", "true"], "--effectful: name at least one tool"),
    (["--effectful", "refund", "--db", "no/such/dir/x.db", "--", "true"], "no directory"),
    (["--effectful", "refund", "--db", "x.db", "--scope", "bad:", "--", "true"],
     "give MODULE:FUNCTION"),
    (["--effectful", "refund", "--db", "x.db", "--", "/no/such/server"], "is not an executable"),
])
def test_bad_usage_is_one_line_and_exit_2(tmp_path, argv, needle):
    p = subprocess.run([sys.executable, "-m", "toolcommit.checker.cli", "gateway", *argv],
                       cwd=tmp_path, capture_output=True, text=True, timeout=LIMIT)
    assert p.returncode == 2 and needle in p.stderr and len(p.stderr.splitlines()) == 1
    assert not (tmp_path / "x.db").exists()


def readme_commands():
    """The sh block of the README's gateway section, one command a line."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    block = re.search(r"### MCP: `toolcommit gateway`.*?```sh\n(.*?)```", readme, re.S)
    return [shlex.split(line) for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_commands_run_as_shown(gateway_env):
    """The README's gateway line, driven by the SDK's client (python is this Python, the
    files live in a temporary directory), then its export and validate lines."""
    e = gateway_env
    gateway, export, validate = readme_commands()
    assert gateway[:2] == ["toolcommit", "gateway"] and gateway[gateway.index("--") + 1] == "python"
    root = Path(__file__).resolve().parents[2]
    argv = [sys.executable if a == "python" else str(root / a) if a.startswith("tests/") else a
            for a in gateway[1:]]
    env = {**os.environ, "REFUND_LEDGER": str(e.tmp / "ledger.jsonl")}

    async def scenario():
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "toolcommit.checker.cli", *argv],
                                       env=env, cwd=str(e.tmp))
        async with Client(params) as c:
            for _ in range(2):
                await c.call_tool("refund", {"order": "o-7", "amount": 20})
    run(scenario)
    assert len(e.applied("o-7")) == 1
    here = os.getcwd()
    os.chdir(e.tmp)
    try:
        assert cli(*export[1:])[0] == 0
        code, out, _ = cli(*validate[1:])
    finally:
        os.chdir(here)
    assert code == 0 and out.startswith("CONFORMS")
