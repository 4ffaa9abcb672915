"""The decorator and guard: each shipped design's behaviour on an unknown outcome, async
tools, cancellation, what the model is told, and the OpenTelemetry attributes."""

import asyncio

import pytest

from toolcommit.runtime import (
    Answered,
    Conflict,
    GaveUp,
    InDoubt,
    IntentLog,
    IntentLogError,
    current_ticket,
    effectful,
    guard,
    tell,
)
from toolcommit.runtime.design import load

from .ledger import Bank, conforms

SCOPE = "user:42:request:7"


def _log(tmp_path, provider, **kw):
    return IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider=provider, **kw)


def _states(log):
    return [e.get("to") for e in log.events() if e["type"] == "transition"]


def test_ideal_reconciles_a_lost_ack_by_a_sealed_read_never_resends(tmp_path):
    bank = Bank(lose_first_ack=True)
    log = _log(tmp_path, "ideal")

    @effectful(log, tool="refund", scope=SCOPE, status=bank.status, principal="user:1")
    def refund(amount):
        return bank.refund(current_ticket(), {"amount": amount})

    assert refund(20, call_id="t1") == {"id": "e1"}
    assert refund(20.0, call_id="t2") == {"id": "e1"}
    assert bank.requests == [("apply", None, 1)]  # ideal: a fence, no key
    assert _states(log) == ["RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", "ACKED"]
    assert conforms(log, bank, tmp_path)


def test_async_tool_retried_under_a_new_call_id_sends_one_keyed_request(tmp_path):
    bank = Bank()
    log = _log(tmp_path, "stripe")

    @effectful(log, tool="refund", scope=SCOPE, status=bank.status, principal="user:1")
    async def refund(amount):
        await asyncio.sleep(0)
        return bank.refund(current_ticket(), {"amount": amount})

    async def agent():
        return await refund(20, call_id="t1"), await refund(20.0, call_id="t2")

    first, again = asyncio.run(agent())
    assert first == again == {"id": "e1"}
    ((purpose, key, fence),) = bank.requests
    assert (purpose, fence) == ("apply", None) and key.startswith("tc1-")
    (rec,) = log.records()
    assert (rec.state, rec.result, rec.key) == ("ACKED", {"id": "e1"}, key)
    assert conforms(log, bank, tmp_path)


def test_stripe_replays_a_lost_ack_under_the_same_key_and_the_saved_answer_settles(tmp_path):
    bank = Bank(lose_first_ack=True)
    log = _log(tmp_path, "stripe")

    @effectful(log, tool="refund", scope=SCOPE, status=bank.status, principal="user:1")
    def refund(amount):
        return bank.refund(current_ticket(), {"amount": amount})

    assert refund(20, call_id="t1") == {"id": "e1"}
    (p1, k1, _), (p2, k2, _) = bank.requests
    assert (p1, p2, k1 == k2, len(bank.ledger)) == ("apply", "replay", True, 1)
    assert _states(log) == ["RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", "ACKED"]
    assert conforms(log, bank, tmp_path)


def test_stripe_never_parks_on_absent_while_a_request_may_still_land(tmp_path):
    design = load("stripe").with_timing(delay_bound=0.3)
    log = _log(tmp_path, design, wait=0, settler=False)  # the guard alone, no settler
    reads = []

    def status(t):
        reads.append(t.via)
        return None

    @effectful(log, tool="refund", scope=SCOPE, status=status, principal="user:1")
    def refund(amount):
        raise TimeoutError("no answer; a 409 idempotency_key_in_use on the replay")

    with pytest.raises(InDoubt) as e:
        refund(20, call_id="t1")
    assert reads == [] and "may or may not have happened" in str(e.value)
    (rec,) = log.records()
    assert rec.state == "RECONCILING"
    assert log.settle(log.ticket(rec.key), False) is False  # the log refuses it too
    assert log.read_wait(rec.key) > 0
    waiting = IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider=design, wait=5)
    with pytest.raises(GaveUp) as e:  # a restart; waits out D
        guard(
            waiting,
            "t2",
            "refund",
            {"amount": 20},
            SCOPE,
            lambda t: 1 / 0,
            status,
            principal="user:1",
        )
    assert reads == ["list"] and e.value.happened == "no"
    assert "did not happen" in str(e.value)


def test_email_is_at_most_once_and_tells_the_user_it_may_have_been_sent(tmp_path):
    log = _log(tmp_path, "email")
    sent = []

    @effectful(log, tool="email", scope=lambda to: f"mailbox:{to}:request:1", principal="user:1")
    def email(to):
        t = current_ticket()
        sent.append((to, t.idempotency_key, t.sdk_retries))
        raise ConnectionResetError("no answer")

    for call in ("t1", "t2"):
        with pytest.raises(GaveUp) as e:
            email("a@b", call_id=call)
        assert e.value.happened == "unknown" and "may or may not have happened" in str(e.value)
    assert sent == [("a@b", None, False)]
    assert tell(e.value)["happened"] == "unknown"


def test_a_cancelled_task_is_an_unknown_outcome_not_a_success(tmp_path):
    log = _log(tmp_path, "stripe", settler=False)  # the guard alone, no settler
    started = []

    @effectful(log, tool="refund", scope=SCOPE, status=lambda t: None, principal="user:1")
    async def refund(amount):
        started.append(current_ticket().purpose)
        await asyncio.sleep(30)

    async def agent():
        task = asyncio.ensure_future(refund(20, call_id="t1"))
        while not started:
            await asyncio.sleep(0.001)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(agent())
    (rec,) = log.records()
    assert rec.state == "UNKNOWN" and rec.result is None


def test_a_sync_guard_refuses_async_effects_at_once(tmp_path):
    log = _log(tmp_path, "stripe")

    async def refund(t):
        return 1

    with pytest.raises(IntentLogError, match="async"):
        guard(log, "t1", "refund", {"amount": 1}, SCOPE, refund, lambda t: None, principal="user:1")
    with pytest.raises(IntentLogError, match="async"):
        effectful(log, tool="refund", scope=SCOPE, status=refund, principal="user:1")(
            lambda amount: 1
        )
    assert log.records() == []


def test_a_design_that_reads_status_needs_a_status_function(tmp_path):
    log = _log(tmp_path, "stripe")
    with pytest.raises(IntentLogError, match="pass status="):
        guard(log, "t1", "refund", {"amount": 1}, SCOPE, lambda t: 1, principal="user:1")


def test_a_missing_or_unusable_status_is_refused_when_the_tool_is_decorated(tmp_path):
    log = _log(tmp_path, "stripe")
    with pytest.raises(IntentLogError, match="pass status="):
        effectful(log, tool="refund", scope=SCOPE, principal="user:1")(lambda amount: 1)
    with pytest.raises(IntentLogError, match="is not a function"):
        effectful(log, tool="refund", scope=SCOPE, status="list", principal="user:1")(
            lambda amount: 1
        )
    lazy = effectful(lambda: log, tool="refund", scope=SCOPE, principal="user:1")(lambda amount: 1)
    with pytest.raises(IntentLogError, match="pass status="):  # known once it is open
        lazy(1, call_id="t1")
    assert log.records() == []


@pytest.mark.parametrize(
    "answer", [(False, None), (True, {"id": "e1"}), False, True, [], {}, ""], ids=repr
)
def test_a_status_read_that_breaks_the_contract_leaves_the_record_in_doubt(tmp_path, answer):
    """status returns the result or None: the old (found, result) tuple, a bool, or an
    empty container (read as present before: ACKED with [] for a search that found nothing)
    is refused by name, never read as present or absent."""
    bank = Bank(lose_first_ack=True)
    log = _log(tmp_path, "ideal")

    @effectful(log, tool="refund", scope=SCOPE, status=lambda t: answer, principal="user:1")
    def refund(amount):
        return bank.refund(current_ticket(), {"amount": amount})

    with pytest.raises(IntentLogError, match="status must return the effect's result") as e:
        refund(20, call_id="t1")
    assert not isinstance(e.value, GaveUp) and "may or may not have happened" in str(e.value)
    (rec,) = log.records()
    assert rec.state == "RECONCILING" and rec.result is None and len(bank.ledger) == 1
    log.close()  # its settler would read the broken status again every pass


def test_new_request_after_a_give_up_is_a_new_attempt_and_scopes_separate_requests(tmp_path):
    log = _log(tmp_path, "ideal", exclusive_tools=["refund"])
    fail = [True]

    @effectful(
        log,
        tool="refund",
        scope=lambda amount, request: f"user:42:request:{request}",
        status=lambda t: None,
        principal="user:1",
    )
    def refund(amount, request):
        if fail[0]:
            raise TimeoutError("lost before it reached the provider")
        return {"ok": request}

    with pytest.raises(GaveUp):
        refund(20, 7, call_id="t1")
    fail[0] = False
    with pytest.raises(GaveUp):
        refund(20, 7, call_id="t2")  # a model retry: still given up
    assert refund(20, 7, call_id="t3", new_request=True) == {"ok": 7}
    assert refund(20, 8, call_id="t4") == {"ok": 8}  # another real request


def test_under_email_a_re_ask_after_the_visible_give_up_sends_nothing(tmp_path):
    """email's design has epoch=none: the user's re-ask is the same key as the given-up
    one, so the mail that may have gone is never sent twice. A new request is a new scope:
    under the design's reask=hold its first call is answered with the give-up (it may have
    gone, nothing sent); the user's next request sends."""
    log, sent = _log(tmp_path, "email"), []

    def mail(ticket):
        sent.append(ticket.key)
        if len(sent) == 1:
            raise TimeoutError("no answer: the mail may have gone")
        return {"ok": True}

    with pytest.raises(GaveUp) as first:
        guard(log, "t1", "mail", {"to": "a"}, SCOPE, mail, principal="user:1")
    with pytest.raises(GaveUp) as again:
        guard(log, "t2", "mail", {"to": "a"}, SCOPE, mail, new_request=True, principal="user:1")
    assert first.value.happened == again.value.happened == "unknown" and len(sent) == 1
    with pytest.raises(Answered) as met:
        guard(log, "t3", "mail", {"to": "a"}, SCOPE + ":request:2", mail, principal="user:1")
    assert met.value.happened == "unknown" and met.value.result is None and len(sent) == 1
    assert guard(
        log, "t4", "mail", {"to": "a"}, SCOPE + ":request:3", mail, principal="user:1"
    ) == {"ok": True}
    assert [r.epoch for r in log.records()] == [0, 0] and len(sent) == 2


def test_an_exclusive_scope_holding_a_live_intent_is_a_conflict_nothing_sent(tmp_path):
    log = _log(tmp_path, "ideal", exclusive_tools=["refund"])
    log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    with pytest.raises(Conflict) as e:
        guard(
            log,
            "t2",
            "refund",
            {"amount": 30},
            SCOPE,
            lambda t: 1 / 0,
            lambda t: None,
            principal="user:1",
        )
    assert e.value.happened == "no" and "was not done" in str(e.value)


def test_a_call_waits_for_a_live_holder_and_gets_its_answer(tmp_path):
    bank = Bank()
    holder = _log(tmp_path, "stripe")
    d = holder.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    t = holder.dispatch(d.key)
    other = IntentLog.sqlite(str(tmp_path / "i.db"), "w2", provider="stripe", wait=0)
    with pytest.raises(InDoubt, match="w1 holds it"):
        guard(
            other,
            "t2",
            "refund",
            {"amount": 20},
            SCOPE,
            bank.refund_current,
            bank.status,
            principal="user:1",
        )
    holder.ack(t, bank.refund(t, {"amount": 20}))
    assert guard(
        other,
        "t3",
        "refund",
        {"amount": 20},
        SCOPE,
        bank.refund_current,
        bank.status,
        principal="user:1",
    ) == {"id": "e1"}
    assert len(bank.requests) == 1


def test_a_recording_span_gets_the_lines_as_toolcommit_attributes(tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="the 'otel' extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    log = _log(tmp_path, "ideal")
    with tracer.start_as_current_span("execute_tool refund"):
        d = log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
        log.ack(log.dispatch(d.key), {"id": "e1"})
    (span,) = exporter.get_finished_spans()
    assert span.attributes["toolcommit.key"] == d.key
    assert span.attributes["toolcommit.state"] == "ACKED"
    assert span.attributes["toolcommit.decision"] == "accepted"
    assert span.attributes["toolcommit.fence"] == 1
    assert [e.name for e in span.events] == ["toolcommit.proposal"] + ["toolcommit.transition"] * 3
