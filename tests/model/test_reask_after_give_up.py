"""A re-ask after a doubt and a retry after a give-up are one intent with its attempts
(instance `reask_after_give_up`: t1 delayed, timed out, read absent and given up; the
user's re-ask r2 in a new message; the user's retry t5, the next epoch)."""

import json
from pathlib import Path

import pytest

from toolcommit.checker.design.file import config_for
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance
from toolcommit.model.design_file import design_of
from toolcommit.model.environment import instance_in
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build
from toolcommit.model.values import RV

INST = "reask_after_give_up"
DESIGNS = Path(__file__).resolve().parents[2] / "spec" / "designs"


def test_the_re_ask_and_the_retry_are_siblings_across_epochs():
    system = build(preset("recommended"), instance(INST))
    assert system.meta["key_of"] == {"t1": 0, "r2": 1, "t5": 2}
    assert [k["ident"] for k in system.meta["keys"]] == [
        "refund/orig/e1/v1/i1",
        "refund/orig/e1/v1/r2",
        "refund/orig/e2/v1/i1",
    ]
    assert instance(INST).intents() == ("i1",)


def test_the_retry_after_a_give_up_is_answered_by_a_re_ask_that_applied_told_or_not():
    system = build(preset("recommended"), instance(INST))
    t5 = [a for a in system.actions if a.name == "propose" and a.params["proposal"] == "t5"]
    s = {**system.init, "rec.k0": RV["DEAD_LETTER"], "rec.k1": RV["DISPATCHED"]}
    assert not any(evaluate(a.guard, s) for a in t5)  # the re-ask is unsettled: held
    for told in (0, 1):
        s.update({"rec.k1": RV["ACKED"], "told.k1": told})
        assert [a.params["decision"] for a in t5 if evaluate(a.guard, s)] == [
            "answered: done (key k1 ACKED)"
        ]
    s["rec.k1"] = RV["DEAD_LETTER"]  # the re-ask was given up too: the retry goes ahead
    assert [a.params["decision"] for a in t5 if evaluate(a.guard, s)] == ["accepted"]


@pytest.mark.parametrize("name", ["ideal", "stripe", "fenced-store", "email"])
def test_every_shipped_design_keeps_its_claim_when_the_user_re_asks_both_ways(name):
    doc = json.loads((DESIGNS / f"{name}.json").read_text("utf-8"))
    design, env = design_of(doc)
    assert INST in doc["instances"]  # what `design` judged it on
    result = check_instance(
        config_for(design, env), instance_in(instance(INST), env), doc["properties"]
    )
    assert {v.property: v.status for v in result.verdicts} == dict.fromkeys(
        doc["properties"], Status.HOLDS
    )


def test_without_the_hold_the_re_ask_and_the_retry_both_refund():
    cfg = preset("recommended").with_knobs({"reask": "proceed"})
    result = check_instance(cfg, instance(INST), ["I1"])
    v = result.verdicts[0]
    assert v.status is Status.VIOLATED
    last = v.counterexample.steps[-1].state
    assert sum(last[f"applied.k{i}"] for i in range(3)) == 2
