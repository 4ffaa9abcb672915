"""One intent, known not guessed (issue 38): who asked is part of every intent, and the tool's
declared schema says which calls are one request.

Two users asking an equal refund are two refunds under every shipped design, each told its
own outcome; one user's re-ask in a new request while the first is in doubt, spelled
``"2000"`` for ``2000``, with an added free-text argument outside the identity, or with an
optional argument given as its default, is held and then answered: one refund. The
provider is `ledger.Bank` behind a network that delivers the first request late (after
the client's timeout), the log a real SQLite file (and a real PostgreSQL server for the two
principals).
"""

import json
import logging
from pathlib import Path

import pytest
from pydantic import BaseModel

from toolcommit.model.canon import canonical_intent, intent_scope
from toolcommit.runtime import (
    Answered,
    EffectError,
    GaveUp,
    Held,
    Identity,
    IdentityError,
    InDoubt,
    IntentLog,
    IntentLogError,
    current_ticket,
    effectful,
    guard,
    tell,
)
from toolcommit.runtime.shims import recover_settle, register
from toolcommit.spec import SHIPPED_DESIGNS

from .ledger import Bank

DESIGNS = Path(__file__).resolve().parents[2] / "spec" / "designs"
SHIPPED = sorted(p.stem for p in DESIGNS.glob("*.json"))  # provider files' designs too


def design_file(tmp_path, name: str) -> str:
    """The shipped design `name` with a 1 s delay bound (so a test can wait it out; the
    design's logic is unchanged)."""
    doc = json.loads((DESIGNS / f"{name}.json").read_text("utf-8"))
    env = doc["assumes"]["environment"]
    if env.get("delay_bound"):
        env["delay_bound"] = "1s"
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc), "utf-8")
    return str(path)


class LateNetwork:
    """Until `land`, a request gets no answer, and a first send is held in the network; at
    `land` the held requests reach the provider (after the client's timeout), a fenced
    provider refusing one older than its seal."""

    def __init__(self, bank: Bank):
        self.bank, self.held, self.down = bank, [], True

    def execute(self, ticket):
        if self.down:
            if ticket.purpose == "apply":
                self.held.append(ticket)
            raise TimeoutError("no answer in time")
        return self.bank.refund(ticket, ticket.args)

    def current(self, *_a, **_kw):
        return self.execute(current_ticket())

    def land(self):
        for t in self.held:
            try:
                self.bank.refund(t, t.args)
            except PermissionError:  # fenced out: the seal came first
                pass
        self.held, self.down = [], False


def heard(fn):
    """What the caller heard: ``("done", result)`` or ``(exception class name, tell)``."""
    try:
        return "done", fn()
    except EffectError as e:
        return type(e).__name__, tell(e)


def settle_all(log, bound: float = 15.0):
    """Settle every open record through the registered tool, as the settler would (the
    delay bound waited out by polling, bounded)."""
    import time

    deadline = time.monotonic() + bound
    while log.unsettled():
        recover_settle(log)
        assert time.monotonic() < deadline, f"still open: {log.records()}"
        time.sleep(0.05)


# ----- two principals, equal arguments ----------------------------------------------------------
def _two_principals(log, net, bank):
    """User 1 asks, in doubt (its first request lands late); user 2 asks the equal refund,
    first while user 1's is in doubt, then again once it settled without user 1 hearing
    it. Returns what user 1 and user 2 heard."""
    register("refund", lambda args: net.current(), bank.status, log)

    def ask(user, request, call_id):
        return heard(
            lambda: guard(
                log,
                call_id,
                "refund",
                {"amount": 10},
                f"request:{request}",
                net.execute,
                bank.status,
                principal=user,
            )
        )

    first = ask("user:1", 1, "t1")
    net.land()
    second = [ask("user:2", 9, "u1")]
    settle_all(log)
    second.append(ask("user:2", 9, "u2"))
    return first, second


def _own_outcomes(log, bank, first, second):
    """Each user's refund is its own: user 2 refunded once and told so with its own
    result; user 1 refunded at most once, and told truthfully; nobody answered with the
    other's outcome (no proposal line answers across principals)."""
    keys = {r.key: r for r in log.records()}
    by_key = {e["key"]: e for e in bank.ledger}
    assert len(bank.ledger) == len(by_key)  # one effect per key
    mine = [k for k, r in keys.items() if r.scope == "request:9"]
    assert len(mine) == 1 and mine[0] in by_key  # user 2: refunded once
    assert all(kind == "done" for kind, _ in second), second
    assert {json.dumps(v, sort_keys=True) for _, v in second} == {
        json.dumps({"id": by_key[mine[0]]["effect_id"]}, sort_keys=True)
    }
    kind, said = first
    theirs = [k for k, r in keys.items() if r.scope == "request:1"]
    assert len(theirs) == 1 and theirs[0] != mine[0]
    if said.get("happened") == "no":
        assert theirs[0] not in by_key  # told it did not happen: it did not
    assert kind in ("InDoubt", "GaveUp")
    owner = {}
    for e in log.events():
        if e["type"] == "proposal" and e["decision"] == "accepted":
            owner[e["key"]] = e["principal"]
    for e in log.events():
        if e["type"] == "proposal":
            assert owner[e["key"]] == e["principal"], f"answered across principals: {e}"


@pytest.mark.parametrize("name", SHIPPED)
def test_two_principals_asking_equal_refunds_are_each_refunded_and_told_their_own(tmp_path, name):
    bank = Bank()
    net = LateNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"),
        writer="w1",
        wait=0.2,
        provider=design_file(tmp_path, name),
        settler=False,
    )
    first, second = _two_principals(log, net, bank)
    _own_outcomes(log, bank, first, second)
    log.close()


@pytest.mark.parametrize("name", ["stripe", "email"])
def test_two_principals_on_postgres_are_each_refunded_and_told_their_own(tmp_path, pg, name):
    bank = Bank()
    net = LateNetwork(bank)
    log = IntentLog.postgres(
        pg.dsn,
        "w1",
        schema=f"t_principals_{name}",
        wait=0.2,
        provider=design_file(tmp_path, name),
        settler=False,
    )
    first, second = _two_principals(log, net, bank)
    _own_outcomes(log, bank, first, second)
    log.close()


def test_one_scope_string_of_two_principals_is_two_intents_and_two_exclusive_slots(tmp_path):
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", provider="stripe", exclusive_tools=["refund"]
    )
    a = log.propose("t1", "refund", {"amount": 10}, "request:1", principal="user:1")
    b = log.propose("t2", "refund", {"amount": 10}, "request:1", principal="user:2")
    assert a.decision == b.decision == "accepted" and a.key != b.key
    c = log.propose("t3", "refund", {"amount": 99}, "request:1", principal="user:2")
    assert c.decision == "conflict" and c.record.key == b.key  # user 2's own slot only
    want = canonical_intent("refund", {"amount": 10}, intent_scope("user:2", "request:1"))
    assert b.record.intent == want.digest
    line = [e for e in log.events() if e.get("call_id") == "t2" and e["type"] == "proposal"][0]
    assert line["principal"] == "user:2" and "identity" not in line
    log.close()


# ----- a call with no principal ----------------------------------------------------------------
def test_a_call_with_no_principal_is_refused_under_every_shipped_design(tmp_path):
    for name in SHIPPED:
        # a profile's design by its name; a provider file's (spec/providers/) by its path
        provider = name if name in SHIPPED_DESIGNS else str(DESIGNS / f"{name}.json")
        log = IntentLog.sqlite(str(tmp_path / f"{name}.db"), writer="w1", provider=provider)
        with pytest.raises(IntentLogError, match="pass principal="):
            log.propose("t1", "refund", {"amount": 10}, "request:1")
        sent = []
        with pytest.raises(IntentLogError, match="pass principal="):
            guard(log, "t1", "refund", {"amount": 10}, "r", sent.append, lambda t: None)
        with pytest.raises(IntentLogError, match="pass principal="):  # when decorated

            @effectful(log, tool="refund", scope="r", status=lambda t: None)
            def refund(amount: int):
                sent.append(amount)

        assert sent == [] and log.records() == [] and log.events() == []
        with pytest.raises(IntentLogError, match="non-empty string"):
            log.propose("t1", "refund", {"amount": 10}, "r", principal="")
        log.close()


def test_a_lazy_log_refuses_a_call_with_no_principal_at_the_call(tmp_path):
    sent = []

    @effectful(
        lambda: IntentLog.sqlite(str(tmp_path / "i.db"), writer="w1", provider="email"),
        tool="mail",
        scope="r",
    )
    def mail(to: str):
        sent.append(to)

    with pytest.raises(IntentLogError, match="pass principal="):
        mail("ana@example.com")
    assert sent == []


# ----- one principal's re-ask in a new request while in doubt ----------------------------------
def _reask(tmp_path, first, again, **wrap):
    """The first call (request 1) goes out and lands late: in doubt. The user re-asks in
    request 2: held; once the first settled, the re-ask is answered with its outcome."""
    bank = Bank()
    net = LateNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, "stripe")
    )
    req = {"n": 1}

    @effectful(
        log,
        tool="refund",
        scope=lambda **a: f"request:{req['n']}",
        principal=lambda **a: "user:42",
        status=bank.status,
        **wrap,
    )
    def refund(charge: str, amount: int, note: str = ""):
        assert isinstance(amount, int)  # the effect gets the normalized value
        return net.current()

    with pytest.raises(InDoubt):
        first(refund)
    net.land()
    req["n"] = 2
    with pytest.raises(Held):
        again(refund)
    settle_all(log)
    with pytest.raises(Answered) as e:
        again(refund)
    assert e.value.happened == "yes" and e.value.result == {"id": "e1"}
    assert len(bank.ledger) == 1
    log.close()
    return log


def test_a_reask_spelling_the_integer_amount_as_a_string_is_one_refund(tmp_path):
    _reask(tmp_path, lambda f: f("ch_1", 2000), lambda f: f("ch_1", "2000"))


def test_a_reask_adding_an_argument_outside_the_identity_is_one_refund(tmp_path):
    _reask(
        tmp_path,
        lambda f: f("ch_1", 2000),
        lambda f: f("ch_1", 2000, note="asked again"),
        identity=("charge", "amount"),
    )


def test_a_reask_giving_an_optional_argument_as_its_default_is_one_refund_through_guard(
    tmp_path,
):
    """A framework hands guard the model's raw arguments: with the tool's `Identity`, an
    omitted optional argument and its default are one."""

    def schema(charge: str, amount: int, note: str = ""): ...

    bank = Bank()
    net = LateNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, "stripe")
    )
    register("refund", lambda args: net.current(), bank.status, log)
    ident = Identity.of(schema)

    def call(call_id, request, args):
        return guard(
            log,
            call_id,
            "refund",
            args,
            f"request:{request}",
            net.execute,
            bank.status,
            principal="user:42",
            identity=ident,
        )

    with pytest.raises(InDoubt):
        call("t1", 1, {"charge": "ch_1", "amount": 2000})
    net.land()
    with pytest.raises(Held):
        call("r2", 2, {"charge": "ch_1", "amount": 2000, "note": ""})
    settle_all(log)
    with pytest.raises(Answered):
        call("r2", 2, {"charge": "ch_1", "amount": "2000", "note": ""})
    assert len(bank.ledger) == 1
    line = [e for e in log.events() if e["type"] == "proposal"][0]
    assert line["args"] == {"charge": "ch_1", "amount": 2000, "note": ""}  # all, normalized
    assert "identity" not in line and line["principal"] == "user:42"  # every argument
    log.close()


def test_another_principals_reask_is_never_held_nor_answered_by_the_first(tmp_path):
    bank = Bank()
    net = LateNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, "stripe")
    )
    users = iter(["user:1", "user:2"])

    @effectful(
        log,
        tool="refund",
        scope="request:1",
        principal=lambda **a: next(users),
        status=bank.status,
    )
    def refund(charge: str, amount: int):
        return net.current()

    with pytest.raises(InDoubt):
        refund("ch_1", 2000)
    net.land()
    assert refund("ch_1", "2000") == {"id": "e2"}  # user 2's own refund, at once
    assert len(bank.ledger) == 2
    log.close()


# ----- the schema, checked when the tool is wrapped ---------------------------------------------
def test_identity_fields_the_tool_does_not_declare_are_refused_when_wrapped(tmp_path):
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="w1", provider="stripe")
    with pytest.raises(IdentityError, match="identity= names amt, which the tool does not"):

        @effectful(
            log,
            tool="refund",
            scope="r",
            principal="u",
            identity=("charge", "amt"),
            status=lambda t: None,
        )
        def refund(charge: str, amount: int):
            pass

    assert log.events() == []
    log.close()


def test_coercions_are_exact_or_refused_with_what_to_pass():
    def refund(charge: str, amount: int, rate: float = 1.0, urgent: bool = False): ...

    ident = Identity.of(refund)
    got = ident.normalize({"charge": "ch_1", "amount": "2000", "rate": "0.5", "urgent": "true"})
    assert got == {"charge": "ch_1", "amount": 2000, "rate": 0.5, "urgent": True}
    assert ident.normalize({"charge": "ch_1", "amount": 2000.0})["amount"] == 2000
    for bad, what in [
        ({"amount": "2000.5"}, "amount is declared integer, and '2000.5' is not one exactly"),
        ({"amount": True}, "amount is declared integer"),
        ({"amount": 1, "urgent": 1}, "urgent is declared boolean, and 1 is not one"),
        ({"amount": 1, "rate": "0.1x"}, "rate is declared number"),
        ({"amount": 1, "charge": 1.5}, "charge is declared string"),
    ]:
        with pytest.raises(IdentityError, match=what):
            ident.normalize({"charge": "ch_1", **bad})
    with pytest.raises(IdentityError, match="amount is required"):
        ident.normalize({"charge": "ch_1"})
    assert ident.normalize({"charge": "ch_1", "amount": 1, "extra": "x"})["extra"] == "x"


def test_a_pydantic_model_and_a_json_schema_give_the_same_identity():
    class Refund(BaseModel):
        charge: str
        amount: int
        note: str = ""

    schema = {
        "type": "object",
        "properties": {
            "charge": {"type": "string"},
            "amount": {"type": "integer"},
            "note": {"type": "string", "default": ""},
        },
        "required": ["charge", "amount"],
    }
    a = Identity.of(Refund, ("charge", "amount"), tool="refund")
    b = Identity.of(schema, ("charge", "amount"), tool="refund")
    assert a.rule() == b.rule()
    args = {"charge": "ch_1", "amount": "20"}
    assert a.normalize(args) == b.normalize(args) == {"charge": "ch_1", "amount": 20, "note": ""}
    assert a.identity_args(a.normalize(args)) == {"charge": "ch_1", "amount": 20}


# ----- the rule, stored in the log ----------------------------------------------------------------
def test_a_changed_identity_rule_is_refused_while_a_reask_could_meet_its_records(tmp_path, caplog):
    bank = Bank()
    net = LateNetwork(bank)
    design = design_file(tmp_path, "stripe")

    def wrapped(log, **kw):
        @effectful(log, tool="refund", scope="request:1", principal="u", status=bank.status, **kw)
        def refund(charge: str, amount: int, note: str = ""):
            return net.current()

        return refund

    log = IntentLog.sqlite(str(tmp_path / "a.db"), writer="w1", wait=0.2, provider=design)
    with pytest.raises(InDoubt):
        wrapped(log)("ch_1", 2000)
    narrow = wrapped(log, identity=("charge", "amount"))
    with pytest.raises(IntentLogError, match="identity rule changed"):
        narrow("ch_1", 2000, note="again")
    net.land()
    wrapped(log)  # the old rule's tool, registered again: it settles the record
    settle_all(log)
    with pytest.raises(IntentLogError, match="settled without its caller hearing it"):
        narrow("ch_1", 2000, note="again")  # ACKED, untold: a re-ask would still meet it
    assert len(log.records()) == 1 and len(bank.ledger) == 1
    log.close()

    log = IntentLog.sqlite(str(tmp_path / "b.db"), writer="w1", wait=0.2, provider=design)
    assert wrapped(log)("ch_2", 5) == {"id": "e2"}  # heard by its caller: told
    with caplog.at_level(logging.WARNING, logger="toolcommit.runtime"):
        assert wrapped(log, identity=("charge", "amount"))("ch_3", 5) == {"id": "e3"}
    assert "identity rule changed" in caplog.text
    log.close()


def test_a_first_rule_is_refused_while_records_written_without_one_are_in_doubt(tmp_path):
    """A record written with no rule stored (by an earlier release, whose keys and hold
    named no principal, or by a bare `propose`): a call under a rule keyed otherwise would
    not meet it while it is in doubt. Refused until it settles."""
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="w1", provider="email")
    d = log.propose("t1", "mail", {"to": "ana"}, "request:1", principal="u", dispatch=True)
    sent = []

    @effectful(log, tool="mail", scope="request:2", principal="u")
    def mail(to: str):
        sent.append(to)
        return {"id": "m2"}

    with pytest.raises(IntentLogError, match="was written before the log stored its rule"):
        mail("ana")
    assert sent == [] and len(log.records()) == 1
    assert log.ack(d.ticket, {"id": "m1"})  # its caller heard it: nothing left to meet
    assert mail("bob") == {"id": "m2"} and sent == ["bob"]
    log.close()


def test_same_takes_argument_names_only(tmp_path):
    with pytest.raises(IntentLogError, match="identity="):
        IntentLog.sqlite(str(tmp_path / "i.db"), writer="w1", provider="stripe", same=lambda a: a)


def test_a_given_up_request_is_told_so_to_its_own_principal_only(tmp_path):
    """Email (at most once): user 1's mail in doubt is given up, `happened=unknown`; user 2's
    equal mail is sent, never refused with user 1's doubt."""
    bank = Bank()
    net = LateNetwork(bank)
    log = IntentLog.sqlite(
        str(tmp_path / "i.db"), writer="w1", wait=0.2, provider=design_file(tmp_path, "email")
    )

    def ask(user, request):
        return guard(
            log,
            f"{user}-{request}",
            "refund",
            {"amount": 1},
            f"request:{request}",
            net.execute,
            principal=user,
        )

    with pytest.raises(GaveUp):
        ask("user:1", 1)
    net.land()
    with pytest.raises((Answered, GaveUp)) as e:  # user 1 again: never a second mail
        ask("user:1", 2)
    assert e.value.happened == "unknown"
    assert ask("user:2", 3) == {"id": "e2"}
    assert len(bank.ledger) == 2
    with pytest.raises(EffectError):  # the same user's retry in request 2: not sent either
        ask("user:1", 2)
    assert len(bank.ledger) == 2
    log.close()
