"""Torture under a design that holds re-asks (`reask=hold`): each session's refund names its
charge, so two checkouts' refunds of the same amount are not "the same" request; and a
worker tells the model `held` and `answered` (nothing sent) as the library says them."""

import os
from dataclasses import replace

import pytest

from toolcommit.checker.torture.plan import Session, Timing, random_plan
from toolcommit.checker.torture.worker import (
    PRINCIPAL,
    DesignRuntime,
    Hook,
    LibraryRuntime,
    Net,
    env_design,
)
from toolcommit.runtime import IntentLog
from toolcommit.runtime import reask as R

ARGS = {"charge": "ch_7", "amount": 20, "reason": "damaged item"}


def test_a_plans_sessions_are_the_same_request_only_within_their_own_checkout():
    for seed in range(40):
        sessions = random_plan(seed).sessions
        digests = [{R.content(s.tool, f) for f in s.forms} for s in sessions]
        assert all(len(d) == 1 for d in digests), "a paraphrase is the same request"
        assert len(set().union(*digests)) == len(sessions), f"seed {seed}: two checkouts alike"


class Points:
    """A worker's hook with a harness that always says go: the points it reported."""

    def __init__(self):
        self.to_r, to_w = os.pipe()
        from_r, self.from_w = os.pipe()
        os.write(self.from_w, b"c" * 64)
        self.hook = Hook(to_w, from_r)

    def seen(self) -> list[str]:
        os.set_blocking(self.to_r, False)
        try:
            return [ln.split()[0] for ln in os.read(self.to_r, 65536).decode().splitlines()]
        except BlockingIOError:
            return []


def hold_log(tmp_path, name="w0"):
    design = env_design("stripe")
    design = replace(design, knobs={**design.knobs, "reask": "hold"})
    return IntentLog.sqlite(str(tmp_path / "i.db"), name, wait=0.05, provider=design)


def runtime(kind, log, points):
    net = Net(9, Timing())  # nothing listens: a send would come back lost
    if kind == "library":
        return DesignRuntime(log, net, points.hook, Timing(), None)
    return LibraryRuntime(log, net, points.hook, Timing(), resolve=kind == "park")


def in_doubt(log, scope):
    """A record of `ARGS` in `scope` whose request got no answer: UNKNOWN."""
    d = log.propose("t1", "refund", dict(ARGS), scope, principal=PRINCIPAL)
    log.timeout(log.dispatch(d.key), "no answer")
    return d.key


@pytest.mark.parametrize("kind", ["library", "park"])
def test_a_re_ask_held_by_an_earlier_request_in_doubt_is_heard_as_held_nothing_sent(tmp_path, kind):
    log, points = hold_log(tmp_path), Points()
    in_doubt(log, "user:1:request:1")
    out = runtime(kind, log, points).call(
        Session("user:1:request:2", "refund", (ARGS,)), "r2", dict(ARGS), False
    )
    assert out == "held" and "dispatched" not in points.seen()
    assert len(log.records()) == 1
    log.close()


@pytest.mark.parametrize("kind", ["library", "park"])
def test_a_re_ask_answered_by_the_earlier_outcome_is_heard_as_answered_nothing_sent(tmp_path, kind):
    log, points = hold_log(tmp_path), Points()
    key = in_doubt(log, "user:1:request:1")
    log.settle(log.reconcile(key), True, {"id": "e1"})  # ACKED by a read: never told
    out = runtime(kind, log, points).call(
        Session("user:1:request:2", "refund", (ARGS,)), "r2", dict(ARGS), False
    )
    assert out == "answered" and "dispatched" not in points.seen()
    other = dict(ARGS, charge="ch_8")  # another checkout: not answered
    d = log.propose("c3", "refund", other, "user:1:request:3", principal="user:1")
    assert d.decision == "accepted"
    log.close()
