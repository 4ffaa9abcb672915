"""Coverage claims ("never fires") come only from searches that saw every reachable state."""

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.render.suite import render_suite_text as render_suite
from toolcommit.checker.verify.suite import resolve_instances, run_suite
from toolcommit.model.knobs import preset


def test_a_search_stopped_at_a_state_limit_claims_no_action_never_fires():
    s = run_suite(
        preset("naive"), resolve_instances(["default"], {}), limits=Limits(max_states=1000)
    )
    text = render_suite(s)
    assert "never fires" not in text
    assert "coverage not judged where the search stopped at a limit: default" in " ".join(
        text.split()
    )


def test_a_failure_class_whose_fault_this_design_cannot_take_is_named():
    """Under seed (no leases) the zombie class's lease expiry has no action: its verdicts
    check nothing about zombies, and the coverage says so instead of staying silent."""
    s = run_suite(preset("seed"), resolve_instances(["zombie"], {}))
    words = " ".join(render_suite(s).split())  # however the lines are wrapped
    assert "expire_lease (budget lease_expiries=1, no such action in this design)" in words
