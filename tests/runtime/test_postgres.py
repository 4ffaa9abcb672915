"""PostgreSQL: the same log on a server the tests start themselves (initdb into a temporary
folder, a Unix socket only), two orchestrator processes in the harness."""

import pytest

from toolcommit.checker.torture.campaign import render, torture
from toolcommit.checker.torture.pgserver import binaries

pytest.importorskip("psycopg", reason="the 'postgres' extra (psycopg 3) is not installed")
if binaries() is None:
    pytest.skip(
        "PostgreSQL server binaries are not installed (apt-get install postgresql)",
        allow_module_level=True,
    )

from toolcommit.runtime import IntentLog  # noqa: E402

from ..incli import cli  # noqa: E402
from .at_once import decisions  # noqa: E402

SCOPE = "user:42:checkout:7"


def test_postgres_log_decides_duplicates_and_fences_like_sqlite(pg):
    w1 = IntentLog.postgres(pg.dsn, "w1", schema="t_basic", provider="ideal")
    w2 = IntentLog.postgres(pg.dsn, "w2", schema="t_basic", provider="ideal")
    d = w1.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    assert (
        w2.propose("t2", "refund", {"amount": 20.0}, SCOPE, principal="user:1").decision
        == "duplicate"
    )
    t = w1.dispatch(d.key)
    w1.expire_leases("w1")
    assert [r.state for r in w2.recover()] == ["UNKNOWN"]
    assert not w1.ack(t)
    r = w2.reconcile(d.key)
    assert r.fence == 2 and w2.settle(r, True, {"id": "e1"})
    assert [e["seq"] for e in w2.events() if e["writer"] == "w2"] == [1, 2, 3, 4]
    w1.close()
    w2.close()


ORCHESTRATOR = """
import sys
from toolcommit.runtime import IntentLog
dsn, i, scope = sys.argv[1:]
log = IntentLog.postgres(dsn, "o" + i, schema="t_race", provider="ideal")
print(log.propose("t" + i, "refund", {"amount": 20}, scope, principal="user:1").decision)
log.close()
"""


def test_concurrent_orchestrators_on_postgres_accept_one_record(pg):
    """Six fresh processes (not forks of this one, whose other tests' threads a fork would
    copy) propose one intent at once on one PostgreSQL log: one is accepted."""
    IntentLog.postgres(pg.dsn, "setup", schema="t_race", provider="ideal").close()
    got = decisions(ORCHESTRATOR, [[pg.dsn, str(i), SCOPE] for i in range(6)])
    assert got == ["a"] + ["d"] * 5


def test_harness_with_two_orchestrators_on_postgres_is_clean(pg):
    c = torture(5, seed=1, store="postgres", dsn=pg.dsn, workers=2, keep_going=True)
    assert c.verdicts()["CONFORMS"] == 5, render(c)
    assert c.total("crashes") > 0


@pytest.mark.deep  # 5 seeds above in every run
def test_harness_with_two_orchestrators_on_postgres_is_clean_on_40_seeds(pg):
    c = torture(40, seed=100, store="postgres", dsn=pg.dsn, workers=2, jobs=2, keep_going=True)
    assert c.verdicts()["CONFORMS"] == 40, render(c)


def test_a_schema_of_another_application_is_refused_unless_adopted(pg):
    import psycopg

    from toolcommit.runtime import StoreError

    with psycopg.connect(pg.dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA shop")
        c.execute("CREATE TABLE shop.orders (id int)")
    with pytest.raises(StoreError, match="another application's tables \\(orders\\).*adopt"):
        IntentLog.postgres(pg.dsn, "w1", schema="shop", provider="ideal")
    with psycopg.connect(pg.dsn, autocommit=True) as c:
        assert [
            r[0]
            for r in c.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'shop'"
            )
        ] == ["orders"]
    IntentLog.postgres(pg.dsn, "w1", schema="shop", adopt=True, provider="ideal").close()
    IntentLog.postgres(pg.dsn, "w2", schema="shop", provider="ideal").close()  # a log is there now


def test_toolcommit_recover_settles_a_dead_writers_record_on_postgres(pg, capsys):
    """A writer that died after dispatching (its lease expired) leaves a record in doubt;
    `toolcommit recover --dsn` takes it over and settles it as email's design says (no
    status read: given up visibly), and refuses a schema that holds no log, creating
    nothing there."""
    import psycopg

    from toolcommit.checker.cli import main

    dead = IntentLog.postgres(pg.dsn, "pod-a", schema="t_recover", provider="email")
    d = dead.propose("t1", "mail", {"to": "a@example.com"}, SCOPE, principal="user:1")
    dead.dispatch(d.key)
    dead.expire_leases("pod-a")
    dead.close()
    assert main(["recover", "--dsn", pg.dsn, "--schema", "t_recover", "--provider", "email"]) == 0
    assert "1 record(s) of dead writers taken over: 1 DEAD_LETTER" in capsys.readouterr().out
    reader = IntentLog.postgres(pg.dsn, "reader", schema="t_recover", provider="email")
    assert [(r.state, r.owner.split("@")[0]) for r in reader.records()] == [
        ("DEAD_LETTER", "toolcommit-recover")
    ]
    reader.close()

    assert main(["recover", "--dsn", pg.dsn, "--schema", "t_nolog", "--provider", "email"]) == 2
    assert "schema t_nolog holds no intent log" in capsys.readouterr().err
    with psycopg.connect(pg.dsn) as c:
        assert (
            c.execute(
                "SELECT 1 FROM information_schema.schemata WHERE schema_name = 't_nolog'"
            ).fetchone()
            is None
        )
    assert main(["recover", "x.db", "--dsn", pg.dsn, "--provider", "email"]) == 2


def test_a_write_the_server_refuses_is_a_store_error_in_one_line(pg):
    """The server ends the log's session mid-run: the next decision is a `StoreError`
    naming what happened, not psycopg's exception."""
    import psycopg

    from toolcommit.runtime import StoreError

    log = IntentLog.postgres(pg.dsn, "w1", schema="t_gone", provider="ideal")
    pid = log.store._db.info.backend_pid
    with psycopg.connect(pg.dsn, autocommit=True) as c:
        c.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(StoreError) as e:
        log.propose("t1", "refund", {"amount": 20}, SCOPE, principal="user:1")
    assert "\n" not in str(e.value) and "could not write" in str(e.value)
    log.close()


@pytest.mark.parametrize("made", ["S1", "s1"])
def test_recover_finds_a_schema_named_in_capitals(pg, capsys, made):
    """PostgreSQL folds an unquoted name: the log made with schema="S1" or "s1" is in s1,
    and `status --schema S1` and `recover --schema S1` find it there."""
    from toolcommit.checker.cli import main

    schema = f"{made}_{'up' if made.isupper() else 'low'}"
    dead = IntentLog.postgres(pg.dsn, "pod-a", schema=schema, provider="email")
    dead.dispatch(
        dead.propose("t1", "mail", {"to": "a@example.com"}, SCOPE, principal="user:1").key
    )
    dead.expire_leases("pod-a")
    dead.close()
    assert main(["status", "--dsn", pg.dsn, "--schema", schema.upper()]) == 3  # in doubt
    assert "1 record(s) in doubt" in capsys.readouterr().out
    assert (
        main(["recover", "--dsn", pg.dsn, "--schema", schema.upper(), "--provider", "email"]) == 0
    )
    assert "1 record(s) of dead writers taken over: 1 DEAD_LETTER" in capsys.readouterr().out


def test_recover_on_postgres_never_calls_its_own_earlier_runs_records_settled(pg, capsys):
    """A record the sweeper took and could not settle (no tool) stays in doubt: every
    later run under the same name says so (exit 3), and a log of another design is
    refused in one line (exit 2)."""
    from toolcommit.checker.cli import main

    dead = IntentLog.postgres(pg.dsn, "pod-a", schema="t_again", provider="stripe")
    dead.dispatch(
        dead.propose("t1", "unregistered_refund", {"amount": 20}, SCOPE, principal="user:1").key
    )
    dead.expire_leases("pod-a")  # a tool no test registers in this process
    dead.close()
    run = ["recover", "--dsn", pg.dsn, "--schema", "t_again", "--writer", "sweeper"]
    assert main([*run, "--provider", "stripe"]) == 3
    assert main([*run, "--provider", "stripe"]) == 3
    out = capsys.readouterr().out
    assert "sweeper#2 holds 1 record(s) (1 UNKNOWN): tool unregistered_refund is not" in out
    assert main([*run, "--provider", "email"]) == 2
    assert "created under design stripe" in capsys.readouterr().err


@pytest.mark.slow
def test_sigkill_mid_call_then_recover_on_postgres(pg, tmp_path):
    """The SQLite end-to-end run of tests/runtime/test_recovery_ends.py on PostgreSQL."""
    from .test_recovery_ends import kill_then_recover

    where = ["--dsn", pg.dsn, "--schema", "t_kill"]

    def states():
        log = IntentLog.postgres(pg.dsn, "reader", schema="t_kill", provider="stripe")
        try:
            return sorted(r.state for r in log.records())
        finally:
            log.close()

    kill_then_recover(tmp_path, states, where, {"DSN": pg.dsn, "SCHEMA": "t_kill"})


def test_an_export_is_the_log_as_of_one_moment_while_others_write_it(pg):
    """`tc_events.id` is taken at insert, not at commit. Writer a inserts its first line
    (id 1) and commits late; b's line (id 2) is committed; a reader takes a page; a
    commits and writes its next line (id 3). Paging on in a new snapshot would give b's
    line and a's second without a's first: a gap the validator would report against a
    runtime that did nothing wrong. The export is one snapshot: b's line alone, then,
    exported again, all three."""
    import psycopg

    log = IntentLog.postgres(pg.dsn, "reader", schema="t_snap", provider="ideal")
    add = "INSERT INTO t_snap.tc_events (writer, seq, line) VALUES (%s, %s, %s)"
    with psycopg.connect(pg.dsn) as a, psycopg.connect(pg.dsn, autocommit=True) as b:
        a.execute(add, ("a", 1, "a1"))  # not committed yet
        b.execute(add, ("b", 1, "b1"))
        pages = log.lines(batch=1)
        first = next(pages)
        a.commit()
        a.execute(add, ("a", 2, "a2"))
        a.commit()
        assert [first, *pages] == ["b1"]
    assert list(log.lines(batch=1)) == ["a1", "b1", "a2"]
    log.close()


def _schemas(dsn):
    import psycopg

    with psycopg.connect(dsn) as c:
        return sorted(r[0] for r in c.execute("SELECT nspname FROM pg_namespace"))


def test_export_dsn_writes_what_the_library_exports_and_it_validates(pg, tmp_path):
    """`toolcommit export --dsn`: a team on PostgreSQL exports its log from the command
    line, the same lines `log.export` writes; the file validates; the database is only
    read (the writers' table as it was)."""
    import io

    import psycopg

    log = IntentLog.postgres(pg.dsn, "w1", schema="t_export", provider="stripe")
    d = log.propose("c1", "refund", {"order": "o-7", "amount": 20}, SCOPE, principal="user:1")
    log.ack(log.dispatch(d.key), {"id": "re_1"})
    log.propose("c2", "refund", {"order": "o-7", "amount": 20.0}, SCOPE, principal="user:1")
    expected = io.StringIO()
    log.export(expected)
    log.close()
    writers = "SELECT writer, incarnation, running, seq FROM t_export.tc_writers"
    with psycopg.connect(pg.dsn) as c:
        before = c.execute(writers).fetchall()
    assert cli("export", "--dsn", pg.dsn, "--schema", "T_Export") == (0, expected.getvalue(), "")
    target = tmp_path / "log.jsonl"
    assert cli("export", "--dsn", pg.dsn, "--schema", "t_export", "-o", str(target))[0] == 0
    code, out, _ = cli("validate", str(target))
    assert code == 0 and out.startswith("CONFORMS")
    with psycopg.connect(pg.dsn) as c:
        assert c.execute(writers).fetchall() == before


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--schema", "t_nothing"], "schema t_nothing holds no intent log (no tc_events table)"),
        (["--schema", "bad-name"], "--schema: schema 'bad-name': use letters, digits and _"),
        (["x.db"], "export: give the SQLite file DB or --dsn CONNINFO (PostgreSQL), one of"),
    ],
)
def test_export_dsn_refuses_in_one_line_and_creates_nothing(pg, argv, needle):
    before = _schemas(pg.dsn)
    code, out, err = cli("export", "--dsn", pg.dsn, *argv)
    assert (code, out) == (2, "") and needle in err and len(err.splitlines()) == 1
    assert _schemas(pg.dsn) == before


def test_export_dsn_to_a_server_that_is_not_there_says_what_to_check():
    code, _, err = cli("export", "--dsn", "host=127.0.0.1 port=1 dbname=x connect_timeout=2")
    assert code == 2 and len(err.splitlines()) == 1
    assert "cannot read the database" in err and "check the conninfo" in err


def test_an_export_of_a_postgres_log_holds_up_none_of_the_process_s_decisions(pg):
    from .live_export import export_leaves_the_log_live

    log = IntentLog.postgres(pg.dsn, "w1", schema="t_live", provider="ideal")
    export_leaves_the_log_live(log)
    log.close()


def test_another_programs_tc_writers_table_in_a_schema_is_refused_even_with_adopt(pg):
    """Before: a schema with another program's tc_writers passed for an intent log, and
    the log's other tables were created beside it (its first write then failed)."""
    import psycopg

    from toolcommit.runtime import StoreError

    with psycopg.connect(pg.dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA crm")
        c.execute("CREATE TABLE crm.tc_writers (id int, email text)")
    for adopt in (False, True):
        with pytest.raises(StoreError, match="schema crm holds a table tc_writers that is not"):
            IntentLog.postgres(pg.dsn, "w1", schema="crm", adopt=adopt, provider="ideal")
    with psycopg.connect(pg.dsn, autocommit=True) as c:
        tables = c.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'crm'"
        ).fetchall()
    assert tables == [("tc_writers",)]
