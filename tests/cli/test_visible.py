"""No raw control, bidi or line-separator character from a log reaches a report: a log whose
key and writer carry a clipboard write (ESC]52), a screen clear (ESC[2J), a carriage return
and a right-to-left override is reported with each written as its escape, in every format,
and the JSON report keeps the exact value."""

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from toolcommit.checker.output import _HIDDEN, visible, write_atomic

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_KEY = "k1\u202eevil\x1b]52;c;SGVsbG8=\x07\x1b[2J\r"
HOSTILE_WRITER = "w2\x1b[31m\u2028"


def _hidden(c: str) -> bool:
    return (unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")) and c not in "\n\t"


def test_the_escaped_characters_are_exactly_the_controls_formats_and_separators():
    """Every such character of this Python's Unicode database, and beyond them only
    characters it does not assign yet (format characters of later Unicode versions)."""
    wrong = [
        hex(i)
        for i in range(0x110000)
        if bool(_HIDDEN.fullmatch(chr(i))) != _hidden(chr(i))
        and unicodedata.category(chr(i)) != "Cn"
    ]
    assert wrong == []


def test_an_escape_is_plain_text_and_the_same_value_inside_a_json_string():
    for c in ("\x1b", "\r", "\x85", "\u202e", "\u2028", "\U000e0041", "\ud800"):
        shown = visible(json.dumps({"k": "a" + c}, ensure_ascii=False))
        assert not any(_hidden(x) for x in shown)
        assert json.loads(shown) == {"k": "a" + c}


@pytest.fixture
def hostile_log(tmp_path):
    out = []
    for line in (ROOT / "tests/fixtures/logs/zombie-bad.jsonl").read_text().splitlines():
        event = json.loads(line)
        if "key" in event:
            event["key"] = HOSTILE_KEY
        if event.get("writer") == "w2":
            event["writer"] = HOSTILE_WRITER
        out.append(json.dumps(event, ensure_ascii=False))
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _validate(*argv):
    return subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", "validate", *argv],
        capture_output=True,
        timeout=120,
    )


@pytest.mark.parametrize("fmt", ["text", "json", "mermaid", "html"])
def test_no_raw_control_or_bidi_character_of_a_log_reaches_the_report(hostile_log, fmt):
    result = _validate(str(hostile_log), "--format", fmt)
    assert result.returncode == 1, result.stderr
    shown = result.stdout.decode("utf-8")
    assert "VIOLATES" in shown or '"VIOLATES"' in shown or "FENCE" in shown
    assert [c for c in shown if _hidden(c)] == []
    if fmt != "mermaid":  # the diagram names writers and states, not keys
        assert "\\u202e" in shown and "\\u001b" in shown


def test_the_json_report_keeps_the_exact_key(hostile_log):
    report = json.loads(_validate(str(hostile_log), "--format", "json").stdout)
    assert {f["key"] for f in report["findings"]} == {HOSTILE_KEY}


def test_a_report_written_to_a_file_is_visible_too(hostile_log, tmp_path):
    out = tmp_path / "report.html"
    assert _validate(str(hostile_log), "--format", "html", "-o", str(out)).returncode == 1
    assert [c for c in out.read_text("utf-8") if _hidden(c)] == []


def test_write_atomic_writes_the_visible_text(tmp_path):
    path = write_atomic(tmp_path / "r.txt", "a\u202eb\n")
    assert path.read_text("utf-8") == "a\\u202eb\n"


def test_an_error_quoting_a_hostile_file_name_is_visible_on_stderr(tmp_path):
    """A log's name is as hostile as its content (`validate logs/*`): the one-line error
    that quotes it escapes its controls and bidi characters too."""
    result = _validate(str(tmp_path / (HOSTILE_KEY + ".jsonl")))
    assert result.returncode == 2
    shown = result.stderr.decode("utf-8")
    assert "cannot read" in shown and "\\u202e" in shown and "\\u001b" in shown
    assert [c for c in shown if _hidden(c)] == []


def test_a_progress_line_writes_only_its_own_controls():
    """The progress line erases itself with ``\\r`` and ``ESC[K``; a name it shows (a run, a
    design) cannot add controls of its own."""
    import io

    from toolcommit.checker.cli.terminal import Progress

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    p = Progress(out)
    p.t0 -= 60  # as if the run had gone on for a minute
    p.show("run " + HOSTILE_KEY)
    shown = out.getvalue()
    assert shown.startswith("\r\x1b[K") and "\\u202e" in shown
    assert [c for c in shown[len("\r\x1b[K") :] if _hidden(c)] == []
