"""toolcommit gateway: an MCP server in front of another, at most one effect per intent.

`Gateway` (`core`) is the whole, to embed: give it an `IntentLog` and the downstream
server's command, serve it in your own ASGI app or on a stdio loop. Inside: `calls` sends
each effectful ``tools/call`` through the library's intent log (`toolcommit.runtime`),
`proxy` passes one session's messages through, `stateless` serves the sessionless
revision (2026-07-28), `downstream` runs the server behind (restarted when it dies or does
not answer in time), `stdio` and `http` are the transports (streamable HTTP on loopback by
default, with Host, Origin and token checks; `loopback`: what a loopback listener admits;
`listener`: the socket, and what holds under abuse), `process` the gateway as a process of
its own (one per log and writer, stopped by a signal). Depends on the runtime, the model
and the spec only; needs the ``gateway`` extra (the official `mcp` SDK), imported by the
modules that use it, so ``toolcommit.gateway.loopback`` costs nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Gateway", "Limits"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from toolcommit.gateway import core

        return getattr(core, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
