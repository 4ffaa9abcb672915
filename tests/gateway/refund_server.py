"""A naive MCP refund server for the gateway's tests: every `refund` call applies.

It appends one JSON line per applied refund to the ledger file ``$REFUND_LEDGER``
(default ``ledger.jsonl`` in the working directory; fsynced before it answers), with the
idempotency key the gateway sent in the request's ``_meta`` (``toolcommit/idempotency_key``),
if any; it keeps no key itself, so a second call is a
second refund. It writes its pid to ``$REFUND_LEDGER.pid`` at start. While the file
``$REFUND_LEDGER.hold`` exists, a refund waits after applying (before answering), so a test
can kill it or cancel the call at that point; ``$REFUND_LEDGER.entered`` says it is there.
"""

from __future__ import annotations

import json
import os
import time

from mcp.server.mcpserver import Context, MCPServer

LEDGER = os.path.abspath(os.environ.get("REFUND_LEDGER", "ledger.jsonl"))
server = MCPServer("refunds")


def _meta(ctx: Context) -> dict:
    meta = getattr(ctx.request_context, "meta", None)
    if meta is None:
        return {}
    return meta if isinstance(meta, dict) else meta.model_dump(by_alias=True)


@server.tool()
def refund(order: str, amount: float, ctx: Context, note: str = "") -> dict:
    """Refund `amount` on `order`, with an optional free-text `note` (applies every time it
    is called)."""
    with open(LEDGER, "a") as f:
        f.write(
            json.dumps(
                {
                    "tool": "refund",
                    "args": {"order": order, "amount": amount, "note": note},
                    "idempotency_key": _meta(ctx).get("toolcommit/idempotency_key"),
                    "effect_id": f"re_{os.getpid()}_{time.monotonic_ns()}",
                }
            )
            + "\n"
        )
        f.flush()
        os.fsync(f.fileno())
    if os.path.exists(LEDGER + ".hold"):
        open(LEDGER + ".entered", "w").close()
        while os.path.exists(LEDGER + ".hold"):
            time.sleep(0.01)
    return {"refunded": amount, "order": order}


@server.tool()
def balance(order: str) -> dict:
    """How many refunds `order` has had (reads the ledger; changes nothing)."""
    n = 0
    if os.path.exists(LEDGER):
        with open(LEDGER) as f:
            n = sum(1 for line in f if json.loads(line)["args"]["order"] == order)
    return {"order": order, "refunds": n}


if __name__ == "__main__":
    with open(LEDGER + ".pid", "w") as f:
        f.write(str(os.getpid()))
    server.run("stdio")
