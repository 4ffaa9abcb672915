"""Unsafe settings and misuse are refused when the log opens or the tool is wrapped, in
one line naming the fix, before anything is written (issue 39, point 6). Each test names
what the library did before it refused them."""

from __future__ import annotations

import sqlite3

import pytest

from toolcommit.checker.cli import main
from toolcommit.runtime import IntentLog, IntentLogError, StoreError, effectful, guard

SCOPE = "user:42:request:7"


def _log(path, **kw):
    return IntentLog.sqlite(str(path), "w1", provider="ideal", **kw)


# ----- settings ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "setting",
    [
        {"lease": 0},
        {"lease": -5},
        {"lease": float("nan")},
        {"settle_every": 0},
        {"settle_every": -1},
        {"wait": -1},
    ],
    ids=repr,
)
def test_an_unsafe_timing_is_refused_at_open_and_the_file_left_unwritten(tmp_path, setting):
    """Before: lease=0 opened, and a record's lease had expired as it was written, so a
    `recover` took a live call over; settle_every=0 made the settler spin."""
    path = tmp_path / "i.db"
    with pytest.raises(IntentLogError, match=f"{next(iter(setting))}=.*seconds above 0") as e:
        _log(path, **setting)
    assert "\n" not in str(e.value)
    log = _log(path)  # the store was closed, and the name left free
    assert log.records() == [] and log.incarnation == 1
    log.close()


def test_a_zero_lease_would_let_recover_take_a_live_call(tmp_path):
    """What lease=0 did: the call's own record was takeable the moment it was written."""
    log = _log(tmp_path / "i.db", lease=1e-9)
    d = log.propose("c1", "refund", {"amount": 20}, SCOPE, principal="user:1", dispatch=True)
    sweeper = IntentLog.sqlite(str(tmp_path / "i.db"), "sweeper", provider="ideal")
    taken = sweeper.recover()
    assert [r.key for r in taken] == [d.key]  # a live call, taken over: why 0 is refused
    sweeper.close()
    log.close()


@pytest.mark.parametrize("path", ["", ":memory:", "file::memory:?cache=shared"])
def test_a_log_that_would_vanish_with_the_process_is_refused(path):
    """Before: IntentLog.sqlite("") and ":memory:" opened a private temporary database:
    a restart found an empty log and sent the same refund again."""
    with pytest.raises(StoreError, match="is not a file: the intent log must outlive"):
        IntentLog.sqlite(path, "w1", provider="ideal")


def test_the_gateway_refuses_an_empty_db_before_making_anything(tmp_path, monkeypatch, capsys):
    """Before: ``--db ""`` served from a temporary database (two gateway runs, the same
    refund twice) and left a lock file in the parent folder."""
    monkeypatch.chdir(tmp_path)
    code = main(["gateway", "--db", "", "--effectful", "refund", "--", "true"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and "--db '' is not a file" in err
    assert "Traceback" not in err and list(tmp_path.parent.glob("*.gateway-*.lock")) == []


# ----- other programs' files; recover never creates a log ------------------------------------
def _foreign(path):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE tc_writers (id INTEGER PRIMARY KEY, email TEXT)")
    db.execute("INSERT INTO tc_writers VALUES (1, 'a@example.com')")
    db.commit()
    db.close()
    return path.read_bytes()


def test_another_programs_tc_writers_table_is_refused_even_with_adopt(tmp_path):
    """Before: a tc_writers table was taken for an intent log: the file was switched to
    WAL and the log's tables added beside the other program's."""
    path = tmp_path / "crm.db"
    before = _foreign(path)
    for adopt in (False, True):
        with pytest.raises(StoreError, match="a table tc_writers that is not an intent log's"):
            IntentLog.sqlite(str(path), "w1", provider="ideal", adopt=adopt)
    assert path.read_bytes() == before and not (tmp_path / "crm.db-wal").exists()


def test_a_log_written_before_the_send_times_existed_still_opens(tmp_path):
    path = tmp_path / "old.db"
    _log(path).close()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE tc_records DROP COLUMN sent_at")
    db.commit()
    db.close()
    _log(path).close()  # the column is added, as before


def test_recover_never_turns_an_empty_file_into_a_log(tmp_path, capsys):
    """Before: ``recover --db empty.db`` switched it to WAL and created the tables."""
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    code = main(["recover", str(path), "--provider", "ideal"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "holds no intent log" in err and "\n" not in err
    assert path.read_bytes() == b"" and not (tmp_path / "empty.db-wal").exists()
    with pytest.raises(StoreError, match="never create one"):
        IntentLog.sqlite(str(path), "w1", provider="ideal", create=False)
    assert path.read_bytes() == b""


# ----- tools no guard can run as one effect ---------------------------------------------------
def test_a_generator_tool_is_refused_when_decorated(tmp_path):
    """Before: calling a generator function only made the generator, so the record was
    ACKED (with the generator's repr) before the effect ran, if it ever did."""
    log = _log(tmp_path / "i.db")
    sent = []

    def refund(amount):
        sent.append(amount)
        yield {"id": "re_1"}

    async def arefund(amount):
        sent.append(amount)
        yield {"id": "re_1"}

    for fn, kind in ((refund, "a generator"), (arefund, "an async generator")):
        with pytest.raises(IntentLogError, match=f"is {kind} function.*plain function"):
            effectful(log, "refund", SCOPE, principal="user:1", status=lambda t: None)(fn)
    with pytest.raises(IntentLogError, match="is a generator function"):
        guard(log, "c1", "refund", {"amount": 1}, SCOPE, refund, lambda t: None, principal="u")
    assert log.records() == [] and sent == []
    log.close()


@pytest.mark.parametrize("name", ["call_id", "new_request"])
def test_a_tool_declaring_the_wrappers_own_parameter_is_refused(tmp_path, name):
    """Before: the wrapper took ``call_id`` for itself, the function was called without it,
    failed, and its record was dead-lettered though nothing ran."""
    log = _log(tmp_path / "i.db")
    ns: dict = {}
    exec(f"def refund(amount, {name}):\n    return {{'id': 're_1'}}", ns)
    with pytest.raises(IntentLogError, match=f"declares {name}.*rename the parameter"):
        effectful(log, "refund", SCOPE, principal="user:1", status=lambda t: None)(ns["refund"])
    assert log.records() == []
    log.close()


# ----- a forked child ------------------------------------------------------------------------
def _in_child(body) -> str:
    """Run ``body()`` in a child forked from this process; what it returned (or raised,
    as ``TypeName: message``), read from a pipe once the child exited."""
    import os

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        try:
            out = f"ok: {body()}"
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = f"{type(e).__name__}: {e}"
        os.write(w, out.encode()[:4000])
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = f.read().decode()
    assert os.waitpid(pid, 0)[1] == 0
    return got


def test_a_forked_child_is_refused_and_its_close_keeps_the_parents_leases(tmp_path):
    """Before: the child wrote through the parent's SQLite connection (a connection carried
    across a fork can corrupt the file), and its close() released the parent's leases and
    marked the parent's writer stopped, so a live call could be taken over."""
    log = _log(tmp_path / "i.db")
    d = log.propose("c1", "refund", {"amount": 20}, SCOPE, principal="user:1", dispatch=True)
    said = _in_child(
        lambda: log.propose("c2", "refund", {"amount": 30}, SCOPE, principal="user:1").decision
    )
    assert said.startswith("Forked: this intent log (writer 'w1') was opened in process")
    assert "open a log in the child after the fork" in said and "\n" not in said
    assert _in_child(log.close) == "ok: None"
    assert log.lease_left(d.key) > 0 and [r.key for r in log.records()] == [d.key]
    sweeper = IntentLog.sqlite(str(tmp_path / "i.db"), "sweeper", provider="ideal")
    assert sweeper.recover() == []  # the parent's live call is not takeable
    sweeper.close()
    t = log.ticket(d.key, "apply")
    assert log.ack(t, {"id": "re_1"}) and log.record(d.key).state == "ACKED"
    log.close()


# ----- one live process per writer name ---------------------------------------------------
_HOLD = """
import sys
from toolcommit.runtime import IntentLog
log = IntentLog.sqlite(sys.argv[1], "w1", provider="ideal")
d = log.propose("c1", "refund", {"amount": 20}, "s", principal="user:1", dispatch=True)
print(d.key, flush=True)
sys.stdin.read()  # alive until told
"""

_OPEN = """
import sys
from toolcommit.runtime import IntentLog, IntentLogError
try:
    log = IntentLog.sqlite(sys.argv[1], "w1", provider="ideal")
except IntentLogError as e:
    print("refused:", e)
else:
    print("opened", log.incarnation, [r.state for r in log.taken_over])
"""


def test_a_second_live_process_under_one_writer_name_is_refused_at_open(tmp_path):
    """Before: the second process opened the name, took the first one's live call over
    (DISPATCHED -> UNKNOWN) and the first failed each later call with Superseded. A
    restart after the holder is killed still opens the name and takes over."""
    import subprocess
    import sys

    db = str(tmp_path / "i.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        key = holder.stdout.readline().strip()
        second = subprocess.run([sys.executable, "-c", _OPEN, db], capture_output=True, text=True)
        assert second.stdout.startswith("refused: writer 'w1' of ") and "\n" not in (
            second.stdout.strip()
        )
        assert "held by another live process" in second.stdout
        log = IntentLog.sqlite(db, "reader", provider="ideal")
        assert log.record(key).state == "DISPATCHED" and log.record(key).owner_inc == 1
        log.close()
    finally:
        holder.kill()
        holder.wait()
    restart = subprocess.run([sys.executable, "-c", _OPEN, db], capture_output=True, text=True)
    assert restart.stdout.strip() == "opened 2 ['UNKNOWN']"


# ----- a sync guard given an async effect -------------------------------------------------
def test_a_sync_guard_refuses_a_wrapped_async_effect_before_anything_is_written(tmp_path):
    """Before: a sync wrapper of an async def (functools.wraps) passed the check, its
    coroutine was refused only once dispatched, and the record was left UNKNOWN."""
    import functools

    log = _log(tmp_path / "i.db")

    async def refund(t):
        return {"id": "re_1"}

    wrapped = functools.wraps(refund)(lambda t: refund(t))
    with pytest.raises(IntentLogError, match="is async: use the async form"):
        guard(log, "c1", "refund", {"amount": 1}, SCOPE, wrapped, lambda t: None, principal="u")
    assert log.records() == []
    log.close()


def test_a_coroutine_returned_to_a_sync_guard_is_settled_by_the_next_call(tmp_path):
    """A plain function returning a coroutine is known only once called: the coroutine is
    closed unstarted and the call refused, saying the record is in doubt and how it
    settles; the same call through aguard then settles it (one refund, under the key)."""
    import asyncio

    from toolcommit.runtime import aguard

    from .ledger import Bank

    bank = Bank()
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider="stripe")

    async def refund(t):
        return bank.refund(t, t.args)

    call = ("c1", "refund", {"amount": 1}, SCOPE)
    with pytest.raises(IntentLogError, match="closed unstarted: use aguard.*in doubt") as e:
        guard(log, *call, lambda t: refund(t), lambda t: None, principal="u")
    assert "\n" not in str(e.value) and len(bank.ledger) == 0
    assert [r.state for r in log.records()] == ["UNKNOWN"]
    got = asyncio.run(aguard(log, *call, refund, lambda t: None, principal="u"))
    assert got == {"id": "e1"} and len(bank.ledger) == 1
    assert [r.state for r in log.records()] == ["ACKED"]
    log.close()


def test_the_gateway_refuses_a_writer_name_a_live_library_process_holds(tmp_path, capsys):
    """A gateway's own lock keeps out a second gateway; a library process under the same
    writer name is now refused at open too: exit 2, one line."""
    import contextlib
    import io

    db = tmp_path / "intents.db"
    argv = ["gateway", "--db", str(db), "--writer", "gw-1", "--effectful", "refund", "--", "true"]

    def gateway() -> str:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(argv)
        return f"{code} {err.getvalue()}"

    log = IntentLog.sqlite(str(db), "gw-1", provider="stripe")
    try:
        said = _in_child(gateway)
    finally:
        log.close()
    assert said.startswith("ok: 2 toolcommit: --db ") and said.strip().count("\n") == 0
    assert "writer 'gw-1'" in said and "held by another live process" in said
