"""Model to implementation: a stored counterexample's ordering as a harness schedule.

`plan_from_itf` reads an ITF trace (``counterexamples/<preset>/<instance>/<P>.itf.json``)
and keeps what is not the runtime's to decide: the model's calls (who emits which call
id, in which form) and the faults, each anchored at a harness point. The runtime's own
moves (dispatch, timeout, retry, reconcile, ...) are left to the runtime under test, so the
schedule that breaks a weak design in the model is the one the library must survive.

How model actions become harness events
---------------------------------------
``check`` / ``propose``  the worker's model emits that call (first emission only);
                         ``retry`` (a blind re-send) becomes the model re-asking: the
                         instance's next unused ``after_failure`` call, else a fresh id
``lose_ack``             the proxy drops the answer to that request (the n-th apply
                         request of the intent, in the trace's dispatch order)
``delay`` / ``redeliver`` the proxy holds that request past the timeout / sends it twice
                         (an SDK's retry: dropped when the library is replayed, whose
                         client sends each request once, as its design's sdk_retries=off)
``crash`` / ``wipe``     SIGKILL at the worker's hook just after its last step: after an
                         emission its ``proposed`` hook, after a dispatch its ``sent`` hook
``expire_lease``         a zombie pause (leases expired) at that same hook
``cancel``               the user cancels at the ``proposed`` hook of the call that
                         created the key
``restart``              the harness restarts every killed worker anyway
others                   the runtime's or the provider's moves: not scheduled

Limitations: after a restart the model replays its calls from the start (as a chat
runtime does), so a fault the trace places after a restart may land one call later; the
faults in `UNREPLAYABLE` (a prompt revision, the user's second request, and the real
providers' errors, expiries, stale reads, lost seals and log failovers) have no harness
event yet, and a trace with one is refused by name.
"""
from __future__ import annotations

import json
from pathlib import Path

from toolcommit.model.errors import InputError, UsageError
from toolcommit.model.instance import instance

from toolcommit.checker.logs.write import forms
from toolcommit.checker.torture.plan import Plan, Session, Timing

_EMIT = ("check", "propose")
_SENDS = ("dispatch", "retry")
_ANSWERS = ("timeout", "receive_ack", "discard_ack", "receive_error")
_AFTER_SEND = _SENDS + _ANSWERS
_NET = {"lose_ack": "drop", "delay": "delay", "redeliver": "dup"}
_FAULTS = ("crash", "wipe", "expire_lease", "cancel")
_IGNORED = ("insert", "deliver", "reconcile", "read_status", "compensate", "dead_letter",
            "takeover", "restart", "rollback", "compensate_after_seal", "review", "approve",
            "deliver_seal", "reseal", "close_window")
# faults of the model with no harness event yet: a trace with one is refused, by name
UNREPLAYABLE = ("revise_prompt", "new_intent", "fail_before_apply", "fail_after_apply",
                "expire_key", "expire_request", "lose_seal", "stale_read", "failover")


def _load(path: str) -> dict:
    try:
        doc = json.loads(Path(path).read_text("utf-8"))
        doc["#meta"]["instance"], doc["states"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"not an ITF counterexample of toolcommit ({e.__class__.__name__}: "
                         f"{e}); use a counterexamples/<preset>/<instance>/<P>.itf.json file",
                         path) from None
    return doc


def plan_from_itf(path: str, timing: Timing = Timing()) -> Plan:
    """The harness schedule of the ITF trace at `path` (see the module docstring)."""
    doc = _load(path)
    inst = instance(doc["#meta"]["instance"])
    intent, args_of = forms()
    form_names = list(args_of)
    props = {p.name: p for p in inst.proposals}
    workers = [f"w{i}" for i in range(inst.workers)]
    script = {w: [] for w in workers}
    emitted: set[str] = set()
    last: dict[str, str] = {}
    hits = {(w, p): 0 for w in workers for p in ("proposed", "sent")}
    creator: dict[str, tuple] = {}           # key -> the proposed hook that created it
    requests: dict[tuple, int] = {}          # (key, fence) -> n-th apply request
    kills, pauses, cancels, net = set(), set(), set(), []

    def anchor(w: str) -> tuple:
        point = "sent" if last.get(w) in _AFTER_SEND else "proposed"
        return (w, point, max(hits[(w, point)], 1))

    def emit(w: str, proposal: str, always: bool) -> None:
        p = props[proposal]
        script[w].append((p.call_id, form_names.index(p.form), always))
        emitted.add(proposal)
        hits[(w, "proposed")] += 1

    for i, st in enumerate(doc["states"][1:], start=1):
        a, q = st.get("mbt::actionTaken"), st.get("mbt::nondetPicks", {})
        w = q.get("worker")
        if a in _EMIT:
            if q["proposal"] not in emitted:
                emit(w, q["proposal"], props[q["proposal"]].trigger == "always"
                     and bool(script[w]))
            creator.setdefault(q["key"], (w, "proposed", hits[(w, "proposed")]))
            last[w] = a
        elif a in _SENDS:
            requests[(q["key"], q["fence"])] = len(requests) + 1
            if a == "retry":
                nxt = [p.name for p in inst.proposals
                       if p.trigger == "after_failure" and p.name not in emitted]
                if nxt:
                    emit(w, nxt[0], False)
                else:
                    script[w].append((None, 0, False))
                    hits[(w, "proposed")] += 1
            hits[(w, "sent")] += 1
            last[w] = a
        elif a in _NET:
            net.append((("apply", "*", requests[(q["key"], q["fence"])]), _NET[a]))
        elif a == "crash":
            kills.add(anchor(w))
        elif a == "wipe":
            kills.update(anchor(x) for x in workers if x in last)
        elif a == "expire_lease":
            pauses.add(anchor(w))
        elif a == "cancel":
            cancels.add(creator[q["key"]])
        elif a in _ANSWERS:
            last[w] = a
        elif a not in _IGNORED:
            raise UsageError(f"{path}: step {i} ({a}) has no harness event; replayable "
                             f"faults: {', '.join((*_NET, *_FAULTS))}")
    forms_args = tuple(args_of[f] for f in form_names)
    used = [w for w in workers if script[w]]
    sessions = tuple(Session(intent["scope"], intent["tool"], forms_args,
                             retries=len(script[w]) - 1, calls=tuple(script[w]))
                     for w in used)
    return Plan(0, tuple(used), sessions, tuple((i,) for i in range(len(used))),
                frozenset(kills), frozenset(pauses), frozenset(cancels), net=tuple(net),
                source=str(path), timing=timing)


def replay(path: str, runtime: str = "library", profile=None, store: str = "sqlite",
           dsn: str = "", keep=None):
    """Run the schedule of `path` once on `runtime`: a one-run `Campaign`. The provider's
    profile defaults to the one matching the trace's assumptions (`profile_for`)."""
    import time
    from toolcommit.checker.torture.campaign import Campaign
    from toolcommit.checker.torture.harness import run_once
    from toolcommit.checker.torture.provider import profile_for
    plan = plan_from_itf(path)
    if runtime == "library":   # its client sends each request once (sdk_retries=off): an SDK
        #                        retry of the trace has no client to come from
        from dataclasses import replace as _replace
        plan = _replace(plan, net=tuple(e for e in plan.net if e[1] != "dup"))
    profile = profile or profile_for(_load(path)["#meta"].get("assumptions", {}))
    start = time.monotonic()
    r = run_once(plan, runtime, profile, store, dsn, keep)
    c = Campaign({"runtime": runtime, "profile": profile, "store": store,
                  "workers": len(plan.workers), "seed": 0, "runs": 1, "itf": str(path)},
                 [r], time.monotonic() - start)
    return c
