"""`toolcommit gateway`: an MCP server in front of another, at most once per intent.

Exit codes: 0 the client closed the session (stdio) or the gateway was stopped (SIGINT,
SIGTERM); 2 bad usage (one line on stderr). Needs the ``gateway`` extra (the `mcp` SDK).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys

from toolcommit.model.errors import UsageError

# MCP has no status read and no idempotency key a server must honour: the design proven for
# such a provider is email's (spec/designs/email.json), at-most-once with a visible give-up
PROVIDER = "email"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "gateway", help="front an MCP server: effectful tool calls at most once per intent",
        description="Start the MCP server COMMAND (stdio) and serve it, on stdio or on "
        "streamable HTTP at 127.0.0.1, passing every message through except each tools/call "
        "of an --effectful tool: that goes through the intent log in --db (toolcommit.runtime "
        "on SQLite), keyed by the canonical tool, arguments and scope. The first call of an "
        "intent reaches the server; a retry (any request id) gets its recorded answer; a "
        "call the server never answered is a tool error saying the effect may have happened. "
        "'toolcommit export DB' writes the log for 'toolcommit validate'.")
    p.add_argument("--effectful", required=True, metavar="TOOL,...",
                   help="the tools whose calls change the world")
    p.add_argument("--db", required=True, metavar="PATH",
                   help="the intent log's SQLite file (created if absent)")
    p.add_argument("--scope", metavar="RULE", default=None,
                   help="what one user intent is: a path into the call's view (args.order, "
                   "client.name, meta.user, session) or MODULE:FUNCTION called with the view; "
                   "default the MCP session")
    p.add_argument("--writer", default="gateway", metavar="NAME",
                   help="this process's writer name in the log (one live process per name; "
                   "default gateway)")
    p.add_argument("--http", type=int, default=None, metavar="PORT",
                   help="serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio "
                   "(0: a free port, printed on stderr)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS",
                   help="the downstream MCP server's command line, after --")
    return p


def _command(args) -> list[str]:
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("gateway: give the downstream server's command after --, such as "
                         "'toolcommit gateway --effectful refund --db intents.db -- python server.py'")
    if shutil.which(cmd[0]) is None:
        raise UsageError(f"gateway: the server command {cmd[0]!r} is not an executable here "
                         "(nor on PATH); give the downstream MCP server's command after --")
    return cmd


def _tools(text: str) -> frozenset:
    tools = frozenset(t.strip() for t in text.split(",") if t.strip())
    if not tools:
        raise UsageError("--effectful: name at least one tool, such as --effectful refund")
    return tools


def run(args) -> int:
    cmd, tools = _command(args), _tools(args.effectful)
    if args.http is not None and not 0 <= args.http <= 65535:
        raise UsageError(f"--http {args.http}: a port is 0 to 65535")
    try:
        import anyio
        from toolcommit.checker.gateway.calls import Effectful
        from toolcommit.checker.gateway.serve import serve_http, serve_stdio
    except ModuleNotFoundError as e:
        raise UsageError(f"gateway needs the mcp SDK ({e.name} is missing): "
                         "pip install 'toolcommit[gateway]'") from None
    from toolcommit.checker.runtime import IntentLog
    if args.scope is not None:
        from toolcommit.checker.logs.adapters.rules import Rules
        Rules(scope=args.scope).scope_of()            # a bad rule is refused now, not per call
    db_dir = os.path.dirname(os.path.abspath(args.db))
    if not os.path.isdir(db_dir):
        raise UsageError(f"--db {args.db}: no directory {db_dir}; create it or give another path")
    log = IntentLog.sqlite(args.db, writer=args.writer, provider=PROVIDER)
    try:
        effectful = Effectful(log, tools, args.scope)
        if args.http is None:
            main = lambda: serve_stdio(effectful, cmd)          # noqa: E731
        else:
            def ready(port):
                print(f"toolcommit gateway: http://127.0.0.1:{port}/mcp", file=sys.stderr,
                      flush=True)
            main = lambda: serve_http(effectful, cmd, args.http, ready)   # noqa: E731
        anyio.run(_until_signalled, main)
    finally:
        log.close()
    return 0


async def _until_signalled(main) -> None:
    """Run `main()` until it returns or SIGINT / SIGTERM arrives (then stop cleanly: the
    downstream server's process group is stopped and the log closed)."""
    import signal
    import anyio
    async with anyio.create_task_group() as tg:
        async def watch():
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return
        tg.start_soon(watch)
        await main()
        tg.cancel_scope.cancel()
