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

from ..incli import cli
from .gw import LIMIT, anyio, http_client, run, text, until

pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402


def test_a_refund_called_twice_with_the_same_arguments_is_applied_once(gateway_env):
    e = gateway_env

    async def scenario():
        async with e.client() as c:
            first = await c.call_tool("refund", {"order": "o-7", "amount": 20})
            again = await c.call_tool("refund", {"amount": 20.0, "order": "o-7"})
            other = await c.call_tool("refund", {"order": "o-8", "amount": 5})
            balance = await c.call_tool("balance", {"order": "o-7"})  # passed through
            return first, again, other, balance

    first, again, other, balance = run(scenario)
    assert not first.is_error and text(again) == text(first)
    assert (first.meta["toolcommit/replayed"], again.meta["toolcommit/replayed"]) == (False, True)
    assert first.meta["toolcommit/key"] == again.meta["toolcommit/key"]
    assert len(e.applied("o-7")) == 1 and len(e.applied("o-8")) == 1
    assert json.loads(text(balance))["refunds"] == 1
    assert sorted(r.state for r in e.records()) == ["ACKED", "ACKED"]
    assert e.applied("o-7")[0]["idempotency_key"] == next(
        r.key for r in e.records() if r.args["order"] == "o-7"
    )
    # the gateway's log, exported, against what the server applied: it conforms
    assert cli("export", str(e.db), "-o", str(e.tmp / "log.jsonl"))[0] == 0
    code, out, _ = cli("validate", str(e.tmp / "log.jsonl"), "--ledger", str(e.ledger))
    assert code == 0 and out.startswith("CONFORMS")
    assert "Ledger: 2 effect(s) joined to the log's keys" in out


def test_a_server_killed_after_applying_is_restarted_and_the_refund_is_applied_once(gateway_env):
    e = gateway_env
    hold = Path(str(e.ledger) + ".hold")

    async def scenario():
        async with e.client() as c:
            await c.call_tool("balance", {"order": "o-7"})  # the server is up
            hold.touch()
            got = {}

            async def call():
                got["first"] = await c.call_tool("refund", {"order": "o-7", "amount": 20})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await until(lambda: Path(str(e.ledger) + ".entered").exists())
                killed = e.server_pid()
                os.kill(killed, signal.SIGKILL)  # applied, not answered
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


def test_a_call_cancelled_after_dispatch_runs_to_its_end_and_its_retry_gets_the_answer(gateway_env):
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
                    scope.cancel()  # the SDK sends notifications/cancelled
            hold.unlink()
            return await c.call_tool("refund", {"order": "o-7", "amount": 20})

    retry = run(scenario)
    assert not retry.is_error and json.loads(text(retry)) == {"refunded": 20.0, "order": "o-7"}
    assert len(e.applied("o-7")) == 1
    assert [r.state for r in e.records()] == ["ACKED"]


def test_over_http_a_clients_retry_in_a_new_session_applies_once(gateway_env):
    """Streamable HTTP on 127.0.0.1, one client token, with `--scope args.order` (an
    operator's rule): the second session's call is the first one's intent (the same
    principal's) and gets its recorded answer."""
    e = gateway_env
    token = "one-client-token-0123456789"
    tokens = e.client_tokens(app=token)
    with e.http("--client-tokens", tokens, "--scope", "args.order") as (url, proc):

        async def scenario():
            answers = []
            for _ in range(2):  # two sessions, one after the other
                async with http_client(url, token) as c:
                    answers.append(await c.call_tool("refund", {"order": "o-7", "amount": 20}))
            return answers

        a, b = run(scenario)
        assert text(a) == text(b) and len(e.applied("o-7")) == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=LIMIT) == 0


@pytest.mark.parametrize(
    "argv,needle",
    [
        (
            ["--effectful", "refund", "--db", "x.db"],
            "give the downstream server's command after --",
        ),
        (["--effectful", ",", "--db", "x.db", "--", "true"], "--effectful: name at least one tool"),
        (["--effectful", "refund", "--db", "no/such/dir/x.db", "--", "true"], "no directory"),
        (
            ["--effectful", "refund", "--db", "x.db", "--scope", "bad:", "--", "true"],
            "give MODULE:FUNCTION",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--", "/no/such/server"],
            "is not an executable",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--token-file", "t", "--", "true"],
            "--token-file is for --http",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--client-tokens", "t", "--", "true"],
            "--client-tokens is for --http",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--scope", "client.name", "--", "true"],
            "--scope client.name: clientInfo is what a client claims about itself",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--identity", "refund", "--", "true"],
            "--identity refund: write TOOL=FIELD,...",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--identity", "email=to", "--", "true"],
            "--identity email=to: email is not an --effectful tool (refund)",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--principal", "a b", "--", "true"],
            "--principal: a principal's name is 1 to 100 of",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--principal", "session", "--", "true"],
            "--principal: a principal's name",
        ),
        (
            ["--effectful", "refund", "--db", "x.db", "--call-timeout", "0", "--", "true"],
            "--call-timeout 0.0: give a number of seconds above 0",
        ),
        (["--effectful", "refund", "--db", "x.db", "--lease", "nan", "--", "true"], "--lease nan"),
        (
            [
                "--effectful",
                "refund",
                "--db",
                "x.db",
                "--http",
                "0",
                "--max-sessions",
                "0",
                "--",
                "true",
            ],
            "--max-sessions 0: give 1 or more",
        ),
        (
            [
                "--effectful",
                "refund",
                "--db",
                "x.db",
                "--http",
                "0",
                "--token-file",
                "no-such",
                "--",
                "true",
            ],
            "--token-file no-such: No such file",
        ),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(tmp_path, monkeypatch, argv, needle):
    """In this process (the usage is judged before anything starts; the other tests run the
    gateway's own process)."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("gateway", *argv)
    assert code == 2 and needle in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing created


SHORT, LONG = "s" * 15, "a-token-of-sixteen-or-more"
TOKEN_CASES = [
    ({"TOOLCOMMIT_GATEWAY_TOKEN": SHORT}, [], "TOOLCOMMIT_GATEWAY_TOKEN: a token is 16 or more"),
    ({"TOOLCOMMIT_GATEWAY_TOKEN": ""}, [], "TOOLCOMMIT_GATEWAY_TOKEN: a token is 16 or more"),
    ({"t": SHORT}, ["--token-file", "t"], "--token-file t:1: a token is 16 or more"),
    ({"c": f"alice {SHORT}\n"}, ["--client-tokens", "c"], "--client-tokens c:1: a token is 16"),
    ({"c": f"# ops\n\nalice {LONG} x\n"}, ["--client-tokens", "c"], "c:3: write NAME TOKEN"),
    ({"c": f"alice {LONG}\nbob {LONG}\n"}, ["--client-tokens", "c"], "c:2: this token is also"),
    ({"c": f"session {LONG}\n"}, ["--client-tokens", "c"], "c:1: a principal's name is"),
    ({"c": "# nobody\n"}, ["--client-tokens", "c"], "--client-tokens c: no NAME TOKEN line"),
    (
        {"c": f"alice {LONG}\n"},
        ["--client-tokens", "c", "--principal", "p"],
        "--principal and --client-tokens",
    ),
    (
        {"c": f"alice {LONG}\n", "TOOLCOMMIT_GATEWAY_TOKEN": LONG},
        ["--client-tokens", "c"],
        "TOOLCOMMIT_GATEWAY_TOKEN and --client-tokens: one source of tokens",
    ),
]


@pytest.mark.parametrize("given,argv,needle", TOKEN_CASES)
def test_every_token_is_16_characters_or_more_wherever_it_comes_from(
    tmp_path, monkeypatch, given, argv, needle
):
    """One rule for the bearer token (file or environment) and each client token; a
    client-tokens file is refused at its first bad line. Judged before the log is opened."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLCOMMIT_GATEWAY_TOKEN", raising=False)
    for name, value in given.items():
        if name.isupper():
            monkeypatch.setenv(name, value)
        else:
            (tmp_path / name).write_text(value)
    code, _, err = cli(
        "gateway", "--effectful", "refund", "--db", "x.db", "--http", "0", *argv, "--", "true"
    )
    assert code == 2 and needle in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "x.db").exists()


ROOT = Path(__file__).resolve().parents[2]


def page_blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block of docs/gateway.md, in order."""
    page = (ROOT / "docs" / "gateway.md").read_text("utf-8")
    return re.findall(r"```(\w+)\n(.*?)```", page, re.S)


class Quickstart:
    """A directory laid out as the repository's root for the commands of docs/gateway.md
    (the test server linked in at its path), a PATH where `toolcommit` and `python` are this
    environment's, and no REFUND_LEDGER: the page's commands run as written."""

    def __init__(self, tmp: Path):
        self.dir = tmp
        (tmp / "tests" / "gateway").mkdir(parents=True)
        (tmp / "tests" / "gateway" / "refund_server.py").symlink_to(
            ROOT / "tests" / "gateway" / "refund_server.py"
        )
        self.env = {k: v for k, v in os.environ.items() if k != "REFUND_LEDGER"}
        self.env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + self.env["PATH"]

    def run(self, argv, **kw):
        return subprocess.run(
            argv, cwd=self.dir, env=self.env, capture_output=True, text=True, timeout=LIMIT, **kw
        )

    def applied(self):
        ledger = self.dir / "ledger.jsonl"
        return ledger.read_text().splitlines() if ledger.exists() else []


def started_by(client: str) -> list[str]:
    """The command line of the `StdioServerParameters` in a client block."""
    import ast

    call = next(
        n
        for n in ast.walk(ast.parse(client))
        if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "StdioServerParameters"
    )
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    return [kw["command"], *kw["args"]]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_docs_quick_start_runs_as_written_over_stdio(tmp_path):
    """The gateway line, the SDK client that starts it (the same line), then the export
    and validate lines, in a directory laid out as the repository's root."""
    blocks = page_blocks()
    (_, gateway), (_, client), (_, check) = blocks[0], blocks[1], blocks[2]
    q = Quickstart(tmp_path)
    assert [blocks[i][0] for i in range(3)] == ["sh", "python", "sh"]
    assert shlex.split(gateway) == [
        "toolcommit",
        "gateway",
        "--effectful",
        "refund",
        "--db",
        "intents.db",
        "--",
        "python",
        "tests/gateway/refund_server.py",
    ]
    assert started_by(client) == shlex.split(gateway)  # the client starts that line
    readme = (ROOT / "README.md").read_text("utf-8")
    assert f"```sh\n{gateway}```" in readme  # the README shows that line
    out = q.run([sys.executable, "-c", client])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and lines[0].endswith("False") and lines[1].endswith("True")
    assert len(q.applied()) == 1
    for line in check.strip().splitlines():
        done = q.run(shlex.split(line))
        assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CONFORMS")


def test_the_docs_client_configuration_starts_the_gateway(tmp_path):
    """The JSON block a desktop MCP client reads, with /path/to/ made this directory."""
    q = Quickstart(tmp_path)
    ((lang, config),) = [b for b in page_blocks() if b[0] == "json"]
    server = json.loads(config.replace("/path/to/", f"{tmp_path}/"))["mcpServers"]["refunds"]
    env = {**q.env, **server["env"]}
    params = StdioServerParameters(command=server["command"], args=server["args"], env=env)

    async def scenario():
        async with Client(params) as c:
            return [await c.call_tool("refund", {"order": "o-7", "amount": 20}) for _ in range(2)]

    a, b = run(scenario)
    assert text(a) == text(b) and b.meta["toolcommit/replayed"]
    assert len(q.applied()) == 1 and (tmp_path / "intents.db").exists()


@pytest.mark.slow
def test_the_docs_http_gateway_and_client_run_as_written(tmp_path):
    """The HTTP lines (port 8808 made a free one: the client-tokens file, the gateway) and
    the client block, run twice: one client's two sessions, one refund."""
    q = Quickstart(tmp_path)
    blocks = page_blocks()
    i = next(i for i, (lang, b) in enumerate(blocks) if "--http 8808" in b)
    port = str(free_port())
    *setup, gateway = blocks[i][1].replace("8808", port).strip().splitlines()
    client = blocks[i + 1][1].replace("8808", port)
    for line in setup:
        done = q.run(["sh", "-c", line])
        assert done.returncode == 0, done.stderr
    proc = subprocess.Popen(
        shlex.split(gateway),
        cwd=tmp_path,
        env=q.env,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stderr.readline().strip().endswith(f"http://127.0.0.1:{port}/mcp")
        runs = [q.run([sys.executable, "-c", client]) for _ in range(2)]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=LIMIT) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stderr.close()
    assert [r.stdout.strip() for r in runs] == ["False", "True"], [r.stderr for r in runs]
    assert len(q.applied()) == 1
