"""The downstream MCP server: one stdio process at a time, restarted on demand.

`Downstream` owns the server's process (the `mcp` SDK's `stdio_client`, which starts it in
a process group of its own and stops the whole group). Messages the server sends go to
`deliver`, except the answers to the gateway's own requests (`request`). When the process
dies, every request still waiting on it is answered by `lost` (the client's) or raises
`DownstreamGone` (the gateway's): nobody waits forever. The next message starts a new
process, and replays the client's ``initialize`` handshake to it first, so the session
goes on over a restart.
"""
from __future__ import annotations

import itertools
import os
import sys
from typing import Awaitable, Callable, Optional

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types import (JSONRPCError, JSONRPCMessage, JSONRPCNotification, JSONRPCRequest,
                       JSONRPCResponse)

GATEWAY_ID = "toolcommit-gateway-"     # the prefix of the gateway's own request ids


class DownstreamGone(Exception):
    """The downstream server exited before it answered."""


class Downstream:
    """The server behind the gateway (see the module docstring).

    Parameters
    ----------
    command : list of str
        The server's command line (started with the gateway's whole environment,
        not the SDK's short list).
    deliver : async callable(JSONRPCMessage)
        Receives what the server sends that is not an answer to the gateway.
    lost : async callable(request id)
        Called for each client request the server died without answering.
    """

    def __init__(self, command: list[str], deliver: Callable[[JSONRPCMessage], Awaitable],
                 lost: Callable[[object], Awaitable], errlog=sys.stderr):
        self.params = StdioServerParameters(command=command[0], args=command[1:],
                                            env=dict(os.environ))
        self.deliver, self.lost, self.errlog = deliver, lost, errlog
        self.initialize: Optional[JSONRPCRequest] = None   # the client's, replayed on restart
        self.initialized = False
        self.starts = 0
        self._ids = itertools.count(1)
        self._waiting: dict[str, list] = {}                 # gateway id -> [event, answer]
        self._client_pending: set = set()                   # client request ids sent down
        self._write = None
        self._scope: Optional[anyio.CancelScope] = None
        self._start_lock = anyio.Lock()
        self._tg = None

    async def run(self, tg) -> None:
        """Bind to the task group that will hold the process's tasks."""
        self._tg = tg

    # ----- the process --------------------------------------------------------------------
    async def _ensure(self) -> None:
        async with self._start_lock:
            if self._write is not None:
                return
            await self._tg.start(self._serve)
            self.starts += 1
            if self.starts > 1 and self.initialize is not None:
                await self._replay_handshake()

    async def _serve(self, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.CancelScope() as scope:
            self._scope = scope
            try:
                async with stdio_client(self.params, errlog=self.errlog) as (read, write):
                    self._write = write
                    task_status.started()
                    async for item in read:
                        if isinstance(item, SessionMessage):
                            await self._route(item.message)
            finally:
                self._write = None
                await self._died()

    async def _route(self, msg: JSONRPCMessage) -> None:
        if isinstance(msg, (JSONRPCResponse, JSONRPCError)):
            key = str(msg.id)
            if key in self._waiting:
                slot = self._waiting.pop(key)
                slot[1] = msg
                slot[0].set()
                return
            self._client_pending.discard(msg.id)
        await self.deliver(msg)

    async def _died(self) -> None:
        for slot in self._waiting.values():
            slot[0].set()                                    # answer None: gone
        self._waiting.clear()
        pending, self._client_pending = self._client_pending, set()
        with anyio.CancelScope(shield=True):
            for rid in pending:
                await self.lost(rid)

    async def _replay_handshake(self) -> None:
        params = dict(self.initialize.params or {})
        await self.request("initialize", params, ensure=False)
        if self.initialized:
            await self._send(JSONRPCNotification(jsonrpc="2.0",
                                                 method="notifications/initialized"))

    async def stop(self) -> None:
        """Stop the server (its whole process group) and wait until it is gone."""
        if self._scope is not None:
            self._scope.cancel()

    # ----- messages -----------------------------------------------------------------------
    async def _send(self, msg: JSONRPCMessage) -> None:
        write = self._write
        if write is None:
            raise DownstreamGone("the downstream server is not running")
        try:
            await write.send(SessionMessage(msg))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as e:
            raise DownstreamGone("the downstream server closed its input") from e

    async def forward(self, msg: JSONRPCMessage) -> None:
        """Pass a client message on (starting the server if it is not running)."""
        if isinstance(msg, JSONRPCRequest) and msg.method == "initialize":
            self.initialize = msg
        if isinstance(msg, JSONRPCNotification) and msg.method == "notifications/initialized":
            self.initialized = True
        await self._ensure()
        if isinstance(msg, JSONRPCRequest):
            self._client_pending.add(msg.id)
        try:
            await self._send(msg)
        except DownstreamGone:
            if isinstance(msg, JSONRPCRequest) and msg.id in self._client_pending:
                self._client_pending.discard(msg.id)
                await self.lost(msg.id)

    async def request(self, method: str, params: dict, ensure: bool = True):
        """Send the gateway's own request and wait for its answer (a JSONRPCResponse or
        JSONRPCError). Raises `DownstreamGone` if the server died first."""
        if ensure:
            await self._ensure()
        rid = f"{GATEWAY_ID}{next(self._ids)}"
        slot = [anyio.Event(), None]
        self._waiting[rid] = slot
        try:
            await self._send(JSONRPCRequest(jsonrpc="2.0", id=rid, method=method, params=params))
            await slot[0].wait()
        finally:
            self._waiting.pop(rid, None)
        if slot[1] is None:
            raise DownstreamGone(f"the downstream server exited before it answered {method}")
        return slot[1]
