"""The shared native engine (`native_vm`: one library, the model as data) against its oracles:
the Python engine state for state on the shipped instances (wide states, limits, PROGRESS
left for later included), and the plain path (each model's own C, or Python) verdict for
verdict on a design question and a design search."""

import pytest

from tests.engines.test_native import W3, assert_same_exploration, padded
from toolcommit.checker.engines.explicit import native, native_vm
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.explore import explore
from toolcommit.checker.engines.explicit.native import explore_native
from toolcommit.checker.verify.suite import suite_names
from toolcommit.model.environment import configure, instance_in
from toolcommit.model.instance import instance
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.semantics import build

pytestmark = pytest.mark.skipif(native.compiler() is None, reason="no C compiler on this machine")


def assert_shared_agrees(c, runs=((1, 0), (2, 7)), **kw):
    """The Python engine's exploration of `c` and the shared engine's, on one thread and on
    two (small chunks), field by field; PROGRESS left for later and run after, too."""
    lib, why = native_vm.library(c)
    assert lib is not None, why
    py = explore(c, **kw)
    for jobs, chunk in runs:
        assert_same_exploration(py, explore_native(c, lib=lib, jobs=jobs, chunk=chunk, **kw))
    later = explore_native(c, lib=lib, later=True, **kw)
    native.find_stuck(later)
    assert_same_exploration(py, later)
    return py


@pytest.mark.parametrize("p", PRESETS)
def test_shared_engine_explores_every_shipped_instance_as_the_python_engine_does(p):
    for name in suite_names():
        if (p, name) in {("naive", "default"), ("seed", "default")}:
            continue  # 1.4M and 0.5M states: slow in Python (test_native has them)
        for wipe in (False, True):
            assert_shared_agrees(compile_system(build(preset(p), instance(name), wipe=wipe)))


@pytest.mark.parametrize(
    "env,name",
    [
        ("stripe", "zombie"),
        ("email", "give_up_retry"),
        ("fenced-store", "zombie"),
        ("async-log", "cancel"),
    ],
)
def test_shared_engine_agrees_under_every_environment_profile(env, name):
    for p in PRESETS:
        assert_shared_agrees(
            compile_system(build(configure(preset(p), env), instance_in(instance(name), env)))
        )


@pytest.mark.parametrize("widths", [[62, 37], [62, 62, 30]])
def test_shared_engine_explores_states_of_several_words_as_the_python_engine_does(widths):
    c = compile_system(padded(build(preset("naive"), instance("zombie")), widths))
    assert c.bits > 128
    assert_shared_agrees(c)


def test_shared_engine_stops_at_a_state_limit_where_the_python_engine_does():
    c = compile_system(build(preset("naive"), instance("default").with_bounds(W3)))
    py = assert_shared_agrees(c, max_states=30_000)
    assert not py.complete


def test_one_shared_library_serves_models_of_one_width():
    a = compile_system(build(preset("naive"), instance("zombie")))
    b = compile_system(build(preset("recommended"), instance("zombie")))
    assert native_vm.library(a)[0].lib is native_vm.library(b)[0].lib


def test_shared_path_answers_a_question_as_the_plain_path_does(monkeypatch):
    """`ask`: every cell's verdicts, scopes, state counts and counterexamples alike."""
    from toolcommit.checker.design.run import answer
    from toolcommit.checker.design.schema import load_question
    from toolcommit.checker.render.answers import render_answer_text

    out = {}
    for shared in ("0", "1"):
        monkeypatch.setenv("TOOLCOMMIT_SHARED", shared)
        a = answer(load_question("reask"))
        out[shared] = (
            [(k, c.verdicts, c.states, c.engine) for k, c in a.cells.items()],
            render_answer_text(a),
        )
    assert out["1"] == out["0"]


def _designs(monkeypatch, env: str, names: list) -> dict:
    from toolcommit.checker.design.synthesis import synthesize

    out = {}
    for shared in ("0", "1"):
        monkeypatch.setenv("TOOLCOMMIT_SHARED", shared)
        s = synthesize(env, names)
        out[shared] = (
            [
                (
                    lv.guarantee,
                    lv.recommended,
                    [(m.design, m.needed) for m in lv.minimal],
                    [(x.promises, x.without) for x in lv.strengthening],
                )
                for lv in s.levels
            ],
            s.checked,
            s.pruned,
        )
    return out


def test_shared_path_finds_the_designs_the_plain_path_finds(monkeypatch):
    """`design`: the same minimal designs, counterexamples and counts (170 designs judged)."""
    out = _designs(monkeypatch, "email", ["ack_loss"])
    assert out["1"] == out["0"] and out["0"][0][0][2]


@pytest.mark.deep  # 76 s; the shared path's designs are compared with -m slow
def test_shared_path_finds_the_strengthenings_the_plain_path_finds(monkeypatch):
    """`design`, where no design holds and the environment is strengthened (its sets of
    promises searched on every core): the same answer, on two instances."""
    out = _designs(monkeypatch, "email", ["zombie", "give_up_retry"])
    assert out["1"] == out["0"] and out["0"][0][0][3]


def test_fork_map_gives_the_results_in_order_and_raises_a_pieces_error():
    from toolcommit.checker.design.cores import fork_map

    assert list(fork_map(abs, [-3, 2, -1, 0])) == [3, 2, 1, 0]
    with pytest.raises(TypeError):
        list(fork_map(abs, [1, "x"]))


@pytest.mark.parametrize("widths", [[], [62, 62, 30]])
def test_shared_engine_gives_a_states_successors_as_the_python_functions_do(widths):
    """What makes a counterexample of a shared search concrete without the Python functions."""
    c = compile_system(padded(build(preset("naive"), instance("zombie")), widths))
    lib = native_vm.library(c)[0]
    for s in list(explore(c, max_states=2000).states):
        assert lib.successors(c, s) == c.successors(s)[0]


class _Hits(dict):
    """A memo that counts the subexpressions found in it."""

    hits = 0

    def get(self, key, default=None):
        found = super().get(key, default)
        self.hits += found is not None
        return found


@pytest.mark.parametrize("env", ["ideal", "email"])
def test_encoding_copies_a_shared_subexpression_as_encoding_it_again_would(env):
    for p in PRESETS:
        s = build(configure(preset(p), env), instance_in(instance("two_intents"), env))
        index = {v.name: i for i, v in enumerate(s.variables)}
        exprs = [a.guard for a in s.actions] + [e for a in s.actions for e in a.updates.values()]
        exprs += [*s.invariants.values(), *s.witnesses.values(), *s.ends.values(), s.done]
        memo, out = _Hits(), []
        for e in exprs:
            start, alone = len(out), []
            depth = native_vm._expr_code(e, index, out, memo)
            assert native_vm._expr_code(e, index, alone, {}) == depth
            assert out[start:] == alone
        assert memo.hits > 0  # some were copied, not encoded again
