"""toolcommit gateway: an MCP server in front of another, at most one effect per intent.

`calls` sends each effectful ``tools/call`` through the library's intent log
(`toolcommit.runtime`), `proxy` passes one session's messages through, `downstream` runs
the server behind (restarted when it dies or does not answer in time), `stdio` and `http`
are the transports (streamable HTTP on loopback by default, with Host, Origin and token
checks; `loopback`: what a loopback listener admits). Depends on the runtime, the model and
the spec only; needs the ``gateway`` extra (the official `mcp` SDK), imported by the
modules that use it, so ``toolcommit.gateway.loopback`` costs nothing.
"""
