"""One design-file reader, whose rules are spec/design.schema.json's: every command that
reads a design file (check --design, validate --design, recover/status --provider, the
runtime's IntentLog(provider=FILE), the torture harness's shipped designs) refuses the same
files in one line, exit 2, no traceback; a FIFO or a device is refused, never waited on."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcommit.checker.cli import main
from toolcommit.model import design_file as F
from toolcommit.model.errors import InputError
from toolcommit.model.schema_check import first_violation
from toolcommit.runtime import IntentLog
from toolcommit.runtime.design import DesignError
from toolcommit.spec import protocol

REPO = Path(__file__).resolve().parents[2]
DESIGNS = REPO / "spec" / "designs"
STRIPE = json.loads((DESIGNS / "stripe.json").read_text("utf-8"))
LOG = REPO / "tests" / "fixtures" / "logs" / "ack_loss-ok.jsonl"


def _with(path: list, value) -> dict:
    doc = copy.deepcopy(STRIPE)
    at = doc
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = value
    return doc


def _budget_changed() -> dict:
    return _with(["assumes", "environment", "errors_before"], 0)


# (name, file text, what the one line says)
BAD = [
    ("assumes-a-list", json.dumps(_with(["assumes"], [1, 2])), "assumes: [1, 2] is not an object"),
    ("assumes-a-number", json.dumps(_with(["assumes"], 5)), "assumes: 5 is not an object"),
    (
        "environment-a-list",
        json.dumps(_with(["assumes", "environment"], ["x"])),
        "assumes.environment:",
    ),
    (
        "guarantee-sometimes",
        json.dumps(_with(["guarantee"], "sometimes")),
        'guarantee: "sometimes" is not one of exactly-once',
    ),
    ("a-budget-changed", json.dumps(_budget_changed()), "assumes.environment.errors_before"),
    (
        "a-key-twice",
        json.dumps(STRIPE).replace('"version": 1,', '"version": 1, "version": 1,', 1),
        'the key "version" is given twice',
    ),
    (
        "unicode-digits",
        json.dumps(_with(["timing", "replay_window"], "\u0661h"), ensure_ascii=False),
        "timing.replay_window",
    ),
    ("nan", json.dumps(STRIPE).replace('"version": 1', '"version": NaN', 1), "NaN"),
    ("not-utf8", b'{"kind": "\xff"}', "not UTF-8"),
]


def _write(tmp_path: Path, name: str, text) -> Path:
    path = tmp_path / f"{name}.json"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _one_line(code: int, err: str, says: str, path) -> None:
    assert code == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert says in err and str(path) in err, err


@pytest.mark.parametrize("name,text,says", BAD, ids=[b[0] for b in BAD])
def test_each_reader_refuses_a_bad_design_file_in_one_line(tmp_path, capsys, name, text, says):
    path = _write(tmp_path, name, text)
    for argv in (
        ["check", "--design", str(path), "--instance", "ack_loss"],
        ["validate", "--design", str(path), str(LOG)],
        ["recover", str(tmp_path / "none.db"), "--provider", str(path)],
    ):
        code = main(argv)
        _one_line(code, capsys.readouterr().err, says, path)
    with pytest.raises(DesignError, match=str(path)) as e:
        IntentLog.sqlite(str(tmp_path / "log.db"), "w1", provider=str(path))
    assert says in str(e.value)


def test_the_shipped_designs_pass_the_one_reader_and_the_schema_names_the_guarantees():
    for path in sorted(DESIGNS.glob("*.json")):
        read = F.read_file(path)
        assert read.environment == path.stem
    guarantees = [g for g in protocol().raw["guarantees"] if g != "about"]
    assert F.schema()["properties"]["guarantee"]["enum"] == guarantees


@pytest.mark.parametrize("flag", ["check", "validate"])
def test_a_fifo_given_as_the_design_is_refused_without_waiting(tmp_path, flag):
    fifo = tmp_path / "design.fifo"
    os.mkfifo(fifo)
    argv = ["check", "--design", str(fifo)]
    if flag == "validate":
        argv = ["validate", "--design", str(fifo), str(LOG)]
    done = subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,  # it blocked for ever before: a hang fails here, loudly
    )
    _one_line(done.returncode, done.stderr, "not a regular file", fifo)


def test_a_device_or_a_file_too_large_is_refused_without_reading_it_whole(tmp_path, capsys):
    code = main(["check", "--design", "/dev/zero"])
    _one_line(code, capsys.readouterr().err, "not a regular file", "/dev/zero")
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(F.MAX_BYTES * 64)  # sparse: 64 MiB of nothing
    code = main(["check", "--design", str(big)])
    _one_line(code, capsys.readouterr().err, f"larger than {F.MAX_BYTES} bytes", big)


# ----- the judge is the schema's --------------------------------------------------------------
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
    st.sampled_from(["", "x", "exactly-once", "1h", "\u0661h", "stripe", "toolcommit design"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
_PATHS = [
    ["kind"],
    ["version"],
    ["guarantee"],
    ["properties"],
    ["properties", 0],
    ["instances"],
    ["knobs"],
    ["knobs", "fencing"],
    ["timing"],
    ["timing", "replay_window"],
    ["assumes"],
    ["assumes", "environment"],
    ["assumes", "environment", "errors_before"],
    ["assumes", "assumed"],
    ["departures", 0, "without"],
    ["departures", 0, "without", "status"],
    ["departures", 0, "without", "steps"],
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(_PATHS), value=_VALUES)
def test_the_readers_judge_agrees_with_jsonschema(path, value):
    """One field of a shipped design replaced by anything: `schema_check` and the reference
    implementation (jsonschema, draft 2020-12) accept and refuse the same documents."""
    jsonschema = pytest.importorskip("jsonschema", reason="the 'test' extra is not installed")
    doc = _with(path, value)
    ours = first_violation(doc, F.schema())
    theirs = next(iter(jsonschema.Draft202012Validator(F.schema()).iter_errors(doc)), None)
    assert (ours is None) == (theirs is None), (path, value, ours, theirs)


def test_a_shipped_design_read_by_checked_is_read_file(tmp_path):
    path = _write(tmp_path, "stripe", json.dumps(STRIPE))
    assert F.read_file(path) == F.checked(STRIPE, str(path))
    with pytest.raises(InputError, match="design file: kind: not a design file"):
        F.checked([], "x.json")
