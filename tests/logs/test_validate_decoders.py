"""The typed decoder (msgspec structs) accepts a line only when the dict path (orjson or the
standard library, then the hand checks) accepts it too, with the same event; every other
line takes the dict path's thorough check, so reports, errors and warnings are the same
whichever decoder runs."""

import json
import random
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.logs import events as logevents
from toolcommit.checker.logs import read as logread
from toolcommit.checker.logs import typed

from .logtools import BAD

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
needs_msgspec = pytest.mark.skipif(
    typed.decode is None,
    reason="msgspec is not installed (the typed decoder is an installed dependency)",
)

BASE = [
    {
        "type": "proposal",
        "writer": "w1",
        "seq": 1,
        "call_id": "t1",
        "tool": "refund",
        "args": {"amount": 20, "note": "x", "f": 1.5, "n": None, "b": True},
        "scope": "u",
        "key": "k1",
        "decision": "accepted",
        "epoch": 2,
        "ts": "2024-05-01T12:00:00Z",
    },
    {
        "type": "transition",
        "writer": "w1",
        "seq": 2,
        "key": "k1",
        "from": "RECORDED",
        "to": "DISPATCHED",
        "fence": 1,
        "epoch": 1,
        "call_id": "t1",
        "reason": "r",
    },
    {
        "type": "effect",
        "writer": "bank",
        "seq": 1,
        "key": "k1",
        "idempotency_key": "i1",
        "tool": "refund",
        "args": {"amount": 20},
        "scope": "u",
        "kind": "apply",
        "fence": 1,
        "effect_id": "e1",
        "epoch": 0,
    },
    {"type": "crash", "writer": "w1", "seq": 3},
    {"type": "restart", "writer": "w1", "seq": 4, "ts": None},
]
VALUES = [
    None,
    "",
    "x",
    0,
    -1,
    1.5,
    True,
    [],
    {},
    {"a": {"b": 1}},
    {"a": [1]},
    {"a": 2**63},
    {"a": -(2**63)},
    {"a": 2**64 - 1},
    2**63 - 1,
    2**63,
    "PROPOSED",
    "apply",
    "accepted",
    "crash",
]


def dict_path(line: bytes):
    """What the reader's dict path makes of `line`: an event, or the error's words."""
    try:
        obj = logread.decode(line)
    except ValueError as e:
        return "error: " + str(e)
    why = logevents.problem(obj)
    return "error: " + why if why else typed.from_dict(obj)


def mutations():
    for ev in BASE:
        for f in [*ev, "fence", "epoch", "key", "idempotency_key", "x"]:
            for v in VALUES:
                m = dict(ev)
                if v is None:
                    m.pop(f, None)
                else:
                    m[f] = v
                yield m
                if v is not None:
                    yield dict(m, **{f: None})


@needs_msgspec
def test_typed_decoding_accepts_only_what_the_dict_path_accepts_with_the_same_event():
    seen = accepted = 0
    for m in mutations():
        for line in (json.dumps(m).encode(), json.dumps(m, indent=1).replace("\n", " ").encode()):
            seen += 1
            ev = typed.decode(line)
            if ev is not None:
                accepted += 1
                assert ev == dict_path(line), (line, ev)
    assert 0 < accepted < seen


def test_the_one_either_rule_is_the_one_the_reader_inlines():
    assert logevents.ONE_OF == {"effect": ("key", "idempotency_key")}
    assert typed.EITHER in ({}, {typed.CLASSES["effect"]: ("key", "idempotency_key")})


@needs_msgspec
def test_typed_decoding_takes_the_common_case_and_leaves_the_unusual_to_the_thorough_path():
    for ev in BASE:
        assert typed.decode(json.dumps(ev).encode()) == typed.from_dict(ev)
    for odd in (
        b'{"type":"crash","writer":"w","seq":1,"seq":2}',  # a repeated field
        b'{"type":"crash","writer":"w","seq":1,"x-trace":{"a":[1]}}',  # extension
        b'{"type":"crash","type":"restart","writer":"w","seq":1}',
        b'{"type":"effect","writer":"w","seq":1,"tool":"t","args":{},"scope":"s",'
        b'"kind":"apply","key":null}',
        b'{"type":"crash","writer":"w","seq":1.0}',
        b"  ",
        b"",
        b'{"type":"effect","writer":"w","seq":1,"tool":"t","args":{"a":1e999},'
        b'"scope":"s","kind":"apply","key":"k"}',
    ):
        ev = typed.decode(odd)
        assert ev is None or ev == dict_path(odd), odd


@needs_msgspec
def test_typed_decoding_agrees_with_the_dict_path_on_random_bytes_of_valid_lines():
    rng = random.Random(12)
    lines = [json.dumps(ev).encode() for ev in BASE]
    for _ in range(3000):
        b = bytearray(rng.choice(lines))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(b))
            op = rng.randrange(3)
            if op == 0:
                b[i] = rng.choice(b'{}[]",:0123456789.eE-+ \\tnulfrsaxu\xff\x00')
            elif op == 1:
                del b[i]
            else:
                b.insert(i, rng.choice(b'"\\{[1'))
        ev = typed.decode(bytes(b))
        if ev is not None:
            assert ev == dict_path(bytes(b)), bytes(b)


def outputs(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl*")), ids=lambda p: p.name)
def test_the_dict_path_gives_the_same_report_on_every_fixture(path, capsys, monkeypatch):
    typed_out = outputs(["validate", str(path), "--format", "json"], capsys)
    monkeypatch.setattr(logread, "TYPED", None)
    assert outputs(["validate", str(path), "--format", "json"], capsys) == typed_out


@pytest.mark.parametrize("name", sorted(BAD))
def test_every_bad_line_kind_gives_the_same_words_with_and_without_typed_decoding(
    name, tmp_path, capsys, monkeypatch
):
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(BAD[name])
    args = ["validate", str(p), "--max-line-bytes", "200"]
    typed_out = outputs(args, capsys)
    monkeypatch.setattr(logread, "TYPED", None)
    assert outputs(args, capsys) == typed_out
