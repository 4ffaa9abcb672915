"""A naive MCP refund server for the gateway's tests: every `refund` call applies.

Each refund is one line in the ledger file (ledger.py: ``$REFUND_LEDGER``, fsynced before
it answers) with the idempotency key the gateway sent in the request's ``_meta``
(``toolcommit/idempotency_key``), if any; it keeps no key itself, so a second call is a
second refund. It writes its pid to ``$REFUND_LEDGER.pid`` at start; ledger.py says how a
test holds a refund after it applied.
"""

from __future__ import annotations

from ledger import apply, refunds, started
from mcp.server.mcpserver import Context, MCPServer

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
    return apply(order, amount, note, _meta(ctx).get("toolcommit/idempotency_key"))


@server.tool()
def balance(order: str) -> dict:
    """How many refunds `order` has had (reads the ledger; changes nothing)."""
    return refunds(order)


if __name__ == "__main__":
    started()
    server.run("stdio")
