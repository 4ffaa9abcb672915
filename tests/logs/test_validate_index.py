"""The line index (logs/index.py): sharded by key, the shards decode only their own lines and
hold no writers, the index runs the writer stage once, and the report is the single
process's, byte for byte: on many interleaved intents, on damaged logs, on lines the scan
leaves to the decoder, and when the index gives up."""

import json
import random
import zlib

import pytest

from toolcommit.checker.logs import index, lane, pool, shards, typed
from toolcommit.checker.logs.write import events_to_jsonl

from .logtools import bench_like, damaged, outputs

LANE = lane.load()[0]
pytestmark = pytest.mark.skipif(LANE is None, reason="the native lane is not available here")


@pytest.fixture(autouse=True)
def shard_small_logs(monkeypatch):
    monkeypatch.setattr(pool, "SHARD_MIN_BYTES", 0)


def same_with_shards(args, capsys, jobs=(2, 3)):
    single = outputs([*args, "--jobs", "1"], capsys)
    for n in jobs:
        assert outputs([*args, "--jobs", str(n)], capsys) == single, n
    return single


@pytest.fixture
def served(monkeypatch):
    """The index runs of the test: whether each gave up."""
    runs = []
    real = index.Index.run

    def run(self):
        real(self)
        runs.append(self.abandoned)

    monkeypatch.setattr(index.Index, "run", run)
    return runs


@pytest.mark.parametrize("seed", range(3))
def test_the_index_serves_sharded_runs_with_the_single_process_report(
    seed, tmp_path, capsys, served
):
    p = tmp_path / "log.jsonl"
    p.write_text(events_to_jsonl(bench_like(400, seed)))
    for fmt in ("text", "json"):
        same_with_shards(["validate", str(p), "--format", fmt], capsys)
    assert served and not any(served)


def test_shards_decode_only_their_lines_and_hold_only_the_writers_that_crashed(
    tmp_path, monkeypatch
):
    evs = bench_like(300, 5)
    p = tmp_path / "log.jsonl"
    p.write_text(events_to_jsonl(evs))
    shared = index.Shared([str(p)])
    ix = index.Index([str(p)], 1 << 20, shared, LANE)
    ix.run()
    decoded = []
    real = typed.decode_raw
    monkeypatch.setattr(typed, "decode_raw", lambda line: decoded.append(line) or real(line))
    parts = []
    for me in range(3):
        s = shards.Shard([str(p)], 1 << 20, (), me, 3, shared=shared)
        assert s.run()[0] is None
        assert set(s.checker.writers) <= {e["writer"] for e in evs if e["type"] == "crash"}
        parts.append(s.finish())
    everyone = sum(e["type"] in ("crash", "restart") for e in evs)
    assert len(decoded) == len(evs) + 2 * everyone  # each line once, crashes thrice
    routed = [zlib.crc32(e.get("key", "").encode()) % 3 for e in evs if "key" in e]
    assert (
        sorted(p.keys for p in parts)
        == sorted(
            len({e["key"] for e in evs if "key" in e and zlib.crc32(e["key"].encode()) % 3 == me})
            for me in range(3)
        )
        and len(routed) == len(evs) - everyone
    )
    assert len(ix.store.writers) == len({e["writer"] for e in evs})  # held once, by the index
    shared.close()


def test_lines_the_scan_leaves_to_the_decoder_give_the_same_report(tmp_path, capsys, served):
    """Escapes in the names the scan reads, spaces, another field order, a null key beside
    an idempotency key, a field twice, nested arguments, a blank line, a byte order mark,
    seq numbers out of order and repeated, and a last line without a newline."""
    lines = [
        '\ufeff{"type":"proposal","writer":"w1","seq":1,"call_id":"c1","tool":"refund",'
        '"args":{"amount":1},"scope":"u","key":"k1","decision":"accepted"}',
        ' { "seq" : 2 , "key" : "k1", "to":"RECORDED", "type" : "transition",'
        ' "writer" : "w\\u0031", "from":"PROPOSED" } ',
        "",
        '{"type":"effect","writer":"bank","seq":1,"key":null,"idempotency_key":"k1",'
        '"tool":"refund","args":{"amount":1},"scope":"u","kind":"apply"}',
        '{"type":"transition","writer":"w1","seq":4,"key":"k\\u0032","from":"PROPOSED",'
        '"to":"RECORDED"}',
        '{"type":"transition","writer":"w1","seq":3,"key":"k1","from":"RECORDED",'
        '"to":"DISPATCHED","fence":1}',
        '{"type":"transition","writer":"w1","seq":3,"key":"k1","from":"RECORDED",'
        '"to":"DISPATCHED","fence":1}',
        '{"type":"proposal","writer":"w2","seq":1,"call_id":"c2","tool":"refund",'
        '"args":{"amount":{"nested":[1,{"a":"}"}]}},"scope":"u","key":"k3","decision":"accepted"}',
        '{"type":"crash","writer":"w2","seq":2,"seq":3}',
        '{"type":"crash","writer":"w2","seq":2}',
        '{"type":"transition","writer":"w1","seq":5,"key":"k1","from":"DISPATCHED","to":"ACKED",'
        '"fence":1}',
    ]
    p = tmp_path / "odd.jsonl"
    p.write_text("\n".join(lines), encoding="utf-8")
    for fmt in ("text", "json"):
        same_with_shards(["validate", str(p), "--format", fmt], capsys)
    assert served and not any(served)


def test_randomly_damaged_logs_give_the_same_report_or_error_sharded(tmp_path, capsys):
    base = events_to_jsonl(bench_like(80, 11)).encode().splitlines(keepends=True)
    rng = random.Random(2027)
    for k in range(30):
        lines = damaged(base, rng, b'{}",:0123456789 \\xapltd\n')
        if k % 5 == 0:  # the last line cut off, without its newline
            lines[-1] = lines[-1][: len(lines[-1]) // 2]
        p = tmp_path / f"damaged-{k}.jsonl"
        p.write_bytes(b"".join(lines))
        same_with_shards(["validate", str(p), "--format", "json"], capsys, jobs=(2,))


def test_when_the_index_gives_up_the_shards_run_without_it(tmp_path, capsys, served, monkeypatch):
    monkeypatch.setattr(index, "_MIN_LINE", 1 << 30)  # room for 64 lines a file
    p = tmp_path / "log.jsonl"
    p.write_text(events_to_jsonl(bench_like(100, 2)))
    code, out, _ = same_with_shards(["validate", str(p), "--format", "json"], capsys)
    assert served and all(served) and json.loads(out)["verdict"]


def test_several_files_and_an_error_in_the_second_give_the_single_process_error(tmp_path, capsys):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(events_to_jsonl(bench_like(60, 3)))
    lines = events_to_jsonl(bench_like(60, 4)).splitlines()
    lines[30] = lines[30][:-5]  # not JSON: the first bad line
    b.write_text("\n".join(lines) + "\n")
    code, _, err = same_with_shards(["validate", str(a), str(b)], capsys)
    assert code == 2 and f"{b}:31:" in err
