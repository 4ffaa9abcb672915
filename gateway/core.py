"""`Gateway`: the whole gateway as one object to embed in your own server.

Give it an `IntentLog` and the downstream server's command line; serve it as an ASGI app
in your own web server (`asgi`, inside `running` or under `lifespan`), on streamable HTTP
of its own (`serve_http`), or on this process's stdin and stdout (`serve_stdio`). The
command line (``toolcommit gateway``) is a thin shell over it.

Examples
--------
A Starlette app serving the gateway at ``/mcp`` (docs/gateway.md runs it)::

    gateway = Gateway(log, ["python", "server.py"], effectful={"refund"})
    app = Starlette(routes=[Route("/mcp", gateway.asgi())], lifespan=gateway.lifespan)
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Callable, Iterable, Mapping, Optional

from toolcommit.gateway.calls import Effectful
from toolcommit.gateway.http import HttpGateway, Limits
from toolcommit.gateway.principal import Principals
from toolcommit.gateway.schemas import Identities
from toolcommit.runtime import IntentLog


class Gateway:
    """An MCP gateway: every message to the server behind passes through, but each
    ``tools/call`` of an effectful tool goes through `log`, at most once per intent.

    Parameters
    ----------
    log : IntentLog
        The intent log (one writer: this gateway); its provider should be ``email``'s
        design (`toolcommit.gateway.calls.PROVIDER`): MCP has no status read.
    command : list of str
        The downstream MCP server's command line (stdio).
    effectful : iterable of str
        The tools whose calls change the world.
    scope : str or None
        A ``--scope`` rule dividing a principal's intents (`toolcommit.model.views`).
    identity : mapping of str to tuple of str
        Per tool, the arguments that make two calls one intent (default: every declared one).
    principal : str or None
        Every call's principal unless a client token names one (``--principal``).
    trust_client_claim : str or None
        A path into the call's view taken as (part of) the principal (unsafe).
    call_timeout : float
        Seconds a downstream call may take before it is in doubt and the server restarted.
    limits : Limits
        What the HTTP face lets in (`toolcommit.gateway.http.Limits`).
    """

    def __init__(
        self,
        log: IntentLog,
        command: list[str],
        effectful: Iterable[str],
        *,
        scope: Optional[str] = None,
        identity: Optional[Mapping[str, tuple]] = None,
        principal: Optional[str] = None,
        trust_client_claim: Optional[str] = None,
        call_timeout: float = 60.0,
        limits: Limits = Limits(),
    ):
        self.command, self.limits = list(command), limits
        self.effectful = Effectful(
            log,
            frozenset(effectful),
            scope,
            call_timeout=call_timeout,
            principals=Principals(fixed=principal, claim=trust_client_claim),
            identities=Identities(dict(identity or {})),
        )
        self._http: Optional[HttpGateway] = None

    def asgi(self, path: Optional[str] = None) -> HttpGateway:
        """The ASGI app (one per gateway) serving MCP at `path` (None: wherever it is
        routed); it serves inside `running` (or the `lifespan` of the app it is in)."""
        if self._http is None:
            self._http = HttpGateway(self.effectful, self.command, self.limits, path)
        return self._http

    @asynccontextmanager
    async def running(self):
        """Serve the ASGI app within this block; on exit its sessions end and their
        servers are stopped."""
        async with self.asgi().running():
            yield self

    @asynccontextmanager
    async def lifespan(self, app=None):
        """`running`, as a Starlette (or any ASGI framework's) lifespan (no state)."""
        async with self.running():
            yield

    async def serve_http(self, sock, ready: Optional[Callable[[int], None]] = None) -> None:
        """Serve streamable HTTP at ``/mcp`` on the listening socket `sock`
        (`toolcommit.gateway.listener.listen`) until cancelled."""
        from toolcommit.gateway.listener import serve_http

        await serve_http(self.asgi("/mcp"), sock, ready)

    async def serve_stdio(self) -> None:
        """One session on this process's stdin and stdout, until the client closes stdin."""
        from toolcommit.gateway.stdio import serve_stdio

        await serve_stdio(self.effectful, self.command)


__all__ = ["Gateway", "Limits"]
