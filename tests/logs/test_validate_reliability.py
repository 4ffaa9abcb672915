"""Reproductions from the reliability issue, one claim each: the log checker never answers
wrongly, never loses an input, and says why when it cannot answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate import validate

LOGS = Path(__file__).parents[1] / "fixtures" / "logs"


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


# ----- a cut-off last line is a lost line ----------------------------------------------------
def test_a_log_whose_last_line_was_cut_off_is_inconclusive_not_conforming(tmp_path, capsys):
    text = (LOGS / "i1-ok.jsonl").read_text()
    apply = next(line for line in text.splitlines() if '"kind":"apply"' in line)
    p = tmp_path / "cut.jsonl"
    p.write_text(text + apply[: len(apply) // 2])
    assert main(["validate", str(p)]) == 3
    out = capsys.readouterr().out
    assert out.startswith("INCONCLUSIVE:") and "no line was lost" not in out
    report = validate([str(p)])
    cut = [f for f in report.findings if f.property == "CUT_OFF"]
    assert cut and cut[0].certainty == "possible" and cut[0].locations == ((str(p), 11),)


# ----- --key names keys the log has ------------------------------------------------------------
def test_a_focus_key_that_is_not_in_the_log_is_a_usage_error_naming_the_keys_it_has(capsys):
    code = main(["validate", str(LOGS / "i1-ok.jsonl"), "--key", "nope"])
    err = one_line_error(capsys)
    assert code == 2 and "'nope'" in err and "not in the log" in err
    assert "k1" in err and "k2" in err


def test_a_focus_key_that_is_in_the_log_still_works(capsys):
    assert main(["validate", str(LOGS / "i1-ok.jsonl"), "--key", "k2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["history"]["k2"]


# ----- the report never replaces an input ------------------------------------------------------
def test_the_report_may_not_overwrite_an_input_log(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    data = (LOGS / "i1-ok.jsonl").read_bytes()
    p.write_bytes(data)
    code = main(["validate", "-o", str(p), str(p)])
    err = one_line_error(capsys)
    assert code == 2 and "input" in err and str(p) in err
    assert p.read_bytes() == data


def test_the_report_may_not_overwrite_an_input_through_another_name(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    data = (LOGS / "i1-ok.jsonl").read_bytes()
    p.write_bytes(data)
    os.link(p, tmp_path / "hard.jsonl")
    os.symlink(p, tmp_path / "soft.jsonl")
    (tmp_path / "sub").mkdir()
    for out in (
        tmp_path / "hard.jsonl",
        tmp_path / "soft.jsonl",
        tmp_path / "sub" / ".." / "log.jsonl",
    ):
        assert main(["validate", "-o", str(out), str(LOGS / "p2-ok.jsonl"), str(p)]) == 2
        one_line_error(capsys)
    assert p.read_bytes() == data


def test_a_report_beside_the_input_is_written(tmp_path, capsys):
    p = tmp_path / "log.jsonl"
    p.write_bytes((LOGS / "i1-ok.jsonl").read_bytes())
    assert main(["validate", "-o", str(tmp_path / "report.txt"), str(p)]) == 0
    assert (tmp_path / "report.txt").read_text().startswith("CONFORMS:")


# ----- every cited line names its writer -------------------------------------------------------
def test_every_step_that_cites_a_line_names_the_writer_of_that_line():
    for p in sorted(LOGS.glob("*-bad.jsonl")):
        writers = {
            n: json.loads(line)["writer"] for n, line in enumerate(p.read_text().splitlines(), 1)
        }
        for f in validate([str(p)]).findings:
            for s in f.steps:
                if s.line:
                    assert s.writer == writers[s.line], (p.name, f.property, s)


def test_mermaid_draws_no_anonymous_log_participant_for_cited_lines():
    from toolcommit.checker.render.findings import render_mermaid

    for p in sorted(LOGS.glob("*-bad.jsonl")):
        report = validate([str(p)])
        if report.findings:  # a design's -bad log conforms without --design: nothing cited
            assert " as log\n" not in render_mermaid(report), p.name


# ----- Mermaid output is one document ----------------------------------------------------------
_MERMAID_LINE = re.compile(
    r"(%%.*|sequenceDiagram|  title [^\n;#]+|  participant \w+ as [^\n;#]+"
    r"|  rect rgb\(\d+, \d+, \d+\)|  end|  +Note over \w+(,\w+)?: [^\n;#]+"
    r"|  +\w+--?>>\w+: [^\n;#]+)"
)


def assert_one_mermaid_sequence_diagram(text: str) -> None:
    """The subset of Mermaid the renderer writes, as a grammar: comments, then one
    sequenceDiagram with its participants declared before use and balanced rect blocks."""
    lines = text.rstrip("\n").split("\n")
    body = [line for line in lines if not line.startswith("%%")]
    assert body and body[0] == "sequenceDiagram", lines[:3]
    assert text.count("sequenceDiagram") == 1
    declared, depth = set(), 0
    for line in body:
        assert _MERMAID_LINE.fullmatch(line), line
        if line.startswith("  participant "):
            declared.add(line.split()[1])
        elif line.strip().startswith("rect "):
            depth += 1
        elif line == "  end":
            depth -= 1
            assert depth >= 0
        m = re.match(r"\s+(?:Note over (\w+)(?:,(\w+))?|(\w+)--?>>(\w+)):", line)
        if m:
            assert {x for x in m.groups() if x} <= declared, line
    assert depth == 0


def test_mermaid_output_with_many_findings_is_one_diagram():
    for p in sorted(LOGS.glob("*.jsonl")):
        for focus in ((), ("k1",)):
            try:
                report = validate([str(p)], focus=focus)
            except Exception:  # k1 not in this log
                continue
            from toolcommit.checker.render.findings import render_mermaid

            assert_one_mermaid_sequence_diagram(render_mermaid(report))


# ----- the headline counts every finding, listed or not ----------------------------------------
def _accepted(key: str, seq: int) -> dict:
    return {
        "type": "proposal",
        "writer": "w1",
        "seq": seq,
        "call_id": key,
        "tool": "refund",
        "args": {"n": key},
        "scope": "u",
        "key": key,
        "decision": "accepted",
    }


def _move(key: str, seq: int, frm: str, to: str) -> dict:
    return {"type": "transition", "writer": "w1", "seq": seq, "key": key, "from": frm, "to": to}


def test_the_headline_gives_true_totals_when_findings_beyond_the_cap_are_not_listed():
    from toolcommit.checker.logs.conformance import check
    from toolcommit.checker.logs.findings import MAX_PER_PROPERTY
    from toolcommit.checker.render.findings import render_text

    evs, seq = [], 0
    for i in range(3 * MAX_PER_PROPERTY):
        evs += [
            _accepted(f"k{i}", seq + 1),
            _move(f"k{i}", seq + 2, "PROPOSED", "RECORDED"),
            _move(f"k{i}", seq + 3, "RECORDED", "ACKED"),
        ]
        seq += 3
    report = check(evs)
    assert len(report.findings) == MAX_PER_PROPERTY and report.dropped == 2 * MAX_PER_PROPERTY
    head = render_text(report).splitlines()[0]
    assert head.startswith(
        f"VIOLATES: {3 * MAX_PER_PROPERTY} certain, 0 possible finding(s) "
        f"({2 * MAX_PER_PROPERTY} not listed"
    )


def test_the_cap_lists_the_least_keys_whatever_order_the_findings_came_in():
    from toolcommit.checker.logs.conformance import check
    from toolcommit.checker.logs.findings import MAX_PER_PROPERTY

    keys = [f"k{i:05d}" for i in range(MAX_PER_PROPERTY + 50)]
    for order in (keys, keys[::-1], keys[1::2] + keys[::2]):
        evs, seq = [], 0
        for k in order:
            evs += [
                _accepted(k, seq + 1),
                _move(k, seq + 2, "PROPOSED", "RECORDED"),
                _move(k, seq + 3, "RECORDED", "ACKED"),
            ]
            seq += 3
        report = check(evs)
        assert [f.key for f in report.findings] == keys[:MAX_PER_PROPERTY]
        assert report.dropped == 50


def test_a_certain_finding_beyond_the_cap_still_makes_the_log_violate():
    from toolcommit.checker.logs.conformance import check
    from toolcommit.checker.logs.findings import MAX_PER_PROPERTY

    evs, seq = [], 0
    for i in range(MAX_PER_PROPERTY):
        evs += [_accepted(f"k{i}", seq + 1), _move(f"k{i}", seq + 2, "RECORDED", "DISPATCHED")]
        seq += 3  # a line lost each time: every 'never reached' move is only possible
    # no edge, on a key after every other one: the cap lists the least keys
    evs += [_accepted("zz-bad", seq + 1), _move("zz-bad", seq + 2, "RECORDED", "ACKED")]
    report = check(evs)
    assert {f.certainty for f in report.findings if f.property == "LEGAL"} == {"possible"}
    assert report.verdict.value == "VIOLATES" and report.totals["certain"] == 1


# ----- validate starts without the model checker's solvers -------------------------------------
def test_validate_imports_neither_z3_nor_networkx():
    code = (
        "import sys\n"
        "from toolcommit.checker.cli import main\n"
        f"assert main(['validate', {str(LOGS / 'i1-ok.jsonl')!r}]) == 0\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'z3', 'networkx'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout


# ----- findings depend on each writer's own order, not on how the lines interleave -------------
def _summary(report):
    return report.verdict, sorted({(f.property, f.key, f.certainty) for f in report.findings})


def test_reordering_zombie_bad_across_writers_keeps_fence_and_invents_no_legal():
    from toolcommit.checker.logs.conformance import check

    evs = [json.loads(line) for line in (LOGS / "zombie-bad.jsonl").read_text().splitlines()]
    w1_ack = evs.pop(7)  # w1's DISPATCHED -> ACKED, moved before w2's lines
    assert (w1_ack["writer"], w1_ack["to"]) == ("w1", "ACKED")
    reordered = evs[:3] + [w1_ack] + evs[3:]
    base, moved = check(evs + [w1_ack]), check(reordered)
    assert "FENCE" in {f.property for f in moved.findings}
    assert not any(
        f.property == "LEGAL" and "never reached" in f.explanation for f in moved.findings
    )
    assert _summary(moved) == _summary(base)


# ----- found by the property tests: a lost line is never invisible, never a violation ---------
def _takeover_log() -> list[dict]:
    evs = [json.loads(line) for line in (LOGS / "zombie-ok.jsonl").read_text().splitlines()]
    assert validate([str(LOGS / "zombie-ok.jsonl")]).verdict.value == "CONFORMS"
    return evs


def test_a_lost_first_line_of_a_writer_is_a_gap():
    from toolcommit.checker.logs.conformance import check

    evs = _takeover_log()
    first = next(i for i, e in enumerate(evs) if e["writer"] == "w2")
    report = check(evs[:first] + evs[first + 1 :])
    assert report.verdict.value == "INCONCLUSIVE"
    assert any(f.property == "SEQ_GAP" and f.key == "w2" for f in report.findings)


def test_a_lost_proposal_is_inconclusive():
    from toolcommit.checker.logs.conformance import check

    evs = [e for e in _takeover_log() if e["type"] != "proposal"]
    for e in evs:  # renumbered: no gap shows the loss
        if e["writer"] == "w1":
            e["seq"] -= 1
    report = check(evs)
    assert report.verdict.value == "INCONCLUSIVE"
    assert [f.property for f in report.findings] == ["NO_PROPOSAL"]


def test_a_move_from_a_state_whose_entering_line_was_lost_is_possible_not_certain():
    from toolcommit.checker.logs.conformance import check

    evs = _takeover_log()
    last_w1 = max(i for i, e in enumerate(evs) if e["writer"] == "w1")
    report = check(evs[:last_w1] + evs[last_w1 + 1 :])  # w1's last line: no gap can show it
    assert report.verdict.value == "INCONCLUSIVE", [
        (f.property, f.certainty) for f in report.findings
    ]
