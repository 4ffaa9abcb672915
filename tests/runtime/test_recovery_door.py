"""Recovery through the right door (issue 38): a log that stores no design is never adopted
silently while it holds open records; each log settles its records through its own tools;
a recovery tool names the provider account it acts on and `recover` refuses another.

Each log here is a real SQLite file written by the current code (a pod SIGKILLed after its
provider applied the effect, before the ack); "stored no design" is that file with its
``tc_design`` row deleted, as a log of the previous release or a damaged one is."""

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from toolcommit.runtime import (
    DesignError,
    Identity,
    IntentLog,
    IntentLogError,
    current_ticket,
    effectful,
)
from toolcommit.runtime.shims import recover_settle, register

from .test_recovery_ends import TOOLS  # the refund tool over a file ledger (stripe)

# who asks, where this tree's library takes it (issue 38: every shipped design refuses a
# call naming no principal once it does)
WHO = {"principal": "user:42"}
SCOPE = "user:42:request:7"
REFUND = "door_refund"  # a name no other test registers for every log (`register`, no log=)

MAIL = """
import json, os, signal
from inspect import signature
from toolcommit.runtime import IntentLog, current_ticket, effectful

WHO = {"principal": "user:42"}

_LOG = []


def log():
    if not _LOG:
        _LOG.append(IntentLog.sqlite(os.environ["DB"], provider="email", lease=1.0, wait=0))
    return _LOG[0]


@effectful(log, tool="mail", scope="user:42:request:7", **WHO)
def mail(to):
    with open(os.environ["OUTBOX"], "a") as f:       # a mail server keeps no keys
        f.write(json.dumps({"to": to, "key": current_ticket().idempotency_key}) + "\\n")
    if os.environ.get("DIE_AFTER_APPLY"):
        os.kill(os.getpid(), signal.SIGKILL)          # sent; the ack never written
    return {"sent": to}
"""

# the refund tool of TOOLS, acting on the account the shell points at (ACCOUNT), which it
# names; each account has a ledger of its own
ACCOUNTS = TOOLS.replace(
    'LEDGER = os.environ["BANK"]',
    'ACCOUNT = os.environ["ACCOUNT"]\nLEDGER = os.environ["BANK"] + "." + ACCOUNT',
).replace("status=status", "status=status, account=ACCOUNT", 1)


def _env(tmp_path, writer, **extra):
    return {
        **os.environ,
        "BANK": str(tmp_path / "bank.jsonl"),
        "OUTBOX": str(tmp_path / "outbox.jsonl"),
        "DB": str(tmp_path / "i.db"),
        "TOOLCOMMIT_WRITER": writer,
        "PYTHONPATH": str(tmp_path),
        "LEASE": "1",
        **extra,
    }


def _run(tmp_path, argv, **env):
    p = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, env=_env(tmp_path, **env), timeout=90
    )
    return p.returncode, p.stdout + p.stderr


def _killed_pod(tmp_path, module, source, code, **env):
    """A pod SIGKILLed after its provider applied the effect, before the ack."""
    (tmp_path / f"{module}.py").write_text(source)
    rc, out = _run(
        tmp_path,
        [sys.executable, "-c", f"import {module}; {code}"],
        writer="pod-a",
        DIE_AFTER_APPLY="1",
        **env,
    )
    assert rc == -signal.SIGKILL, out


def _recover(tmp_path, *args, db="i.db", **env):
    env.setdefault("writer", "unused")
    return _run(
        tmp_path,
        [sys.executable, "-m", "toolcommit.checker.cli", "recover", str(tmp_path / db), *args],
        **env,
    )


def _copy(db, to):
    """A consistent copy of the log (SQLite's backup), to run the old behaviour on."""
    with sqlite3.connect(db) as src, sqlite3.connect(to) as dst:
        src.backup(dst)


def _strip_design(db):
    with sqlite3.connect(db) as c:
        assert c.execute("DELETE FROM tc_design").rowcount == 1


def _dump(db):
    with sqlite3.connect(db) as c:
        return list(c.iterdump())


def _lines(path):
    return [json.loads(x) for x in open(path)] if os.path.exists(path) else []


def _states(db, provider):
    log = IntentLog.sqlite(str(db), "reader", provider=provider, settler=False)
    try:
        return [r.state for r in log.records()]
    finally:
        log.close()


# ----- a log that stores no design, with open records ---------------------------------------
def test_an_email_is_never_sent_twice_by_a_replay_under_a_design_guessed_for_the_log(tmp_path):
    """Before: ``recover --provider stripe`` adopted stripe and replayed the mail, two mails,
    exit 0. Now: refused in one line naming the choices, exit 2, nothing written; stated in
    so many words (``--adopt-design email``) it is given up visibly, one mail."""
    db = tmp_path / "i.db"
    _killed_pod(tmp_path, "mail_tools", MAIL, "mail_tools.mail('a@example.com', call_id='t1')")
    _strip_design(db)
    _copy(db, tmp_path / "old.db")
    before = _dump(db)
    code, out = _recover(tmp_path, "--provider", "stripe", "--tools", "mail_tools", "--wait", "30")
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert "stores no design" in out and "1 open record" in out and "--adopt-design" in out
    assert len(_lines(tmp_path / "outbox.jsonl")) == 1 and _dump(db) == before
    with pytest.raises(DesignError, match="adopt_design=True"):
        IntentLog.sqlite(str(db), "pod-b", provider="stripe")
    assert _dump(db) == before  # no design stored, no writer opened

    code, out = _recover(tmp_path, "--provider", "email", "--adopt-design", "email", "--wait", "30")
    assert code == 0 and "now follows email" in out and "1 DEAD_LETTER" in out, out
    assert len(_lines(tmp_path / "outbox.jsonl")) == 1
    assert _states(db, "email") == ["DEAD_LETTER"]

    # what the previous release did unasked now takes the operator's (wrong) words
    old = ("--provider", "stripe", "--adopt-design", "stripe", "--tools", "mail_tools")
    code, out = _recover(tmp_path, *old, "--wait", "30", db="old.db")
    assert code == 0 and "1 ACKED" in out and len(_lines(tmp_path / "outbox.jsonl")) == 2, out


def test_an_applied_refund_is_never_given_up_under_a_design_guessed_for_the_log(tmp_path):
    """Before: ``recover --provider email`` adopted email and gave the applied refund up
    (DEAD_LETTER: "did not happen"), exit 0. Now: refused, exit 2; with the design stated,
    the replay finds the refund applied: ACKED, one refund."""
    db = tmp_path / "i.db"
    _killed_pod(tmp_path, "refund_tools", TOOLS, "refund_tools.refund('ch_1', 20, call_id='t1')")
    _strip_design(db)
    _copy(db, tmp_path / "old.db")
    code, out = _recover(tmp_path, "--provider", "email", "--wait", "30")
    assert code == 2 and "--adopt-design email" in out, out
    code, out = _recover(
        tmp_path, "--provider", "stripe", "--adopt-design", "email", "--tools", "refund_tools"
    )
    assert code == 2 and "--adopt-design email" in out and "--provider stripe" in out, out
    with sqlite3.connect(db) as c:
        (state,) = c.execute("SELECT state FROM tc_records").fetchone()
    assert state == "DISPATCHED"  # nothing was taken over, nothing given up

    code, out = _recover(
        tmp_path,
        "--provider",
        "stripe",
        "--adopt-design",
        "stripe",
        "--tools",
        "refund_tools",
        "--wait",
        "30",
    )
    assert code == 0 and "1 ACKED" in out, out
    assert len(_lines(tmp_path / "bank.jsonl")) == 1 and _states(db, "stripe") == ["ACKED"]

    # what the previous release did unasked now takes the operator's (wrong) words
    old = ("--provider", "email", "--adopt-design", "email", "--wait", "30")
    code, out = _recover(tmp_path, *old, db="old.db")
    assert code == 0 and "1 DEAD_LETTER" in out, out  # an applied refund, "did not happen"
    assert len(_lines(tmp_path / "bank.jsonl")) == 1


def test_a_log_that_stores_no_design_and_holds_no_open_record_adopts_as_before(tmp_path):
    db = str(tmp_path / "i.db")
    log = IntentLog.sqlite(db, "pod-a", provider="stripe", settler=False)
    t = log.dispatch(log.propose("t1", "refund", {"amount": 20}, SCOPE, **WHO).key)
    log.ack(t, {"id": "re_1"})
    log.close()
    _strip_design(db)
    again = IntentLog.sqlite(db, "pod-a", provider="stripe", settler=False)
    assert again.design_adopted and "now follows stripe" in again.design_adopted
    again.close()


# ----- the registry of tools is per log -----------------------------------------------------
def _in_doubt(db, amount=20, tool=REFUND):
    """A log whose writer died with a refund sent (DISPATCHED), its lease run out."""
    dead = IntentLog.sqlite(str(db), "dead", provider="stripe", settler=False)
    dead.declare(tool, _RULE.rule())  # as `effectful` on `_refund_tool`'s function does
    d = dead.propose("t1", tool, {"amount": amount}, SCOPE, **WHO)
    dead.dispatch(d.key)
    dead.expire_leases("dead")
    return d.key


def _refund_signature(amount):
    """The parameters of `_refund_tool`'s refund: its identity rule."""


_RULE = Identity.from_signature(_refund_signature, tool=REFUND)


def _refund_tool(log, bank):
    @effectful(log, tool=REFUND, scope=SCOPE, status=lambda t: None, **WHO)
    def refund(amount):
        bank.append(current_ticket().key)
        return {"id": f"re_{len(bank)}"}

    return refund


def test_two_logs_replay_each_refund_through_their_own_function(tmp_path):
    """Before: one process-wide entry per tool name, so log a's refund was replayed through
    log b's function (b's bank refunded twice, a's never). Now each through its own."""
    keys = {n: _in_doubt(tmp_path / f"{n}.db", amount) for n, amount in (("a", 20), ("b", 30))}
    banks: dict[str, list[str]] = {"a": [], "b": []}
    logs = {
        n: IntentLog.sqlite(str(tmp_path / f"{n}.db"), "pod", provider="stripe", settler=False)
        for n in "ab"
    }
    for n in "ab":
        _refund_tool(logs[n], banks[n])
    assert recover_settle(logs["a"]) == {keys["a"]: "ACKED"}
    assert recover_settle(logs["b"]) == {keys["b"]: "ACKED"}
    assert banks == {"a": [keys["a"]], "b": [keys["b"]]}
    for log in logs.values():
        log.close()


def test_a_lazily_opened_log_settles_through_the_tool_first_called_on_it(tmp_path):
    """A tool on a log opened at its first call (`effectful`'s log as a function) is that
    log's from the call on; another log of the process never settles through it."""
    key = _in_doubt(tmp_path / "a.db")
    other_key = _in_doubt(tmp_path / "b.db", 30)
    opened: list[IntentLog] = []

    def lazy():
        if not opened:
            opened.append(
                IntentLog.sqlite(str(tmp_path / "a.db"), "pod", provider="stripe", settler=False)
            )
        return opened[0]

    bank: list[str] = []
    refund = _refund_tool(lazy, bank)
    other = IntentLog.sqlite(str(tmp_path / "b.db"), "pod", provider="stripe", settler=False)
    assert recover_settle(other) == {other_key: "UNKNOWN"}  # not its tool: left held
    refund(5, call_id="t9")  # another intent; the log is opened and the tool bound to it
    log = opened[0]
    assert recover_settle(log)[key] == "ACKED" and key in bank
    assert recover_settle(other) == {other_key: "UNKNOWN"} and other_key not in bank
    other.close()
    log.close()


def test_a_registration_for_every_log_still_serves_any_log(tmp_path):
    """`register` without a log (the framework wrappers') is every log's fallback."""
    key = _in_doubt(tmp_path / "a.db")
    bank: list[str] = []
    register("refund_anywhere", lambda args: bank.append("sent"), lambda t: None)
    log = IntentLog.sqlite(str(tmp_path / "a.db"), "pod", provider="stripe", settler=False)
    d = log.propose("t2", "refund_anywhere", {"amount": 1}, "user:1:request:1", **WHO)
    log.dispatch(d.key)
    log.expire_leases("pod")
    later = IntentLog.sqlite(str(tmp_path / "a.db"), "later", provider="stripe", settler=False)
    got = recover_settle(later, tools={"refund_anywhere"})
    assert got == {d.key: "ACKED"} and bank == ["sent"] and key not in got
    later.close()
    log.close()


# ----- the provider account a recovery tool acts on -----------------------------------------
def test_recover_refuses_tools_that_act_on_another_account_than_the_logs(tmp_path):
    """Before: ``recover --tools`` from a shell pointed at another account replayed the
    refund there (a refund on acct_b for acct_a's intent), exit 0. Now the log records the
    account its tools name at their first call; ``recover`` refuses a module whose tools
    name another, exit 2 in one line; with the log's own account, one refund on it."""
    db = tmp_path / "i.db"
    _killed_pod(
        tmp_path,
        "acct_tools",
        ACCOUNTS,
        "acct_tools.refund('ch_1', 20, call_id='t1')",
        ACCOUNT="acct_a",
    )
    args = ("--provider", "stripe", "--tools", "acct_tools", "--wait", "30")
    code, out = _recover(tmp_path, *args, ACCOUNT="acct_b")
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert "acct_a" in out and "acct_b" in out and "refund" in out
    assert _lines(str(tmp_path / "bank.jsonl.acct_b")) == []
    code, out = _recover(tmp_path, *args, ACCOUNT="acct_a")
    assert code == 0 and "1 ACKED" in out, out
    assert len(_lines(str(tmp_path / "bank.jsonl.acct_a"))) == 1
    assert _lines(str(tmp_path / "bank.jsonl.acct_b")) == [] and _states(db, "stripe") == ["ACKED"]


def test_a_log_acts_on_one_account(tmp_path):
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "pod", provider="stripe", settler=False)
    assert log.account is None
    register("refund", lambda args: None, lambda t: None, log=log, account="acct_a")
    assert log.account == "acct_a"
    with pytest.raises(IntentLogError, match="acts on provider account acct_a.*acct_b"):
        register("payout", lambda args: None, lambda t: None, log=log, account="acct_b")
    log.close()
    again = IntentLog.sqlite(str(tmp_path / "i.db"), "pod", provider="stripe", settler=False)
    assert again.account == "acct_a"  # stored with the log
    again.close()


TWO = """
import json, os
from inspect import signature
from toolcommit.runtime import IntentLog, current_ticket, effectful

WHO = {"principal": "user:42"}


def opener(name):
    opened = []

    def log():
        if not opened:
            opened.append(IntentLog.sqlite(os.environ["DB"] + "." + name, provider="stripe"))
        return opened[0]

    return log


def refund_on(account):
    @effectful(opener(account), tool="refund", scope="user:42:request:7",
               status=lambda t: None, account=account, **WHO)
    def refund(amount):
        with open(os.environ["BANK"] + "." + account, "a") as f:
            f.write(json.dumps({"key": current_ticket().key}) + "\\n")
        return {"id": "re_1"}

    return refund


refund_a, refund_b = refund_on("acct_a"), refund_on("acct_b")
"""


def test_two_tools_of_one_name_in_a_module_are_told_apart_by_account_or_refused(tmp_path):
    (tmp_path / "two_tools.py").write_text(TWO)
    args = ("--provider", "stripe", "--tools", "two_tools")
    key = _in_doubt(tmp_path / "i.db", tool="refund")
    code, out = _recover(tmp_path, *args)
    assert code == 2 and "2 tools named refund" in out and len(out.strip().splitlines()) == 1
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "pod", provider="stripe", settler=False)
    log.bind_account("acct_b")
    log.close()
    code, out = _recover(tmp_path, *args)
    assert code == 0 and "1 ACKED" in out, out
    assert _lines(str(tmp_path / "bank.jsonl.acct_b")) == [{"key": key}]
    assert _lines(str(tmp_path / "bank.jsonl.acct_a")) == []


def test_a_tool_naming_another_account_is_refused_at_its_first_call_before_any_send(tmp_path):
    db = str(tmp_path / "i.db")
    first = IntentLog.sqlite(db, "pod", provider="stripe", settler=False)
    first.bind_account("acct_a")
    first.close()
    opened: list[IntentLog] = []

    def lazy():
        if not opened:
            opened.append(IntentLog.sqlite(db, "pod", provider="stripe", settler=False))
        return opened[0]

    sent: list[str] = []

    @effectful(
        lazy, tool="refund_elsewhere", scope=SCOPE, status=lambda t: None, account="acct_b", **WHO
    )
    def refund_elsewhere(amount):
        sent.append("sent")

    with pytest.raises(IntentLogError, match="acts on provider account acct_a.*acct_b"):
        refund_elsewhere(20, call_id="t1")
    assert sent == [] and opened[0].records() == []
    opened[0].close()


def test_on_postgresql_a_log_without_its_design_is_refused_and_its_account_kept(pg, capsys):
    """The same rules on PostgreSQL: the design row gone with a record open, refused;
    stated, adopted; the account recorded once and a tool naming another refused."""
    import psycopg

    from toolcommit.checker.cli import main

    dead = IntentLog.postgres(pg.dsn, "pod-a", schema="t_door", provider="email")
    dead.bind_account("mail_a")
    dead.dispatch(dead.propose("t1", "mail", {"to": "a@example.com"}, SCOPE, **WHO).key)
    dead.expire_leases("pod-a")
    dead.close()
    with psycopg.connect(pg.dsn) as c:
        c.execute("DELETE FROM t_door.tc_design")
    where = ["recover", "--dsn", pg.dsn, "--schema", "t_door"]
    assert main([*where, "--provider", "stripe"]) == 2
    assert "stores no design" in capsys.readouterr().err
    assert main([*where, "--provider", "email", "--adopt-design", "email"]) == 0
    assert "1 DEAD_LETTER" in capsys.readouterr().out
    log = IntentLog.postgres(pg.dsn, "pod-b", schema="t_door", provider="email", settler=False)
    assert log.account == "mail_a" and log.design_adopted is None
    with pytest.raises(IntentLogError, match="acts on provider account mail_a"):
        register("mail", lambda args: None, None, log=log, account="mail_b")
    log.close()


def test_two_logs_framework_wrapped_tools_of_one_name_each_replay_their_own(tmp_path):
    """The framework wrappers register with their log too (before: with none, so every log's
    fallback): a Temporal activity named alike on two logs replays each log's record
    through its own function."""
    pytest.importorskip("temporalio")
    from toolcommit.runtime.frameworks.temporal import temporal_activity

    keys = {n: _in_doubt(tmp_path / f"{n}.db", amount) for n, amount in (("a", 20), ("b", 30))}
    banks: dict[str, list[str]] = {"a": [], "b": []}
    logs = {
        n: IntentLog.sqlite(str(tmp_path / f"{n}.db"), "pod", provider="stripe", settler=False)
        for n in "ab"
    }

    def refund_into(bank: list[str]):
        def refund(amount):
            bank.append(current_ticket().key)
            return {"id": f"re_{len(bank)}"}

        return refund

    for n in "ab":
        temporal_activity(logs[n], refund_into(banks[n]), name=REFUND, status=lambda t: None, **WHO)
    assert recover_settle(logs["a"]) == {keys["a"]: "ACKED"}
    assert recover_settle(logs["b"]) == {keys["b"]: "ACKED"}
    assert banks == {"a": [keys["a"]], "b": [keys["b"]]}
    for log in logs.values():
        log.close()
