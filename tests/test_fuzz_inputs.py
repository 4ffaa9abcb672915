"""Generated hostile inputs (Hypothesis) for every file a command reads besides intent logs:
OpenTelemetry and LangGraph traces, LangGraph checkpoints, ledgers (Stripe, Powertools,
plain JSON Lines, CSV), ITF counterexamples for `torture --itf`, and question files. Each
is a pinned fixture with one to three edits (a value replaced by a hostile one: an integer
of 400 digits, 2**64 + 1000, NaN, a value nested 300 deep, a byte-order mark, a wrong type;
a field deleted; a value duplicated). The command answers (exit 0, 1 or 3) or refuses in
one line (exit 2); it never raises, never exits 4 (a bug) or 5, and never prints a
traceback.

`TOOLCOMMIT_FUZZ_EXAMPLES=N` sets the number of cases per test; the cases are the same on
every run unless TOOLCOMMIT_FUZZ_RANDOM=1.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolcommit.checker.cli import main
from toolcommit.model.errors import InternalError, ToolcommitError

ROOT = Path(__file__).resolve().parents[1]
T = ROOT / "tests" / "fixtures" / "traces"
N = int(os.environ.get("TOOLCOMMIT_FUZZ_EXAMPLES", "40"))
FUZZ = settings(
    max_examples=N,
    deadline=None,
    derandomize="TOOLCOMMIT_FUZZ_RANDOM" not in os.environ,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


def deep(n: int = 300):
    v: object = 1
    for i in range(n):
        v = {"a": v} if i % 2 else [v]
    return v


HOSTILE = st.sampled_from(
    [
        10**400,
        -(10**400),
        2**64 + 1000,
        -1,
        0,
        1.5,
        float("nan"),
        float("inf"),
        "",
        "\ufeffx",
        "x" * 300,
        None,
        True,
        [],
        {},
        deep(),
        [deep(40)],
        {"N": "17e8"},
        {"S": 5},
        {"N": "soon"},
    ]
)


def docs(text: str) -> list:
    """The JSON documents of a fixture, one after another (the adapters' own reader)."""
    from toolcommit.checker.logs.adapters.docs import documents

    return [v for v, _ in documents(text, "fixture")]


def paths(doc, prefix=()):
    yield prefix
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for k, v in items:
        yield from paths(v, prefix + (k,))


@st.composite
def edited(draw, fixture: Path):
    """The fixture's documents with one to three edits, as text (one document per line
    when the fixture had several)."""
    ds = copy.deepcopy(docs(fixture.read_text("utf-8")))
    for _ in range(draw(st.integers(1, 3))):
        where = [p for p in paths(ds) if len(p) > 1]
        if not where:
            break
        p = draw(st.sampled_from(where))
        parent = ds
        for k in p[:-1]:
            parent = parent[k]
        op = draw(st.sampled_from(["replace", "replace", "delete", "duplicate"]))
        if op == "replace":
            parent[p[-1]] = copy.deepcopy(draw(HOSTILE))
        elif op == "delete":
            del parent[p[-1]]
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[p[-1]]))
    bom = "\ufeff" if draw(st.booleans()) and draw(st.booleans()) else ""
    return bom + "\n".join(json.dumps(d) for d in ds) + "\n"


def run(argv) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    text = err.getvalue()
    assert code in (0, 1, 2, 3), (code, text)
    assert "Traceback" not in text, text
    if code == 2:
        assert text.count("\n") == 1 and text.startswith("toolcommit"), text
    return code, text


def write(tmp_path_factory, name: str, text: str) -> str:
    p = tmp_path_factory.mktemp("fuzz") / name
    p.write_text(text, "utf-8")
    return str(p)


TRACES = [
    ("otel", "pydantic-reissue.otlp.json"),
    ("otel", "pydantic-clean.console.json"),
    ("otel", "langsmith-reissue.otlp.json"),
    ("langgraph", "langgraph-retry.jsonl"),
    ("langgraph", "langgraph-crash-2.jsonl"),
]


@pytest.mark.parametrize("source,name", TRACES)
def test_an_edited_trace_is_judged_or_refused_in_one_line(source, name, tmp_path_factory):
    @FUZZ
    @given(text=edited(T / name))
    def check(text):
        run(["validate", "--from", source, write(tmp_path_factory, name, text)])

    check()


LEDGERS = [
    ("otel", "pydantic-reissue.otlp.json", "stripe-events.json"),
    ("otel", "pydantic-reissue.otlp.json", "powertools-records.jsonl"),
    ("langgraph", "langgraph-retry.jsonl", "langgraph-retry-ledger.jsonl"),
]


@pytest.mark.parametrize("source,trace,name", LEDGERS)
def test_an_edited_ledger_is_joined_or_refused_in_one_line(source, trace, name, tmp_path_factory):
    @FUZZ
    @given(text=edited(T / name))
    def check(text):
        run(
            [
                "validate",
                "--from",
                source,
                str(T / trace),
                "--effectful",
                "refund",
                "--ledger",
                write(tmp_path_factory, name, text),
            ]
        )

    check()


@FUZZ
@given(cell=HOSTILE.map(json.dumps), column=st.sampled_from([0, 1, 2, 3]))
def test_an_edited_csv_ledger_is_joined_or_refused_in_one_line(cell, column, tmp_path_factory):
    lines = (T / "langgraph-retry-ledger.csv").read_text().splitlines()
    cells = lines[1].split(",")
    cells[min(column, len(cells) - 1)] = '"' + cell.replace('"', '""') + '"'
    text = "\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n"
    run(
        [
            "validate",
            "--from",
            "langgraph",
            str(T / "langgraph-retry.jsonl"),
            "--ledger",
            write(tmp_path_factory, "ledger.csv", text),
        ]
    )


@FUZZ
@given(text=edited(T / "langgraph-crash-checkpoints.jsonl"))
def test_edited_checkpoints_are_read_or_refused_in_one_line(text, tmp_path_factory):
    run(
        [
            "validate",
            "--from",
            "langgraph",
            str(T / "langgraph-crash-1.jsonl"),
            str(T / "langgraph-crash-2.jsonl"),
            "--checkpoints",
            write(tmp_path_factory, "checkpoints.jsonl", text),
        ]
    )


ITF = sorted((ROOT / "counterexamples").glob("naive/*/I1.itf.json"))


@pytest.mark.parametrize("path", ITF[:3], ids=lambda p: p.parent.name)
def test_an_edited_itf_file_is_a_schedule_or_refused_in_one_line(path, tmp_path_factory):
    from toolcommit.checker.torture.itf import plan_from_itf

    @FUZZ
    @given(text=edited(path))
    def check(text):
        try:
            plan_from_itf(write(tmp_path_factory, "edited.itf.json", text))
        except InternalError as e:
            raise AssertionError(f"internal error on input: {e}") from e
        except ToolcommitError as e:
            assert "\n" not in str(e), str(e)

    check()


QUESTIONS = sorted((ROOT / "spec" / "questions").glob("*.json"))


def test_a_question_file_with_a_400_digit_limit_is_refused_in_one_line(tmp_path_factory):
    doc = json.loads(QUESTIONS[0].read_text())
    doc["limits"] = {"max_states": 10**400}
    run(["ask", write(tmp_path_factory, "q.json", json.dumps(doc))])


@pytest.mark.slow  # a deeper or repeated check of what a default test shows
@pytest.mark.parametrize("path", QUESTIONS[:2], ids=lambda p: p.stem)
def test_an_edited_question_file_is_a_question_or_refused_in_one_line(path, tmp_path_factory):
    from toolcommit.checker.design.schema import load_question

    @FUZZ
    @given(text=edited(path))
    def check(text):
        try:
            load_question(write(tmp_path_factory, "q.json", text))
        except InternalError as e:
            raise AssertionError(f"internal error on input: {e}") from e
        except ToolcommitError as e:
            assert "\n" not in str(e), str(e)

    check()
