"""The three readings PROTOCOL.md fixes (Properties, "Three readings"), each asserted of the
states the engine reaches: what *settled* means, that a give-up does not excuse an extra
effect, and that an error response re-asks the model only when it made the record UNKNOWN."""

from functools import lru_cache

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.verify.check import run_instance
from toolcommit.model.environment import configure, from_label, instance_in
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import instance


@lru_cache(maxsize=None)
def reached(label: str, name: str, env: str = "ideal"):
    cfg = configure(from_label(label), env)
    c, ex = run_instance(cfg, instance_in(instance(name), env), Limits())
    assert ex.complete
    return c.system, [c.unpack(s) for s in ex.states]


def test_settled_needs_no_request_on_its_way_and_no_half_inserted_proposal():
    system, states = reached("naive+on_unknown=dead_letter", "give_up_retry")
    recs = [v.name for v in system.variables if v.family == "rec"]
    msgs = [v.name for v in system.variables if v.family == "msg"]
    parked_in_flight = [
        s
        for s in states
        if all(system.var(r).show(s[r]) in ("PROPOSED", "DEAD_LETTER", "ACKED") for r in recs)
        and any(system.var(m).show(s[m]) in ("INFLIGHT", "DELAYED") for m in msgs)
    ]
    assert parked_in_flight, "the instance reaches a parked record with its request still out"
    assert not any(evaluate(system.done, s) for s in parked_in_flight)
    checks = [
        s
        for s in states
        if any(system.var(p).show(s[p]) == "PROPOSED" for p in s if p.startswith("prop."))
    ]
    assert checks and not any(evaluate(system.done, s) for s in checks)


def test_a_give_up_beside_a_duplicate_is_no_visible_give_up():
    system, states = reached("recommended+provider_fences=no", "give_up_retry")
    applied = [v.name for v in system.variables if v.family == "applied"]
    recs = [v.name for v in system.variables if v.family == "rec"]
    both = [
        s
        for s in states
        if system.fault_only(s)
        and sum(s[a] for a in applied) >= 2
        and any(system.var(r).show(s[r]) == "DEAD_LETTER" for r in recs)
    ]
    assert both, "an end state with a parked record and two refunds is reachable"
    assert not any(evaluate(system.ends["FULFIL"], s) for s in both)
    assert all(not evaluate(system.invariants["I1"], s) for s in both)


def test_an_error_re_asks_the_model_only_when_it_made_the_record_unknown():
    system, states = reached("recommended+on_unknown=replay_then_reconcile", "ack_loss", "stripe")
    seen = {"unknown": 0, "other": 0}
    for s in states:
        for a in system.actions:
            if a.name != "receive_error" or not system.enabled(a, s):
                continue
            t = system.step(a, s)
            rec = f"rec.{a.params['key']}"
            made_unknown = (
                system.var(rec).show(s[rec]) == "DISPATCHED"
                and system.var(rec).show(t[rec]) == "UNKNOWN"
            )
            seen["unknown" if made_unknown else "other"] += 1
            if not made_unknown:
                assert t["retry_ok"] == s["retry_ok"] and t[rec] == s[rec], a.label()
            else:
                assert t["retry_ok"] == 1
    assert seen["unknown"] and seen["other"], seen
