"""The native lane (`toolcommit.checker.logs.lane`, C) leaves the core in the very state the
Python core leaves it in, so reports, errors and warnings are the same with it and without
it: every fixture in every format, every bad line kind, generated conforming and hostile
logs (whole state compared, packed records byte for byte), and its digest equals the
canonicalizer's on generated flat calls."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcommit.checker.cli import main
from toolcommit.checker.logs import lane, typed
from toolcommit.checker.logs.conformance import Conformance
from toolcommit.checker.logs.intents import EventError, digest
from toolcommit.checker.logs.store import Intent, Key
from toolcommit.checker.logs.write import events_to_jsonl
from toolcommit.checker.logs.writers import Writer
from toolcommit.model.errors import InputError

from .logtools import BAD, bench_like, conforming, damaged, hostile, in_process, merge, picks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"
LANE, WHY = lane.load()
needs_lane = pytest.mark.skipif(
    LANE is None or typed.decode is None, reason=f"no native lane: {WHY}"
)
SETTINGS = settings(
    max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
pytestmark = needs_lane


def outputs(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def both(args, capsys, monkeypatch):
    native = outputs(args, capsys)
    monkeypatch.setenv("TOOLCOMMIT_LANE", "python")
    python = outputs(args, capsys)
    monkeypatch.delenv("TOOLCOMMIT_LANE")
    return native, python


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl*")), ids=lambda p: p.name)
def test_every_fixture_gives_the_same_report_with_and_without_the_lane(
    path, fmt, capsys, monkeypatch
):
    native, python = both(["validate", str(path), "--format", fmt], capsys, monkeypatch)
    assert native == python


@pytest.mark.parametrize("name", sorted(BAD))
def test_every_bad_line_kind_gives_the_same_words_with_and_without_the_lane(
    name, tmp_path, capsys, monkeypatch
):
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(BAD[name])
    native, python = both(["validate", str(p), "--max-line-bytes", "200"], capsys, monkeypatch)
    assert native == python


# ----- the whole state ---------------------------------------------------------------------
def slots(obj) -> tuple:
    return tuple((n, getattr(obj, n)) for n in type(obj).__slots__)


def state(c: Conformance) -> tuple:
    """Everything the core remembers, comparable (objects as their slots)."""

    def value(v):
        return slots(v) if type(v) in (Key, Intent, Writer) else v

    return (
        {k: value(v) for k, v in c.keys.items()},
        {k: value(v) for k, v in c.intents.items()},
        {k: value(v) for k, v in c.writers.items()},
        dict(c.counts),
        c.found.freeze(),
        c.found.totals(),
    )


def run(lines: list[bytes], native: bool, batch: int) -> tuple:
    c = Conformance(["<log>"], native=native)
    assert (c.lane is not None) == native
    evs = [typed.decode(b) for b in lines]
    assert None not in evs
    for i in range(0, len(evs), batch):
        c.feed_batch(range(i + 1, i + 1 + len(evs[i : i + batch])), evs[i : i + batch])
    mid = state(c)
    c.close()
    return mid, state(c)


def lines_of(events: list[dict]) -> list[bytes]:
    return [b for b in events_to_jsonl(events).encode().splitlines() if b.strip()]


@SETTINGS
@given(lanes=st.one_of(conforming(), hostile()), a=picks, batch=st.sampled_from([1, 3, 64]))
def test_the_lane_leaves_the_same_state_as_the_python_core(lanes, a, batch):
    lines = lines_of(merge(lanes, a))
    assert run(lines, True, batch) == run(lines, False, batch)


@pytest.mark.parametrize("seed", range(3))
def test_the_lane_leaves_the_same_state_on_many_interleaved_intents(seed):
    lines = lines_of(bench_like(400, seed))
    assert run(lines, True, 97) == run(lines, False, 97)


def test_a_call_with_no_canonical_form_names_its_line_with_and_without_the_lane():
    good = {"type": "crash", "writer": "w", "seq": 1}
    bad = {
        "type": "proposal",
        "writer": "w",
        "seq": 2,
        "call_id": "c",
        "tool": "t",
        "args": {"amount": 1, " amount": 2},
        "scope": "s",
        "key": "k",
        "decision": "accepted",
    }
    evs = [typed.decode(b) for b in lines_of([good, bad])]
    for native in (True, False):
        c = Conformance(["<log>"], native=native)
        with pytest.raises(EventError) as e:
            c.feed_batch(range(5, 7), evs)
        assert e.value.line == 6


# ----- the digest --------------------------------------------------------------------------
NAMES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7F), min_size=0, max_size=6)
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    NAMES,
    st.integers(-(2**54), 2**54),
    st.floats(allow_nan=False),
    st.sampled_from(["x y", "é", "a!", "\\", '"']),
)


@SETTINGS
@given(tool=NAMES, scope=NAMES, args=st.dictionaries(NAMES, VALUES, max_size=5))
def test_the_lanes_digest_is_the_canonicalizers_or_none(tool, scope, args):
    ev = typed.CLASSES["effect"](
        writer="w", seq=1, tool=tool, args=args, scope=scope, kind="apply", key="k"
    )
    mine = LANE.flat_digest(ev)
    if mine is not None:
        assert mine == digest(Conformance(["x"], native=False), ev)
        assert LANE.flat_dump(tool, scope, args) is not None


def test_the_lane_takes_the_common_flat_call():
    ev = typed.CLASSES["proposal"](
        writer="w",
        seq=1,
        call_id="c",
        tool="refund",
        args={"amount": 20, "currency": "USD", "ok": True, "n": None},
        scope="user:1",
        key="k",
        decision="accepted",
    )
    assert LANE.flat_digest(ev) == digest(Conformance(["x"], native=False), ev)


# ----- sharded: the lane routes lines as `Shard._route` does ---------------------------------
@SETTINGS
@given(data=st.binary(max_size=40))
def test_the_lanes_crc32_is_zlibs(data):
    import zlib

    assert LANE.crc32(data) == zlib.crc32(data)


def sharded_reports(path: str, monkeypatch) -> list:
    """Reports of the sharded checker (forked, routed by hash; in process, by CRC-32, as on
    a cluster), rendered, with the lane and without it."""
    from toolcommit.checker.cli.validate import EXIT_CODES, validate
    from toolcommit.checker.logs import pool
    from toolcommit.checker.render.findings import RENDERERS

    monkeypatch.setattr(pool, "SHARD_MIN_BYTES", 0)

    def rendered(run):
        try:
            report = run()
        except InputError as e:
            return str(e)
        code = EXIT_CODES[report.verdict]
        return {f: r(report, code) for f, r in RENDERERS.items()}

    out = []
    for env in ("auto", "python"):
        monkeypatch.setenv("TOOLCOMMIT_LANE", env)
        out.append(
            [rendered(lambda: validate([path], jobs=2)), rendered(lambda: in_process([path], 3))]
        )
    monkeypatch.delenv("TOOLCOMMIT_LANE")
    return out


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*-bad.jsonl")), ids=lambda p: p.name)
def test_sharded_reports_are_the_same_with_and_without_the_lane(path, monkeypatch):
    native, python = sharded_reports(str(path), monkeypatch)
    assert native == python


@pytest.mark.parametrize("name", ["k", "ключ-", "k\udcff"], ids=["ascii", "utf8", "surrogate"])
def test_keys_of_any_text_are_routed_alike_with_and_without_the_lane(name, tmp_path, monkeypatch):
    evs = bench_like(120, 5)
    for ev in evs:
        if "key" in ev:
            ev["key"] = ev["key"].replace("k", name, 1)
    p = tmp_path / "log.jsonl"
    p.write_text(events_to_jsonl(evs), encoding="utf-8", errors="surrogatepass")
    if name.endswith("\udcff"):  # not UTF-8: every path refuses the same line
        p.write_bytes(p.read_bytes().replace(b"\xed\xb3\xbf", b"\\udcff"))
    native, python = sharded_reports(str(p), monkeypatch)
    assert native == python


def test_extreme_numbers_leave_the_same_state_with_and_without_the_lane():
    """Seqs, fences and epochs at the schema's limit (2**63-1) and past the packed record's
    fields (2**32): the lane hands what it cannot pack to Python."""
    big = 2**63 - 1
    evs = bench_like(60, 9)
    for j, ev in enumerate(evs):
        if ev["writer"] == "w1":
            ev["seq"] += big - 10**6  # w1's seqs near the top, still increasing
        if "fence" in ev:
            ev["fence"] += (2**32) if j % 3 == 0 else 0
        if ev["type"] == "proposal" and j % 4 == 0:
            ev["epoch"] = big - j
    lines = lines_of(evs)
    assert run(lines, True, 16) == run(lines, False, 16)


def test_randomly_damaged_logs_give_the_same_report_or_error_with_and_without_the_lane(
    tmp_path, capsys, monkeypatch
):
    """Hostile bytes: lines cut, bytes flipped, lines repeated or dropped, in a log of many
    interleaved intents; the verdict, findings, error or warning are the same either way."""
    base = events_to_jsonl(bench_like(80, 11)).encode().splitlines(keepends=True)
    rng = random.Random(2026)
    for k in range(40):
        lines = damaged(base, rng, b'{}",:0123456789 \\xapltd')
        p = tmp_path / f"damaged-{k}.jsonl"
        p.write_bytes(b"".join(lines))
        native, python = both(["validate", str(p), "--format", "json"], capsys, monkeypatch)
        assert native == python, k


@needs_lane
def test_the_lanes_prefix_bitmap_is_the_python_one():
    """Shard.run's bitmap of intent digest prefixes and Shard.candidates' digests under a
    bitmap, in C and in Python; a digest that is not bytes is refused."""
    from toolcommit.checker.logs.shards import prefix_bitmap, prefixed

    rng = random.Random(22)
    digests = [rng.randbytes(32) for _ in range(5000)] + [bytes(32), b"\xff" * 32]
    want = prefix_bitmap(digests)
    assert prefix_bitmap(dict.fromkeys(digests), LANE) == want == prefix_bitmap(digests, LANE)
    assert bin(int.from_bytes(want, "little")).count("1") == len({d[:3] for d in digests})
    with pytest.raises(TypeError):
        prefix_bitmap(["not bytes"], LANE)
    some = prefix_bitmap(digests[::7])
    held = dict.fromkeys(digests)
    assert prefixed(held, some, LANE) == prefixed(held, some)
    assert set(digests[::7]) <= set(prefixed(held, some)) < set(digests)
