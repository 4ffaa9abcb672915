"""The native engine against its oracle, the Python engine: on every shipped instance the
two give the same exploration state for state, and the same verdicts and counterexamples,
on one thread or several (small chunks make a search cross many chunk boundaries), and
with states wider than 128 bits."""

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.explicit import native
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.engine import Explicit
from toolcommit.checker.engines.explicit.explore import explore
from toolcommit.checker.engines.explicit.native import explore_native
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.checker.verify.hyper import check_p5, personalities, personality_instance
from toolcommit.checker.verify.suite import suite_names
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import instance
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.semantics import build
from toolcommit.model.system import VarDecl

BIG = {("naive", "default"), ("seed", "default")}  # 1.4M and 0.5M states: slow in Python
#: the states of a BIG instance the Python oracle explores with -m slow (a prefix of the
#: search: the same states, parents and level ends); the whole search with -m deep
BIG_PREFIX = 200_000
W4 = {"workers": 4, "crashes": 3, "max_fence": 5, "delays": 3, "ack_losses": 3, "lease_expiries": 3}

W3 = {"workers": 3, "max_fence": 4, "crashes": 2}  # naive default: 131-bit states
# (threads, parents per step): one thread, two with the default chunk, and small chunks
RUNS = [(1, 0), (2, 0), (2, 7), (3, 1)]

needs_cc = pytest.mark.skipif(native.compiler() is None, reason="no C compiler on this machine")


def assert_native_agrees(c, runs=RUNS, **kw):
    """The Python engine's exploration of `c`, and the native engine's on every (threads,
    chunk) of `runs`, field by field; the Python one is returned."""
    py = explore(c, **kw)
    for jobs, chunk in runs:
        nat = explore_native(c, jobs=jobs, chunk=chunk, **kw)
        assert nat.jobs == jobs
        assert_same_exploration(py, nat)
    later = explore_native(c, jobs=runs[-1][0], later=True, **kw)  # PROGRESS searched after
    assert later.stuck_later == (kw.get("graph", True) and py.complete)
    native.find_stuck(later)
    assert not later.stuck_later
    assert_same_exploration(py, later)
    return py


def _param(p, name, *rest):
    marks = [pytest.mark.deep] if (p, name) in BIG else []
    return pytest.param(p, name, *rest, marks=marks, id="-".join(map(str, (p, name, *rest))))


def _big():
    for p, name in sorted(BIG):
        for wipe in (False, True):
            yield pytest.param(p, name, wipe, id=f"{p}-{name}-{wipe}")


def _shipped():
    for p in PRESETS:
        for name in suite_names():
            for wipe in (False, True):
                yield _param(p, name, wipe)


def assert_same_exploration(py, nat):
    """Every field of two explorations, state ids included, except timings."""
    assert nat.state_count == py.state_count
    size = nat.states.itemsize
    assert nat.states.tobytes() == b"".join(s.to_bytes(size, "little") for s in py.states)
    assert list(nat.parent) == list(py.parent) and list(nat.via) == list(py.via)
    assert nat.level_ends == py.level_ends and nat.depth == py.depth
    assert list(nat.first_violation.items()) == list(py.first_violation.items())
    assert list(nat.first_witness.items()) == list(py.first_witness.items())
    assert list(nat.first_bad_end.items()) == list(py.first_bad_end.items())
    assert (nat.deadlock, nat.stuck) == (py.deadlock, py.stuck)
    assert list(nat.settled_ids) == list(py.settled_ids)
    assert (nat.truncated, list(nat.truncated_ids)) == (py.truncated, list(py.truncated_ids))
    assert nat.transitions == py.transitions and nat.fired == py.fired
    assert (nat.complete, nat.stop_reason) == (py.complete, py.stop_reason)
    assert (nat.edges is None) == (py.edges is None)
    if py.edges is not None:
        assert [list(a) for a in nat.edges] == [list(a) for a in py.edges]


@needs_cc
@pytest.mark.parametrize("p,name,wipe", list(_shipped()))
def test_native_and_python_engines_explore_every_shipped_instance_identically(p, name, wipe):
    """On one thread and on several: the parallel search numbers states as the sequential."""
    c = compile_system(build(preset(p), instance(name), wipe=wipe))
    assert_native_agrees(c, RUNS if (p, name) not in BIG else RUNS[:2])


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize("p,name,wipe", list(_big()))
def test_native_and_python_engines_explore_a_big_instances_first_states_identically(p, name, wipe):
    """The two biggest shipped instances, up to `BIG_PREFIX` states (their whole search,
    minutes in Python, with -m deep): the same prefix on one thread and on two."""
    c = compile_system(build(preset(p), instance(name), wipe=wipe))
    py = assert_native_agrees(c, RUNS[:2], max_states=BIG_PREFIX)
    assert py.state_count >= BIG_PREFIX and not py.complete  # the limit ends a parent


@needs_cc
@pytest.mark.parametrize(
    "env,name",
    [
        ("stripe", "zombie"),
        ("email", "give_up_retry"),
        ("fenced-store", "zombie"),
        ("async-log", "cancel"),
    ],
)
def test_native_and_python_engines_agree_under_every_environment_profile(env, name):
    """The real systems' faults (errors, saved errors, expiry, stale reads, the seal as a
    message, failover) and FULFIL's end states, natively and in Python."""
    from toolcommit.model.environment import configure, instance_in

    for p in PRESETS:
        c = compile_system(build(configure(preset(p), env), instance_in(instance(name), env)))
        assert_same_exploration(explore(c), explore_native(c))


@pytest.mark.slow  # a deeper or repeated check of what a default test shows
@needs_cc
@pytest.mark.parametrize("on_unknown", ["sealed_compensate", "human_approval"])
@pytest.mark.parametrize(
    "env,name",
    [("ideal", "zombie"), ("stripe", "give_up_retry"), ("fenced-store", "give_up_retry")],
)
def test_native_and_python_engines_agree_on_the_sealed_saga_and_the_human_gate(
    on_unknown, env, name
):
    from toolcommit.model.environment import configure, instance_in

    config = configure(preset("recommended"), env).with_knobs({"on_unknown": on_unknown})
    for wipe in (False, True):
        c = compile_system(build(config, instance_in(instance(name), env), wipe=wipe))
        assert_same_exploration(explore(c), explore_native(c))


@needs_cc
@pytest.mark.parametrize("p", PRESETS)
def test_native_and_python_engines_explore_every_personality_identically(p):
    for name in personalities()[1]:
        c = compile_system(build(preset(p), personality_instance(name)))
        for graph in (False, True):
            assert_same_exploration(explore(c, graph=graph), explore_native(c, graph=graph))


@needs_cc
@pytest.mark.parametrize("limit", [1, 2, 5000])
def test_native_engine_reproduces_an_incomplete_search_at_the_same_state_limit(limit):
    """The limit falls after the same parent on any number of threads."""
    c = compile_system(build(preset("naive"), instance("default")))
    for graph in (True, False):
        py = assert_native_agrees(c, max_states=limit, graph=graph)
        assert not py.complete and py.stop_reason == f"state limit {limit} reached"


# ----- states wider than 128 bits ---------------------------------------------------------------
def padded(system, widths):
    """`system` with constant variables of `widths` bits in front: every field moves up by
    their sum, so the state spans more words and fields straddle other word boundaries
    (the same graph: the pads never change)."""
    pads = tuple(VarDecl(f"pad{i}", 1 << w) for i, w in enumerate(widths))
    return replace(
        system,
        variables=pads + tuple(system.variables),
        init={**{v.name: 0 for v in pads}, **system.init},
    )


@needs_cc
@pytest.mark.parametrize("widths", [[62, 37], [62, 62, 30], [62, 62, 62, 5]])
@pytest.mark.parametrize(
    "p,name",
    [
        ("recommended", "default"),
        ("naive", "zombie"),
        ("seed", "two_intents"),
        ("naive", "reorder"),
    ],
)
def test_native_engine_explores_states_of_several_words_as_the_python_engine_does(widths, p, name):
    c = compile_system(padded(build(preset(p), instance(name)), widths))
    assert c.bits > 128
    assert_native_agrees(c, RUNS[:3])


@needs_cc
def test_naive_with_three_workers_runs_natively_on_its_131_bit_states():
    """The instance the 128-bit engine refused (the Python engine answered, 20 times slower):
    the same first 30,000 states, natively, on one thread and on two."""
    c = compile_system(build(preset("naive"), instance("default").with_bounds(W3)))
    assert c.bits == 131 and native.library(c)[0] is not None
    assert_native_agrees(c, RUNS[:3], max_states=30_000)


@needs_cc
@pytest.mark.slow
def test_naive_with_three_workers_explored_whole_is_the_python_engines_graph():
    # W3 without its delay: three state words (130 bits), whole, in seconds; W3 itself
    # (4,553,408 states, Python minutes) agrees in benchmarks/bench_native.py's counts
    c = compile_system(build(preset("naive"), instance("default").with_bounds({**W3, "delays": 0})))
    assert c.bits == 130
    assert assert_native_agrees(c, RUNS[:2]).state_count == 224_929


@needs_cc
@pytest.mark.slow
def test_native_engine_explores_four_workers_as_the_python_engine_does():
    c = compile_system(build(preset("recommended"), instance("default").with_bounds(W4)))
    assert_native_agrees(c, RUNS[:2])


def _verdict_runs():
    for p in PRESETS:
        for name in suite_names():
            yield _param(p, name)


@needs_cc
@pytest.mark.parametrize("p,name", list(_verdict_runs()))
def test_both_engines_give_the_same_verdicts_and_counterexamples(monkeypatch, p, name):
    """Python, native on one thread (`check --jobs 1`) and on two (`--jobs 2`): the same
    verdicts, counts, depths, coverage and shortest counterexamples, P4 included."""
    results = {}
    for engine, jobs in (("python", 1), ("native", 1), ("native", 2)):
        monkeypatch.setenv("TOOLCOMMIT_ENGINE", engine)
        r = check_instance(preset(p), instance(name), engine=Explicit(jobs=jobs))
        results[engine, jobs] = (
            r.verdicts,
            {k: v for k, v in r.stats.items() if k != "seconds"},
            r.coverage,
            r.witnesses,
        )
    assert results["native", 1] == results["python", 1]
    assert results["native", 2] == results["native", 1]


@needs_cc
@pytest.mark.parametrize("p", PRESETS)
def test_both_engines_give_the_same_p5_verdict(monkeypatch, p):
    verdicts = {}
    for engine in ("python", "native"):
        monkeypatch.setenv("TOOLCOMMIT_ENGINE", engine)
        verdicts[engine] = check_p5(preset(p))
    assert verdicts["native"] == verdicts["python"]


def test_symmetry_memo_gives_the_canonical_states_of_the_plain_canonicalization():
    c = compile_system(build(preset("naive"), instance("zombie")))
    plain = replace(c, canon=c.canon.raw)
    assert explore(c).states == explore(plain).states
    assert 0 < len(c.canon.memo) < explore(c).state_count


# ----- choosing the engine, and falling back -------------------------------------------------
@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty cache directory and no library loaded yet in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.delenv("TOOLCOMMIT_ENGINE", raising=False)
    return tmp_path


def _recommended_default(**kw):
    return run_instance(preset("recommended"), instance("default"), Limits(), **kw)


def test_failing_c_compiler_leaves_the_answer_to_the_python_engine_which_says_so(
    fresh, monkeypatch
):
    monkeypatch.setenv("CC", "/bin/false")
    c, ex = _recommended_default()
    assert ex.engine == "python" and ex.complete
    assert ex.engine_note.startswith("native engine unavailable: C compiler /bin/false failed")
    assert ex.engine_note.endswith("; Python engine used")
    assert list(fresh.rglob("*.so")) == [] and list(fresh.rglob(".engine-*")) == []


def test_no_c_compiler_on_path_leaves_the_answer_to_the_python_engine(fresh, monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", str(fresh))
    _, ex = _recommended_default()
    assert ex.engine == "python"
    assert ex.engine_note == (
        "native engine unavailable: no C compiler (set CC or install cc); Python engine used"
    )


def test_engine_note_reaches_the_instance_statistics(fresh, monkeypatch):
    monkeypatch.setenv("CC", "/bin/false")
    r = check_instance(preset("recommended"), instance("default"), ["I1"])
    assert r.stats["engine_note"].startswith("native engine unavailable")


def test_forcing_the_native_engine_without_a_compiler_is_a_usage_error(fresh, monkeypatch):
    monkeypatch.setenv("CC", "/bin/false")
    monkeypatch.setenv("TOOLCOMMIT_ENGINE", "native")
    with pytest.raises(UsageError, match="native engine unavailable"):
        _recommended_default()


def test_unknown_engine_name_is_a_usage_error(fresh, monkeypatch):
    monkeypatch.setenv("TOOLCOMMIT_ENGINE", "spin")
    with pytest.raises(UsageError, match="valid: auto, native, python"):
        _recommended_default()


@needs_cc
def test_small_instances_stay_with_the_python_engine_and_large_ones_go_native(fresh):
    _, small = run_instance(preset("recommended"), instance("ack_loss"), Limits())
    _, large = _recommended_default()
    assert (small.engine, small.engine_note) == ("python", "")
    assert (large.engine, large.engine_note) == ("native", "")
    assert large.state_count > native.QUICK_STATES


@needs_cc
def test_compiled_engine_is_cached_by_source_hash_and_reused(fresh, monkeypatch):
    c = compile_system(build(preset("recommended"), instance("ack_loss")))
    lib, why = native.library(c)
    assert lib is not None and why == ""
    built = sorted(fresh.rglob("engine-*"))
    assert [p.suffix for p in built] == [".c", ".so", ".sha256"]  # source, library, manifest
    inode = built[1].stat().st_ino  # a rebuild renames a new file into place
    monkeypatch.setattr(native, "_loaded", {})
    assert native.library(compile_system(build(preset("recommended"), instance("ack_loss"))))[0]
    assert sorted(p for p in fresh.rglob("*") if p.is_file()) == built  # no rebuild, no temp
    assert built[1].stat().st_ino == inode


def test_a_variable_wider_than_62_bits_is_refused_with_the_reason(fresh):
    """Values are computed in int64 arithmetic; the state itself may be any width."""
    c = compile_system(padded(build(preset("recommended"), instance("ack_loss")), [63]))
    assert native.library(c) == (
        None,
        "variable pad0 needs 63 bits, more than the native engine's 62",
    )


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("spin") is None, reason="Spin is not installed (apt-get install spin)"
)
@pytest.mark.parametrize(
    "p,name",
    [
        ("naive", "reorder"),
        ("recommended", "zombie"),
        ("seed", "duplicate_call_id"),
        ("naive", "cancel"),
        ("recommended", "reask_in_doubt"),
        ("naive", "reask_in_doubt"),
    ],
)
def test_spin_counts_the_states_our_engines_count_without_symmetry(p, name, tmp_path, capsys):
    """`toolcommit export --format promela` run through Spin: its state count, depth and
    transitions are our engines' on the same System without symmetry reduction."""
    from toolcommit.checker.cli import main

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from spin import run_promela

    target = tmp_path / "model.pml"
    assert (
        main(
            ["export", "--format", "promela", "--preset", p, "--instance", name, "-o", str(target)]
        )
        == 0
    )
    ours = explore(compile_system(replace(build(preset(p), instance(name)), symmetries=())))
    theirs = run_promela(target.read_text())
    assert (theirs["states"], theirs["depth"]) == (ours.state_count, ours.depth)
    assert theirs["transitions"] == ours.transitions + 1  # Spin counts entering the loop


# ----- stopping once every property asked for is violated -------------------------------------
def _stop(c, props):
    from toolcommit.checker.engines.explicit.engine import stop_when

    return stop_when(c, props)


@needs_cc
@pytest.mark.parametrize(
    "p,name,props",
    [
        ("naive", "default", ["I1"]),
        ("naive", "default", ["I1", "DEADLOCK", "FULFIL"]),
        ("naive", "zombie", ["I1", "DEADLOCK"]),
        ("seed", "default", ["I1", "P2"]),
        ("naive", "reorder", ["I1", "FULFIL"]),
    ],
)
def test_both_engines_stop_at_the_same_state_once_every_asked_property_is_violated(p, name, props):
    """On any number of threads: the stop falls after the parent the sequential loop stops at."""
    c = compile_system(build(preset(p), instance(name)))
    stop = _stop(c, props)
    py = assert_native_agrees(c, stop=stop)
    assert py.early and not py.complete


@pytest.mark.parametrize(
    "p,name", [("naive", "crash_before_dispatch"), ("naive", "zombie"), ("seed", "ack_loss")]
)
def test_early_stop_finds_the_full_searchs_first_violations_at_their_depths(p, name):
    c = compile_system(build(preset(p), instance(name)))
    full = explore(c)
    props = sorted(full.first_violation)
    early = explore(c, stop=_stop(c, props))
    assert early.early and early.state_count < full.state_count
    assert early.first_violation == full.first_violation
    assert early.path(early.first_violation[props[0]]) == full.path(full.first_violation[props[0]])
    assert {k: early.depth_of(v) for k, v in early.first_violation.items()} == {
        k: full.depth_of(v) for k, v in full.first_violation.items()
    }
    assert early.states[: early.state_count] == full.states[: early.state_count]
    assert early.level_ends[-1] == early.state_count


def test_progress_needs_the_whole_graph_so_it_never_stops_the_search():
    c = compile_system(build(preset("naive"), instance("zombie")))
    assert _stop(c, ["I1", "PROGRESS"]) is None
    assert _stop(c, []) is None


def test_first_violation_verdicts_match_the_full_search_and_say_they_stopped_early():
    first = check_instance(
        preset("naive"), instance("default"), ["I1", "DEADLOCK"], Limits(first=True)
    )
    full = check_instance(preset("naive"), instance("default"), ["I1", "DEADLOCK"])
    assert [v.counterexample for v in first.verdicts] == [v.counterexample for v in full.verdicts]
    assert first.stats["early"] and not first.stats["complete"]
    assert first.stats["states"] < full.stats["states"] and "early" not in full.stats


def test_first_keeps_searching_while_a_property_holds_so_a_hold_is_exhaustive():
    r = check_instance(preset("naive"), instance("ack_loss"), ["I1", "FENCE"], Limits(first=True))
    assert [v.status.value for v in r.verdicts] == ["VIOLATED", "HOLDS"]
    assert r.stats["complete"] and "early" not in r.stats


def test_portfolio_with_first_stops_early_and_never_falls_back_to_smt():
    from toolcommit.checker.engines.portfolio import for_ask

    r = for_ask().run(build(preset("naive"), instance("default")), ["I1"], Limits(first=True))
    assert r.engine == "explicit" and r.stats["early"] and r.scope.kind == "early"
    assert r.scope.text.startswith("stopped early: every property asked for is violated")
    assert r.verdicts[0].status.value == "VIOLATED"


_SOURCES = """
import hashlib
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.native_c import c_source
from toolcommit.model.instance import instance, instance_names
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.semantics import build
h = hashlib.sha256()
for p in PRESETS:
    for i in instance_names():
        c = compile_system(build(preset(p), instance(i)))
        h.update(c.source.encode() + c_source(c).encode())
print(h.hexdigest())
"""


def test_generated_sources_do_not_depend_on_the_processs_string_hashing():
    """The compiled engine is cached by its source's hash: a source that changed with
    PYTHONHASHSEED would be rebuilt by every process and fill the cache."""
    import os
    import subprocess

    out = {
        subprocess.run(
            [sys.executable, "-c", _SOURCES],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ, PYTHONHASHSEED=seed),
        ).stdout
        for seed in ("1", "2")
    }
    assert len(out) == 1, out


class _CountingLib:
    """The native library, counting which addresses `tc_free` released."""

    def __init__(self, lib):
        self._lib, self.freed = lib, []

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def tc_free(self, ptr):
        self.freed.append(ptr)
        self._lib.tc_free(ptr)


@needs_cc
def test_a_search_s_arrays_are_read_in_place_and_freed_once_when_unreferenced():
    """The states, parents and edges are the engine's own memory, not copies: each is
    released exactly once, and only after the last reference to it (a counterexample's
    path read after the exploration object is gone) is dropped."""
    import gc

    c = compile_system(build(preset("seed"), instance("two_intents")))
    lib = _CountingLib(native.library(c)[0])
    ex = explore_native(c, graph=True, lib=lib)
    n, states, parent, edges = ex.state_count, ex.states, ex.parent, ex.edges
    copied = len(lib.freed)  # the short arrays (levels, goals, counts), copied and freed
    del ex
    gc.collect()
    assert len(lib.freed) == copied + 1  # `via`, which nothing else refers to
    expected = explore(c, graph=True)
    assert list(states) == list(expected.states) and list(parent) == list(expected.parent)
    assert (list(edges[0]), list(edges[1])) == tuple(map(list, expected.edges))
    held = {native._address(a) for a in (states._raw.obj, parent, *edges)}
    assert held.isdisjoint(lib.freed) and len(held) == 4
    del states, parent, edges
    gc.collect()
    assert held <= set(lib.freed) and len(lib.freed) == len(set(lib.freed))
    assert n == expected.state_count
