"""The adapters' small parts: paths into a call, OTLP values, ledger records, the
lifecycle a call amounts to."""

from __future__ import annotations

from toolcommit.checker.logs.adapters.calls import ERROR, OK, OPEN, Call, to_log
from toolcommit.checker.logs.adapters.ledger import _dynamo, _entry
from toolcommit.checker.logs.adapters.otel import any_value, kv_list
from toolcommit.checker.logs.adapters.rules import MISSING, resolve


def test_a_path_matches_dotted_attribute_names_whole():
    view = {"attributes": {"gen_ai.conversation.id": "c1", "gen_ai": {"x": 1}}}
    assert resolve(view, "attributes.gen_ai.conversation.id") == "c1"
    assert resolve(view, "attributes.gen_ai.x") == 1
    assert resolve(view, "attributes.gen_ai.y") is MISSING
    assert resolve({"a": [{"b": 2}]}, "a.0.b") == 2


def test_otlp_any_values_become_plain_values_in_either_spelling():
    attrs = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "i", "value": {"intValue": "7"}},
        {
            "key": "kv",
            "value": {
                "kvlistValue": {"values": [{"key": "amount", "value": {"doubleValue": 20.0}}]}
            },
        },
        {"key": "a", "value": {"array_value": {"values": [{"bool_value": True}]}}},
    ]
    assert kv_list(attrs) == {"s": "x", "i": 7, "kv": {"amount": 20.0}, "a": [True]}
    assert any_value({"int_value": 3}) == 3


def test_dynamodb_type_descriptors_are_unwrapped():
    assert _dynamo({"S": "COMPLETED"}) == "COMPLETED"
    assert _dynamo({"N": "12"}) == 12
    e = _entry({"id": {"S": "refund#k1"}, "status": {"S": "COMPLETED"}}, 0, 1, "x")
    assert (e.source, e.idempotency_key) == ("powertools", "refund#k1")


def test_a_stripe_event_raised_by_stripe_itself_is_not_an_effect():
    assert _entry({"object": "event", "request": {"id": None}}, 0, 1, "x") is None


def _call(cid, outcome, n, writer="w"):
    return Call(
        tool="refund",
        call_id=cid,
        args={"amount": 20},
        outcome=outcome,
        writer=writer,
        order=(n,),
        loc=(0, n),
        ident=f"span {n}",
        scope="s",
    )


def test_a_failed_attempt_then_a_retry_of_the_same_call_id_is_unknown_then_dispatched():
    moves = [
        (e.event.get("from"), e.event.get("to"))
        for e in to_log([_call("c1", ERROR, 1), _call("c1", OK, 2)])
    ]
    assert moves == [
        (None, None),
        ("PROPOSED", "RECORDED"),
        ("RECORDED", "DISPATCHED"),
        ("DISPATCHED", "UNKNOWN"),
        ("UNKNOWN", "DISPATCHED"),
        ("DISPATCHED", "ACKED"),
    ]


def test_a_process_that_stopped_inside_a_call_crashed_and_its_successor_cannot_know():
    evs = [e.event for e in to_log([_call("c1", OPEN, 1, "run1"), _call("c1", OK, 2, "run2")])]
    assert {"type": "crash", "writer": "run1", "seq": 4} in evs
    moved = [(e["writer"], e["from"], e["to"]) for e in evs if e["type"] == "transition"]
    assert moved[2:] == [
        ("run2", "DISPATCHED", "UNKNOWN"),
        ("run2", "UNKNOWN", "DISPATCHED"),
        ("run2", "DISPATCHED", "ACKED"),
    ]


def test_seq_numbers_increase_per_writer():
    evs = [
        e.event
        for e in to_log([_call("a", OK, 1, "x"), _call("b", OK, 2, "y"), _call("c", OK, 3, "x")])
    ]
    for w in ("x", "y"):
        seqs = [e["seq"] for e in evs if e["writer"] == w]
        assert seqs == list(range(1, len(seqs) + 1))


def test_a_pydantic_ai_call_rejected_before_the_tool_ran_is_not_a_dispatch():
    from toolcommit.checker.logs.adapters.otel import _console_span, to_call

    span = _console_span(
        {
            "name": "execute_tool refund",
            "context": {"span_id": "0x1"},
            "status": {"status_code": "ERROR"},
            "attributes": {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "refund",
                "gen_ai.tool.call.id": "c1",
                "pydantic_ai.tool.failure_stage": "validation",
            },
        }
    )
    skipped = []
    assert to_call(span, 0, 1, skipped) is None
    assert skipped == [
        "refund call c1: rejected before the tool ran (pydantic_ai.tool.failure_stage=validation)"
    ]


def test_structured_arguments_and_error_type_are_read_from_otlp():
    from toolcommit.checker.logs.adapters.otel import spans, to_call

    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "t",
                                "spanId": "s",
                                "name": "execute_tool refund",
                                "startTimeUnixNano": "5",
                                "status": {"code": "STATUS_CODE_ERROR"},
                                "attributes": [
                                    {
                                        "key": "gen_ai.operation.name",
                                        "value": {"stringValue": "execute_tool"},
                                    },
                                    {"key": "gen_ai.tool.call.id", "value": {"stringValue": "c9"}},
                                    {"key": "error.type", "value": {"stringValue": "timeout"}},
                                    {
                                        "key": "gen_ai.tool.call.arguments",
                                        "value": {
                                            "kvlistValue": {
                                                "values": [
                                                    {"key": "amount", "value": {"intValue": "20"}}
                                                ]
                                            }
                                        },
                                    },
                                ],
                            }
                        ]
                    }
                ],
            }
        ]
    }
    c = to_call(next(spans(doc)), 0, 1, [])
    assert (c.tool, c.call_id, c.args, c.outcome, c.error) == (
        "refund",
        "c9",
        {"amount": 20},
        ERROR,
        "timeout",
    )
