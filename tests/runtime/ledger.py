"""An in-process provider for library tests: a real ledger with idempotency keys, fences
and a status read (the harness's loopback provider has the same rules over HTTP)."""

from toolcommit.checker.cli.validate import validate
from toolcommit.checker.runtime import lines as L
from toolcommit.runtime.shims import current_ticket


class Bank:
    """Applies refunds once per idempotency key, rejects stale fences, and can lose the
    first answer after applying (an ack lost on the way back)."""

    def __init__(self, lose_first_ack: bool = False):
        self.ledger: list[dict] = []
        self.by_key: dict[str, dict] = {}
        self.fence: dict[str, int] = {}
        self.lose = lose_first_ack

    def refund(self, ticket, args: dict) -> dict:
        key, fence = ticket.idempotency_key, ticket.fence
        if fence < self.fence.get(key, 0):
            raise PermissionError("fenced out")
        self.fence[key] = fence
        if key not in self.by_key:
            self.by_key[key] = {"id": f"e{len(self.ledger) + 1}"}
            self.ledger.append({"type": "effect", "key": key, "idempotency_key": key,
                                "tool": ticket.tool, "args": args, "scope": ticket.scope,
                                "kind": "apply", "fence": fence,
                                "effect_id": self.by_key[key]["id"]})
        if self.lose:
            self.lose = False
            raise TimeoutError("the answer was lost")
        return self.by_key[key]

    def refund_current(self, args: dict) -> dict:
        """The effect as a tool performs it: the ticket comes from the running guard."""
        return self.refund(current_ticket(), args)

    def status(self, ticket):
        """The status read: seal at the ticket's fence, then look."""
        self.fence[ticket.idempotency_key] = max(ticket.fence,
                                                 self.fence.get(ticket.idempotency_key, 0))
        saved = self.by_key.get(ticket.idempotency_key)
        return saved is not None, saved


def conforms(log, bank: Bank, tmp_path) -> bool:
    """Export the log plus the bank's ledger and check it with validate's code."""
    path = tmp_path / "run.jsonl"
    with open(path, "w") as out:
        log.export(out)
        for i, eff in enumerate(bank.ledger, 1):
            out.write(L.dumps(L.stamp(eff, "bank", i, L.now_rfc3339())) + "\n")
    report = validate([str(path)], complete_effects=True)
    assert report.verdict.value == "CONFORMS", [f.explanation for f in report.findings]
    return True
