"""`toolcommit gateway`: an MCP server in front of another, at most once per intent.

Exit codes: 0 the client closed the session (stdio) or the gateway was stopped (SIGINT,
SIGTERM); 2 bad usage, a port in use, a --db another gateway serves under the same writer
or another process keeps locked (one line on stderr). Needs the ``gateway`` extra (the
`mcp` SDK).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from toolcommit.model.errors import UsageError


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "gateway",
        help="front an MCP server: effectful tool calls at most once per intent",
        description="Start the MCP server COMMAND (stdio) and serve it, on stdio or on "
        "streamable HTTP (127.0.0.1 unless --host), passing every message through except "
        "each tools/call of an --effectful tool: that goes through the intent log in --db "
        "(toolcommit.runtime on SQLite), keyed by the call's principal (a client token's "
        "name, --principal, or else the session: two sessions are never merged), the "
        "canonical tool and arguments (and the client's _meta['toolcommit/intent'], or "
        "--scope). The first call of an intent reaches the server; the same principal's "
        "retry (any request id, session) gets its recorded answer; a call the server never answered in time is a tool error saying the effect "
        "may have happened, never re-sent. "
        "'toolcommit export DB' writes the log for 'toolcommit validate'.",
    )
    p.add_argument(
        "--effectful",
        required=True,
        metavar="TOOL,...",
        help="the tools whose calls change the world",
    )
    p.add_argument(
        "--db",
        required=True,
        metavar="PATH",
        help="the intent log's SQLite file (created if absent)",
    )
    p.add_argument(
        "--scope",
        metavar="RULE",
        default=None,
        help="what divides one principal's intents: a path into the call's view "
        "(args.order, meta.user, session) or MODULE:FUNCTION called with the view; "
        "default: the tool and its canonical arguments (a client names a distinct "
        "intent in the request's _meta['toolcommit/intent']); never joins two principals",
    )
    p.add_argument(
        "--identity",
        action="append",
        default=None,
        metavar="TOOL=FIELD,...",
        help="the arguments that make two calls of TOOL one intent (such as "
        "refund=order,amount: not the free-text note), checked against the tool's "
        "inputSchema at its first call (repeatable; default: every declared argument). "
        "Arguments are always normalized by the schema: '20' is 20 for a number, an "
        "omitted optional argument its default",
    )
    p.add_argument(
        "--principal",
        metavar="NAME",
        default=None,
        help="every call's principal is NAME (the one client of a stdio gateway, whose "
        "retries then meet its intents across reconnects and restarts); default: each "
        "session (stdio connection, HTTP session) is its own principal, merged with no other",
    )
    p.add_argument(
        "--client-tokens",
        metavar="PATH",
        default=None,
        help="with --http: a file of 'NAME TOKEN' lines; every request must carry one "
        "TOKEN ('Authorization: Bearer TOKEN'), and its calls are NAME's (a client's "
        "sessions share its intents; two clients never do)",
    )
    p.add_argument(
        "--trust-client-claim",
        metavar="PATH",
        default=None,
        help="UNSAFE unless the client is trusted: take the principal from what the client "
        "says about itself, the view's PATH (client.name, the clientInfo of initialize; "
        "meta.user, the request's _meta), within its token's or --principal's name if any; "
        "else any client claiming a name is answered with that name's recorded outcomes",
    )
    p.add_argument(
        "--writer",
        default="gateway",
        metavar="NAME",
        help="this process's writer name in the log (one live gateway per --db and "
        "name: a second one is refused; default gateway)",
    )
    p.add_argument(
        "--call-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="the limit on each effectful downstream call: then the call is in "
        "doubt (never re-sent) and the server is restarted (default 60)",
    )
    p.add_argument(
        "--lease",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="the lease on a record, renewed while its call runs (default 30)",
    )
    p.add_argument(
        "--http",
        type=int,
        default=None,
        metavar="PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio "
        "(0: a free port, printed on stderr)",
    )
    p.add_argument(
        "--host",
        default=None,
        metavar="ADDRESS",
        help="with --http: the address to bind (default 127.0.0.1, loopback only)",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="NAME",
        help="with --http: a Host name allowed besides loopback ones and --host "
        "(repeatable); others get 421",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="with --http: an Origin allowed besides loopback ones "
        "(scheme://host[:port]; repeatable); others get 403",
    )
    p.add_argument(
        "--token-file",
        metavar="PATH",
        default=None,
        help="with --http: every request must carry 'Authorization: Bearer TOKEN', "
        "TOKEN the file's first line (or the environment's TOOLCOMMIT_GATEWAY_TOKEN), "
        "16 characters or more; one token for all: it names no principal",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        default=None,
        metavar="N",
        help="with --http: sessions (server processes) alive at once (default 16)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --http: close a session idle this long (default 600)",
    )
    p.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ARGS",
        help="the downstream MCP server's command line, after --",
    )
    return p


def _command(args) -> list[str]:
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError(
            "gateway: give the downstream server's command after --, such as "
            "'toolcommit gateway --effectful refund --db intents.db -- python server.py'"
        )
    if shutil.which(cmd[0]) is None:
        raise UsageError(
            f"gateway: the server command {cmd[0]!r} is not an executable here "
            "(nor on PATH); give the downstream MCP server's command after --"
        )
    return cmd


def _tools(text: str) -> frozenset:
    tools = frozenset(t.strip() for t in text.split(",") if t.strip())
    if not tools:
        raise UsageError("--effectful: name at least one tool, such as --effectful refund")
    return tools


def _identity(given, tools: frozenset) -> dict:
    """tool -> identity fields from the --identity flags (a tool named twice is refused)."""
    fields: dict = {}
    for text in given or ():
        tool, eq, names = text.partition("=")
        tool = tool.strip()
        got = tuple(n.strip() for n in names.split(",") if n.strip())
        if not eq or not tool or not got:
            raise UsageError(
                f"--identity {text}: write TOOL=FIELD,..., such as --identity refund=order,amount"
            )
        if tool not in tools:
            raise UsageError(
                f"--identity {text}: {tool} is not an --effectful tool ({', '.join(sorted(tools))})"
            )
        if tool in fields:
            raise UsageError(f"--identity {text}: {tool} has fields already; give them once")
        fields[tool] = got
    return fields


def _positive(name: str, value: float) -> float:
    if not value > 0 or value != value or value == float("inf"):
        raise UsageError(f"{name} {value}: give a number of seconds above 0")
    return value


def _read(flag: str, path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise UsageError(f"{flag} {path}: {why}") from None


def _token(args) -> "str | None":
    """The one bearer token (--token-file, else TOOLCOMMIT_GATEWAY_TOKEN), or None."""
    from toolcommit.gateway.principal import check_token

    env = os.environ.get("TOOLCOMMIT_GATEWAY_TOKEN")
    if args.token_file is None and env is None:
        return None
    if args.client_tokens is not None:
        given = "--token-file" if args.token_file is not None else "TOOLCOMMIT_GATEWAY_TOKEN"
        raise UsageError(
            f"{given} and --client-tokens: one source of tokens; give each client its own "
            "token in --client-tokens (or unset TOOLCOMMIT_GATEWAY_TOKEN)"
        )
    if args.token_file is None:
        return check_token(env.strip(), "TOOLCOMMIT_GATEWAY_TOKEN")
    lines = _read("--token-file", args.token_file).splitlines()
    return check_token(lines[0].strip() if lines else "", f"--token-file {args.token_file}:1")


def _clients(args) -> "dict | None":
    """token -> principal name from --client-tokens, or None."""
    from toolcommit.gateway.principal import parse_client_tokens

    if args.client_tokens is None:
        return None
    if args.principal is not None:
        raise UsageError(
            "--principal and --client-tokens: each client token names its principal; "
            "drop --principal"
        )
    return parse_client_tokens(_read("--client-tokens", args.client_tokens), args.client_tokens)


def _principals(args):
    """The operator's principal rule; `UsageError` for a bad name, or a --scope that
    would read what a client claims about itself without --trust-client-claim."""
    from toolcommit.gateway.principal import Principals, check_name

    if args.principal is not None:
        check_name(args.principal, "--principal")
    scope = args.scope or ""
    if (scope == "client" or scope.startswith("client.")) and args.trust_client_claim is None:
        raise UsageError(
            f"--scope {scope}: clientInfo is what a client claims about itself, and names "
            "nobody; a scope only divides a principal's intents. Name clients with "
            "--client-tokens, or trust the claim with --trust-client-claim (unsafe)"
        )
    if args.trust_client_claim is not None and not args.trust_client_claim.strip():
        raise UsageError("--trust-client-claim: give a path, such as client.name or meta.user")
    return Principals(fixed=args.principal, claim=args.trust_client_claim)


HTTP_ONLY = (
    "host",
    "allow_host",
    "allow_origin",
    "token_file",
    "client_tokens",
    "max_sessions",
    "idle_timeout",
)


def _limits(args):
    """The HTTP transport's `Limits` from the flags (None for stdio, which takes none)."""
    from toolcommit.gateway.http import Limits
    from toolcommit.gateway.loopback import LOOPBACK

    given = [name for name in HTTP_ONLY if getattr(args, name) is not None]
    if args.http is None:
        if given:
            raise UsageError(
                f"--{given[0].replace('_', '-')} is for --http PORT (the stdio "
                "gateway has one client: the process that started it)"
            )
        return None
    host = args.host or LOOPBACK
    token, clients = _token(args), _clients(args)
    sessions = 16 if args.max_sessions is None else args.max_sessions
    if sessions < 1:
        raise UsageError(f"--max-sessions {sessions}: give 1 or more")
    idle = 600.0 if args.idle_timeout is None else args.idle_timeout
    return Limits(
        host=host,
        hosts=frozenset(h.lower() for h in args.allow_host or ()),
        origins=frozenset(o.rstrip("/") for o in args.allow_origin or ()),
        token=token,
        clients=clients,
        sessions=sessions,
        idle=_positive("--idle-timeout", idle),
    )


def _open_warning(host: str) -> str:
    """What the gateway says at start when it asks no token."""
    who = (
        "every user of this machine"
        if host in ("127.0.0.1", "::1", "localhost")
        else f"whoever reaches {host}"
    )
    return (
        f"toolcommit gateway: warning: no --client-tokens or --token-file: {who} can call "
        "the tools, and open sessions up to --max-sessions; give each client a token "
        "(--client-tokens FILE)"
    )


def _listen(args, limits):
    from toolcommit.gateway.listener import listen

    try:
        return listen(limits.host, args.http)
    except OSError as e:
        raise UsageError(
            f"--http {args.http}: cannot listen on {limits.host}:{args.http}: {e.strerror or e}"
        ) from None


def run(args) -> int:
    cmd, tools = _command(args), _tools(args.effectful)
    if args.http is not None and not 0 <= args.http <= 65535:
        raise UsageError(f"--http {args.http}: a port is 0 to 65535")
    timeout = _positive("--call-timeout", args.call_timeout)
    lease = _positive("--lease", args.lease)
    try:
        import anyio

        from toolcommit.gateway import Gateway
        from toolcommit.gateway.process import open_sqlite, until_signalled
    except ModuleNotFoundError as e:
        raise UsageError(
            f"gateway needs the mcp SDK ({e.name} is missing): pip install 'toolcommit[gateway]'"
        ) from None
    from toolcommit.model.views import scope_rule

    scope_rule(args.scope)  # a bad rule is refused now, not per call
    principals = _principals(args)
    identity = _identity(args.identity, tools)
    limits = _limits(args)
    lock, log = open_sqlite(args.db, args.writer, lease)
    try:
        sock = _listen(args, limits) if limits is not None else None
        gateway = Gateway(
            log,
            cmd,
            tools,
            scope=args.scope,
            identity=identity,
            principal=principals.fixed,
            trust_client_claim=principals.claim,
            call_timeout=timeout,
            **({} if limits is None else {"limits": limits}),
        )
        if sock is None:
            main = gateway.serve_stdio
        else:

            def ready(port):
                host = f"[{limits.host}]" if ":" in limits.host else limits.host
                print(f"toolcommit gateway: http://{host}:{port}/mcp", file=sys.stderr, flush=True)
                if limits.token is None and limits.clients is None:
                    print(_open_warning(limits.host), file=sys.stderr, flush=True)

            main = lambda: gateway.serve_http(sock, ready)  # noqa: E731
        anyio.run(until_signalled, main)
    finally:
        log.close()
        os.close(lock)
    return 0
