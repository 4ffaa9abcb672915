"""`toolcommit export DB`: the library's intent log as the log contract, read-only and
atomically written; bad input is one line and exit 2."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3

import pytest

from toolcommit.runtime import IntentLog

from ..incli import cli


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "intents.db"
    log = IntentLog.sqlite(str(path), writer="w1", provider="stripe")
    d = log.propose("c1", "refund", {"order": "o-7", "amount": 20}, "user:42", principal="user:1")
    log.ack(log.dispatch(d.key), {"id": "re_1"})
    log.propose("c2", "refund", {"order": "o-7", "amount": 20.0}, "user:42", principal="user:1")
    expected = io.StringIO()
    log.export(expected)
    log.close()
    return path, expected.getvalue()


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_export_writes_what_the_library_exports_and_changes_nothing_in_the_db(db):
    path, expected = db
    before = digest(path)
    code, out, err = cli("export", str(path))
    assert (code, out, err) == (0, expected, "")
    assert digest(path) == before


def test_export_to_a_file_is_atomic_and_leaves_no_temporary_file(db, tmp_path):
    path, expected = db
    target = tmp_path / "out" / "log.jsonl"
    target.parent.mkdir()
    target.write_text("old\n")
    assert cli("export", str(path), "-o", str(target))[0] == 0
    assert target.read_text() == expected
    assert [p.name for p in target.parent.iterdir()] == ["log.jsonl"]


def test_the_exported_log_validates(db, tmp_path):
    path, _ = db
    target = tmp_path / "log.jsonl"
    cli("export", str(path), "-o", str(target))
    code, out, _ = cli("validate", str(target))
    assert code == 0 and out.startswith("CONFORMS")


@pytest.mark.parametrize(
    "make,needle",
    [
        (lambda p: None, "no such file"),
        (
            lambda p: p.write_text("not a database at all, but long enough to be read" * 40),
            ":1: not an SQLite intent log",
        ),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.commit(),
            ":1: an SQLite database without an intent log",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, make, needle):
    p = tmp_path / "x.db"
    make(p)
    code, out, err = cli("export", str(p))
    assert code == 2 and out == "" and needle in err and len(err.splitlines()) == 1


def test_export_never_writes_over_its_db(db):
    path, _ = db
    before = digest(path)
    code, _, err = cli("export", str(path), "-o", str(path))
    assert code == 2 and "never over an input" in err and digest(path) == before


def test_export_without_a_db_or_format_says_what_to_give():
    code, _, err = cli("export")
    assert code == 2 and "give a DB" in err


def test_export_schema_without_dsn_is_refused(tmp_path):
    code, _, err = cli("export", str(tmp_path / "x.db"), "--schema", "s")
    assert code == 2 and "--schema is for --dsn" in err
    code, _, err = cli("export", "--format", "promela", "--schema", "s")
    assert code == 2 and "--schema is for --dsn" in err


@pytest.fixture
def read_only_volume(tmp_path):
    """A tmpfs that is remounted read-only once the test has put its files there (needs
    root and mount: skipped where the machine does not allow it)."""
    import shutil
    import subprocess

    point = tmp_path / "vol"
    point.mkdir()
    if (
        shutil.which("mount") is None
        or subprocess.run(
            ["mount", "-t", "tmpfs", "tmpfs", str(point)], capture_output=True
        ).returncode
    ):
        pytest.skip("cannot mount a tmpfs here (needs root)")

    def seal():
        subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)

    yield point, seal
    subprocess.run(["umount", "-l", str(point)], capture_output=True)


def test_a_log_on_a_read_only_volume_is_exported(read_only_volume):
    point, seal = read_only_volume
    log = IntentLog.sqlite(str(point / "intents.db"), writer="w1", provider="stripe")
    log.propose("t1", "refund", {"amount": 20}, "user:42:request:7", principal="user:1")
    log.close()
    seal()
    code, out, err = cli("export", str(point / "intents.db"))
    assert code == 0, err
    assert [json.loads(line)["type"] for line in out.splitlines()] == ["proposal", "transition"]


def test_a_log_with_writes_in_its_wal_on_a_read_only_volume_is_refused_not_exported_stale(
    read_only_volume,
):
    """A writer that died (its ``-wal`` holds a committed proposal) and a volume without the
    ``-shm`` file: SQLite cannot read the WAL there, and an immutable open would export the
    log without that proposal. The command says so instead."""
    import os
    import subprocess
    import sys

    point, seal = read_only_volume
    path = point / "intents.db"
    log = IntentLog.sqlite(str(path), writer="w1", provider="stripe")
    log.propose("t1", "refund", {"amount": 20}, "user:42:request:7", principal="user:1")
    log.close()  # t1 is in the database file
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys\nfrom toolcommit.runtime import IntentLog\n"
            "log = IntentLog.sqlite(sys.argv[1], writer='w2', provider='stripe')\n"
            "log.propose('t2', 'refund', {'amount': 30}, 'user:42:request:8', principal='user:42')\n"
            "os._exit(0)\n",
            str(path),
        ],
        check=True,
        timeout=60,
    )  # t2: in the -wal
    assert os.path.getsize(str(path) + "-wal") > 0
    os.remove(str(path) + "-shm")
    seal()
    for command in ("export", "status"):
        code, out, err = cli(command, str(path))
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert "read-only volume" in err and "-wal" in err and "not an SQLite" not in err


def test_a_log_the_user_may_not_read_is_refused_as_unreadable(tmp_path):
    """Not "not an SQLite intent log": the file is one, this user may not read it."""
    import os
    import shutil
    import subprocess
    import sys

    path = tmp_path / "intents.db"
    IntentLog.sqlite(str(path), writer="w1", provider="stripe").close()
    path.chmod(0)
    argv = [os.path.join(os.path.dirname(sys.executable), "toolcommit"), "export", str(path)]
    if os.geteuid() == 0:  # root reads anything: run as root without the right to
        if shutil.which("setpriv") is None:  # override file permissions (the checkout and
            pytest.skip("root without setpriv: cannot drop the right to read anything")
        caps = "-dac_override,-dac_read_search"  # its venv may be readable by root alone)
        argv = ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert "cannot read it (Permission denied)" in done.stderr
    assert "not an SQLite" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_recover_on_a_read_only_volume_says_the_volume_is_read_only(read_only_volume):
    """recover writes the log: on a read-only volume it says why it cannot, and where the
    log can still be read."""
    point, seal = read_only_volume
    IntentLog.sqlite(str(point / "intents.db"), writer="w1", provider="stripe").close()
    seal()
    code, out, err = cli("recover", str(point / "intents.db"), "--provider", "stripe")
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "mounted read-only" in err and "toolcommit export" in err
