"""`toolcommit ask`: design questions answered by the engines, as claims."""

import json
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.design.explain import explain
from toolcommit.checker.design.grid import cell_system
from toolcommit.checker.design.run import answer
from toolcommit.checker.design.schema import QuestionError, builtin_names, load_question
from toolcommit.checker.engines.trace import replay
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.render.counterexample import parse_itf

from .answers import assert_stored_answer

REPO = Path(__file__).resolve().parents[2]
# every question file shipped in spec/questions/, read from the folder (not from the code
# under test): a question added there is answered, replayed and compared by the tests below
BUILTINS = tuple(sorted(p.stem for p in (REPO / "spec" / "questions").glob("*.json")))


class _Answers(dict):
    """Each built-in question answered the first time a test asks for it, then kept: a
    worker answers only the questions of the tests it runs (all five take about 16 CPU-s)."""

    def __missing__(self, name):
        self[name] = answer(load_question(name))
        return self[name]


@pytest.fixture(scope="module")
def answers():
    return _Answers()


def _row(a, row):
    return [a.cell(row, c.name) for c in a.question.columns]


def _violates(cell, prop):
    return any(v.property == prop for v in cell.violated)


def test_builtin_questions_are_listed():
    """`builtin_names()` lists exactly the shipped question files, none missing, none extra."""
    assert len(BUILTINS) >= 5 and "late-replay" in BUILTINS
    assert builtin_names() == list(BUILTINS)


# ----- late-replay: the article's closing question -------------------------------------------
def _holds_for_reject(c) -> bool:
    """Where reject keeps every property: fences, a status read, and no stale answer."""
    a, budgets = c.config.assumptions, c.instance.faults
    return (
        a["provider_fences"] == "yes"
        and a["status_read"] == "yes"
        and budgets.get("stale_reads", 0) == 0
    )


def test_late_replay_reject_holds_only_with_fences_a_status_read_and_no_stale_answer(answers):
    cells = _row(answers["late-replay"], "reject")
    assert len(cells) == 16 and all(c.engine == "explicit" for c in cells)
    for c in cells:
        assert (c.status is Status.HOLDS) is _holds_for_reject(c), c.column


def test_late_replay_reject_without_them_duplicates_through_the_users_re_ask(answers):
    """The re-ask (t5, next epoch) after a wrong give-up is what duplicates the refund."""
    for c in _row(answers["late-replay"], "reject"):
        if _holds_for_reject(c):
            continue
        assert _violates(c, "I1") and _violates(c, "FULFIL")
        steps = c.headline.counterexample.steps
        assert any(s.action == "propose" and s.params.get("proposal") == "t5" for s in steps)


def test_late_replay_reject_needs_no_model_memory(answers):
    for c in _row(answers["late-replay"], "reject"):
        p4 = next(v for v in c.verdicts if v.property == "P4")
        assert p4.status is not Status.VIOLATED or c.status is Status.VIOLATED
        if c.status is Status.HOLDS:
            assert p4.status is Status.HOLDS


def test_replay_same_key_is_a_blind_retry_and_duplicates_once_the_key_or_the_read_fails(answers):
    a = answers["late-replay"]
    for c in _row(a, "replay_same_key"):
        assert _violates(c, "P2") and _violates(c, "LEGAL")
        budgets = c.instance.faults
        safe = (
            c.config.assumptions["status_read"] == "yes"
            and budgets.get("key_expiries", 0) == 0
            and budgets.get("stale_reads", 0) == 0
        )
        assert _violates(c, "I1") is not safe, c.column


def test_compensating_a_late_replay_breaks_net_uniqueness_even_when_compensable(answers):
    for c in _row(answers["late-replay"], "compensate"):
        assert _violates(c, "I1net")
    cell = answers["late-replay"].cell("compensate", "fences+ read+ exp- stale-")
    steps = [s.action for s in cell.headline.counterexample.steps]
    # the reversal is issued while the first request is still in the network
    assert steps.index("propose", 2) < max(i for i, s in enumerate(steps) if s == "deliver")


def test_late_replay_answer_says_reject_holds_only_with_its_assumptions(answers):
    text = " ".join(explain(answers["late-replay"]))
    assert (
        "Answer: no option holds everywhere; reject holds only when provider_fences=yes and "
        "status_read=yes and stale_reads=0"
    ) in text


# ----- counterexamples --------------------------------------------------------------------
@pytest.mark.parametrize("name", BUILTINS)
def test_every_violated_cell_has_a_replaying_counterexample(answers, name):
    """Every stored counterexample parses, replays through the model, and completes the
    question's scenario."""
    a = answers[name]
    folder = REPO / "counterexamples" / "questions" / name
    cells = a.violated_cells()
    assert cells, name
    for c in cells:
        prop = c.headline.property
        system = cell_system(a.question, c.row, c.column, wipe=(prop == "P4"))
        doc = json.loads((folder / f"{c.stem}.itf.json").read_text("utf-8"))
        cx = parse_itf(doc, system)
        assert cx.property == prop
        assert replay(system, cx) is None, (name, c.stem)
        if a.question.scenario:
            n = len(a.question.scenario)
            assert cx.steps[-1].state["scenario"] == n


@pytest.mark.parametrize("name", BUILTINS)
def test_stored_answers_match_regeneration(answers, name):
    """spec/questions/<q>.answer.md and counterexamples/questions/<q>/ are what the tool
    prints today: regenerate with `toolcommit ask Q --write --answer spec/questions/Q.answer.md`."""
    assert_stored_answer(name, answers[name])


# ----- a re-ask while in doubt ------------------------------------------------------------
def test_only_hold_keeps_one_refund_when_the_user_re_asks_in_a_new_request(answers):
    a = answers["reask"]
    grid = {(c.row, c.column): c for c in a.cells.values()}
    assert len(grid) == 12
    for column in {c.column for c in grid.values()}:
        assert grid[("hold", column)].status is Status.HOLDS
        for row in ("proceed", "refuse"):
            assert grid[(row, column)].headline.property == "I1"


# ----- failure classes and tradeoffs against the article -----------------------------------
def test_failure_classes_common_bugs_break_and_required_behaviour_holds(answers):
    a = answers["failure-classes"]
    for r in a.question.rows[:5]:  # the article's five classes
        assert a.cell(r.name, "common bug").status is Status.VIOLATED, r.name
        assert a.cell(r.name, "required behaviour").status is Status.HOLDS, r.name
    assert all(c.agrees for c in a.cells.values() if c.expect)


def test_crash_before_dispatch_bug_strands_the_intent_rather_than_duplicating_it(answers):
    c = answers["failure-classes"].cell("Crash before dispatch", "common bug")
    assert {v.property for v in c.violated} == {"DEADLOCK", "PROGRESS"}


def test_tradeoffs_confirm_the_sealed_saga_where_the_provider_can_reverse(answers):
    a = answers["tradeoffs"]
    strong = a.cell("Saga/compensation for UNKNOWN", "where it is strong")
    assert strong.config.knobs["on_unknown"] == "sealed_compensate"
    assert strong.status is Status.HOLDS and strong.agrees is True
    assert [c for c in a.cells.values() if c.agrees is False] == []


def test_tradeoffs_saga_hurts_because_a_refused_reversal_invites_a_second_effect(answers):
    hurts = answers["tradeoffs"].cell("Saga/compensation for UNKNOWN", "when it hurts")
    assert hurts.status is Status.VIOLATED and hurts.headline.property == "I1net"
    steps = hurts.headline.counterexample.steps
    refused = [s for s in steps if s.action == "compensate_after_seal"]
    assert refused and "cannot reverse" in refused[0].params["outcome"]
    assert [s.params.get("proposal") for s in steps if s.action == "propose"][-1] == "t5"


def test_tradeoffs_human_gate_is_an_approval_that_keeps_fulfilment(answers):
    c = answers["tradeoffs"].cell("Human approval gate", "where it is strong")
    assert c.config.knobs["on_unknown"] == "human_approval"
    assert c.status is Status.HOLDS and "FULFIL" in c.properties


def test_tradeoffs_multi_writer_without_consensus_hurts(answers):
    c = answers["tradeoffs"].cell("Client-side canonical intent log", "when it hurts")
    assert c.status is Status.VIOLATED and c.instance.workers == 2
    assert c.config.knobs["insert"] == "check_then_insert"


def test_multi_orchestrator_needs_a_shared_log_and_fencing_for_late_requests(answers):
    a = answers["multi-orchestrator"]
    assert all(c.status is Status.VIOLATED for c in _row(a, "client-side dedupe only"))
    assert (
        a.cell("shared log, unique constraint", "late request after give-up").status
        is Status.VIOLATED
    )
    assert all(c.status is Status.HOLDS for c in _row(a, "leader with fencing"))


# ----- bad input --------------------------------------------------------------------------
def _write(tmp_path, doc, name="q.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return p


def _good():
    doc = json.loads((REPO / "spec" / "questions" / "late-replay.json").read_text("utf-8"))
    doc["rows"] = {
        "knob": "late_replay",
        "options": ["reject", "replay_same_key", "compensate"],
    }  # the knob form of rows
    return doc


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["rows"].update(options=["reject", "nope"]), "rows.options[1]"),
        (lambda d: d.update(properties=["I1", "P9"]), "properties[1]"),
        (lambda d: d.update(properties=["I1", "DEADLOCK"]), "properties[1]"),
        (lambda d: d["scenario"].append({"action": "teleport"}), "scenario[4].action"),
        (lambda d: d["scenario"][3]["params"].update(proposal="t9"), "scenario[3].params.proposal"),
        (
            lambda d: d["scenario"][3]["when"].update({"rec(t1)": ["SOMEWHERE"]}),
            "scenario[3].when.rec(t1)",
        ),
        (lambda d: d["instance"]["faults"].update(meteors=1), "instance.faults.meteors"),
        (
            lambda d: d["columns"]["assumptions"].update(provider_idempotent=["maybe"]),
            "columns.assumptions.provider_idempotent",
        ),
        (lambda d: d.update(colour="blue"), "colour"),
        (lambda d: d.update(set={"late_replay": "shrug"}), "set.late_replay"),
        (lambda d: d.pop("rows"), "rows"),
    ],
)
def test_malformed_question_names_the_field(tmp_path, capsys, edit, field):
    doc = _good()
    edit(doc)
    path = _write(tmp_path, doc)
    with pytest.raises(QuestionError) as e:
        load_question(str(path))
    assert str(path) in str(e.value) and field in str(e.value)
    assert main(["ask", str(path)]) == 2
    err = capsys.readouterr().err
    assert field in err and "Traceback" not in err


def test_question_that_is_not_json_reports_the_line(tmp_path, capsys):
    path = _write(tmp_path, '{\n  "rows": [\n}')
    assert main(["ask", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:3:" in err and "not valid JSON" in err


def test_unknown_question_lists_the_builtins(capsys):
    assert main(["ask", "no-such-question"]) == 2
    assert "late-replay" in capsys.readouterr().err


def test_vacuous_scenario_is_unknown_with_the_reason(tmp_path, capsys):
    doc = _good()
    doc["scenario"] = [{"action": "receive_ack"}, {"action": "dispatch"}]
    doc["rows"]["options"] = ["reject"]
    doc["columns"] = {"assumptions": {"provider_idempotent": ["yes"]}}
    path = _write(tmp_path, doc)
    a = answer(load_question(str(path)))
    (cell,) = a.cells.values()
    assert cell.status is Status.UNKNOWN and not cell.reached
    assert "vacuous" in cell.verdicts[0].reason
    assert main(["ask", str(path)]) == 3


# ----- the CLI ----------------------------------------------------------------------------
def test_ask_late_replay_prints_the_table_and_every_counterexample(answers, capsys, monkeypatch):
    """The command's printing (the answer itself is the fixture's: the same question, run once)."""
    import toolcommit.checker.cli.ask as cli_ask

    monkeypatch.setattr(
        cli_ask, "answer", lambda q, progress=None, deadline=0.0: answers["late-replay"]
    )
    assert main(["ask", "late-replay"]) == 0
    out = capsys.readouterr().out
    assert "late_replay" in out and "fences+ read+ exp- stale-" in out
    n_violated = len(answers["late-replay"].violated_cells())
    for n in range(1, n_violated + 1):
        assert f"[{n}] " in out
    assert "files in counterexamples/questions/late-replay/):" in out
    assert "      compensate__fences-yes_read-yes_exp-no_stale-no.txt\n" in out
    assert (
        "environment ideal: swept provider_fences, status_read, key_expiries, stale_reads; "
        "held fixed provider_idempotent=yes, compensable=yes" in " ".join(out.split())
    )
    assert max(len(line) for line in out.splitlines()) <= 100


def test_ask_json_format_is_machine_readable(capsys):
    assert main(["ask", "tradeoffs", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["question"] == "tradeoffs" and doc["status"] == "HOLDS"
    agrees = {(c["row"], c["column"]): c["agrees"] for c in doc["cells"]}
    assert agrees[("Saga/compensation for UNKNOWN", "where it is strong")] is True
    assert agrees[("Human approval gate", "when it hurts")] is None  # not modelled


def test_ask_write_stores_counterexamples_atomically(tmp_path, capsys):
    out = tmp_path / "cx"
    md = tmp_path / "answer.md"
    assert (
        main(["ask", "multi-orchestrator", "--write", "--out-dir", str(out), "--answer", str(md)])
        == 0
    )
    folder = out / "questions" / "multi-orchestrator"
    assert (folder / "index.json").is_file()
    assert not [p for p in out.joinpath("questions").iterdir() if p.name.startswith(".")]
    assert "(cx/questions/multi-orchestrator/" in md.read_text("utf-8")


def test_smt_fallback_labels_the_engine(tmp_path):
    """When the explicit search stops at its state limit, bounded SMT judges the open
    invariants, the cell says so, and a pass is only "up to depth k"."""
    doc = {
        "question": "fallback",
        "instance": "default",
        "properties": ["I1", "P2"],
        "rows": {"knob": "late_replay", "options": ["reject"]},
        "columns": {"assumptions": {"provider_idempotent": ["yes"]}},
        "limits": {"max_states": 1000, "bmc_depth": 6},
    }
    a = answer(load_question(str(_write(tmp_path, doc))))
    (cell,) = a.cells.values()
    assert cell.engine == "explicit+smt"
    assert [v.status for v in cell.verdicts] == [Status.HOLDS, Status.HOLDS]
    assert all("up to depth 6" in v.scope for v in cell.verdicts)
