"""What the gateway's tests share: a temporary directory with the refund server's ledger
and the gateway's --db (`Env`), a gateway started as a real process (stdio through the
SDK's client, or HTTP on 127.0.0.1), bounded waits, and cleanup of every process a test
started (servers are found by the pid files they write)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

anyio = pytest.importorskip("anyio")
pytest.importorskip("mcp")
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from toolcommit.runtime import IntentLog  # noqa: E402

httpx2 = pytest.importorskip("httpx2")  # the SDK's HTTP client
HERE = Path(__file__).parent
# the SDK-free refund server (0.05 s to start against the SDK's 2 s), held to the SDK's
# refund_server.py by test_fast_server.py; the docs' examples start the SDK's
SERVER, FAULTY = HERE / "fast_refund_server.py", HERE / "faulty_server.py"
SDK_SERVER = HERE / "refund_server.py"
LIMIT = 30  # seconds a scenario may take before it is stopped (never asserted)


class Env:
    def __init__(self, tmp: Path):
        self.tmp, self.ledger, self.db = tmp, tmp / "ledger.jsonl", tmp / "intents.db"
        self.env = {**os.environ, "REFUND_LEDGER": str(self.ledger)}
        self.procs: list[subprocess.Popen] = []

    def argv(self, *extra, server=SERVER, command=None):
        """The gateway's argv; `command`: the server's command line (default: `server`
        run by this interpreter)."""
        return [
            "-m",
            "toolcommit.checker.cli",
            "gateway",
            "--effectful",
            "refund",
            "--db",
            str(self.db),
            *extra,
            "--",
            *(command or [sys.executable, str(server)]),
        ]

    def client(self, *extra, server=SERVER, env=None, command=None):
        return Client(
            StdioServerParameters(
                command=sys.executable,
                args=self.argv(*extra, server=server, command=command),
                env={**self.env, **(env or {})},
                cwd=str(self.tmp),
            ),
            mode="auto",
        )

    def popen(self, *extra, server=SERVER, env=None, **kw) -> subprocess.Popen:
        """The gateway as a process of its own (its own process group)."""
        p = subprocess.Popen(
            [sys.executable, *self.argv(*extra, server=server)],
            env={**self.env, **(env or {})},
            cwd=str(self.tmp),
            start_new_session=True,
            **kw,
        )
        self.procs.append(p)
        return p

    @contextlib.contextmanager
    def http(self, *extra, server=SERVER, env=None, **kw):
        """An HTTP gateway on a free port of 127.0.0.1: yields (url, process)."""
        p = self.popen(
            "--http", "0", *extra, server=server, env=env, stderr=subprocess.PIPE, text=True, **kw
        )
        try:
            line = p.stderr.readline()
            assert line.startswith("toolcommit gateway: http://127.0.0.1:"), line
            yield line.split(": ", 1)[1].strip(), p
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=LIMIT)
                except subprocess.TimeoutExpired:
                    pass
            p.stderr.close()

    def client_tokens(self, **names) -> str:
        """A --client-tokens file naming each keyword's token (NAME=TOKEN); its path."""
        path = self.tmp / "clients.tokens"
        path.write_text("".join(f"{n} {t}\n" for n, t in names.items()))
        return str(path)

    def applied(self, order=None):
        if not self.ledger.exists():
            return []
        rows = [json.loads(x) for x in self.ledger.read_text().splitlines()]
        return [r for r in rows if order is None or r["args"]["order"] == order]

    def server_pid(self):
        return int((self.tmp / "ledger.jsonl.pid").read_text())

    def gateway_pid(self):
        """The pid of the gateway serving --db (from its lock file)."""
        (lock,) = self.tmp.glob("intents.db.gateway-*.lock")
        return int(lock.read_text())

    def records(self):
        log = IntentLog.sqlite(str(self.db), writer="test-reader", provider="email")
        try:
            return log.records()
        finally:
            log.close()

    def proposals(self):
        """The ``proposal`` lines of the log."""
        log = IntentLog.sqlite(str(self.db), writer="test-reader", provider="email")
        try:
            return [x for x in log.events() if x["type"] == "proposal"]
        finally:
            log.close()

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        pids = []
        for name in ("ledger.jsonl.pid", "ledger.jsonl.pids"):
            f = self.tmp / name
            if f.exists():
                pids += [int(x) for x in f.read_text().split()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def http_client(url: str, token=None, info=None, mode="auto") -> Client:
    """The SDK's client over streamable HTTP, presenting `token` (None: no token) and
    claiming to be `info` (an `Implementation`; None: the SDK's own), in `mode` (``auto``:
    the sessionless revision, which the gateway speaks; ``legacy``: a session)."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(LIMIT))
    return Client(streamable_http_client(url, http_client=http), client_info=info, mode=mode)


def run(scenario):
    async def bounded():
        with anyio.fail_after(LIMIT):
            return await scenario()

    return anyio.run(bounded)


async def until(predicate):
    while not predicate():
        await anyio.sleep(0.01)


def text(result):
    return result.content[0].text
