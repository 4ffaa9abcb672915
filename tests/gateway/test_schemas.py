"""The tool's declared ``inputSchema`` says which calls are one request, over HTTP with the
SDK's client: a retry with ``"20"`` for the number 20, or with the optional note at its
default, is the same refund; identity fields leave the free-text note out; a value the
schema cannot take exactly, or fields the tool does not declare, send nothing."""

from __future__ import annotations

from ..incli import cli
from .gw import http_client, run, text

ASKS = [
    {"order": "o-7", "amount": 20},
    {"order": "o-7", "amount": "20"},
    {"order": "o-7", "amount": 20, "note": ""},
]


def calls(url, *asks):
    """Each of `asks` as a refund call, in order, in one session."""

    async def scenario():
        async with http_client(url) as c:
            return [await c.call_tool("refund", args) for args in asks]

    return run(scenario)


def test_a_coerced_amount_and_a_default_note_are_one_refund(gateway_env):
    """20, "20", then 20 with note "" (the schema's default): one refund, the retries told
    its outcome; the log keeps the normalized arguments. A note that is not the default is
    another request under the default identity (every declared argument), and "twenty" is
    no number: refused, nothing sent."""
    e = gateway_env
    with e.http("--principal", "app") as (url, _):
        *same, other, bad = calls(
            url, *ASKS, {"order": "o-7", "amount": 20, "note": "again"}, {**ASKS[0], "amount": "x"}
        )
    assert [r.meta["toolcommit/replayed"] for r in same] == [False, True, True]
    assert len({r.meta["toolcommit/key"] for r in same}) == 1
    assert not other.meta["toolcommit/replayed"]
    assert bad.is_error and "nothing was sent" in text(bad) and "amount" in text(bad)
    assert [r["args"]["note"] for r in e.applied("o-7")] == ["", "again"]
    assert not any("identity" in x for x in e.proposals())  # every argument
    stored = sorted((r.args for r in e.records()), key=lambda a: a["note"])
    assert stored == [
        {"order": "o-7", "amount": 20, "note": ""},
        {"order": "o-7", "amount": 20, "note": "again"},
    ]
    assert cli("export", str(e.db), "-o", str(e.tmp / "log.jsonl"))[0] == 0
    code, out, _ = cli("validate", str(e.tmp / "log.jsonl"), "--ledger", str(e.ledger))
    assert code == 0 and out.startswith("CONFORMS"), out


def test_identity_fields_leave_the_free_text_note_out(gateway_env):
    """--identity refund=order,amount: 20, "20", then 20 with a note: one refund."""
    e = gateway_env
    with e.http("--identity", "refund=order,amount", "--principal", "app") as (url, _):
        answers = calls(url, *ASKS[:2], {"order": "o-7", "amount": 20, "note": "please"})
    assert [r.meta["toolcommit/replayed"] for r in answers] == [False, True, True]
    assert len(e.applied("o-7")) == 1
    (accepted,) = [x for x in e.proposals() if x["decision"] == "accepted"]
    assert accepted["identity"] == ["order", "amount"]  # the rule the log keeps
    assert accepted["args"] == {"order": "o-7", "amount": 20, "note": ""}


def test_identity_fields_the_tool_does_not_declare_send_nothing(gateway_env):
    """--identity refund=charge: every call of refund is refused, naming the flag."""
    e = gateway_env
    with e.http("--identity", "refund=charge", "--principal", "app") as (url, _):
        (answer,) = calls(url, ASKS[0])
    assert answer.is_error and "charge" in text(answer) and "--identity refund=" in text(answer)
    assert e.applied() == []
