"""One upstream MCP session through the gateway: every message passes, but effectful calls.

`serve_session` pumps the client's messages to the downstream server and back. A
``tools/call`` of an effectful tool is answered by `Effectful.call` (the intent log); a
``notifications/cancelled`` for such a call is not passed on, since the call is the log's
now: cancelled while it waits behind another call of its intent, it is dropped before it
is proposed (nothing reaches the server); once proposed, it is dispatched and runs to its
end (a cancel after dispatch is no cancel: the effect may be under way), its answer is
recorded for the next call of the intent, and the cancelled request gets no response, as
MCP asks. The gateway speaks the handshake era of MCP (``initialize``: a session): a
``server/discover`` probe is answered "method not found", and a client in ``auto`` mode
falls back to ``initialize``.

Every malformed request gets a JSON-RPC error and the session goes on: a line that is not
JSON-RPC a parse error (id null), a ``tools/call`` whose params are not what MCP says
"invalid params"; a malformed notification is dropped (a notification has no answer). The
downstream call of an effectful tool has a time limit (`Effectful.call_timeout`): a server
that does not answer in time is restarted, so the call is in doubt as a dead server's is,
and the session keeps serving.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Optional

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from toolcommit.gateway.calls import Effectful, malformed
from toolcommit.gateway.downstream import Downstream, DownstreamGone, bounded_request
from toolcommit.runtime.caller import hearing

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
METHOD_NOT_FOUND, INTERNAL_ERROR = -32601, -32603


async def serve_session(
    read,
    write,
    effectful: Effectful,
    command: list[str],
    session: Optional[str] = None,
    errlog=sys.stderr,
    holder: Optional[str] = None,
) -> None:
    """Serve one session on the streams `read` / `write` (SessionMessage streams of an
    `mcp` server transport; an `Exception` item is a line that did not parse) until the
    client closes it; the downstream server is started at the first message and stopped
    with the session. `session` names it (default: a fresh id); `holder` is the name of
    the client token that opened it (None: none), whose calls are its principal's."""
    s = _Session(write, effectful, session or uuid.uuid4().hex, errlog)
    s.holder = holder
    s.down = Downstream(command, s.to_client, s.lost, errlog, effectful.call_timeout)
    async with anyio.create_task_group() as tg:
        await s.down.run(tg)
        try:
            async for item in read:
                await s.receive(item, tg)
        except (anyio.ClosedResourceError, anyio.EndOfStream):
            pass  # the client ended the session
        finally:
            await s.drained(effectful.call_timeout + 1)
            await s.down.stop()
            tg.cancel_scope.cancel()


class Unreadable(Exception):
    """A client line that is no JSON-RPC message: `code` is -32700 (not JSON) or -32600
    (JSON, but not a valid message), `rid` its id if it has a usable one."""

    def __init__(self, line: str, error: Exception):
        try:
            data = json.loads(line)
        except ValueError:
            data, self.code = None, PARSE_ERROR
        else:
            self.code = INVALID_REQUEST
        rid = data.get("id") if isinstance(data, dict) else None
        self.rid = rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        super().__init__(
            ("not JSON: " if self.code == PARSE_ERROR else "not a valid JSON-RPC message: ") + first
        )


def _error(rid, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message))


class _Session:
    def __init__(self, write, effectful: Effectful, session: str, errlog=sys.stderr):
        self.write, self.effectful, self.session = write, effectful, session
        self.errlog = errlog
        self.down: Downstream
        self.calls: dict = {}  # request id -> CancelScope
        self._emptied: Optional[anyio.Event] = None
        self.client: Optional[dict] = None
        self.holder: Optional[str] = None
        self._lock = anyio.Lock()

    async def to_client(self, msg) -> bool:
        """Send `msg` to the client: whether it was written (False: the client left; the
        log has what happened)."""
        async with self._lock:
            try:
                await self.write.send(SessionMessage(msg))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return False
            return True

    async def lost(self, rid, why: Optional[str] = None) -> None:
        why = why or "the downstream MCP server exited before it answered"
        await self.to_client(_error(rid, INTERNAL_ERROR, f"{why} (toolcommit gateway)"))

    async def receive(self, item, tg) -> None:
        """One item from the client: a message, or the exception of a line that did not
        parse. A failure handling it is answered (a request) or reported, never fatal."""
        if not isinstance(item, SessionMessage):
            await self.to_client(
                _error(
                    getattr(item, "rid", None),
                    getattr(item, "code", PARSE_ERROR),
                    f"toolcommit gateway: {item}",
                )
            )
            return
        msg = item.message
        try:
            await self.from_client(msg, tg)
        except Exception as e:  # noqa: BLE001 - one bad message ends nothing
            print(f"toolcommit gateway: {type(e).__name__}: {e}", file=self.errlog, flush=True)
            if isinstance(msg, JSONRPCRequest):
                await self.to_client(
                    _error(msg.id, INTERNAL_ERROR, f"toolcommit gateway: {type(e).__name__}: {e}")
                )

    async def from_client(self, msg, tg) -> None:
        if isinstance(msg, JSONRPCRequest):
            if msg.method == "server/discover":
                await self.to_client(
                    _error(
                        msg.id,
                        METHOD_NOT_FOUND,
                        "server/discover: the "
                        "toolcommit gateway speaks MCP with initialize "
                        "(a session)",
                    )
                )
                return
            if msg.method == "initialize":
                info = (msg.params or {}).get("clientInfo")
                self.client = info if isinstance(info, dict) else None
            if msg.method == "tools/call":
                why = malformed(msg.params)
                if why is not None:
                    await self.to_client(_error(msg.id, INVALID_PARAMS, f"tools/call: {why}"))
                    return
            if self.effectful.wants(msg.method, msg.params):
                tg.start_soon(self._effectful, msg)
                return
        elif isinstance(msg, JSONRPCNotification) and msg.method == "notifications/cancelled":
            rid = (msg.params or {}).get("requestId") if isinstance(msg.params, dict) else None
            if not isinstance(rid, (str, int)) or isinstance(rid, bool):
                print(
                    "toolcommit gateway: a notifications/cancelled without a valid "
                    "requestId; dropped",
                    file=self.errlog,
                    flush=True,
                )
                return
            if rid in self.calls:
                self.calls[rid].cancel()  # it drops the call only before it is proposed
                return
        await self.down.forward(msg)

    async def drained(self, limit: float) -> None:
        """Wait (at most `limit` seconds, whatever cancels the session) until no effectful
        call of the session is in flight: a session the client ended or deleted lets its
        dispatched calls run to their answers, which the log records for a retry."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(limit):
            while self.calls:
                self._emptied = anyio.Event()
                await self._emptied.wait()

    async def _effectful(self, msg: JSONRPCRequest) -> None:
        scope = anyio.CancelScope()
        self.calls[msg.id] = scope
        result = None
        try:
            with scope, hearing() as heard:  # told only once the answer is written
                result = await self.effectful.call(
                    msg.params,
                    msg.id,
                    self.session,
                    self.client,
                    self._down_request,
                    self.holder,
                    ready=self.down.ready,
                )
        except Exception as e:  # noqa: BLE001 - answered, never fatal
            print(f"toolcommit gateway: {type(e).__name__}: {e}", file=self.errlog, flush=True)
            await self.to_client(
                _error(msg.id, INTERNAL_ERROR, f"toolcommit gateway: {type(e).__name__}: {e}")
            )
            return
        finally:
            self.calls.pop(msg.id, None)
            if not self.calls and self._emptied is not None:
                self._emptied.set()
        if result is None or scope.cancel_called:
            return  # a client that cancelled did not hear the outcome
        if await self.to_client(JSONRPCResponse(jsonrpc="2.0", id=msg.id, result=result)):
            await self.effectful.heard(heard)

    async def _down_request(self, method: str, params: dict):
        return await bounded_request(self.down, self.effectful.call_timeout, method, params)


__all__ = ["serve_session", "DownstreamGone", "Unreadable"]
