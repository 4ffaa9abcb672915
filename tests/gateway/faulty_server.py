"""A raw MCP server on stdio that misbehaves on `refund`, for the gateway's time limits.

It answers ``initialize``, ``tools/list`` and ``balance`` calls; a ``refund`` is applied
(one line appended to ``$REFUND_LEDGER``, as refund_server.py does) and then, as
``$FAULT`` says: ``hang`` never answers (nor anything after it), ``close`` closes its
stdout and lives on, ``garbage`` writes a line that is not JSON-RPC and never answers,
``invalid`` answers with a result that is no object; a refund of another order than
``$FAULT_ORDER`` (when set) is answered as it should be. It writes its pid to
``$REFUND_LEDGER.pids`` (one line per start); while ``$REFUND_LEDGER.start`` exists, it
does at its start what the file says: ``exit`` (at once, status 1) or ``hang`` (never
reading its stdin).
"""

from __future__ import annotations

import json
import os
import sys
import time

LEDGER = os.path.abspath(os.environ.get("REFUND_LEDGER", "ledger.jsonl"))
FAULT = os.environ.get("FAULT", "hang")
FAULT_ORDER = os.environ.get("FAULT_ORDER")
TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("refund", "balance")]


def answer(rid, result) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
    sys.stdout.flush()


def refund(rid, args) -> None:
    with open(LEDGER, "a") as f:
        f.write(json.dumps({"tool": "refund", "args": args}) + "\n")
        f.flush()
        os.fsync(f.fileno())
    if FAULT_ORDER is not None and args.get("order") != FAULT_ORDER:
        answer(rid, {"content": [{"type": "text", "text": "refunded"}], "isError": False})
        return
    if FAULT == "invalid":
        answer(rid, "refunded, but not in an object")
        return
    if FAULT == "close":
        sys.stdout.close()
        os.close(1)
    elif FAULT == "garbage":
        sys.stdout.write("this is not JSON-RPC {\n")
        sys.stdout.flush()
    while True:
        time.sleep(3600)


def main() -> None:
    with open(LEDGER + ".pids", "a") as f:
        f.write(f"{os.getpid()}\n")
    if os.path.exists(LEDGER + ".start"):
        with open(LEDGER + ".start") as f:
            if f.read().strip() == "exit":
                sys.exit(1)
        while True:
            time.sleep(3600)
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            answer(
                rid,
                {
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "faulty", "version": "1"},
                },
            )
        elif method == "tools/list":
            answer(rid, {"tools": TOOLS})
        elif method == "tools/call" and msg["params"]["name"] == "refund":
            refund(rid, msg["params"]["arguments"])
        elif method == "tools/call":
            answer(rid, {"content": [{"type": "text", "text": "ok"}], "isError": False})
        elif rid is not None:
            sys.stdout.write(
                json.dumps(
                    {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": method}}
                )
                + "\n"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
