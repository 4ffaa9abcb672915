"""Searches side by side (`verify.beside`, `check --jobs N` with an adversary): the results in
order; one failing stops the others at their next progress poll, and no thread is left."""

import threading

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.explicit import native
from toolcommit.checker.engines.explicit.engine import Explicit
from toolcommit.checker.verify.beside import Stopped, beside
from toolcommit.checker.verify.check import check_instance
from toolcommit.checker.verify.suite import run_suite
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset

W3 = {"workers": 3, "max_fence": 4, "crashes": 2}  # seconds of search: a progress report comes
needs_cc = pytest.mark.skipif(native.compiler() is None, reason="no C compiler on this machine")


def _searches() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("toolcommit-search")]


def test_results_come_in_the_order_of_the_calls():
    assert beside([lambda tick: "main", lambda tick: "adversary"]) == ["main", "adversary"]
    assert not _searches()


def test_one_failing_stops_the_other_at_its_next_poll():
    seen = []

    def polls(tick):
        for _ in range(10_000):  # about 100 s, were it never stopped
            try:
                tick(None)
            except Stopped:
                seen.append("stopped")
                raise
            threading.Event().wait(0.01)
        return "ran to the end"

    def fails(tick):
        raise ValueError("the main search failed")

    with pytest.raises(ValueError, match="the main search failed"):
        beside([polls, fails])
    assert seen == ["stopped"] and not _searches()


@needs_cc
def test_an_interrupted_check_stops_both_searches(monkeypatch):
    """A progress callback raising (Ctrl-C, as the CLI's tick would) in either search ends
    check_instance with it, both native searches stopped."""
    monkeypatch.setenv("TOOLCOMMIT_ENGINE", "native")

    def interrupt(tick):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check_instance(
            preset("naive"),
            instance("default").with_bounds(W3),
            ["I1", "P4"],
            Limits(),
            interrupt,
            Explicit(jobs=2),
        )
    assert not _searches()


@needs_cc
def test_the_adversary_searched_beside_judges_what_held_as_one_after_the_other(monkeypatch):
    """recommended holds PROGRESS on the default instance, so the adversary's PROGRESS,
    left for later beside the main search, is searched once it is re-judged."""
    monkeypatch.setenv("TOOLCOMMIT_ENGINE", "native")
    inst = instance("default")
    one = check_instance(preset("recommended"), inst, engine=Explicit(jobs=1))
    two = check_instance(preset("recommended"), inst, engine=Explicit(jobs=2))
    assert [v for v in one.verdicts if v.property == "PROGRESS"][0].status.name == "HOLDS"
    assert two.verdicts == one.verdicts


@pytest.mark.slow  # two native searches of the 13M-state model for long enough to tick
@needs_cc
def test_each_search_reports_progress_under_its_own_name(monkeypatch):
    """The terminal's progress line names the search a tick is from: the instance, or the
    instance and P4 for the adversary's search beside it."""
    monkeypatch.setenv("TOOLCOMMIT_ENGINE", "native")
    phases = set()
    run_suite(
        preset("naive"),
        [instance("default").with_bounds(W3)],
        ["I1", "P4"],
        Limits(),
        lambda t: phases.add(t.phase),
        Explicit(jobs=2),
    )
    assert {"default", "default, P4"} <= phases


@needs_cc
@pytest.mark.parametrize(
    "choice,name,bounds,apart",
    [
        ("auto", "ack_loss", {}, False),  # a few hundred states: Python's, one at a time
        ("python", "default", W3, False),  # two Python searches at once would take turns
        ("auto", "default", W3, True),  # millions of states: native, side by side
        ("native", "ack_loss", {}, True),
    ],
)
def test_only_native_searches_run_side_by_side(monkeypatch, choice, name, bounds, apart):
    from toolcommit.checker.verify import check

    monkeypatch.setenv("TOOLCOMMIT_ENGINE", choice)
    calls = []
    monkeypatch.setattr(
        check, "beside", lambda *a: calls.append(a) or (_ for _ in ()).throw(RuntimeError("beside"))
    )
    inst = instance(name).with_bounds(bounds)
    if apart:
        with pytest.raises(RuntimeError, match="beside"):
            check_instance(
                preset("naive"),
                inst,
                ["I1", "P4"],
                Limits(max_states=20_000),
                engine=Explicit(jobs=2),
            )
    else:
        check_instance(
            preset("naive"), inst, ["I1", "P4"], Limits(max_states=20_000), engine=Explicit(jobs=2)
        )
    assert bool(calls) == apart


def test_without_a_c_compiler_large_searches_run_one_after_the_other(monkeypatch):
    """auto past the Python engine's first try, but no native engine: the Python engine goes
    on, so the searches take turns rather than run side by side."""
    from toolcommit.checker.verify import check

    monkeypatch.setenv("TOOLCOMMIT_ENGINE", "auto")
    monkeypatch.setattr(native, "compiler", lambda: None)
    calls = []
    monkeypatch.setattr(check, "beside", lambda *a: calls.append(a))
    r = check_instance(
        preset("naive"),
        instance("default").with_bounds(W3),
        ["I1", "P4"],
        Limits(max_states=20_000),
        engine=Explicit(jobs=2),
    )
    assert not calls and r.stats["engine_note"].startswith("native engine unavailable")
