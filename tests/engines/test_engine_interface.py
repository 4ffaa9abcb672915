"""One engine interface: every engine takes (system, props, limits, progress) and returns a
Result; a search that looked at nothing never says HOLDS; every user limit is honoured."""

import math

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.engines.base import Limits, Result, Tick
from toolcommit.checker.engines.explicit.engine import Explicit
from toolcommit.checker.engines.portfolio import for_ask, for_check, for_prove
from toolcommit.checker.engines.verdict import Status
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build


def naive_ack_loss():
    return build(preset("naive"), instance("ack_loss"))


@pytest.mark.parametrize(
    "engine",
    [
        for_check("explicit"),
        for_check("smt", depth=10),
        for_check("random", runs=200, seed=1),
        for_prove(),
    ],
)
def test_every_engine_returns_one_result_shape_and_finds_the_ack_loss_double_refund(engine):
    ticks = []
    r = engine.run(naive_ack_loss(), ["I1"], Limits(), ticks.append)
    assert isinstance(r, Result) and r.scope is not None
    assert [v.property for v in r.verdicts] == ["I1"]
    assert r.verdicts[0].status is Status.VIOLATED
    assert all(isinstance(t, Tick) for t in ticks)


@pytest.mark.parametrize(
    "args",
    [
        ["--engine", "random", "--runs", "0"],
        ["--engine", "random", "--runs", "-1"],
        ["--engine", "random", "--max-steps", "0"],
        ["--engine", "smt", "--depth", "0"],
        ["--engine", "smt", "--depth", "-1"],
        ["--timeout", "-1"],
        ["--timeout", "nan"],
        ["--max-states", "-5"],
    ],
)
def test_a_search_that_would_look_at_nothing_is_refused_not_a_holds(args, capsys):
    code = main(["check", "--preset", "naive", "--instance", "ack_loss", *args])
    err = capsys.readouterr().err
    assert code == 2 and "HOLDS" not in err and len(err.strip().splitlines()) == 1


def test_limits_reject_nonsense_before_any_work():
    for bad in (dict(timeout=math.nan), dict(timeout=-1.0), dict(max_states=-5)):
        with pytest.raises(UsageError):
            Limits(**bad)


def test_the_random_engine_honours_its_time_limit_with_unknown():
    engine = for_check("random", runs=100_000_000, seed=0)
    r = engine.run(build(preset("recommended"), instance("ack_loss")), ["I1"], Limits(timeout=0.5))
    v = r.verdicts[0]
    assert v.status is Status.UNKNOWN and "time limit" in v.reason
    assert r.stats["runs"] < 100_000_000


@pytest.mark.parametrize(
    "cfg,inst,prop",
    [
        ("naive", "reorder", "P4"),
        ("naive", "reorder", "PROGRESS"),
        ("naive", "duplicate_call_id", "P4"),
        ("seed", "reorder", "P4"),
    ],
)
def test_counterexamples_concretize_when_symmetry_representatives_differ(cfg, inst, prop, capsys):
    """Issue 9 item 2: with crashes=1 these exited 4 ('BFS path does not concretize')."""
    code = main(
        ["check", "--preset", cfg, "--bounds", "crashes=1", "--instance", inst, "--property", prop]
    )
    assert code in (0, 1), capsys.readouterr().err


def test_p4_is_unknown_because_the_rechecked_properties_are_unknown_not_violated(capsys):
    code = main(
        [
            "check",
            "--preset",
            "recommended",
            "--instance",
            "default",
            "--max-states",
            "50",
            "--property",
            "I1",
            "--property",
            "P4",
        ]
    )
    out = capsys.readouterr().out
    assert code == 3
    assert "already fails" not in out and "are unknown here (I1, FULFIL, I1net," in out


def test_the_portfolio_says_when_a_later_engine_answered():
    system = build(preset("recommended"), instance("default"))
    r = for_ask(bmc_depth=3).run(system, ["I1"], Limits(max_states=50))
    assert r.verdicts[0].status is Status.HOLDS and r.engine == "explicit+smt"
    assert r.verdicts[0].scope.startswith(
        "up to depth 3 (bounded, SMT; the explicit search stopped"
    )
    assert "smt judged I1 after explicit stopped at a limit" in r.note
    r = for_ask(bmc_depth=3, fallback=False).run(system, ["I1"], Limits(max_states=50))
    assert r.verdicts[0].status is Status.UNKNOWN and r.note == ""


def test_a_state_limit_is_honoured_to_within_one_states_successors():
    system = build(preset("recommended"), instance("default"))
    for engine in ("python", "native"):
        import os

        os.environ["TOOLCOMMIT_ENGINE"] = engine
        try:
            r = Explicit().run(system, ["I1"], Limits(max_states=100))
        finally:
            del os.environ["TOOLCOMMIT_ENGINE"]
        assert 100 <= r.stats["states"] <= 130 and r.verdicts[0].status is Status.UNKNOWN
