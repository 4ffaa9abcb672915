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
import sys
import time
import uuid
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Mapping, Optional

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse, Response

from toolcommit.gateway.calls import Effectful
from toolcommit.gateway.loopback import LOOPBACK, refused
from toolcommit.gateway.proxy import serve_session
from toolcommit.gateway.stateless import Sessionless, is_sessionless
from toolcommit.gateway.stateless import error as error_reply

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
    body : int
        Bytes a request's body may have, whatever the request (413 beyond; counted as it
        arrives, never buffered past the limit).
    header_timeout, body_timeout : float
        Seconds a connection may take to send a request's headers (then it is closed),
        and its body (then 408).
    connections : int or None
        Connections open at once; one more is closed as soon as it is accepted (None: as
        many as the process's descriptor limit leaves room for, `listener.connection_cap`).
    """

    host: str = LOOPBACK
    hosts: frozenset = frozenset()
    origins: frozenset = frozenset()
    token: Optional[str] = None
    clients: Optional[Mapping[str, str]] = None
    sessions: int = 16
    idle: float = 600.0
    body: int = MAX_BODY
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    connections: Optional[int] = None


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
    """An ASGI app serving MCP over streamable HTTP, both revisions (see the module
    docstring); `path`: the one path it serves (None: whatever path it is mounted at).
    It serves inside `running` (its sessions' tasks live there): 503 outside it."""

    def __init__(
        self,
        effectful: Effectful,
        command: list[str],
        limits: Limits = Limits(),
        path: Optional[str] = "/mcp",
    ):
        self.effectful, self.command, self.limits = effectful, command, limits
        self.tg = None  # set by `running`
        self.path = path
        self.sessions: dict[str, StreamableHTTPServerTransport] = {}
        self.seen: dict[str, list] = {}  # session id -> [last request, in flight]
        self.holders: dict[str, Optional[str]] = {}  # session id -> its client token's name
        self.sessionless = Sessionless(effectful, command)
        self._started = False

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return
        if self.tg is None:
            return await _error("the gateway is not running (Gateway.running)", 503)(
                scope, receive, send
            )
        if self.path is not None and scope["path"].rstrip("/") != self.path:
            return await _error(f"no MCP endpoint here: use {self.path}", 404)(scope, receive, send)
        headers = dict(scope["headers"])
        refused = refusal(self.limits, headers)
        if refused is not None:
            extra = {"WWW-Authenticate": "Bearer"} if refused[0] == 401 else None
            return await _error(refused[1], refused[0], extra)(scope, receive, send)
        body, why = await _body(receive, headers, self.limits)
        if body is None:
            return await _error(why[1], why[0], {"Connection": "close"})(scope, receive, send)
        version = headers.get(VERSION_HEADER, b"").decode("latin-1")
        sid = headers.get(SESSION_HEADER, b"").decode("latin-1")
        who = holder(self.limits, headers)
        if not sid and is_sessionless(version):
            return await self._sessionless(who, scope, body, headers, send)
        if version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return await _error(
                f"protocol version {version}: the toolcommit gateway speaks "
                f"{', '.join(HANDSHAKE_PROTOCOL_VERSIONS + MODERN_PROTOCOL_VERSIONS)}",
                400,
            )(scope, receive, send)
        if sid:
            return await self._in_session(sid, who, scope, _replay(body, receive), send)
        return await self._open(who, scope, body, receive, send)

    async def _sessionless(self, who, scope, body: bytes, headers: dict, send):
        """One request of the sessionless revision (`stateless.Sessionless`)."""
        if scope["method"] != "POST":
            return await _error(
                f"{scope['method']}: a sessionless request is a POST of one JSON-RPC request",
                405,
            )(scope, _replay(b""), send)
        if not self._started:  # its downstream's tasks live in the gateway's task group
            self._started = True
            await self.sessionless.run(self.tg)
        try:
            msg = json.loads(body)
        except ValueError:
            msg = None
        text = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers.items()}
        if msg is None:
            reply = error_reply(None, -32700, "not JSON")
        else:
            reply = await self.sessionless.handle(msg, text, who)
        if reply is None:
            return await Response(status_code=202)(scope, _replay(b""), send)
        status = 200
        if "error" in reply:
            status = ERROR_CODE_HTTP_STATUS.get(reply["error"]["code"], 200)
        return await JSONResponse(reply, status_code=status)(scope, _replay(b""), send)

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

    async def _open(self, who, scope, body: bytes, receive, send):
        """A new session of the client token named `who` (None: none), for a POST of an
        ``initialize`` request only."""
        if scope["method"] != "POST":
            return await _error(
                f"{scope['method']} without a session: open one with a POST of initialize", 400
            )(scope, receive, send)
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
            await transport.handle_request(scope, _replay(body, receive), answer)
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

    @asynccontextmanager
    async def running(self):
        """Serve within this block: sessions, the sessionless server and the idle reaper
        run in its task group; on exit every session ends and its server is stopped."""
        async with anyio.create_task_group() as tg:
            self.tg = tg
            tg.start_soon(self.reap)
            try:
                yield self
            finally:
                self.tg = None
                with anyio.CancelScope(shield=True):
                    for transport in list(self.sessions.values()):
                        await transport.terminate()
                    await self.sessionless.stop()
                tg.cancel_scope.cancel()

    async def reap(self) -> None:
        """Close sessions idle (no request in flight) past `Limits.idle`, forever."""
        while True:
            await anyio.sleep(min(max(self.limits.idle / 4, 0.05), 5.0))
            now = time.monotonic()
            for sid, (last, busy) in list(self.seen.items()):
                transport = self.sessions.get(sid)
                if transport is not None and not busy and now - last > self.limits.idle:
                    await transport.terminate()


async def _body(receive, headers: dict, limits: Limits):
    """(body, None), or (None, (status, why)): a body over `limits.body` bytes (413; told
    by its Content-Length at once, else counted as it arrives: nothing past the limit is
    kept), or one not sent within `limits.body_timeout` (408)."""
    over = (413, f"the request body is over {limits.body} bytes, the gateway's limit")
    length = headers.get(b"content-length", b"").strip()
    if length.isdigit() and int(length) > limits.body:
        return None, over
    chunks, size = [], 0
    with anyio.move_on_after(limits.body_timeout):
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks), None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limits.body:
                return None, over
            chunks.append(chunk)
            if not message.get("more_body"):
                return b"".join(chunks), None
    return None, (408, f"the request body did not arrive within {limits.body_timeout:g} s")


def _replay(body: bytes, receive=None):
    """An ASGI `receive` giving `body` once, then `receive`'s messages (a disconnect), or
    waiting forever if none is given."""
    sent = [False]

    async def again():
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        if receive is None:
            await anyio.sleep_forever()
        return await receive()

    return again


def _error(message: str, status: int, headers: Optional[dict] = None):
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}},
        status_code=status,
        headers=headers,
    )
