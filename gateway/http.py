"""The gateway's streamable HTTP transport, hostile-facing (`HttpGateway`, an ASGI app at
``/mcp``).

Every request must carry an allowed ``Host`` (the loopback names, the bound host or one
the operator allows; else 421) and, if it has one, an allowed ``Origin`` (loopback origins
by default, against DNS rebinding; else 403), and the bearer token if one is set, or one
of the client tokens (constant-time compares; else 401). A session belongs to the client
token that opened it (another token's request in it: 404, as for no session), and its
calls are that client's (`principal`). Only a POST of an ``initialize`` request opens a session
(``Mcp-Session-Id``); anything else without a session is 400, and starts nothing. Each
session is served by `serve_session` with a downstream server process of its own (an MCP
server's state is per session, from its handshake on), stopped when the session ends, is
deleted, or stays idle past the idle timeout; at most `Limits.sessions` sessions live at
once (503 beyond). Requests of the sessionless era of MCP (an ``MCP-Protocol-Version`` the
handshake never had) get 400, which a client in ``auto`` mode takes as "speak initialize".
"""

from __future__ import annotations

import hmac
import json
import socket
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Mapping, Optional

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse

from toolcommit.gateway.calls import Effectful
from toolcommit.gateway.loopback import LOOPBACK, refused
from toolcommit.gateway.proxy import serve_session

SESSION_HEADER, VERSION_HEADER = b"mcp-session-id", b"mcp-protocol-version"
MAX_BODY = 4 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What the HTTP transport lets in.

    Parameters
    ----------
    host : str
        The bound address (its name is an allowed ``Host`` too).
    hosts : frozenset of str
        ``Host`` names allowed besides loopback ones and `host` (for a non-loopback bind).
    origins : frozenset of str
        Origins allowed besides loopback ones (``scheme://host[:port]``; ``*``: any).
    token : str or None
        The bearer token every request must carry (None: none asked).
    clients : mapping of str to str, or None
        Client tokens (token -> the principal's name): every request must carry one of them
        (None: none asked). Not with `token`.
    sessions : int
        Sessions (downstream processes) alive at once.
    idle : float
        Seconds a session may stay without a request before it is closed.
    """

    host: str = LOOPBACK
    hosts: frozenset = frozenset()
    origins: frozenset = frozenset()
    token: Optional[str] = None
    clients: Optional[Mapping[str, str]] = None
    sessions: int = 16
    idle: float = 600.0


def refusal(limits: Limits, headers: dict) -> Optional[tuple[int, str]]:
    """(HTTP status, why) for a request the transport must refuse on its headers, or None."""
    host = headers.get(b"host", b"").decode("latin-1")
    origin = headers.get(b"origin", b"").decode("latin-1")
    foreign = refused(host, origin, {limits.host.lower()} | limits.hosts, limits.origins)
    if foreign is not None:
        flag = "--allow-host" if foreign[0] == 421 else "--allow-origin"
        return foreign[0], f"{foreign[1]}; the operator may allow it with {flag}"
    wrong = (401, "missing or wrong bearer token (Authorization: Bearer ...)")
    if limits.clients is not None and holder(limits, headers) is None:
        return wrong
    if limits.token is not None and not _presents(headers, limits.token):
        return wrong
    return None


def holder(limits: Limits, headers: dict) -> Optional[str]:
    """The name of the client token the request presents (`Limits.clients`), or None.
    Every token is compared, in constant time each."""
    name = None
    for token, who in (limits.clients or {}).items():
        if _presents(headers, token):
            name = who
    return name


def _presents(headers: dict, token: str) -> bool:
    got = headers.get(b"authorization", b"")
    return hmac.compare_digest(got, f"Bearer {token}".encode("utf-8"))


class HttpGateway:
    """An ASGI app serving MCP sessions (streamable HTTP) at ``/mcp``; see the module
    docstring."""

    def __init__(self, effectful: Effectful, command: list[str], tg, limits: Limits = Limits()):
        self.effectful, self.command, self.tg, self.limits = effectful, command, tg, limits
        self.sessions: dict[str, StreamableHTTPServerTransport] = {}
        self.seen: dict[str, list] = {}  # session id -> [last request, in flight]
        self.holders: dict[str, Optional[str]] = {}  # session id -> its client token's name

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        if scope["path"].rstrip("/") != "/mcp":
            return await _error("no MCP endpoint here: use /mcp", 404)(scope, receive, send)
        headers = dict(scope["headers"])
        refused = refusal(self.limits, headers)
        if refused is not None:
            extra = {"WWW-Authenticate": "Bearer"} if refused[0] == 401 else None
            return await _error(refused[1], refused[0], extra)(scope, receive, send)
        version = headers.get(VERSION_HEADER, b"").decode("latin-1")
        if version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return await _error(
                f"protocol version {version}: the toolcommit gateway speaks "
                "MCP with initialize (a session)",
                400,
            )(scope, receive, send)
        sid = headers.get(SESSION_HEADER, b"").decode("latin-1")
        who = holder(self.limits, headers)
        if sid:
            return await self._in_session(sid, who, scope, receive, send)
        return await self._open(who, scope, receive, send)

    async def _in_session(self, sid, who, scope, receive, send):
        transport = self.sessions.get(sid)
        if transport is None or self.holders.get(sid) != who:  # another client's: none
            return await _error("session not found", 404)(scope, receive, send)
        seen = self.seen.setdefault(sid, [time.monotonic(), 0])
        seen[1] += 1
        try:
            await transport.handle_request(scope, receive, send)
        finally:
            seen[0], seen[1] = time.monotonic(), seen[1] - 1
        if transport.is_terminated:
            self.sessions.pop(sid, None)

    async def _open(self, who, scope, receive, send):
        """A new session of the client token named `who` (None: none), for a POST of an
        ``initialize`` request only."""
        if scope["method"] != "POST":
            return await _error(
                f"{scope['method']} without a session: open one with a POST of initialize", 400
            )(scope, receive, send)
        body = await _body(receive)
        if body is None:
            return await _error(f"the request body is over {MAX_BODY} bytes", 413)(
                scope, receive, send
            )
        try:
            msg = json.loads(body)
        except ValueError:
            msg = None
        if not (isinstance(msg, dict) and msg.get("method") == "initialize" and "id" in msg):
            return await _error("no session: the first request must be an initialize", 400)(
                scope, receive, send
            )
        if len(self.sessions) >= self.limits.sessions:
            return await _error(
                f"{len(self.sessions)} sessions are open, the gateway's --max-sessions: try later",
                503,
            )(scope, receive, send)
        transport = StreamableHTTPServerTransport(mcp_session_id=uuid.uuid4().hex)
        sid = transport.mcp_session_id
        self.sessions[sid] = transport
        self.seen[sid] = [time.monotonic(), 1]
        self.holders[sid] = who
        await self.tg.start(self._run, transport)
        status = []

        async def answer(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await transport.handle_request(scope, _replay(body), answer)
        finally:
            self.seen[sid][0], self.seen[sid][1] = time.monotonic(), self.seen[sid][1] - 1
        if not status or status[0] >= 400:  # the transport refused it: no session
            await transport.terminate()

    async def _run(self, transport, *, task_status=anyio.TASK_STATUS_IGNORED):
        sid = transport.mcp_session_id
        try:
            async with transport.connect() as (read, write):
                task_status.started()
                await serve_session(
                    read,
                    write,
                    self.effectful,
                    self.command,
                    sid,
                    errlog=sys.stderr,
                    holder=self.holders.get(sid),
                )
        except Exception as e:  # noqa: BLE001 - one session's end never stops the others
            print(
                f"toolcommit gateway: session {sid} ended: {type(e).__name__}: {e}", file=sys.stderr
            )
        finally:
            self.sessions.pop(sid, None)
            self.seen.pop(sid, None)
            self.holders.pop(sid, None)

    async def reap(self) -> None:
        """Close sessions idle (no request in flight) past `Limits.idle`, forever."""
        while True:
            await anyio.sleep(min(max(self.limits.idle / 4, 0.05), 5.0))
            now = time.monotonic()
            for sid, (last, busy) in list(self.seen.items()):
                transport = self.sessions.get(sid)
                if transport is not None and not busy and now - last > self.limits.idle:
                    await transport.terminate()


async def _body(receive) -> Optional[bytes]:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > MAX_BODY:
            return None
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes):
    """An ASGI `receive` giving `body` once, then waiting (as for a client still there)."""
    sent = [False]

    async def receive():
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()

    return receive


def _error(message: str, status: int, headers: Optional[dict] = None):
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}},
        status_code=status,
        headers=headers,
    )


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port; OSError (such as the port in use) as is."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


async def serve_http(
    effectful: Effectful,
    command: list[str],
    sock: socket.socket,
    limits: Limits = Limits(),
    ready=None,
) -> None:
    """Serve streamable HTTP on the listening `sock` until cancelled; `ready(port)` is
    called once it serves."""
    import uvicorn

    async with anyio.create_task_group() as tg:
        app = HttpGateway(effectful, command, tg, limits)
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        server.install_signal_handlers = lambda: None  # the CLI handles signals

        async def announce():
            while not server.started:
                await anyio.sleep(0.02)
            if ready is not None:
                ready(sock.getsockname()[1])

        tg.start_soon(announce)
        tg.start_soon(app.reap)
        try:
            await server.serve(sockets=[sock])
        finally:
            with anyio.CancelScope(shield=True):
                for transport in list(app.sessions.values()):
                    await transport.terminate()
            tg.cancel_scope.cancel()
