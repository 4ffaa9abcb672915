"""FULFIL: every intent ends applied exactly once or visibly given up; a design cannot keep
I1 by refusing the user forever."""

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.properties import prop


def verdicts(config, name, props=("I1", "FULFIL")):
    return {v.property: v for v in check_instance(config, instance(name), list(props)).verdicts}


def test_fulfilment_is_a_graph_property_reported_beside_i1():
    from toolcommit.model.properties import all_names

    assert prop("FULFIL").kind == "graph" and prop("FULFIL").reads == "unfulfilled_end"
    assert all_names()[:2] == ("I1", "FULFIL")


def test_epoch_none_keeps_i1_by_refusing_the_users_re_ask_and_fails_fulfilment():
    by = verdicts(preset("recommended").with_knobs({"epoch": "none"}), "give_up_retry")
    assert by["I1"].status is Status.HOLDS
    v = by["FULFIL"]
    assert v.status is Status.VIOLATED
    cx = v.counterexample
    last = cx.steps[-1].state
    labels = {d.name: d.labels for d in cx.variables}

    def named(var: str) -> str:
        """The last state's value of `var` by its spec name (the model's own label)."""
        return labels[var][last[var]]

    assert named("prop.t5") == "REJECTED_DUPLICATE"  # the re-ask was refused
    assert last["applied.k0"] == 0 and named("rec.k0") == "DEAD_LETTER"  # nothing applied


def test_the_recommended_design_honours_the_re_ask_in_the_next_epoch():
    by = verdicts(preset("recommended"), "give_up_retry")
    assert by["I1"].status is Status.HOLDS and by["FULFIL"].status is Status.HOLDS


def test_a_record_nobody_resumes_after_a_crash_leaves_the_intent_unfulfilled():
    by = verdicts(
        preset("recommended").with_knobs({"on_restart": "replay_chat"}), "crash_before_dispatch"
    )
    assert by["FULFIL"].status is Status.VIOLATED


def test_a_cancel_is_a_visible_give_up():
    by = verdicts(preset("recommended"), "cancel")
    assert by["FULFIL"].status is Status.HOLDS
