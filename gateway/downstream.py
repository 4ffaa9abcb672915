"""The downstream MCP server: one stdio process at a time, restarted on demand.

`Downstream` owns the server's process (the `mcp` SDK's `stdio_client`, which starts it in
a process group of its own and stops the whole group; `tether` makes it die with the
gateway however the gateway ends). Messages the server sends go to
`deliver`, except the answers to the gateway's own requests (`request`). When the process
dies (it exits, closes its stdout, or `restart` stops it because it did not answer in
time), every request still waiting on it is answered by `lost` (the client's) or raises
`DownstreamGone` (the gateway's): nobody waits forever. The next message starts a new
process, and replays the client's ``initialize`` handshake to it first, so the session
goes on over a restart. A line the server writes that is not JSON-RPC is reported on
`errlog` and otherwise ignored (the request it should have answered times out).
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
from typing import Awaitable, Callable, Optional

import anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from toolcommit.gateway import tether

GATEWAY_ID = "toolcommit-gateway-"  # the prefix of the gateway's own request ids


class DownstreamGone(Exception):
    """The downstream server exited (or was stopped) before it answered."""


class InvalidAnswer(DownstreamGone):
    """The server answered the request with a line that is no valid JSON-RPC response."""


class _Quiet(logging.Filter):
    """Drops the SDK's traceback for a server line that does not parse: the gateway says
    it in one line (`Downstream._unreadable`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Failed to parse JSONRPC message")


logging.getLogger("mcp.client.stdio").addFilter(_Quiet())


def _answer_id(e: Exception):
    """The id of a JSON object with an id that failed to validate as a message (pydantic
    keeps the input), or None."""
    errors = getattr(e, "errors", None)
    try:
        found = errors() if callable(errors) else []
    except Exception:  # noqa: BLE001 - not pydantic's
        found = []
    for err in found:
        got = err.get("input")
        if isinstance(got, dict) and isinstance(got.get("id"), (str, int)):
            if "method" not in got and not isinstance(got["id"], bool):
                return got["id"]
    return None


class _Process:
    """One run of the server: its input, the requests waiting on it, its cancel scope."""

    def __init__(self):
        self.write = None
        self.scope: Optional[anyio.CancelScope] = None
        self.waiting: dict[str, list] = {}  # gateway id -> [event, answer]
        self.client_pending: set = set()  # client request ids sent down


class Downstream:
    """The server behind the gateway (see the module docstring).

    Parameters
    ----------
    command : list of str
        The server's command line (started with the gateway's whole environment,
        not the SDK's short list).
    deliver : async callable(JSONRPCMessage)
        Receives what the server sends that is not an answer to the gateway.
    lost : async callable(request id, why=None)
        Called for each client request the server died without answering (or answered
        with no valid message: `why` says so).
    handshake_timeout : float
        Seconds a restarted server may take to answer the replayed ``initialize``; then it
        is stopped and the message that needed it fails as on a dead server.
    handshake : dict or None
        The gateway's own ``initialize`` params, sent at every start (the sessionless
        protocol: no client handshake to replay); None: the client's, replayed on restart.
    """

    def __init__(
        self,
        command: list[str],
        deliver: Callable[[JSONRPCMessage], Awaitable],
        lost: Callable[[object], Awaitable],
        errlog=sys.stderr,
        handshake_timeout: float = 60.0,
        handshake: Optional[dict] = None,
    ):
        tethered = tether.command(os.getpid(), command)  # it dies with the gateway
        self.params = StdioServerParameters(
            command=tethered[0], args=tethered[1:], env=dict(os.environ)
        )
        self.deliver, self.lost, self.errlog = deliver, lost, errlog
        self.handshake_timeout = handshake_timeout
        self.initialize: Optional[JSONRPCRequest] = None  # the client's, replayed on restart
        self.initialized = False
        self.own = handshake is not None  # the gateway's handshake, at every start
        if handshake is not None:
            self.initialize = JSONRPCRequest(
                jsonrpc="2.0", id=f"{GATEWAY_ID}0", method="initialize", params=handshake
            )
            self.initialized = True
        self.server: Optional[dict] = None  # the server's answer to the gateway's handshake
        self.starts = 0
        self._ids = itertools.count(1)
        self._proc: Optional[_Process] = None  # the live process, if any
        self._start_lock = anyio.Lock()
        self._tg = None

    async def run(self, tg) -> None:
        """Bind to the task group that will hold the process's tasks."""
        self._tg = tg

    # ----- the process --------------------------------------------------------------------
    async def _ensure(self) -> _Process:
        async with self._start_lock:
            if self._proc is not None:
                return self._proc
            proc = _Process()
            await self._tg.start(self._serve, proc)
            self._proc = proc
            self.starts += 1
            if (self.starts > 1 or self.own) and self.initialize is not None:
                try:
                    with anyio.move_on_after(self.handshake_timeout) as timer:
                        await self._replay_handshake(proc)
                except DownstreamGone:
                    await self.restart()
                    raise
                if timer.cancelled_caught:
                    await self.restart()
                    raise DownstreamGone(
                        f"the server did not answer initialize within {self.handshake_timeout:g} s"
                    )
            return proc

    async def _serve(self, proc: _Process, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.CancelScope() as scope:
            proc.scope = scope
            try:
                async with stdio_client(self.params, errlog=self.errlog) as (read, write):
                    proc.write = write
                    task_status.started()
                    async for item in read:
                        if isinstance(item, SessionMessage):
                            await self._route(proc, item.message)
                        else:
                            await self._unreadable(proc, item)
            finally:
                await self._died(proc)

    async def _unreadable(self, proc: _Process, e: Exception) -> None:
        """A line of the server that is no JSON-RPC message: one line on `errlog`. If it
        names a request waiting on it (an answer of the wrong shape), that request is
        answered at once: the gateway's raises `DownstreamGone`, the client's gets an
        error."""
        rid = _answer_id(e)
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(
            f"toolcommit gateway: the downstream server wrote a line that is not a valid "
            f"JSON-RPC message ({first})"
            + ("; ignored" if rid is None else f"; it answers request {rid!r}"),
            file=self.errlog,
            flush=True,
        )
        if rid is None:
            return
        slot = proc.waiting.pop(str(rid), None)
        if slot is not None:
            slot[1] = InvalidAnswer(
                f"the server's answer is not a valid JSON-RPC response ({first})"
            )
            slot[0].set()
        elif rid in proc.client_pending:
            proc.client_pending.discard(rid)
            await self.lost(rid, f"the server's answer is not a valid JSON-RPC response ({first})")

    async def _route(self, proc: _Process, msg: JSONRPCMessage) -> None:
        if isinstance(msg, (JSONRPCResponse, JSONRPCError)):
            key = str(msg.id)
            if key in proc.waiting:
                slot = proc.waiting.pop(key)
                slot[1] = msg
                slot[0].set()
                return
            proc.client_pending.discard(msg.id)
        await self.deliver(msg)

    async def _died(self, proc: _Process) -> None:
        proc.write = None
        if self._proc is proc:
            self._proc = None
        for slot in proc.waiting.values():
            slot[0].set()  # answer None: gone
        proc.waiting.clear()
        pending, proc.client_pending = proc.client_pending, set()
        with anyio.CancelScope(shield=True):
            for rid in pending:
                await self.lost(rid)

    async def _replay_handshake(self, proc: _Process) -> None:
        params = dict(self.initialize.params or {})
        answer = await self._request(proc, "initialize", params)
        if isinstance(answer, JSONRPCError):
            raise DownstreamGone(f"the server refused initialize: {answer.error.message}")
        if isinstance(answer.result, dict):
            self.server = answer.result
        if self.initialized:
            await self._send(
                proc, JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized")
            )

    async def restart(self) -> None:
        """Stop the live process (its whole group): every request waiting on it gets its
        answer as from a dead server; the next message starts a new one."""
        proc = self._proc
        if proc is not None:
            self._proc = None
            if proc.scope is not None:
                proc.scope.cancel()

    stop = restart

    # ----- messages -----------------------------------------------------------------------
    @staticmethod
    async def _send(proc: _Process, msg: JSONRPCMessage) -> None:
        if proc.write is None:
            raise DownstreamGone("the downstream server is not running")
        try:
            await proc.write.send(SessionMessage(msg))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as e:
            raise DownstreamGone("the downstream server closed its input") from e

    async def forward(self, msg: JSONRPCMessage) -> None:
        """Pass a client message on (starting the server if it is not running)."""
        if isinstance(msg, JSONRPCRequest) and msg.method == "initialize":
            self.initialize = msg
        if isinstance(msg, JSONRPCNotification) and msg.method == "notifications/initialized":
            self.initialized = True
        try:
            proc = await self._ensure()
        except DownstreamGone:
            if isinstance(msg, JSONRPCRequest):
                await self.lost(msg.id)
            return
        if isinstance(msg, JSONRPCRequest):
            proc.client_pending.add(msg.id)
        try:
            await self._send(proc, msg)
        except DownstreamGone:
            if isinstance(msg, JSONRPCRequest) and msg.id in proc.client_pending:
                proc.client_pending.discard(msg.id)
                await self.lost(msg.id)

    async def ready(self) -> None:
        """Start the server if it is not running and see its handshake answered (bounded
        by the handshake timeout); `DownstreamGone` if it dies or hangs first."""
        await self._ensure()

    async def request(self, method: str, params: dict):
        """Send the gateway's own request and wait for its answer (a JSONRPCResponse or
        JSONRPCError). Raises `DownstreamGone` if the server died first."""
        return await self._request(await self._ensure(), method, params)

    async def _request(self, proc: _Process, method: str, params: dict):
        rid = f"{GATEWAY_ID}{next(self._ids)}"
        slot = [anyio.Event(), None]
        proc.waiting[rid] = slot
        try:
            await self._send(
                proc, JSONRPCRequest(jsonrpc="2.0", id=rid, method=method, params=params)
            )
            await slot[0].wait()
        finally:
            proc.waiting.pop(rid, None)
        if slot[1] is None:
            raise DownstreamGone(f"the downstream server exited before it answered {method}")
        if isinstance(slot[1], InvalidAnswer):
            raise slot[1]
        return slot[1]


async def bounded_request(down: Downstream, limit: float, method: str, params: dict):
    """`down.request`, shielded and bounded: a dispatched call runs to its answer, the
    server's death or `limit` seconds, whatever the client cancels (the log records the
    answer for the intent's next call); a server that does not answer in time is
    restarted and the call raises `DownstreamGone`."""
    with anyio.CancelScope(shield=True):
        with anyio.move_on_after(limit) as timer:
            return await down.request(method, params)
        if timer.cancelled_caught:
            await down.restart()
            raise DownstreamGone(
                f"the server did not answer within {limit:g} s (the "
                "gateway's --call-timeout; it restarted the server)"
            )
