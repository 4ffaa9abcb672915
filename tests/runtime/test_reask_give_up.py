"""The user re-asks both ways (instance ``reask_after_give_up``), at run time; and a
re-ask held while the first was in doubt stays that request's.

t1 is sent and gets no answer; it is replayed, read absent once the delay bound has passed,
and given up ("did not happen"). Meanwhile the user, told it may or may not have happened,
re-asks in a new message (r2): held while t1 is open, accepted once t1 is given up, and
applied. Then the user retries the given-up request itself (t5, ``new_request=True``): the
same intent, which r2 has done. The model's fix (spec/PROTOCOL.md, "A re-ask while in
doubt"): an ACKED sibling answers a new attempt after a give-up, heard or not. Before it the
library sent t5 as the next attempt: two refunds for one request.
"""

import pytest

from toolcommit.runtime import Answered, GaveUp, Held, InDoubt, IntentLog, guard

from .ledger import Bank, conforms
from .test_reask import ARGS, design_file, wait_out_delay_bound

USER = "user:42"


class DeadNetwork:
    """Every request is lost until `heal`: sent, never delivered, never answered."""

    def __init__(self, bank: Bank):
        self.bank, self.down = bank, True

    def execute(self, ticket):
        if self.down:
            raise TimeoutError("no answer in time")
        return self.bank.refund(ticket, ticket.args)


def call(log, net, bank, call_id, scope, new_request=False):
    return guard(
        log,
        call_id,
        "refund",
        dict(ARGS),
        scope,
        net.execute,
        bank.status,
        new_request=new_request,
        principal=USER,
    )


def test_a_retry_after_a_give_up_is_answered_by_the_re_ask_that_took_effect(tmp_path):
    bank = Bank()
    net = DeadNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, "hold")
    )
    with pytest.raises(InDoubt):  # t1: no answer, replayed, no answer, D not waited out
        call(log, net, bank, "t1", "user:42:request:7")
    with pytest.raises(Held):  # r2, the re-ask after the doubt: held while t1 is open
        call(log, net, bank, "r2", "user:42:request:8")
    wait_out_delay_bound(log, log.records()[0].key)
    with pytest.raises(GaveUp) as e:  # t1's retry reads absent: given up, did not happen
        call(log, net, bank, "t1b", "user:42:request:7")
    assert e.value.happened == "no"
    net.down = False
    assert call(log, net, bank, "r2b", "user:42:request:8") == {"id": "e1"}  # r2 applied
    with pytest.raises(Answered) as e:  # t5: the given-up request asked again
        call(log, net, bank, "t5", "user:42:request:7", new_request=True)
    assert e.value.happened == "yes" and e.value.result == {"id": "e1"}
    assert len(bank.ledger) == 1  # before the fix: 2 (t5 sent as the next attempt)
    assert conforms(log, bank, tmp_path)
    log.close()


def test_another_principals_done_refund_never_answers_a_retry_after_a_give_up(tmp_path):
    bank = Bank()
    net = DeadNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, "hold")
    )
    with pytest.raises(InDoubt):
        call(log, net, bank, "t1", "user:42:request:7")
    wait_out_delay_bound(log, log.records()[0].key)
    with pytest.raises(GaveUp):
        call(log, net, bank, "t1b", "user:42:request:7")
    net.down = False
    other = guard(
        log,
        "o1",
        "refund",
        dict(ARGS),
        "user:9:request:1",
        net.execute,
        bank.status,
        principal="user:9",
    )
    assert other == {"id": "e1"}
    # user 42's retry is its own intent's next attempt: refunded, never told user 9's
    assert call(log, net, bank, "t5", "user:42:request:7", new_request=True) == {"id": "e2"}
    assert len(bank.ledger) == 2
    log.close()


def test_a_re_ask_held_in_doubt_is_answered_even_once_the_first_caller_heard(tmp_path):
    """r2 is asked while t1 is in doubt and held; t1's own retry then hears the refund (told).
    r2's request was asked in doubt, so its next call gets that outcome: before, the hold
    forgot it and r2 went through (two refunds)."""
    bank = Bank()
    net = LateNetworkOnce(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, "hold")
    )
    with pytest.raises(InDoubt):
        call(log, net, bank, "t1", "user:42:request:7")
    with pytest.raises(Held):  # the re-ask, asked while t1 is in doubt
        call(log, net, bank, "r2", "user:42:request:8")
    net.land()
    wait_out_delay_bound(log, log.records()[0].key)
    assert call(log, net, bank, "t1b", "user:42:request:7") == {"id": "e1"}  # heard: told
    with pytest.raises(Answered) as e:  # r2 asked again: the refund it was asked in doubt of
        call(log, net, bank, "r2b", "user:42:request:8")
    assert e.value.happened == "yes" and e.value.result == {"id": "e1"}
    assert len(bank.ledger) == 1
    call(log, net, bank, "u3", "user:42:request:9")  # a request asked after: a new refund
    assert len(bank.ledger) == 2
    assert conforms(log, bank, tmp_path)
    log.close()


class LateNetworkOnce(DeadNetwork):
    """The first request is held in the network and lands later (`land`); until then no
    request is answered."""

    def __init__(self, bank: Bank):
        super().__init__(bank)
        self.held = []

    def execute(self, ticket):
        if self.down and ticket.purpose == "apply":
            self.held.append(ticket)
        return super().execute(ticket)

    def land(self):
        for t in self.held:
            self.bank.refund(t, t.args)
        self.held, self.down = [], False
