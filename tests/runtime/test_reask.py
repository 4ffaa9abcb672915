"""A re-ask meets the intent in doubt, at run time (`reask=hold`, instance `reask_in_doubt`).

The provider applies a refund after the client's timeout; the model is told it may or may
not have happened; the user asks again in a new message, whose scope (the request id) makes
a new key. Under `reask=proceed` (the naive option) that is a second refund, as the
model's counterexample says; under `reask=hold` (every shipped design's) it is one.
"""

import json
import time
from pathlib import Path

import pytest

from toolcommit.runtime import Answered, Held, InDoubt, IntentLog, IntentLogError, guard, tell

from .ledger import Bank, conforms

DESIGNS = Path(__file__).resolve().parents[2] / "spec" / "designs"
ARGS = {"charge": "ch_1", "amount": 20}


def design_file(tmp_path, reask: str) -> str:
    """Stripe's shipped design with `reask` set and a 1 s delay bound (so a test can wait
    it out; the design's logic is unchanged)."""
    doc = json.loads((DESIGNS / "stripe.json").read_text("utf-8"))
    doc["knobs"]["reask"] = reask
    doc["assumes"]["environment"]["delay_bound"] = "1s"
    path = tmp_path / f"stripe-{reask}.json"
    path.write_text(json.dumps(doc), "utf-8")
    return str(path)


class LateNetwork:
    """The first request (and its replay) gets no answer; the first is held in the network
    and reaches the provider later (`land`): the provider applies after the timeout."""

    def __init__(self, bank: Bank):
        self.bank, self.held, self.down = bank, [], True

    def execute(self, ticket):
        if self.down:
            if ticket.purpose == "apply":
                self.held.append(ticket)
            raise TimeoutError("no answer in time")
        return self.bank.refund(ticket, ticket.args)

    def land(self):
        for t in self.held:
            self.bank.refund(t, t.args)
        self.held, self.down = [], False


def call(log, net, bank, call_id, scope, args=ARGS):
    return guard(
        log, call_id, "refund", dict(args), scope, net.execute, bank.status, principal="user:1"
    )


def first_in_doubt(tmp_path, reask, **kw):
    bank = Bank()
    net = LateNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, reask), **kw
    )
    with pytest.raises(InDoubt) as e:  # replayed, no answer, D not waited out
        call(log, net, bank, "t1", "user:42:request:7")
    assert "may or may not have happened" in e.value.tell()
    net.land()  # the first refund lands after the timeout
    assert len(bank.ledger) == 1
    return log, net, bank


def wait_out_delay_bound(log, key):
    deadline = time.monotonic() + 10
    while log.read_wait(key) > 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_without_the_hold_a_re_ask_in_a_new_request_is_a_second_refund(tmp_path):
    log, net, bank = first_in_doubt(tmp_path, "proceed")
    call(log, net, bank, "r2", "user:42:request:8")
    assert len(bank.ledger) == 2  # the model's counterexample, at run time
    log.close()


def test_with_the_hold_the_re_ask_waits_then_gets_the_first_outcome_one_refund(tmp_path):
    log, net, bank = first_in_doubt(tmp_path, "hold")
    first = log.records()[0]
    with pytest.raises(Held) as e:  # in doubt: held, then nothing sent
        call(log, net, bank, "r2", "user:42:request:8")
    assert tell(e.value)["happened"] == "unknown" and "not sent" in str(e.value)
    assert len(bank.ledger) == 1
    wait_out_delay_bound(log, first.key)  # the log settles the first: ACKED,
    assert call(log, net, bank, "t1", "user:42:request:7") == {"id": "e1"}  # read found it
    with pytest.raises(Answered) as e:  # the re-ask: its outcome, not a refund
        call(log, net, bank, "r2", "user:42:request:8")
    assert e.value.happened == "yes" and e.value.result == {"id": "e1"}
    assert tell(e.value)["result"] == {"id": "e1"}
    with pytest.raises(Answered):  # a model retry in that request: the same
        call(log, net, bank, "r2b", "user:42:request:8")
    assert len(bank.ledger) == 1
    call(log, net, bank, "u3", "user:42:request:9")  # told now: a next request proceeds
    assert len(bank.ledger) == 2
    assert conforms(log, bank, tmp_path)  # the log validate reads agrees
    log.close()


def test_a_user_rule_of_sameness_holds_a_re_ask_with_other_arguments(tmp_path):
    log, net, bank = first_in_doubt(tmp_path, "hold", same={"refund": ("charge",)})
    with pytest.raises(Held):
        call(
            log,
            net,
            bank,
            "r2",
            "user:42:request:8",
            {"charge": "ch_1", "amount": "20.00", "reason": "asked again"},
        )
    call(log, net, bank, "c2", "user:42:request:8", {"charge": "ch_2", "amount": 20})
    assert len(bank.ledger) == 2  # another charge is another refund
    log.close()


def test_a_sameness_rule_naming_a_missing_argument_is_refused_before_anything_is_sent(tmp_path):
    bank = Bank()
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", same=("order",), provider=design_file(tmp_path, "hold")
    )
    with pytest.raises(IntentLogError, match="names order"):
        guard(
            log,
            "t1",
            "refund",
            dict(ARGS),
            "user:42:request:7",
            bank.refund_current,
            bank.status,
            principal="user:1",
        )
    assert bank.requests == []
    log.close()


def test_the_library_refuses_a_design_with_refuse():
    import tempfile

    from toolcommit.runtime.design import DesignError

    with tempfile.TemporaryDirectory() as d:
        with pytest.raises(DesignError, match="reask=refuse"):
            IntentLog.sqlite(
                str(Path(d) / "i.db"), writer="w1", provider=design_file(Path(d), "refuse")
            )
