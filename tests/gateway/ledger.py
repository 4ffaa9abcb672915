"""The refund servers' effect: one fsynced JSON line per applied refund in the ledger file
(``$REFUND_LEDGER``, default ``ledger.jsonl`` in the working directory), shared by
refund_server.py (on the MCP SDK) and fast_refund_server.py (without it). While the file
``LEDGER.hold`` exists a refund waits after applying (before answering), and says so with
``LEDGER.entered``, so a test can kill it or cancel the call at that point."""

from __future__ import annotations

import json
import os
import time
from typing import Optional

LEDGER = os.path.abspath(os.environ.get("REFUND_LEDGER", "ledger.jsonl"))


def apply(order: str, amount: float, note: str, key: Optional[str]) -> dict:
    """Apply one refund (every call applies: the server keeps no key) and return its result."""
    with open(LEDGER, "a") as f:
        f.write(
            json.dumps(
                {
                    "tool": "refund",
                    "args": {"order": order, "amount": amount, "note": note},
                    "idempotency_key": key,
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
            time.sleep(0.01)  # the server's own wait, released by the test
    return {"refunded": amount, "order": order}


def refunds(order: str) -> dict:
    """How many refunds `order` has had (reads the ledger; changes nothing)."""
    n = 0
    if os.path.exists(LEDGER):
        with open(LEDGER) as f:
            n = sum(1 for line in f if json.loads(line)["args"]["order"] == order)
    return {"order": order, "refunds": n}


def started() -> None:
    """Write this server's pid to ``LEDGER.pid``."""
    with open(LEDGER + ".pid", "w") as f:
        f.write(str(os.getpid()))
