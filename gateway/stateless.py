"""The sessionless MCP protocol (2026-07-28): each request on its own, no ``initialize``.

A request of that revision is one POST carrying one JSON-RPC request whose ``params._meta``
names its protocol version and its client's capabilities (and, optionally, its client's
info); its answer is one JSON-RPC response. `Sessionless` serves such requests: a
``server/discover`` is answered by the gateway (the versions it speaks and the server's
capabilities), an effectful ``tools/call`` goes through the intent log (`Effectful.call`,
as in a session), and every other request is passed to one downstream server shared by
every sessionless request, which the gateway itself initialized (the server behind speaks
the handshake protocol on stdio; the gateway's own handshake is replayed on its restarts).

Whose a sessionless call is: the client token's name, else the operator's
``--principal`` (or a claim the operator trusts). With none of these, a gateway cannot tell
its sessionless clients apart, and an intent is its asker's: an effectful sessionless call
is then refused, not sent (`ANONYMOUS_REFUSAL`), since merging every client into one
principal would answer one user's refund with another's outcome. Other requests are served.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any, Optional

import anyio
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp_types import CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY
from mcp_types.methods import serialize_server_result
from mcp_types.version import LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from toolcommit.gateway.calls import Effectful, malformed, tool_error
from toolcommit.gateway.downstream import Downstream, DownstreamGone, bounded_request

INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32600, -32601, -32602
INTERNAL_ERROR = -32603
ANONYMOUS_REFUSAL = (
    "toolcommit gateway: this {tool} call was not sent: a sessionless call carries no token "
    "and the gateway has no --principal, so it cannot tell whose call it is (two users' equal "
    "calls would be one intent); start the gateway with --client-tokens FILE (a token per "
    "client) or --principal NAME (its one client), or open a session (initialize)"
)
RESULT_DEFAULTS = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
ENVELOPE = "io.modelcontextprotocol/"  # the prefix of the per-request protocol fields
HANDSHAKE = {
    "protocolVersion": LATEST_HANDSHAKE_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "toolcommit-gateway", "version": "1"},
}


def is_sessionless(version: str) -> bool:
    """Whether an ``MCP-Protocol-Version`` header names a sessionless revision."""
    return version in MODERN_PROTOCOL_VERSIONS


def error(rid, code: int, message: str, data: Any = None) -> dict:
    body: dict = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": body}


def answer(rid, method: str, version: str, result: Any) -> dict:
    """The response to `method` carrying `result` in `version`'s shape (the fields that
    revision requires filled with their defaults: complete, not cacheable); an error
    response, said at once, for a result that revision cannot carry."""
    if not isinstance(result, dict):
        return error(rid, INTERNAL_ERROR, f"toolcommit gateway: the {method} result is no object")
    filled = {**RESULT_DEFAULTS, **result}
    try:
        shaped = serialize_server_result(method, version, filled)
    except KeyError:  # a method the revision's table does not know: as it came
        shaped = filled
    except ValueError as e:  # pydantic's ValidationError is one
        first = str(e).splitlines()[0]
        return error(
            rid,
            INTERNAL_ERROR,
            f"toolcommit gateway: the server's {method} result is invalid: {first}",
        )
    return {"jsonrpc": "2.0", "id": rid, "result": shaped}


class Sessionless:
    """Serves sessionless requests (see the module docstring) with one shared downstream
    server, started at the first request that needs it; `run` in a task group first."""

    def __init__(self, effectful: Effectful, command: list[str], errlog=sys.stderr):
        self.effectful, self.errlog = effectful, errlog
        self.down = Downstream(
            command,
            self._stray,
            self._lost,
            errlog,
            effectful.call_timeout,
            handshake=HANDSHAKE,
        )

    async def run(self, tg) -> None:
        await self.down.run(tg)

    async def stop(self) -> None:
        await self.down.stop()

    async def _stray(self, msg) -> None:
        """A message of the server that answers no request of ours (a notification): a
        sessionless client has no stream to hear it on."""

    async def _lost(self, rid, why=None) -> None:
        """Only the gateway's own requests reach this server: never called for a client's."""

    async def handle(self, msg: Any, headers: dict, holder: Optional[str]) -> Optional[dict]:
        """The JSON-RPC answer (a dict) to the decoded body `msg` of one sessionless POST
        (`headers`: lower-case names to values), made by the client token named `holder`
        (None: none); None for a notification (HTTP 202)."""
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        rid = msg.get("id")
        if "id" not in msg:
            return None  # the sessionless protocol has no client notifications: dropped
        if not isinstance(rid, (str, int)) or isinstance(rid, bool):
            return error(None, INVALID_REQUEST, "the request's id must be a string or a number")
        method = msg.get("method")
        if not isinstance(method, str):
            return error(rid, INVALID_REQUEST, "the request has no method")
        route = classify_inbound_request(
            msg, headers=headers, supported_modern_versions=MODERN_PROTOCOL_VERSIONS
        )
        if isinstance(route, InboundLadderRejection):
            return error(rid, route.code, f"toolcommit gateway: {route.message}", route.data)
        params, version = msg.get("params"), route.protocol_version
        try:
            if method == "server/discover":
                return answer(rid, method, version, await self._discover())
            if method == "tools/call":
                why = malformed(params)
                if why is not None:
                    return error(rid, INVALID_PARAMS, f"tools/call: {why}")
            if self.effectful.wants(method, params):
                return answer(rid, method, version, await self._effectful(rid, params, holder))
            return await self._forward(rid, method, version, params)
        except DownstreamGone as e:
            return error(rid, INTERNAL_ERROR, f"toolcommit gateway: {e}")

    async def _discover(self) -> dict:
        try:  # started and initialized: its capabilities
            await self._timed("ping", {})
        except DownstreamGone:
            pass
        server = self.down.server or {}
        capabilities = server.get("capabilities")
        return {
            "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
            "capabilities": capabilities if isinstance(capabilities, dict) else {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": server.get("serverInfo") or {}},
        }

    async def _effectful(self, rid, params: dict, holder: Optional[str]) -> dict:
        meta = params.get("_meta") or {}
        info = meta.get(CLIENT_INFO_META_KEY)
        request = {**params, "_meta": _bare(meta)}
        principals = self.effectful.principals
        if not (holder or principals.fixed or principals.claim):
            return tool_error(ANONYMOUS_REFUSAL.format(tool=params.get("name")))
        return await self.effectful.call(
            request,
            rid,
            f"sessionless-{uuid.uuid4().hex}",  # no session: the call's id is its own
            info if isinstance(info, dict) else None,
            self._down_request,
            holder,
            ready=self.down.ready,
        )

    async def _forward(self, rid, method: str, version: str, params) -> dict:
        if isinstance(params, dict):
            params = {**params, "_meta": _bare(params.get("_meta") or {})}
            if not params["_meta"]:
                del params["_meta"]
        got = await self._timed(method, params if isinstance(params, dict) else {})
        data = got.model_dump(by_alias=True, exclude_unset=True)
        data["id"] = rid
        if "result" in data:
            return answer(rid, method, version, data["result"])
        return data

    async def _timed(self, method: str, params: dict):
        """A request passed on, waited for at most the call timeout (`DownstreamGone`
        then; the server runs on: its other requests are not disturbed)."""
        limit = self.effectful.call_timeout
        with anyio.move_on_after(limit):
            return await self.down.request(method, params)
        raise DownstreamGone(f"the server did not answer {method} within {limit:g} s")

    async def _down_request(self, method: str, params: dict):
        return await bounded_request(self.down, self.effectful.call_timeout, method, params)


def _bare(meta: dict) -> dict:
    """`meta` without the per-request protocol fields (the server behind speaks the
    handshake protocol)."""
    return {k: v for k, v in meta.items() if not k.startswith(ENVELOPE)}


__all__ = ["ANONYMOUS_REFUSAL", "Sessionless", "is_sessionless", "PROTOCOL_VERSION_META_KEY"]
