"""When the client library re-sends (`redeliver`, sdk_retries=on): as stripe-python's
`_should_retry` does, after no answer (a connection error, a timeout: the ack lost) and after
an error answer (a 409, a 5xx) before the call returns it; never after a received 2xx, nor
once the call has returned its answer to the runtime."""

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.model.environment import configure
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build
from toolcommit.model.values import MSG_VALUES


def _redeliver_sources(config, inst) -> set[str]:
    """The request slot's value in every reachable state where an SDK retry may fire."""
    system = build(config, inst)
    c, ex = run_instance(config, inst, Limits())
    resend = [a for a in system.actions if a.name == "redeliver"]
    assert resend, "the SDK's retry is an action of this model"
    out = set()
    for s in map(c.unpack, ex.states):
        for a in resend:
            if system.enabled(a, s):
                out.add(MSG_VALUES[s[f"msg.{a.params['key']}.{a.params['fence']}"]])
    return out


def test_the_sdk_re_sends_a_request_whose_answer_it_missed():
    v = check_instance(preset("naive"), instance("transport_retry"), ["I1"]).verdicts[0]
    steps = [s.action for s in v.counterexample.steps]
    assert v.status is Status.VIOLATED
    assert steps[-3:] == ["lose_ack", "redeliver", "deliver"]


def test_the_sdk_re_sends_an_error_answer_before_the_call_returns_it():
    inst = instance("transport_retry").with_bounds({"ack_losses": 0, "errors_after": 1})
    v = check_instance(preset("naive"), inst, ["I1"]).verdicts[0]
    assert v.status is Status.VIOLATED
    assert [s.action for s in v.counterexample.steps][-3:] == [
        "fail_after_apply",
        "redeliver",
        "deliver",
    ]


def test_the_sdk_never_re_sends_a_received_answer():
    """With no answer lost and none an error, every answer is a received 2xx: no SDK retry
    can fire, so sdk_retries=on duplicates nothing."""
    inst = instance("transport_retry").with_bounds({"ack_losses": 0})
    v = check_instance(preset("naive"), inst, ["I1"])
    assert v.verdicts[0].status is Status.HOLDS
    assert v.coverage.get("redeliver", 0) == 0


def test_an_sdk_retry_fires_only_from_a_missed_or_error_answer_under_stripe():
    inst = instance("provider_non_idempotent").with_bounds({"errors_after": 1})
    cfg = configure(preset("recommended"), "stripe").with_knobs(
        {"sdk_retries": "on", "provider_idempotent": "yes"}
    )
    assert _redeliver_sources(cfg, inst) == {"LOST", "ERR"}
