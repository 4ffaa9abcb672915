"""The gateway's HTTP listener: a socket, uvicorn on it, and what holds under abuse.

Each connection must send a request's headers within `Limits.header_timeout` seconds
(then it is closed: a half-sent request holds no descriptor for long), and at most
`Limits.connections` are open at once (one more is closed as soon as it is accepted,
before it can hold anything), by default as many as the process's descriptor limit
leaves room for beside the servers it starts and its log. Should descriptors run out
anyway, the accept loop says so in one line at most once a minute (asyncio prints a
traceback per retry, once a second). Bodies are bounded by the app (`http`).
"""

from __future__ import annotations

import asyncio
import resource
import socket
import sys
import time
from typing import Callable, Optional

import anyio

from toolcommit.gateway.http import HttpGateway, Limits

RESERVED_FDS = 128  # descriptors kept for the servers' pipes, the log and the listener
QUIET = 60.0  # seconds between two lines about descriptors running out


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


def connection_cap(limits: Limits) -> int:
    """Connections open at once: `limits.connections`, or the descriptor limit less
    `RESERVED_FDS` (at least 16)."""
    if limits.connections is not None:
        return limits.connections
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft - RESERVED_FDS))


def _protocol(limits: Limits):
    """uvicorn's h11 protocol with the header timeout and the connection cap."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    cap = connection_cap(limits)

    class Guarded(H11Protocol):
        _timer: Optional[asyncio.TimerHandle] = None
        _served = False

        def connection_made(self, transport) -> None:  # type: ignore[override]
            if len(self.connections) >= cap:
                transport.abort()  # never served: its descriptor is given back at once
                return
            self._served = True
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._timer = self.loop.call_later(limits.header_timeout, self._late)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _late(self) -> None:
            self._timer = None
            if self.cycle is None or self.cycle.response_complete:  # no request under way
                self.transport.abort()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # its headers arrived: the app bounds the body

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's headers, on a kept-alive connection

        def connection_lost(self, exc) -> None:
            self._disarm()
            if self._served:
                super().connection_lost(exc)

    return Guarded


def quiet_accept(errlog=sys.stderr) -> Callable:
    """An asyncio exception handler that reports an accept failing for want of
    descriptors in one line, at most once per `QUIET` seconds; anything else as asyncio
    would."""
    last = [-QUIET]

    def handler(loop, context) -> None:
        message = str(context.get("message", ""))
        if message.startswith("socket.accept() out of system resource"):
            now = time.monotonic()
            if now - last[0] >= QUIET:
                last[0] = now
                e = context.get("exception")
                print(
                    f"toolcommit gateway: cannot accept connections: {getattr(e, 'strerror', e)}"
                    f" (the descriptor limit; retrying, said again at most once in {QUIET:g} s)",
                    file=errlog,
                    flush=True,
                )
            return
        loop.default_exception_handler(context)

    return handler


async def serve_http(
    app: HttpGateway, sock: socket.socket, ready: Optional[Callable[[int], None]] = None
) -> None:
    """Serve `app` on the listening `sock` until cancelled; `ready(port)` is called once it
    serves."""
    import uvicorn

    asyncio.get_running_loop().set_exception_handler(quiet_accept())
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        http=_protocol(app.limits),
        timeout_keep_alive=max(1, int(app.limits.header_timeout)),
    )
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None  # the embedder handles signals
    async with app.running(), anyio.create_task_group() as tg:

        async def announce():
            while not server.started:
                await anyio.sleep(0.02)
            if ready is not None:
                ready(sock.getsockname()[1])

        tg.start_soon(announce)
        try:
            await server.serve(sockets=[sock])
        finally:
            tg.cancel_scope.cancel()
