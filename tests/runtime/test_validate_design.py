"""`validate --design` on the library's own logs: a log of one shipped design departs from
another, conforms to its own, and the coverage table counts the paths the run took."""

from __future__ import annotations

import json

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.logs import pool
from toolcommit.runtime import IntentLog
from toolcommit.runtime import design as D
from toolcommit.runtime import lines as L
from toolcommit.runtime.shims import GaveUp, guard

from .ledger import Bank

SCOPE = "user:42:request:7"


class Busy(Bank):
    """A provider that refuses a replay while the first request may be in flight (a 409 in
    use), and may lose the first request before it applies (`drop_first`)."""

    def __init__(self, lose_first_ack: bool = False, drop_first: bool = False):
        super().__init__(lose_first_ack)
        self.drop = drop_first

    def refund(self, ticket, args):
        if ticket.purpose == "replay":
            self.requests.append((ticket.purpose, ticket.idempotency_key, ticket.fence))
            raise RuntimeError("409: a request with this idempotency key is in progress")
        if self.drop:
            self.drop = False
            raise TimeoutError("the request was lost on the way")
        return super().refund(ticket, args)


def run(tmp_path, provider, bank, name="run", asks=1, ledger=False) -> str:
    """The library's log of one refund (asked `asks` times, a re-ask after a give-up being
    a new request), exported as `toolcommit export` writes it (and the bank's ledger after
    it, with `ledger`)."""
    log = IntentLog.sqlite(str(tmp_path / f"{name}.db"), writer="w1", provider=provider)
    for i in range(asks):
        try:
            guard(
                log,
                f"t{i + 1}",
                "refund",
                {"amount": 20},
                SCOPE,
                lambda t: bank.refund(t, t.args),
                bank.status,
                new_request=i > 0,
                principal="user:1",
            )
        except GaveUp:
            pass
    path = tmp_path / f"{name}.jsonl"
    with open(path, "w") as out:
        log.export(out)
        for i, eff in enumerate(bank.ledger if ledger else (), 1):
            out.write(L.dumps(L.stamp(eff, "bank", i, L.now_rfc3339())) + "\n")
    log.close()
    return str(path)


def design_file(tmp_path, base: str, **environment) -> str:
    """A copy of a shipped design with some of its environment's assumptions changed (the
    delay bound measured on a test's network)."""
    from importlib import resources

    doc = json.loads(
        resources.files("toolcommit.spec").joinpath(f"designs/{base}.json").read_text("utf-8")
    )
    doc["assumes"]["environment"].update(environment)
    path = tmp_path / f"{base}-local.json"
    path.write_text(json.dumps(doc))
    return str(path)


def report(capsys, *argv) -> tuple[int, dict]:
    code = main(["validate", "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


def reached(doc) -> set[str]:
    return {p["name"] for p in doc["design"]["coverage"] if p["count"]}


@pytest.fixture
def email_log(tmp_path):
    """A lost ack under the email design: given up at once, unread (no status read)."""
    bank = Bank(lose_first_ack=True)
    path = run(tmp_path, "email", bank, "email")
    assert len(bank.ledger) == 1
    return path


@pytest.fixture
def stripe_log(tmp_path):
    """A lost ack under the Stripe design: a replay under the same key, answered from the
    response saved for the key."""
    bank = Bank(lose_first_ack=True)
    path = run(tmp_path, "stripe", bank, "stripe")
    assert [r[0] for r in bank.requests] == ["apply", "replay"] and len(bank.ledger) == 1
    return path


def test_the_email_designs_give_up_departs_from_the_stripe_design(email_log, capsys):
    code, doc = report(capsys, "--design", "spec/designs/stripe.json", email_log)
    assert code == 1 and doc["verdict"] == "VIOLATES"
    (dep,) = doc["design"]["departures"]
    assert (dep["knob"], dep["option"], dep["line"], dep["clock"]) == (
        "on_unknown",
        "replay_then_reconcile",
        5,
        True,
    )
    assert "replay under the same key" in dep["expected"]
    (f,) = [f for f in doc["findings"] if f["property"] == "DESIGN"]
    assert f["certainty"] == "certain" and "on_unknown=replay_then_reconcile" in f["explanation"]
    assert "writer's clock" in f["explanation"] and f["locations"][-1]["line"] == 5


def test_the_stripe_designs_replay_departs_from_the_email_design(stripe_log, capsys):
    code, doc = report(capsys, "--design", "spec/designs/email.json", stripe_log)
    assert code == 1
    (dep,) = doc["design"]["departures"]
    assert (dep["knob"], dep["option"], dep["line"], dep["clock"]) == (
        "on_unknown",
        "reconcile",
        5,
        False,
    )
    assert "replay under the same key" in dep["found"]


@pytest.mark.parametrize("design,fixture", [("email", "email_log"), ("stripe", "stripe_log")])
def test_each_log_against_its_own_design_has_no_departure(design, fixture, request, capsys):
    code, doc = report(
        capsys, "--design", f"spec/designs/{design}.json", request.getfixturevalue(fixture)
    )
    assert code == 0 and doc["design"]["departures"] == []
    assert doc["design"]["design"] == f"spec/designs/{design}.json"


@pytest.mark.parametrize("design", D.SHIPPED)
def test_every_shipped_designs_lost_ack_log_follows_that_design(design, tmp_path, capsys):
    path = run(tmp_path, design, Bank(lose_first_ack=True), design)
    code, doc = report(capsys, "--design", design, path)
    assert code == 0 and doc["design"]["departures"] == []
    assert "unknown" in reached(doc)


def test_the_text_report_names_the_departure_and_tables_the_paths(email_log, capsys):
    assert main(["validate", "--design", "stripe", email_log]) == 1
    out = capsys.readouterr().out
    assert "DESIGN [certain]" in out and f"{email_log}:5" in out
    assert "Design stripe (exactly-once, environment stripe): 1 departure(s)" in out
    rows = {
        ln.split()[0]: ln.split()[1]
        for ln in out.split("Coverage:")[1].splitlines()[1:]
        if ln.startswith("  ") and not ln.startswith("   ")
    }
    assert rows["dispatch"] == "1" and rows["unknown"] == "1" and rows["replay"] == "-"


def test_coverage_counts_the_paths_of_the_run(email_log, stripe_log, capsys):
    _, doc = report(capsys, "--design", "email", email_log)
    assert reached(doc) == {"dispatch", "unknown", "give_up"}
    _, doc = report(capsys, "--design", "stripe", stripe_log)
    assert reached(doc) == {"dispatch", "unknown", "replay", "replay_answered"}
    names = [p["name"] for p in doc["design"]["coverage"]]
    assert "give_up" not in names and "read_after_delay_bound" in names


def test_a_refused_replay_settled_after_the_delay_bound_covers_the_hard_paths(tmp_path, capsys):
    """A lost ack, a replay refused with a 409, then the list read once D = 1s has passed:
    the design with that delay bound is followed; the shipped one (D = 15m) is not, and
    says the departure rests on the writer's clock."""
    local = design_file(tmp_path, "stripe", delay_bound="1s")
    bank = Busy(lose_first_ack=True)
    path = run(tmp_path, local, bank)
    assert [r[0] for r in bank.requests] == ["apply", "replay"] and len(bank.ledger) == 1
    code, doc = report(capsys, "--design", local, path)
    assert code == 0
    assert {"replay", "replay_unanswered", "read_present", "read_after_delay_bound"} <= reached(doc)
    code, doc = report(capsys, "--design", "stripe", path)
    (dep,) = doc["design"]["departures"]
    assert code == 1 and (dep["knob"], dep["clock"]) == ("delay_bound", True)


def test_a_re_ask_after_an_absent_read_is_a_new_epoch(tmp_path, capsys):
    local = design_file(tmp_path, "stripe", delay_bound="1s")
    bank = Busy(drop_first=True)
    path = run(tmp_path, local, bank, asks=2, ledger=True)
    assert len(bank.ledger) == 1
    code, doc = report(capsys, "--design", local, path)
    assert code == 0
    assert {"read_absent", "read_after_delay_bound", "new_epoch"} <= reached(doc)
    code, doc = report(capsys, "--design", "email", path)  # never replays, one epoch
    assert code == 1
    assert {(d["knob"], d["line"]) for d in doc["design"]["departures"]} == {
        ("on_unknown", 5),
        ("epoch", 7),
    }


def test_a_takeover_after_a_crash_is_covered(tmp_path, capsys):
    db = str(tmp_path / "crash.db")
    bank = Bank()
    first = IntentLog.sqlite(db, writer="w1", provider="stripe")
    d = first.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    first.dispatch(d.key)
    first.store.close()  # the process dies holding the record, DISPATCHED
    again = IntentLog.sqlite(db, writer="w1", provider="stripe")
    t = again.reconcile(d.key)
    assert t.purpose == "replay" and again.ack(t, bank.refund(t, t.args))
    path = tmp_path / "crash.jsonl"
    with open(path, "w") as out:
        again.export(out)
    again.close()
    code, doc = report(capsys, "--design", "stripe", str(path))
    assert code == 0 and {"takeover_restart", "replay", "replay_answered"} <= reached(doc)


def test_the_sharded_path_gives_the_same_report(stripe_log, monkeypatch, capsys):
    monkeypatch.setattr(pool, "SHARD_MIN_BYTES", 0)
    outs = []
    for jobs in ("1", "2"):
        code = main(["validate", "--design", "email", "--jobs", jobs, stripe_log])
        outs.append((code, capsys.readouterr().out))
    assert outs[0] == outs[1] and outs[0][0] == 1


def test_what_design_cannot_check_is_refused_in_one_line(stripe_log, capsys):
    assert main(["validate", "--design", "stripe", "-"]) == 2
    assert "give the log as a file" in capsys.readouterr().err
    assert main(["validate", "--design", "no-such-design", stripe_log]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--design no-such-design" in err


def test_the_report_is_never_written_over_the_design_file(tmp_path, stripe_log, capsys):
    local = design_file(tmp_path, "stripe")
    before = open(local).read()
    assert main(["validate", "--design", local, "-o", local, stripe_log]) == 2
    assert open(local).read() == before and "never over an input" in capsys.readouterr().err
