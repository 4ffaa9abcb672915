"""The reliance report: what a HOLDS rests on, one weakened assumption at a time."""

from toolcommit.checker.verify.suite import reliance
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.spec import protocol


def test_reliance_names_each_weakened_check_before_it_runs():
    """`step` hears of every check before it runs (a long P4-only run says where it is);
    the verdicts are the same with it or without it."""
    told: list[str] = []
    insts = [instance("ack_loss")]
    got = reliance(preset("seed"), insts, ["I1", "P1"], step=told.append)
    assert got == reliance(preset("seed"), insts, ["I1", "P1"])
    every = protocol().assumptions
    assert len(told) >= len(every) and told[0].startswith(f"{next(iter(every))}=")
    assert all(t.endswith(f" of {len(every)}") and " on ack_loss, " in t for t in told)
