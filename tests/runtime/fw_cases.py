"""The three cases every framework wrapper is tested under, with an in-process provider
(`ledger.Bank`): the model (or workflow) calls the refund, then calls it again under a new
call id, as a model retries after a lost answer.

lost_ack: the first answer is lost after the refund applied (design stripe): one refund, the
  model gets its result both times. in_doubt: every answer is lost and a request may still
  reach the provider (stripe, delay bound 30 s): InDoubt. gave_up: the answer is lost and the
  provider cannot be asked (email, at most once): GaveUp. Each: one refund, and the model is
  told the refund may or may not have happened."""

import ast
import json
import time

from toolcommit.runtime import IntentLog
from toolcommit.runtime.design import load

from .ledger import Bank, conforms

CASES = ("lost_ack", "in_doubt", "gave_up")
ARGS = {"order": "o-7", "amount": 20.0}
# what reaches the provider in each case, over both calls: the guard's replay under the
# same key after the lost answer, and nothing for the retry under a new call id
SENT = {"lost_ack": ["apply", "replay"], "in_doubt": ["apply", "replay"], "gave_up": ["apply"]}


class Case:
    """One run's log, provider and tool body; `check` asserts what the run shows."""

    def __init__(
        self, kind: str, tmp_path, writer: str = "agent", delay_bound: float = 30, **log_kw
    ):
        self.kind, self.tmp = kind, tmp_path
        self.bank = Bank(lose_first_ack=kind == "lost_ack")
        provider = {
            "lost_ack": "stripe",
            "gave_up": "email",
            "in_doubt": load("stripe").with_timing(delay_bound=delay_bound),
        }[kind]
        self.log = IntentLog.sqlite(
            str(tmp_path / f"{kind}.db"), writer=writer, provider=provider, wait=0, **log_kw
        )
        self.status = None if kind == "gave_up" else self.bank.status

    def refund(self, order: str, amount: float) -> dict:
        """The effect: the bank applies it under the running guard's ticket."""
        out = self.bank.refund_current({"order": order, "amount": amount})
        if self.kind != "lost_ack":
            raise TimeoutError("the answer was lost")
        return out

    def check(self, told: list) -> None:
        """`told`: what the model (or workflow) got for each of the two calls."""
        assert len(self.bank.ledger) == 1, self.bank.ledger
        assert [p for p, _, _ in self.bank.requests] == SENT[self.kind], self.bank.requests
        if self.kind == "lost_ack":
            assert [decoded(t) for t in told] == [{"id": "e1"}] * 2
            assert [e["decision"] for e in self.log.events() if e["type"] == "proposal"] == [
                "accepted",
                "duplicate",
            ]
            assert conforms(self.log, self.bank, self.tmp)
            return
        kind = "InDoubt" if self.kind == "in_doubt" else "GaveUp"
        for t in told:
            t = decoded(t)
            assert t["toolcommit"] == kind and t["happened"] == "unknown", t
            assert "may or may not have happened" in t["message"]


def decoded(text):
    """A tool output as the model reads it, back into a value (JSON or a Python repr)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)


def settled_by_the_settler(case: Case, deadline: float = 30.0) -> None:
    """Wait (polling, at most `deadline` s, failing loudly) until the record leaves doubt;
    assert the pod's own settler recorded the refund ACKED, the log conforming."""
    end = time.monotonic() + deadline
    while not case.log.records()[0].settled:
        assert time.monotonic() < end, "the settler never settled the record in doubt"
        time.sleep(0.01)
    (rec,) = case.log.records()
    assert (rec.state, rec.owner, rec.result) == ("ACKED", "pod-a", {"id": "e1"})
    assert len(case.bank.ledger) == 1  # one refund: the call's apply (its replay found it)
    assert [p for p, _, _ in case.bank.requests] == ["apply", "replay"]  # the settler read
    assert conforms(case.log, case.bank, case.tmp)
    acked = [e for e in case.log.events() if e.get("to") == "ACKED"]
    assert [e["writer"] for e in acked] == ["pod-a"]  # the live pod, not a recover
