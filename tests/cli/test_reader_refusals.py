"""The commands that only read an intent log (`status`, `export`, `recover`, `validate`)
against hostile leftovers: each refusal is one line and exit 2, no traceback; nothing is
left beside a file they only read; a FIFO never blocks them; a stored design never makes
them read without bound."""

from __future__ import annotations

import os
import sqlite3

import pytest

from toolcommit.runtime import IntentLog

from ..incli import cli


def closed_log(tmp_path) -> str:
    """A closed SQLite log holding one record in doubt (its -wal and -shm gone with it)."""
    db = str(tmp_path / "intents.db")
    log = IntentLog.sqlite(db, writer="pod-0", provider="stripe")
    d = log.propose("t1", "refund", {"amount": 20}, "s", principal="user:1")
    assert log.timeout(log.dispatch(d.key))
    log.close()
    assert not os.path.exists(db + "-wal") and not os.path.exists(db + "-shm")
    return db


def refused(code: int, out: str, err: str, *words: str) -> None:
    """Exit 2 with one line on stderr naming `words`, no traceback."""
    assert code == 2, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("command", ["status", "recover"])
def test_an_empty_dsn_is_refused_in_one_line(command):
    refused(*cli(command, "--dsn", ""), "--dsn is empty")


@pytest.mark.parametrize("command", ["status", "recover", "export"])
def test_a_dsn_host_that_is_not_valid_idna_is_refused_in_one_line(command):
    pytest.importorskip("psycopg")
    argv = [command, "--dsn", f"host={'a' * 70}.example dbname=x connect_timeout=2"]
    refused(*cli(*argv), "--dsn")


@pytest.mark.parametrize("command", ["status", "recover"])
def test_a_reserved_word_as_schema_is_refused_by_the_name_check(command):
    refused(*cli(command, "--dsn", "dbname=x", "--schema", "select"), "select", "reserves")


@pytest.mark.parametrize("command", ["status", "recover"])
def test_a_record_whose_args_are_not_json_is_refused_in_one_line(tmp_path, command):
    db = closed_log(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE tc_records SET args = '{not json'")
    c.close()
    refused(*cli(command, db), "args is not JSON")


def test_a_stored_design_named_dev_zero_is_never_opened(tmp_path):
    """The stored name is only compared with the shipped designs' names: status says the
    log keeps no design it can read, at once."""
    db = closed_log(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE tc_design SET name = '/dev/zero', doc = NULL")
    c.close()
    refused(*cli("status", db), "does not keep its design", "/dev/zero")


def test_a_stored_design_document_beyond_the_bound_is_refused_not_read(tmp_path):
    db = closed_log(tmp_path)
    with sqlite3.connect(db) as c:
        c.execute("UPDATE tc_design SET doc = ?", ("[" + "0," * (1 << 20) + "0]",))
    c.close()
    refused(*cli("status", db), "stored design", "characters long")


@pytest.mark.parametrize(
    "command", [("status",), ("export",), ("recover",), ("recover", "--provider", "stripe")]
)
def test_a_fifo_is_refused_before_it_is_opened(tmp_path, command):
    """Opening a FIFO would wait for a writer for ever: refused as not a regular file (the
    test would hang, not fail, without the refusal)."""
    fifo = str(tmp_path / "intents.db")
    os.mkfifo(fifo)
    refused(*cli(*command[:1], fifo, *command[1:]), "not a regular file")


@pytest.mark.parametrize(
    "argv", [("status",), ("export",), ("validate",)], ids=["status", "export", "validate"]
)
def test_a_command_that_only_reads_leaves_nothing_beside_the_log(tmp_path, argv):
    db = closed_log(tmp_path)
    before = sorted(os.listdir(tmp_path))
    code, _, err = cli(*argv, db)
    assert code in (0, 2, 3) and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == before
