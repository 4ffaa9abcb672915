"""One upstream MCP session through the gateway: every message passes, but effectful calls.

`serve_session` pumps the client's messages to the downstream server and back. A
``tools/call`` of an effectful tool is answered by `Effectful.call` (the intent log); a
``notifications/cancelled`` for such a call is not passed on, since the call is the log's
now: cancelled while it waits behind another call of its intent, it is dropped before it
is proposed (nothing reaches the server); once proposed, it is dispatched and runs to its
end (a cancel after dispatch is no cancel: the effect may be under way), its answer is
recorded for the next call of the intent, and the cancelled request gets no response, as
MCP asks. The gateway speaks the handshake era of MCP (``initialize``: a session, which is
the default scope): a ``server/discover`` probe is answered "method not found", and a
client in ``auto`` mode falls back to ``initialize``.
"""
from __future__ import annotations

import sys
import uuid
from typing import Optional

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import (JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse)
from mcp_types import ErrorData

from toolcommit.checker.gateway.calls import Effectful
from toolcommit.checker.gateway.downstream import Downstream, DownstreamGone

METHOD_NOT_FOUND, INTERNAL_ERROR = -32601, -32603


async def serve_session(read, write, effectful: Effectful, command: list[str],
                        session: Optional[str] = None, errlog=sys.stderr) -> None:
    """Serve one session on the streams `read` / `write` (SessionMessage streams of an
    `mcp` server transport) until the client closes it; the downstream server is started
    for it and stopped with it. `session` names it (default: a fresh id)."""
    s = _Session(write, effectful, session or uuid.uuid4().hex)
    s.down = Downstream(command, s.to_client, s.lost, errlog)
    async with anyio.create_task_group() as tg:
        await s.down.run(tg)
        await s.down._ensure()
        try:
            async for item in read:
                if isinstance(item, SessionMessage):
                    await s.from_client(item.message, tg)
        except (anyio.ClosedResourceError, anyio.EndOfStream):
            pass                                       # the client ended the session
        finally:
            await s.down.stop()
            tg.cancel_scope.cancel()


class _Session:
    def __init__(self, write, effectful: Effectful, session: str):
        self.write, self.effectful, self.session = write, effectful, session
        self.down: Downstream
        self.calls: dict = {}          # request id -> [CancelScope, proposed?]
        self.client: Optional[dict] = None
        self._lock = anyio.Lock()

    async def to_client(self, msg) -> None:
        async with self._lock:
            try:
                await self.write.send(SessionMessage(msg))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass                       # the client left; the log has what happened

    async def lost(self, rid) -> None:
        await self.to_client(JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(
            code=INTERNAL_ERROR, message="the downstream MCP server exited before it "
            "answered (toolcommit gateway)")))

    async def from_client(self, msg, tg) -> None:
        if isinstance(msg, JSONRPCRequest):
            if msg.method == "server/discover":
                await self.to_client(JSONRPCError(jsonrpc="2.0", id=msg.id, error=ErrorData(
                    code=METHOD_NOT_FOUND, message="server/discover: the toolcommit gateway "
                    "speaks MCP with initialize (a session)")))
                return
            if msg.method == "initialize":
                self.client = (msg.params or {}).get("clientInfo")
            if self.effectful.wants(msg.method, msg.params):
                tg.start_soon(self._effectful, msg)
                return
        elif isinstance(msg, JSONRPCNotification) and msg.method == "notifications/cancelled":
            rid = (msg.params or {}).get("requestId")
            if rid in self.calls:
                self.calls[rid].cancel()   # it drops the call only before it is proposed
                return
        await self.down.forward(msg)

    async def _effectful(self, msg: JSONRPCRequest) -> None:
        scope = anyio.CancelScope()
        self.calls[msg.id] = scope
        result = None
        try:
            with scope:
                result = await self.effectful.call(msg.params, msg.id, self.session,
                                                   self.client, self._down_request)
        finally:
            self.calls.pop(msg.id, None)
        if result is not None and not scope.cancel_called:
            await self.to_client(JSONRPCResponse(jsonrpc="2.0", id=msg.id, result=result))

    async def _down_request(self, method: str, params: dict):
        # shielded: a dispatched call runs to its answer (or the server's death) whatever
        # the client cancels; the log records that answer for the intent's next call
        with anyio.CancelScope(shield=True):
            return await self.down.request(method, params)


__all__ = ["serve_session", "DownstreamGone"]
