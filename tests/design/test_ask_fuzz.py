"""Fuzzing the question loader (Hypothesis): random JSON, mutated built-in questions and
mutated question text are either a valid question or a `ToolcommitError` the CLI prints on
one line with exit 2, never another exception (a traceback) or an `InternalError` (exit 4).
A sample of the valid mutants is also answered and rendered, one cell each.

Run with `--hypothesis-show-statistics` for the number of cases: 50 of each by default,
and `-m slow` runs twelve times more (mutated text three times); TOOLCOMMIT_FUZZ_EXAMPLES=N
sets the count and TOOLCOMMIT_FUZZ_RANDOM=1 draws new cases
(by default the cases are the same on every run).
"""

import copy
import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from toolcommit.checker.design.run import answer
from toolcommit.checker.design.schema import (
    INSTANCE_FIELDS,
    LIMIT_FIELDS,
    TOP_FIELDS,
    VARIANT_FIELDS,
    load_question,
    parse_question,
)
from toolcommit.checker.render.answers import (
    counterexample_files,
    render_answer_json,
    render_answer_markdown,
    render_answer_text,
)
from toolcommit.model.errors import InternalError, ToolcommitError
from toolcommit.spec import instances, protocol

REPO = Path(__file__).resolve().parents[2]
BUILTINS = [
    json.loads(p.read_text("utf-8")) for p in sorted((REPO / "spec" / "questions").glob("*.json"))
]
FIELDS = sorted(
    set(TOP_FIELDS + VARIANT_FIELDS + INSTANCE_FIELDS + LIMIT_FIELDS)
    | {"knob", "options", "assumptions", "action", "params", "when"}
)
NAMES = sorted(
    set(protocol().knobs)
    | set(protocol().assumptions)
    | set(protocol().properties)
    | set(protocol().actions)
    | set(protocol().faults)
    | set(instances()["instances"])
    | set(instances()["proposals"])
    | {o for k in protocol().knobs.values() for o in k.options}
    | {"yes", "no", "HOLDS", "VIOLATED", "rec(t1)", "UNKNOWN", "P5", "P9"}
)
N = int(os.environ.get("TOOLCOMMIT_FUZZ_EXAMPLES", "50"))
FUZZ = settings(
    max_examples=N,
    deadline=None,
    derandomize="TOOLCOMMIT_FUZZ_RANDOM" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DEEP = settings(FUZZ, max_examples=12 * N)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-2, 12)
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(NAMES)
)
values = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS + NAMES) | st.text(max_size=6), kids, max_size=4)
    ),
    max_leaves=12,
)


def _paths(doc, prefix=()):
    yield prefix
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for k, v in items:
        yield from _paths(v, prefix + (k,))


def _at(doc, path):
    for k in path:
        doc = doc[k]
    return doc


@st.composite
def mutated(draw):
    """A built-in question with one to three edits: replace, delete, add, duplicate, wrap."""
    doc = copy.deepcopy(draw(st.sampled_from(BUILTINS)))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(list(_paths(doc))))
        op = draw(st.sampled_from(["replace", "delete", "add", "duplicate", "wrap"]))
        if not path:
            if op == "add":
                doc[draw(st.sampled_from(FIELDS))] = draw(values)
            continue
        parent, key = _at(doc, path[:-1]), path[-1]
        if op == "replace":
            parent[key] = draw(values)
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(parent[key], dict):
            parent[key][draw(st.sampled_from(FIELDS + NAMES))] = draw(values)
        elif op == "add" and isinstance(parent[key], list):
            parent[key].append(draw(values))
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif op == "wrap":
            parent[key] = [parent[key]]
    return doc


@st.composite
def mutated_text(draw):
    """A built-in question's JSON text with a slice cut, replaced or inserted."""
    text = json.dumps(draw(st.sampled_from(BUILTINS)), indent=draw(st.sampled_from([None, 2])))
    i = draw(st.integers(0, len(text)))
    j = draw(st.integers(i, min(len(text), i + 40)))
    return (
        text[:i]
        + draw(st.text(max_size=8) | st.sampled_from(['"', "[", "{", "}", "]", ",", "\\"]))
        + text[j:]
    )


def _load(text: str):
    """The question, or None for an error the CLI shows on one line with exit 2."""
    try:
        q = parse_question(text, "fuzz.json", "fuzz")
    except InternalError as e:  # exit 4: must never happen on input
        raise AssertionError(f"internal error on input: {e}") from e
    except ToolcommitError as e:
        assert "\n" not in str(e), str(e)
        event("refused")
        return None
    event("valid")
    return q


@FUZZ
@given(values)
def test_random_json_is_a_question_or_a_one_line_error(doc):
    _load(json.dumps(doc))


@FUZZ
@given(mutated())
def test_mutated_builtin_question_is_a_question_or_a_one_line_error(doc):
    _load(json.dumps(doc))


@pytest.mark.slow
@settings(FUZZ, max_examples=3 * N)
@given(mutated_text())
def test_mutated_question_text_is_a_question_or_a_one_line_error(text):
    _load(text)


@FUZZ
@given(st.binary(max_size=200) | st.binary(max_size=50).map(lambda b: b"\xef\xbb\xbf" + b))
def test_random_bytes_in_a_question_file_are_a_one_line_error(data):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d, "q.json")
        path.write_bytes(data)
        try:
            load_question(str(path))
        except InternalError as e:
            raise AssertionError(f"internal error on input: {e}") from e
        except ToolcommitError as e:
            assert "\n" not in str(e), str(e)


@settings(FUZZ, max_examples=max(10, N // 10))
@given(mutated())
def test_valid_mutants_are_answered_and_rendered(doc):
    """One cell of each valid mutant, with a small state limit (no SMT fallback)."""
    q = _load(json.dumps(doc))
    assume(q is not None)
    one = replace(
        q,
        rows=q.rows[:1],
        columns=q.columns[:1],
        limits=q.limits.override(max_states=2000, timeout=5),
    )
    try:
        a = answer(one)
    except InternalError as e:
        raise AssertionError(f"internal error on a valid question: {e}") from e
    for render in (render_answer_text, render_answer_markdown, render_answer_json):
        render(a)
    counterexample_files(a)


@pytest.mark.deep  # the same with FUZZ's examples runs in every run
@DEEP
@given(mutated())
def test_mutated_builtin_question_deeply(doc):
    _load(json.dumps(doc))


@pytest.mark.slow
@DEEP
@given(values)
def test_random_json_deeply(doc):
    _load(json.dumps(doc))
