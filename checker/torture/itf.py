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
                         client sends each request once, as its design's sdk_retries=off;
                         after a ``lose_ack`` of the same request: both copies sent, no
                         answer, ``dup_drop``)
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

from toolcommit.checker.logs.write import forms
from toolcommit.checker.torture.plan import Plan, Session, Timing
from toolcommit.model.errors import InputError, UsageError
from toolcommit.model.instance import instance

_EMIT = ("check", "propose")
_SENDS = ("dispatch", "retry")
_ANSWERS = ("timeout", "receive_ack", "discard_ack", "receive_error")
_AFTER_SEND = _SENDS + _ANSWERS
_NET = {"lose_ack": "drop", "delay": "delay", "redeliver": "dup"}
# the provider's faults: on the request the trace names (`_SENDS`, a replay included)
_PROVIDER = {
    "fail_before_apply": "error_before",
    "fail_after_apply": "error_after",
    "expire_request": "late",
}
_NEXT = {"expire_key": "expire_key"}  # on the key's next request
_READS = {"stale_read": "stale", "lose_seal": "drop"}  # on the key's next status read
_FAULTS = ("crash", "wipe", "expire_lease", "cancel")
_IGNORED = (
    "insert",
    "deliver",
    "reconcile",
    "read_status",
    "compensate",
    "dead_letter",
    "takeover",
    "restart",
    "rollback",
    "compensate_after_seal",
    "review",
    "approve",
    "deliver_seal",
    "reseal",
    "close_window",
)
# faults of the model with no harness event yet: a trace with one is refused, by name, why
UNREPLAYABLE = {
    "revise_prompt": "the user's revised prompt has no place in a scripted session yet",
    "new_intent": "the user's second request (a new intent id) has no place in a scripted "
    "session yet",
    "failover": "the harness's store has no replica to fail over to",
    "stop_waiting": "a caller's deadline has no place in a scripted session yet",
}


_USE = "use a counterexamples/<preset>/<instance>/<P>.itf.json file as toolcommit wrote it"


def _load(path: str) -> dict:
    """The ITF document at `path`, its shape checked: `InputError` (one line) otherwise."""
    try:
        doc = json.loads(Path(path).read_text("utf-8-sig"))
        meta, states = doc["#meta"], doc["states"]
        if not isinstance(meta, dict) or not isinstance(meta["instance"], str):
            raise TypeError("#meta.instance must be an instance name")
        if not isinstance(meta.get("assumptions", {}), dict):
            raise TypeError("#meta.assumptions must be an object")
        if (
            not isinstance(states, list)
            or len(states) < 2
            or not all(isinstance(st, dict) for st in states)
        ):
            raise TypeError("states must be a list of at least two objects")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
        what = (
            "nested too deep" if isinstance(e, RecursionError) else f"{e.__class__.__name__}: {e}"
        )
        raise InputError(
            f"not an ITF counterexample of toolcommit ({what}); {_USE}", path
        ) from None
    return doc


def plan_from_itf(path: str, timing: Timing = Timing()) -> Plan:
    """The harness schedule of the ITF trace at `path` (see the module docstring).
    `InputError` (one line, naming the step) for a trace toolcommit did not write as it
    stands: an unknown instance, worker, proposal, key or fence, a field of the wrong type,
    or no call to run."""
    doc = _load(path)
    try:
        return _plan(doc, path, timing)
    except UsageError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as e:
        step = getattr(e, "step", None)
        where = f"step {step}: " if step is not None else ""
        raise InputError(
            f"{where}not a trace toolcommit wrote ({e.__class__.__name__}: {e}); {_USE}", path
        ) from None


def _plan(doc: dict, path: str, timing: Timing) -> Plan:
    try:
        inst = instance(doc["#meta"]["instance"])
    except UsageError as e:
        raise InputError(
            f"#meta.instance: {doc['#meta']['instance']!r} is not one of "
            f"spec/instances.json (a question's own instance, or an edit: {e}); "
            "the harness replays the catalogue's instances only",
            path,
        ) from None
    intent, args_of = forms()
    form_names = list(args_of)
    props = {p.name: p for p in inst.proposals}
    workers = [f"w{i}" for i in range(inst.workers)]
    script = {w: [] for w in workers}
    emitted: set[str] = set()
    last: dict[str, str] = {}
    hits = {(w, p): 0 for w in workers for p in ("proposed", "sent")}
    creator: dict[str, tuple] = {}  # key -> the proposed hook that created it
    requests: dict[tuple, int] = {}  # (key, fence) -> n-th apply request
    kills, pauses, cancels, net = set(), set(), set(), []
    reads: dict[str, int] = {}  # key -> status reads so far

    def anchor(w: str) -> tuple:
        point = "sent" if last.get(w) in _AFTER_SEND else "proposed"
        return (w, point, max(hits[(w, point)], 1))

    def emit(w: str, proposal: str, always: bool) -> None:
        p = props[proposal]
        script[w].append((p.call_id, form_names.index(p.form), always))
        emitted.add(proposal)
        hits[(w, "proposed")] += 1

    def step(i: int, st: dict) -> None:
        a, q = st.get("mbt::actionTaken"), st.get("mbt::nondetPicks", {})
        if not isinstance(a, str) or not isinstance(q, dict):
            raise TypeError("mbt::actionTaken must be a name and mbt::nondetPicks an object")
        w = q.get("worker")
        if a in _EMIT:
            if q["proposal"] not in emitted:
                emit(w, q["proposal"], props[q["proposal"]].trigger == "always" and bool(script[w]))
            creator.setdefault(q["key"], (w, "proposed", hits[(w, "proposed")]))
            last[w] = a
        elif a in _SENDS or a == "reconcile" and str(q.get("replay", "")).startswith("under"):
            requests[(q["key"], q["fence"])] = len(requests) + 1
            if a == "reconcile":  # a replay under the same key: the runtime's own move
                return
            if a == "retry":
                nxt = [
                    p.name
                    for p in inst.proposals
                    if p.trigger == "after_failure" and p.name not in emitted
                ]
                if nxt:
                    emit(w, nxt[0], False)
                else:
                    script[w].append((None, 0, False))
                    hits[(w, "proposed")] += 1
            hits[(w, "sent")] += 1
            last[w] = a
        elif a in _NET:
            rule = ("apply", "*", requests[(q["key"], q["fence"])])
            if {_NET[a], dict(net).get(rule)} == {"drop", "dup"}:  # the SDK re-sends what
                net[[r for r, _ in net].index(rule)] = (rule, "dup_drop")  # lost its answer
            else:
                net.append((rule, _NET[a]))
        elif a in _PROVIDER:
            net.append((("apply", "*", requests[(q["key"], q["fence"])]), _PROVIDER[a]))
        elif a in _NEXT:
            net.append((("apply", "*", len(requests) + 1), _NEXT[a]))
        elif a in _READS:
            reads[q["key"]] = reads.get(q["key"], 0) + 1
            net.append((("status", "*", reads[q["key"]]), _READS[a]))
        elif a == "read_status":
            reads[q["key"]] = reads.get(q["key"], 0) + 1
        elif a in UNREPLAYABLE:
            raise UsageError(f"{path}: step {i} ({a}) cannot be replayed: {UNREPLAYABLE[a]}")
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
            raise UsageError(
                f"{path}: step {i} ({a}) has no harness event; replayable "
                f"faults: {', '.join((*_NET, *_PROVIDER, *_NEXT, *_READS, *_FAULTS))}"
            )

    for i, st in enumerate(doc["states"][1:], start=1):
        try:
            step(i, st)
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as e:
            e.step = i
            raise
    forms_args = tuple(args_of[f] for f in form_names)
    used = [w for w in workers if script[w]]
    if not used:
        raise InputError(f"the trace has no call of the model to replay; {_USE}", path)
    sessions = tuple(
        Session(
            intent["scope"],
            intent["tool"],
            forms_args,
            retries=len(script[w]) - 1,
            calls=tuple(script[w]),
        )
        for w in used
    )
    return Plan(
        0,
        tuple(used),
        sessions,
        tuple((i,) for i in range(len(used))),
        frozenset(kills),
        frozenset(pauses),
        frozenset(cancels),
        net=tuple(net),
        source=str(path),
        timing=timing,
    )


def weak_runtime(meta: dict) -> tuple[str, str]:
    """The harness runtime that stands for the design a trace was found on, and '' ; or ''
    and why none does: ``naive`` is the chat runtime, ``recommended`` (as it is) the
    library as it shipped (park); a design with other knobs has no harness runtime."""
    config = str(meta.get("config", ""))
    base = config.split("@", 1)[0]
    if base == "naive":
        return "chat", ""
    if base == "recommended":
        return "park", ""
    return "", (
        f"the trace's design {base or '?'} has no harness runtime (chat is naive, "
        "park is recommended)"
    )


def env_of(meta: dict):
    """The spec/environments.json profile a trace was found in (its config's ``@env``), or
    None."""
    config = str(meta.get("config", ""))
    return config.split("@", 1)[1] if "@" in config else None


def replay(
    path: str,
    runtime: str = "library",
    profile=None,
    store: str = "sqlite",
    dsn: str = "",
    keep=None,
):
    """Run the schedule of `path` once on `runtime`: a one-run `Campaign`. The provider's
    profile defaults to the trace's environment's fake (`env_of`), else the harness
    profile matching its assumptions (`profile_for`)."""
    import time
    from dataclasses import replace as _replace

    from toolcommit.checker.torture.campaign import Campaign, sdk_retries
    from toolcommit.checker.torture.harness import run_once
    from toolcommit.checker.torture.profiles import PROFILES, profile_for

    meta = _load(path)["#meta"]
    env = env_of(meta)
    profile = profile or (env if env in PROFILES else profile_for(meta.get("assumptions", {})))
    plan = plan_from_itf(path, Timing().within(PROFILES[profile].delay_bound))
    if not sdk_retries(runtime, profile) or runtime == "library" and not PROFILES[profile].env:
        # a client that sends each request once: an SDK retry of the trace has no client
        plan = _replace(
            plan,
            net=tuple(
                (e[0], "drop") if e[1] == "dup_drop" else e for e in plan.net if e[1] != "dup"
            ),
        )
    start = time.monotonic()
    r = run_once(plan, runtime, profile, store, dsn, keep)
    weak, why = weak_runtime(meta)
    found_on = f"{meta.get('config', '?')}: {meta.get('property', '?')} in the model; " + (
        f"the runtime {weak} stands for that design" if weak else why
    )
    c = Campaign(
        {
            "runtime": runtime,
            "profile": profile,
            "store": store,
            "workers": len(plan.workers),
            "seed": 0,
            "runs": 1,
            "itf": str(path),
            "found_on": found_on,
        },
        [r],
        time.monotonic() - start,
    )
    return c
