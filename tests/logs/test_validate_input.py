"""Bad and hostile input: one clear line with file:line, exit 2, never a traceback or a hang."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate import validate
from toolcommit.checker.logs.read import read_lines
from toolcommit.model.errors import InputError

OK = [
    {
        "type": "proposal",
        "writer": "w1",
        "seq": 1,
        "call_id": "t1",
        "tool": "refund",
        "args": {"amount": 20},
        "scope": "u",
        "key": "k1",
        "decision": "accepted",
    },
    {
        "type": "transition",
        "writer": "w1",
        "seq": 2,
        "key": "k1",
        "from": "PROPOSED",
        "to": "RECORDED",
    },
    {
        "type": "transition",
        "writer": "w1",
        "seq": 3,
        "key": "k1",
        "from": "RECORDED",
        "to": "REJECTED_CONFLICT",
        "reason": "cancelled",
    },
]


def lines(*evs) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in evs)


def run_cli(tmp_path, data: bytes, capsys, *extra):
    p = tmp_path / "log.jsonl"
    p.write_bytes(data)
    code = main(["validate", str(p), *extra])
    err = capsys.readouterr().err
    return code, err, str(p)


def assert_one_clear_line(code, err, path, line, words):
    assert code == 2
    assert "Traceback" not in err
    msg = err.strip()
    assert "\n" not in msg
    assert msg.startswith(f"toolcommit: {path}:{line}: "), msg
    for w in words:
        assert w in msg, (w, msg)


def test_a_well_formed_log_is_accepted(tmp_path, capsys):
    code, err, _ = run_cli(tmp_path, lines(*OK), capsys)
    assert code == 0 and err == ""


def test_malformed_json_names_its_line(tmp_path, capsys):
    code, err, p = run_cli(
        tmp_path, lines(OK[0]) + b'{"type": "crash",, }\n' + lines(*OK[1:]), capsys
    )
    assert_one_clear_line(code, err, p, 2, ["not valid JSON", "one JSON object"])


def test_missing_field_names_the_field_and_what_is_required(tmp_path, capsys):
    bad = dict(OK[1])
    del bad["from"]
    code, err, p = run_cli(tmp_path, lines(OK[0], bad), capsys)
    assert_one_clear_line(code, err, p, 2, ["missing field 'from'", "required"])


@pytest.mark.parametrize(
    "field,value,words",
    [
        ("seq", "2", ["'seq'", "integer", "a string"]),
        ("seq", True, ["'seq'", "a boolean"]),
        ("seq", -1, ["'seq'", "-1"]),
        ("seq", 2**64, ["'seq'"]),
        ("fence", 1.5, ["'fence'", "a number"]),
        ("writer", ["w1"], ["'writer'", "an array"]),
        ("key", "", ["'key'", "empty"]),
    ],
)
def test_mistyped_field_is_one_clear_line(tmp_path, capsys, field, value, words):
    bad = dict(OK[1], **{field: value})
    code, err, p = run_cli(tmp_path, lines(OK[0], bad), capsys)
    assert_one_clear_line(code, err, p, 2, words)


def test_unknown_state_lists_the_valid_states(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, lines(OK[0], dict(OK[1], to="DONE")), capsys)
    assert_one_clear_line(code, err, p, 2, ["unknown state 'DONE'", "RECONCILING"])


def test_unknown_type_lists_the_valid_types(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, lines({"type": "heartbeat", "writer": "w", "seq": 1}), capsys)
    assert_one_clear_line(code, err, p, 1, ["unknown type 'heartbeat'", "proposal"])


def test_a_line_that_is_not_an_object_is_rejected(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, b"[1, 2]\n", capsys)
    assert_one_clear_line(code, err, p, 1, ["expected a JSON object", "an array"])


def test_non_utf8_byte_names_byte_and_column(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, lines(OK[0]) + b'{"type": "cr\xffash"}\n', capsys)
    assert_one_clear_line(code, err, p, 2, ["0xff", "column 13", "UTF-8"])


def test_empty_file_is_an_error(tmp_path, capsys):
    p = tmp_path / "empty.jsonl"
    p.write_bytes(b"")
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert (
        err.strip()
        == f"toolcommit: {p}: empty log (no events); pass a JSON Lines file with one event per line"
    )


def test_blank_lines_only_is_an_empty_log(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, b"\n  \n\r\n", capsys)
    assert code == 2 and "empty log" in err


def test_truncated_last_line_is_a_warning_and_a_lost_line_not_an_error(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, lines(*OK) + b'{"type": "transition", "wri', capsys)
    assert code == 3
    capsys.readouterr()
    report = validate([p])
    assert report.warnings and "cut off" in report.warnings[0] and f"{p}:4" in report.warnings[0]


def test_truncated_line_that_is_the_only_line_makes_an_empty_log(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, b'{"type": "cra', capsys)
    assert code == 2 and "empty log (its only line is cut off)" in err


def test_a_broken_line_in_the_middle_is_an_error_even_without_newline_at_the_end(tmp_path, capsys):
    code, err, p = run_cli(
        tmp_path, lines(OK[0]) + b'{"type": \n' + json.dumps(OK[1]).encode(), capsys
    )
    assert_one_clear_line(code, err, p, 2, ["not valid JSON"])


def test_deeply_nested_value_is_rejected_before_decoding(tmp_path, capsys):
    deep = b'{"type":"crash","writer":"w","seq":1,"x":' + b"[" * 100000 + b"]" * 100000 + b"}\n"
    code, err, p = run_cli(tmp_path, deep, capsys)
    assert_one_clear_line(code, err, p, 1, ["nested deeper than 64"])


def test_nesting_inside_strings_is_not_nesting(tmp_path, capsys):
    ev = dict(OK[0], args={"note": "[" * 500})
    code, err, p = run_cli(tmp_path, lines(ev, *OK[1:]), capsys)
    assert code == 0, err


def test_args_nested_beyond_the_limit_are_one_clear_line(tmp_path, capsys):
    args: dict = {}
    cur = args
    for _ in range(63):
        cur["a"] = {}
        cur = cur["a"]
    code, err, p = run_cli(tmp_path, lines(dict(OK[0], args=args)), capsys)
    assert_one_clear_line(code, err, p, 1, ["nested deeper than 64"])


def test_a_line_of_tens_of_megabytes_is_refused_without_reading_it_whole(tmp_path, capsys):
    big = b'{"type":"crash","writer":"w","seq":1,"pad":"' + b"x" * (30 << 20) + b'"}\n'
    code, err, p = run_cli(tmp_path, big, capsys)
    assert_one_clear_line(code, err, p, 1, ["longer than 1048576 bytes", "--max-line-bytes"])


def test_max_line_bytes_is_enforced_before_decoding():
    stream = io.BytesIO(b"x" * 50000)
    buffered = io.BufferedReader(stream, buffer_size=1024)
    gen = read_lines("-", max_line_bytes=100, stdin=buffered)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="longer than 100 bytes"):
        next(gen)
    assert stream.tell() <= 2048  # a buffer or two, not the whole input


def test_max_line_bytes_can_be_raised(tmp_path, capsys):
    ev = dict(OK[0], args={"blob": "y" * 3000})
    code, err, p = run_cli(tmp_path, lines(ev, *OK[1:]), capsys, "--max-line-bytes", "4096")
    assert code == 0, err
    code, err, p = run_cli(tmp_path, lines(ev, *OK[1:]), capsys, "--max-line-bytes", "1024")
    assert code == 2 and "longer than 1024" in err


def test_nan_and_infinity_are_not_json(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, b'{"type":"crash","writer":"w","seq":NaN}\n', capsys)
    assert_one_clear_line(code, err, p, 1, ["not valid JSON"])


def test_missing_file_is_one_line(tmp_path, capsys):
    p = tmp_path / "nope.jsonl"
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"toolcommit: {p}: cannot read") and "Traceback" not in err


def test_corrupt_gzip_is_one_line(tmp_path, capsys):
    data = gzip.compress(lines(*OK))
    code, err, p = run_cli(tmp_path, data[:-12] + b"garbage", capsys)
    assert code == 2 and "Traceback" not in err and "gzip" in err


def test_stdin_is_read_with_dash(monkeypatch, capsys):
    fake = io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(lines(*OK)))))
    monkeypatch.setattr("sys.stdin", fake)
    assert main(["validate", "-", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "CONFORMS"


def test_input_files_are_only_read(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    data = lines(*OK)
    p.write_bytes(data)
    before = p.stat()
    main(["validate", str(p)])
    assert p.read_bytes() == data and p.stat().st_mtime_ns == before.st_mtime_ns
    assert sorted(x.name for x in tmp_path.iterdir()) == ["log.jsonl"]


def test_log_content_is_never_evaluated(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = dict(
        OK[0],
        tool=f"__import__('os').system('touch {marker}')",
        args={"x": "{{7*7}}", "y": "$(touch " + str(marker) + ")"},
    )
    run_cli(tmp_path, lines(evil, *OK[1:]), capsys)
    assert not marker.exists()


def test_a_call_with_two_names_that_normalize_alike_is_one_clear_line(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, lines(dict(OK[0], args={"amount": 1, " amount": 2})), capsys)
    assert_one_clear_line(code, err, p, 1, ["no canonical form", "two names normalize"])


def test_bom_at_the_start_is_tolerated(tmp_path, capsys):
    code, err, p = run_cli(tmp_path, b"\xef\xbb\xbf" + lines(*OK), capsys)
    assert code == 0, err


def test_duplicate_stdin_is_a_usage_error(capsys):
    assert main(["validate", "-", "-"]) == 2
    assert "only once" in capsys.readouterr().err


def test_the_librarys_sqlite_log_given_to_validate_says_to_export_it_and_is_not_changed(
    tmp_path, capsys
):
    import hashlib

    from toolcommit.runtime import IntentLog

    db = tmp_path / "intents.db"
    log = IntentLog.sqlite(str(db), writer="w1", provider="stripe")
    log.propose("t1", "refund", {"amount": 20}, "user:42:request:7", principal="user:1")
    log.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    assert main(["validate", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"toolcommit export {db}" in err and "--from dbos" not in err
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_the_librarys_sqlite_log_on_stdin_or_gzipped_says_to_export_it(
    tmp_path, monkeypatch, capsys
):
    """No path to look into (stdin) or one that holds a gzip: the first bytes still say it
    is an SQLite database, and the one line says what to do (not 'not UTF-8')."""
    from toolcommit.runtime import IntentLog

    db = tmp_path / "intents.db"
    log = IntentLog.sqlite(str(db), writer="w1", provider="stripe")
    log.propose("t1", "refund", {"amount": 20}, "user:42:request:7", principal="user:1")
    log.close()
    zipped = tmp_path / "intents.db.gz"
    zipped.write_bytes(gzip.compress(db.read_bytes()))
    assert main(["validate", str(zipped)]) == 2
    err = capsys.readouterr().err
    assert "an SQLite database" in err and "toolcommit export" in err and "UTF-8" not in err
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(db.read_bytes())))
    assert main(["validate", "-"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("toolcommit: -:1: an SQLite database") and "toolcommit export" in err
