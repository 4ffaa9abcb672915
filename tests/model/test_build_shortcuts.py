"""The build's shortcuts build what the plain forms build: a value written to a record gets
the LEGAL/P2 monitor the general form folds to (built once per build and structure), and
`all_of`/`any_of` fold as the definitions they replaced."""

import itertools
import json
from importlib import resources

import pytest

from toolcommit.checker.design.synthesis import neighbours
from toolcommit.model.design import departures
from toolcommit.model.design_file import design_of
from toolcommit.model.environment import configure, instance_in
from toolcommit.model.expr import FALSE, TRUE, Const, Op, Var, all_of, any_of, in_, lift, not_
from toolcommit.model.instance import instance
from toolcommit.model.knobs import PRESETS, preset
from toolcommit.model.semantics import _Builder, _legal_edges, build
from toolcommit.model.values import P2_ALLOWED, RV, r


def general_breaks(rec, new):
    """The monitor as first written, for any written expression."""
    legal = _legal_edges()
    ok = any_of(new == rec, *[all_of(rec == RV[a], new == RV[b]) for a, b in legal])
    return not_(ok), all_of(rec == RV["UNKNOWN"], not_(in_(new, r(*P2_ALLOWED))))


@pytest.mark.parametrize("env", ["ideal", "stripe", "email"])
@pytest.mark.parametrize("p", PRESETS)
def test_a_constant_write_gets_the_monitor_the_general_form_folds_to(p, env):
    b = _Builder(configure(preset(p), env), instance_in(instance("two_intents"), env))
    b.declare()
    for rec in b.rec:
        for value in RV.values():
            fast, plain = b._breaks(rec, Const(value)), general_breaks(rec, Const(value))
            assert [str(e) for e in fast] == [str(e) for e in plain]
            assert (fast[1] is FALSE) == (plain[1] is FALSE)
            assert b._breaks(rec, Const(value)) is fast  # once per build
        written = rec + 0  # not a constant: the general form itself, once per structure
        assert [str(e) for e in b._breaks(rec, written)] == [
            str(e) for e in general_breaks(rec, written)
        ]
        assert b._breaks(rec, rec + 0) is b._breaks(rec, written)
        assert b._breaks(rec, rec + 1) is not b._breaks(rec, written)


def reference_all_of(*args):
    parts = [lift(a) for a in args]
    if any(isinstance(p, Const) and p.value == 0 for p in parts):
        return FALSE
    parts = [p for p in parts if not isinstance(p, Const)]
    return TRUE if not parts else parts[0] if len(parts) == 1 else Op("and", tuple(parts))


def reference_any_of(*args):
    parts = [lift(a) for a in args]
    if any(isinstance(p, Const) and p.value != 0 for p in parts):
        return TRUE
    parts = [p for p in parts if not isinstance(p, Const)]
    return FALSE if not parts else parts[0] if len(parts) == 1 else Op("or", tuple(parts))


def test_all_of_and_any_of_fold_every_mix_of_constants_and_expressions_as_before():
    x, y = Var("x"), Var("y")
    atoms = [0, 1, True, False, Const(0), Const(2), x, y == 1]
    for n in range(4):
        for args in itertools.product(atoms, repeat=n):
            for mine, ref in ((all_of, reference_all_of), (any_of, reference_any_of)):
                got, want = mine(*args), ref(*args)
                assert str(got) == str(want)
                # a constant or a single part is the very object, as before
                assert got is want or (isinstance(want, Op) and want.op in ("and", "or"))


def _text(system) -> str:
    """Everything a System holds, expressions by their text (an Expr's == builds one)."""
    out = [repr(system.variables), repr(sorted(system.init.items())), repr(system.symmetries)]
    for a in system.actions:
        out.append(repr((a.label(), str(a.guard), [(n, str(e)) for n, e in a.updates.items()])))
        out.append(repr((a.fault, a.cut)))
    for part in (system.invariants, system.witnesses, system.ends):
        out.append(repr([(n, str(e)) for n, e in part.items()]))
    return "\n".join(out + [str(system.done), repr(sorted(system.meta.items(), key=str))])


def _shipped():
    folder = resources.files("toolcommit.spec").joinpath("designs")
    for f in sorted(folder.iterdir(), key=lambda f: f.name):
        if f.name.endswith(".json"):
            yield f.name[: -len(".json")], design_of(json.loads(f.read_text("utf-8")))


@pytest.mark.parametrize("name,shipped", list(_shipped()))
def test_every_shipped_design_and_its_neighbours_build_as_with_the_plain_monitor(
    name, shipped, monkeypatch
):
    design, env = shipped
    configs = [
        configure(preset("naive"), env).with_knobs({k: d[k] for k in departures(d)})
        for d in [design, *neighbours(design)]
    ]
    insts = [instance_in(instance(n), env) for n in ("two_intents", "give_up_retry", "stress")]
    fast = [_text(build(c, i)) for c in configs for i in insts]
    monkeypatch.setattr(_Builder, "_breaks", lambda self, rec, new: general_breaks(rec, new))
    assert fast == [_text(build(c, i)) for c in configs for i in insts]
