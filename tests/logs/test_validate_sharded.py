"""The checker sharded by key across processes (`validate --jobs N`) gives the single
process's report, byte for byte, in every format, with the same exit code, error and
warnings: on every fixture, every kind of bad line, intents spread over shards (the
fixup), focus keys, several files and findings beyond the cap."""

import gzip
import json
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate import EXIT_CODES, validate
from toolcommit.checker.logs import pool, shards
from toolcommit.checker.logs.findings import MAX_PER_PROPERTY
from toolcommit.checker.logs.write import events_to_jsonl
from toolcommit.checker.render.findings import RENDERERS, render_json

from .logtools import BAD, effect, in_process, keys_on_different_shards, move, outputs, proposal

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture(autouse=True)
def shard_small_logs(monkeypatch):
    monkeypatch.setattr(pool, "SHARD_MIN_BYTES", 0)


def same_with_shards(args, capsys, jobs=(2,)):
    single = outputs([*args, "--jobs", "1"], capsys)
    for n in jobs:
        assert outputs([*args, "--jobs", str(n)], capsys) == single, n
    return single


def rendered(paths, jobs, focus=()):
    report = validate(paths, focus=focus, jobs=jobs)
    code = EXIT_CODES[report.verdict]
    return code, {fmt: render(report, code) for fmt, render in RENDERERS.items()}


@pytest.mark.parametrize("jobs", [2, pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl*")), ids=lambda p: p.name)
def test_sharding_gives_the_same_report_on_every_fixture_in_every_format(path, jobs):
    """Two shards by default; three with -m slow (any number of shards, routed stably, in
    one process: test_any_number_of_stably_routed_shards_gives_the_same_report)."""
    assert rendered([str(path)], jobs) == rendered([str(path)], 1)


@pytest.mark.parametrize("jobs", [2, pytest.param(3, marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", sorted(BAD))
def test_sharding_gives_the_same_error_or_warning_for_every_bad_line_kind(
    name, jobs, tmp_path, capsys
):
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(BAD[name])
    same_with_shards(["validate", str(p), "--max-line-bytes", "200"], capsys, jobs=(jobs,))


def test_an_intent_whose_keys_sit_on_two_shards_is_judged_whole(tmp_path, capsys, monkeypatch):
    a, b = keys_on_different_shards()
    evs = [
        proposal(a, 1, 20),
        move(a, 2, "PROPOSED", "RECORDED"),
        proposal(b, 3, 20.0),
        move(b, 4, "PROPOSED", "RECORDED"),
        move(a, 5, "RECORDED", "DISPATCHED"),
        move(b, 6, "RECORDED", "DISPATCHED"),
        effect(a, 1, 20),
        effect(b, 2, 20.0),
        move(a, 7, "DISPATCHED", "ACKED"),
        move(b, 8, "DISPATCHED", "ACKED"),
    ]
    p = tmp_path / "canon.jsonl"
    p.write_text(events_to_jsonl(evs))
    handed = []
    real = shards.coordinate

    def spy(call, n, fixup, index=None):
        parts, fix = real(call, n, fixup, index)
        handed.append(fix is not None)
        return parts, fix

    monkeypatch.setattr(pool, "coordinate", spy)
    code, out, _ = same_with_shards(["validate", str(p), "--format", "json"], capsys)
    assert handed == [True]  # the fixup shard judged the intent
    assert code == 1 and {f["property"] for f in json.loads(out)["findings"]} >= {"CANON", "I1"}
    same_with_shards(["validate", str(p), "--key", a, "--format", "mermaid"], capsys)


def test_an_effect_named_by_its_idempotency_key_on_another_shard_is_not_an_orphan(tmp_path, capsys):
    a, b = keys_on_different_shards()
    evs = [
        proposal(a, 1, 5),
        move(a, 2, "PROPOSED", "RECORDED"),
        move(a, 3, "RECORDED", "DISPATCHED"),
        move(a, 4, "DISPATCHED", "ACKED"),
        {
            "type": "effect",
            "writer": "bank",
            "seq": 1,
            "idempotency_key": b,
            "tool": "refund",
            "args": {"amount": 5},
            "scope": "u",
            "kind": "apply",
        },
    ]
    p = tmp_path / "idem.jsonl"
    p.write_text(events_to_jsonl(evs))
    same_with_shards(["validate", str(p), "--format", "json"], capsys, jobs=(2, 3))


def test_focus_keys_and_a_missing_focus_key_read_the_same(tmp_path, capsys):
    path = FIXTURES / "p4-bad.jsonl"
    same_with_shards(["validate", str(path), "--key", "k1", "--format", "mermaid"], capsys)
    code, _, err = same_with_shards(["validate", str(path), "--key", "nope"], capsys, jobs=(2, 3))
    assert code == 2 and "not in the log" in err


def test_one_writer_per_file_and_gzip_read_the_same(tmp_path, capsys):
    evs = [json.loads(x) for x in (FIXTURES / "reorder-bad.jsonl").read_text().splitlines()]
    paths = []
    for w in sorted({e["writer"] for e in evs}, reverse=True):
        p = tmp_path / f"{w}.jsonl.gz"
        p.write_bytes(gzip.compress(events_to_jsonl([e for e in evs if e["writer"] == w]).encode()))
        paths.append(str(p))
    same_with_shards(["validate", *paths, "--format", "json"], capsys, jobs=(2, 3))


def test_findings_beyond_the_cap_list_the_same_keys(tmp_path, capsys):
    evs, seq = [], 0
    for i in range(MAX_PER_PROPERTY + 40):
        k = f"k{(i * 7919) % 5000:05d}"
        evs += [
            proposal(k, seq + 1, i),
            move(k, seq + 2, "PROPOSED", "RECORDED"),
            move(k, seq + 3, "RECORDED", "ACKED"),
        ]
        seq += 4  # a lost line each time: SEQ_GAP, and LEGAL on every key
    p = tmp_path / "many.jsonl"
    p.write_text(events_to_jsonl(evs))
    code, out, _ = same_with_shards(["validate", str(p), "--format", "json"], capsys, jobs=(2, 3))
    assert json.loads(out)["dropped"] == 40


def test_a_bad_line_after_an_uncanonical_call_on_another_shard_reports_the_first(tmp_path, capsys):
    a, b = keys_on_different_shards()
    odd = dict(proposal(b, 2, 1), args={"amount": 1, " amount": 2})  # no canonical form
    lines = events_to_jsonl([proposal(a, 1, 1), odd]) + '{"type": "crash",, }\n'
    p = tmp_path / "two.jsonl"
    p.write_text(lines)
    code, _, err = same_with_shards(["validate", str(p)], capsys, jobs=(2, 3))
    assert code == 2 and f"{p}:2:" in err and "no canonical form" in err


def test_jobs_below_one_is_a_usage_error(capsys):
    assert main(["validate", str(FIXTURES / "i1-ok.jsonl"), "--jobs", "0"]) == 2
    assert "--jobs 0" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*-bad.jsonl")), ids=lambda p: p.name)
def test_any_number_of_stably_routed_shards_gives_the_same_report(path):
    single = validate([str(path)])
    for jobs in (2, 4, 7):
        report = in_process([str(path)], jobs)
        code = EXIT_CODES[report.verdict]
        assert {f: r(report, code) for f, r in RENDERERS.items()} == {
            f: r(single, code) for f, r in RENDERERS.items()
        }, jobs


def test_a_log_that_grows_while_the_shards_read_it_is_refused_not_misjudged(tmp_path):
    from toolcommit.model.errors import InputError

    p = tmp_path / "growing.jsonl"
    p.write_bytes((FIXTURES / "p4-ok.jsonl").read_bytes())

    def append(method, i):
        if method == "run" and i == 1:
            with open(p, "a") as f:
                f.write('{"type":"crash","writer":"w9","seq":1}\n')

    with pytest.raises(InputError, match="changed while the shards read them"):
        in_process([str(p)], 2, between=append)


@pytest.mark.parametrize("name", ["i1-bad.jsonl", "ack_loss-ok.jsonl", "zombie-bad.jsonl"])
def test_a_complete_ledger_gives_the_same_report_sharded(name):
    path = str(FIXTURES / name)
    single = validate([path], complete_effects=True)
    for jobs in (2, 3):
        sharded = validate([path], complete_effects=True, jobs=jobs)
        assert render_json(sharded) == render_json(single), jobs
