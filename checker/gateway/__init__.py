"""toolcommit gateway: an MCP server in front of another, at most one effect per intent.

`proxy` passes one session's messages through, `calls` sends each effectful ``tools/call``
through the library's intent log (`toolcommit.runtime`), `downstream` runs the server
behind (restarted when it dies or does not answer in time), `stdio` and `http` are the
transports (streamable HTTP on loopback by default, with Host, Origin and token checks).
Needs the ``gateway`` extra (the official `mcp` SDK).
"""
