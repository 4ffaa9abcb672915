"""An in-process provider for library tests: a real ledger with idempotency keys, fences
and a status read (the harness's loopback provider has the same rules over HTTP)."""

from toolcommit.checker.cli.validate import validate
from toolcommit.runtime import lines as L
from toolcommit.runtime.shims import current_ticket


class Bank:
    """A provider as the profiles describe one: a request with an idempotency key is applied
    once per key (a repeat gets the saved answer), one without a key is applied each time;
    a fence older than the newest seen is refused; the status read finds an effect by the
    intent's key in its metadata. It can lose the first answer after applying (an ack lost
    on the way back). `requests` is what reached it: (purpose, idempotency key, fence)."""

    def __init__(self, lose_first_ack: bool = False):
        self.ledger: list[dict] = []
        self.by_key: dict[str, dict] = {}
        self.fence: dict[str, int] = {}
        self.requests: list[tuple] = []
        self.lose = lose_first_ack

    def refund(self, ticket, args: dict) -> dict:
        key, idem, fence = ticket.key, ticket.idempotency_key, ticket.fence
        self.requests.append((ticket.purpose, idem, fence))
        if fence is not None:
            if fence < self.fence.get(key, 0):
                raise PermissionError("fenced out")
            self.fence[key] = fence
        if idem is None or idem not in self.by_key:
            answer = {"id": f"e{len(self.ledger) + 1}"}
            if idem is not None:
                self.by_key[idem] = answer
            self.ledger.append(
                {
                    "type": "effect",
                    "key": key,
                    "idempotency_key": idem or key,
                    "tool": ticket.tool,
                    "args": args,
                    "scope": ticket.scope,
                    "kind": "apply",
                    "fence": fence or 0,
                    "effect_id": answer["id"],
                }
            )
        else:
            answer = self.by_key[idem]
        if self.lose:
            self.lose = False
            raise TimeoutError("the answer was lost")
        return answer

    def refund_current(self, args: dict) -> dict:
        """The effect as a tool performs it: the ticket comes from the running guard."""
        return self.refund(current_ticket(), args)

    def status(self, ticket):
        """The status read: seal at the ticket's fence (if any), then look by the intent's
        key: the effect's answer, or None."""
        if ticket.fence is not None:
            self.fence[ticket.key] = max(ticket.fence, self.fence.get(ticket.key, 0))
        for e in self.ledger:
            if e["key"] == ticket.key:
                return {"id": e["effect_id"]}
        return None


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
