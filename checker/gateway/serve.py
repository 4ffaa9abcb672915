"""The gateway's transports: stdio (one session), streamable HTTP on loopback (many).

Over HTTP each MCP session (``Mcp-Session-Id``, minted at ``initialize``) is served by
`serve_session` with a downstream server process of its own (an MCP server's state is
per session, from its handshake on), stopped when the session ends. Requests of the
sessionless era of MCP (an ``MCP-Protocol-Version`` the handshake never had) get HTTP 400,
which a client in ``auto`` mode takes as "speak initialize".
"""
from __future__ import annotations

import io
import sys
import uuid

import anyio
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse

from toolcommit.checker.gateway.calls import Effectful
from toolcommit.checker.gateway.proxy import serve_session

SESSION_HEADER, VERSION_HEADER = b"mcp-session-id", b"mcp-protocol-version"
LOOPBACK = "127.0.0.1"


async def serve_stdio(effectful: Effectful, command: list[str]) -> None:
    """One session on this process's stdin and stdout, until the client closes stdin."""
    # this process's own stdin and stdout (the CLI wraps sys.stdout for its reports)
    stdin = anyio.wrap_file(io.TextIOWrapper(sys.__stdin__.buffer, encoding="utf-8",
                                             errors="replace"))
    stdout = anyio.wrap_file(io.TextIOWrapper(sys.__stdout__.buffer, encoding="utf-8",
                                              line_buffering=True))
    async with stdio_server(stdin, stdout) as (read, write):
        await serve_session(read, write, effectful, command, errlog=sys.stderr)


class HttpGateway:
    """An ASGI app serving MCP sessions (streamable HTTP) at ``/mcp``."""

    def __init__(self, effectful: Effectful, command: list[str], tg):
        self.effectful, self.command, self.tg = effectful, command, tg
        self.sessions: dict[str, StreamableHTTPServerTransport] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].rstrip("/") != "/mcp":
            return await _error("no MCP endpoint here: use /mcp", 404)(scope, receive, send)
        headers = dict(scope["headers"])
        version = headers.get(VERSION_HEADER, b"").decode("latin-1")
        if version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return await _error(f"protocol version {version}: the toolcommit gateway speaks "
                                "MCP with initialize (a session)", 400)(scope, receive, send)
        sid = headers.get(SESSION_HEADER, b"").decode("latin-1")
        if sid:
            transport = self.sessions.get(sid)
            if transport is None:
                return await _error("session not found", 404)(scope, receive, send)
            await transport.handle_request(scope, receive, send)
            if transport.is_terminated:
                self.sessions.pop(sid, None)
            return
        transport = StreamableHTTPServerTransport(mcp_session_id=uuid.uuid4().hex)
        self.sessions[transport.mcp_session_id] = transport
        await self.tg.start(self._run, transport)
        await transport.handle_request(scope, receive, send)

    async def _run(self, transport, *, task_status=anyio.TASK_STATUS_IGNORED):
        sid = transport.mcp_session_id
        try:
            async with transport.connect() as (read, write):
                task_status.started()
                await serve_session(read, write, self.effectful, self.command, sid,
                                    errlog=sys.stderr)
        except Exception as e:      # noqa: BLE001 - one session's end never stops the others
            print(f"toolcommit gateway: session {sid} ended: {type(e).__name__}: {e}",
                  file=sys.stderr)
        finally:
            self.sessions.pop(sid, None)


def _error(message: str, status: int):
    return JSONResponse({"jsonrpc": "2.0", "id": None,
                         "error": {"code": -32600, "message": message}}, status_code=status)


async def serve_http(effectful: Effectful, command: list[str], port: int,
                     ready=None) -> None:
    """Serve streamable HTTP on 127.0.0.1:`port` (0: any free port) until cancelled;
    `ready(port)` is called once it listens."""
    import uvicorn
    async with anyio.create_task_group() as tg:
        app = HttpGateway(effectful, command, tg)
        config = uvicorn.Config(app, host=LOOPBACK, port=port, log_level="warning",
                                lifespan="off")
        server = uvicorn.Server(config)

        async def announce():
            while not server.started:
                await anyio.sleep(0.02)
            bound = server.servers[0].sockets[0].getsockname()[1]
            if ready is not None:
                ready(bound)
        tg.start_soon(announce)
        try:
            await server.serve()
        finally:
            for transport in list(app.sessions.values()):
                await transport.terminate()
            tg.cancel_scope.cancel()
