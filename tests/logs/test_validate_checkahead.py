"""The second-core field checks (used for large plain files on the dict path, i.e. without
msgspec) change nothing: every fixture, and every kind of bad line, gives the same output
with and without them."""

from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.logs import read as logread

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture(autouse=True)
def dict_path(monkeypatch):
    """The helper serves the dict path only (the typed decoder checks as it decodes)."""
    monkeypatch.setattr(logread, "TYPED", None)


def outputs(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_check_ahead_gives_the_same_report_on_every_fixture(path, capsys, monkeypatch):
    plain = outputs(["validate", str(path), "--format", "json"], capsys)
    monkeypatch.setattr(logread, "CHECK_AHEAD_MIN_BYTES", 0)
    assert outputs(["validate", str(path), "--format", "json"], capsys) == plain


BAD = {
    "bad_field": b'{"type":"crash","writer":"w","seq":1}\n{"type":"crash","writer":"w","seq":"two"}\n',
    "cut_off": b'{"type":"crash","writer":"w","seq":1}\n{"type":"restart","writer":"w","se',
    "bom_and_blank": b'\xef\xbb\xbf{"type":"crash","writer":"w","seq":1}\n\n   \n',
    "unknown_field": b'{"type":"crash","writer":"w","seq":1,"extra":{"a":[1]}}\n',
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_check_ahead_gives_the_same_errors_and_warnings(name, tmp_path, capsys, monkeypatch):
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(BAD[name])
    plain = outputs(["validate", str(p)], capsys)
    monkeypatch.setattr(logread, "CHECK_AHEAD_MIN_BYTES", 0)
    assert outputs(["validate", str(p)], capsys) == plain


def test_the_helper_really_starts_when_the_threshold_allows(tmp_path, monkeypatch):
    if logread._cpus() < 2:
        pytest.skip("one CPU: the helper is never used")
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"type":"crash","writer":"w","seq":1}\n')
    monkeypatch.setattr(logread, "CHECK_AHEAD_MIN_BYTES", 0)
    with open(p, "rb") as f:
        assert logread._check_ahead(str(p), f, 1 << 20, 1 << 20) is not None
