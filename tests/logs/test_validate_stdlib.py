"""The stdlib JSON decoder path (neither msgspec nor orjson) gives the same verdicts, and
hostile nesting is still one clear line."""

import json
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.logs import read as logread

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture
def stdlib_decoder(monkeypatch):
    monkeypatch.setattr(logread, "TYPED", None)
    monkeypatch.setattr(logread, "loads", logread._loads_std)


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_stdlib_decoder_gives_the_same_verdict(path, capsys, monkeypatch):
    assert main(["validate", str(path), "--format", "json"]) in (0, 1, 3)
    fast = json.loads(capsys.readouterr().out)["verdict"]
    monkeypatch.setattr(logread, "TYPED", None)
    monkeypatch.setattr(logread, "loads", logread._loads_std)
    assert main(["validate", str(path), "--format", "json"]) in (0, 1, 3)
    assert json.loads(capsys.readouterr().out)["verdict"] == fast


def test_deep_nesting_with_the_stdlib_decoder_is_one_clear_line(tmp_path, capsys, stdlib_decoder):
    p = tmp_path / "deep.jsonl"
    p.write_bytes(
        b'{"type":"crash","writer":"w","seq":1,"x":' + b"[" * 100000 + b"]" * 100000 + b"}\n"
    )
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert "nested deeper than 64" in err and "Traceback" not in err and f"{p}:1:" in err
