"""Coverage claims ("never fires") come only from searches that saw every reachable state."""
from toolcommit.checker.engines.base import Limits
from toolcommit.checker.render.suite import render_suite_text as render_suite
from toolcommit.checker.verify.suite import resolve_instances, run_suite
from toolcommit.model.knobs import preset


def test_a_search_stopped_at_a_state_limit_claims_no_action_never_fires():
    s = run_suite(preset("naive"), resolve_instances(["default"], {}), limits=Limits(max_states=1000))
    text = render_suite(s)
    assert "never fires" not in text
    assert "coverage not judged where the search stopped at a limit: default" in text
