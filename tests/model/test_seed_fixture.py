"""The `seed` preset is the article's fixture (`tool_commit_sim.py`, lines 51-118 of
/work/shared/seed/tool-calls-as-commit-protocol.txt) as its code behaves, branch for branch.

Each test names the fixture line it pins and asserts it of the built seed `System`: what it
can reach (states explored by the explicit engine, transitions stepped from them), what it
can never reach, and what it never does. The fixture's `System` is the subject; its `run()`
is a harness whose three runs (line 117) are replayed as traces at the end.
"""

from functools import lru_cache

import pytest

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.trace import find_action
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance, run_instance
from toolcommit.checker.verify.suite import suite_names
from toolcommit.model.environment import from_label
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build

SEED = preset("seed")
# The record states the fixture writes: RECORDED (lines 84, 91, 109), DISPATCHED (86),
# UNKNOWN (88), ACKED (91); PROPOSED is the model's "no record yet".
WRITTEN = {"PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "ACKED"}
# The failure-class instances (small enough to step every action from every state in
# Python; the combined `default` instance has about 0.9 million states).
CLASSES = [n for n in suite_names() if n != "default"]
# The fixture's first call, as a model trace: propose (check, then insert) and dispatch.
T1 = [
    ("check", {"call": "t1", "proposal": "t1", "worker": "w0", "key": "k0", "decision": "absent"}),
    ("insert", {"call": "t1", "proposal": "t1", "worker": "w0", "key": "k0"}),
    ("dispatch", {"key": "k0", "worker": "w0", "fence": "1"}),
]


@lru_cache(maxsize=None)
def explored(name: str, label: str = "seed", **bounds):
    """(system, reachable states as dicts) of instance `name` under the config `label`."""
    inst = instance(name).with_bounds(bounds) if bounds else instance(name)
    compiled, ex = run_instance(from_label(label), inst, Limits())
    return compiled.system, [compiled.unpack(s) for s in ex.states]


def transitions(name: str, label: str = "seed", **bounds):
    """Every (action, before, after) stepped from a reachable state of `name`."""
    system, states = explored(name, label, **bounds)
    for st in states:
        for a in system.actions:
            if not a.cut and system.enabled(a, st):
                yield a, st, system.step(a, st)


def show(system, state, var: str) -> str:
    return system.var(var).show(state[var])


def rec_moves(name: str, label: str = "seed", **bounds):
    """(action, record variable, from, to) for every record transition reachable in `name`."""
    system = explored(name, label, **bounds)[0]
    recs = [v.name for v in system.variables if v.family == "rec"]
    for a, before, after in transitions(name, label, **bounds):
        for r in recs:
            if before[r] != after[r]:
                yield a, r, show(system, before, r), show(system, after, r)


def verdict(name: str, prop: str, config=SEED) -> Status:
    (v,) = check_instance(config, instance(name), [prop]).verdicts
    return v.status


def replay(system, steps):
    """Run [(action, params), ...] from the initial state; every step must be enabled."""
    state = dict(system.init)
    for name, params in steps:
        a = find_action(system, name, params)
        assert system.enabled(a, state), a.label()
        state = system.step(a, state)
    return state


# ----- canon(), lines 60-61 ---------------------------------------------------------------
def test_canon_is_literal_json_so_20_and_20_0_are_two_intents():
    """article line 61: `json.dumps({"t":tool,"a":args,"s":scope}, sort_keys=True)` keeps
    the literal number form: `20` and `20.0` hash to two keys, and both are applied."""
    system = build(SEED, instance("paraphrase"))
    assert system.meta["key_of"]["t1"] != system.meta["key_of"]["t3"]
    assert verdict("paraphrase", "I1") is Status.VIOLATED


def test_canon_has_no_epoch_so_the_users_next_attempt_is_the_first_key():
    """article line 61: the hashed dict is `{"t":tool,"a":args,"s":scope}`, no epoch: the
    user's next attempt (t5, epoch 2) is the same key as the first call."""
    key_of = build(SEED, instance("default")).meta["key_of"]
    assert key_of["t5"] == key_of["t1"] == key_of["t2"]


def test_canon_has_no_version_so_a_revised_prompt_is_a_new_intent_never_a_conflict():
    """article line 61: no canonicalizer version in the key, and `propose` (lines 79-84) has
    no conflict branch: the revised wording is a new key, applied a second time."""
    system = build(SEED, instance("prompt_revision"))
    assert system.meta["key_of"]["t4"] != system.meta["key_of"]["t1"]
    assert not [a for a in system.actions if a.params.get("decision") == "conflict"]
    assert verdict("prompt_revision", "I1") is Status.VIOLATED


# ----- propose(), lines 79-84 ---------------------------------------------------------------
def test_a_record_is_created_recorded_and_never_proposed():
    """article line 84: `rec=Rec(key,tool,args,S.RECORDED); self.log[key]=rec`: a record
    starts RECORDED (the `state: S=S.PROPOSED` default of line 65 is never used), and no
    record ever goes back to "no record"."""
    for name in CLASSES:
        for a, _, old, new in rec_moves(name):
            if old == "PROPOSED":
                assert new == "RECORDED", (name, a.label())
            assert new != "PROPOSED", (name, a.label())


def test_a_duplicate_is_refused_and_its_record_left_unchanged():
    """article lines 81-83: `self.log[key].state = S.REJ_DUP if self.log[key].state==S.PROPOSED
    else self.log[key].state`: inside the set {RECORDED, DISPATCHED, ACKED, UNKNOWN,
    RECONCILING} the state is never PROPOSED, so the write leaves it as it was; the call is
    refused (`return self.log[key], False`)."""
    for name in CLASSES:
        system = build(SEED, instance(name))
        for a in system.actions:
            if a.name == "propose" and a.params["decision"] == "duplicate":
                written = {v for v in a.updates if v.startswith("prop.") or v.startswith("bad.")}
                assert set(a.updates) == written, a.label()
    seen = set()
    for name in CLASSES:
        system, _ = explored(name)
        for a, before, after in transitions(name):
            if a.name == "propose" and a.params["decision"] == "duplicate":
                rec = f"rec.{a.params['key']}"
                seen.add(show(system, before, rec))
                changed = {v for v in before if before[v] != after[v]}
                flags = {v for v in changed if v.startswith("bad.")}  # OWN's, across principals
                assert changed - flags == {f"prop.{a.params['proposal']}"}, a.label()
    assert seen == {"RECORDED", "DISPATCHED", "ACKED", "UNKNOWN"}  # RECONCILING: never reached


def test_a_re_ask_after_acked_is_refused():
    """article line 81: ACKED is in the duplicate set: once the record is ACKED every later
    proposal of the key is refused (the fixture's m2 after an ack loss, line 99)."""
    system = build(SEED, instance("ack_loss"))
    state = replay(
        system,
        T1
        + [
            ("deliver", {"key": "k0", "fence": "1", "outcome": "applied"}),
            ("lose_ack", {"key": "k0", "fence": "1"}),
            ("timeout", {"key": "k0", "worker": "w0", "fence": "1"}),
            ("read_status", {"key": "k0", "worker": "w0", "from": "UNKNOWN"}),
            (
                "propose",
                {
                    "call": "t2",
                    "proposal": "t2",
                    "worker": "w0",
                    "key": "k0",
                    "decision": "duplicate",
                },
            ),
        ],
    )
    assert show(system, state, "rec.k0") == "ACKED"
    assert show(system, state, "prop.t2") == "REJECTED_DUPLICATE"


def test_a_given_up_record_would_be_overwritten_but_none_is_ever_reached():
    """article lines 81 and 84: COMPENSATED, DEAD, REJ_DUP and REJ_CONFLICT are outside the
    duplicate set, so a proposal would overwrite such a record with a fresh RECORDED one
    (`reaccept=overwrite`); but nothing in the fixture writes those states, so the branch
    never runs."""
    for name in CLASSES:
        system, _ = explored(name)
        overwrites = [
            a for a in system.actions if a.params.get("decision") == "accepted (overwrites)"
        ]
        assert overwrites, name
        fired = {a.label() for a, _, _ in transitions(name)}
        assert not fired & {a.label() for a in overwrites}, name


def test_check_then_insert_lets_a_racing_insert_overwrite_a_dispatched_record():
    """article lines 81 and 84: `if key in self.log ...` then `self.log[key]=rec` are two
    steps: two workers that both read "absent" both insert, and the second replaces a
    record already DISPATCHED (an edge the spec does not have: LEGAL)."""
    moves = {(a.name, old, new) for a, _, old, new in rec_moves("reorder")}
    assert ("insert", "DISPATCHED", "RECORDED") in moves
    assert verdict("reorder", "LEGAL") is Status.VIOLATED


# ----- the record states: the enum of lines 56-58 against what is ever written -------------
def test_seed_reaches_only_the_states_the_fixture_writes():
    """article lines 57-58 declare RECONCILING, COMPENSATED, DEAD, REJ_DUP, REJ_CONFLICT, but
    only lines 84/91/109 (`S.RECORDED`), 86 (`S.DISPATCHED`), 88 (`S.UNKNOWN`) and 91
    (`S.ACKED`) write a state: the rest are never reached on any instance."""
    reached = set()
    for name in CLASSES:
        system, states = explored(name)
        recs = [v.name for v in system.variables if v.family == "rec"]
        reached |= {show(system, st, r) for st in states for r in recs}
    assert reached == WRITTEN


def test_seed_never_writes_the_lifecycles_other_moves():
    """article lines 76-94: the fixture's System has propose, dispatch, finish_unknown,
    reconcile and execute only: no blind retry, no RECONCILING step, no compensation, no
    dead letter, no lease takeover, no ack handler."""
    names = set()
    for name in CLASSES:
        names |= {a.name for a in build(SEED, instance(name)).actions}
    assert not names & {
        "retry",
        "reconcile",
        "compensate",
        "dead_letter",
        "takeover",
        "receive_ack",
        "restart",
        "expire_lease",
    }


# ----- dispatch(), lines 85-86 --------------------------------------------------------------
def test_one_fence_counter_is_written_but_never_sent():
    """article line 86: `self.fence += 1; rec.fence=self.fence`, but `execute` (line 94)
    calls `self.ext.apply(rec, idem)` and `External.apply` (lines 69-74) never reads
    `rec.fence`: even a provider that could fence learns nothing, so a rolled-back request
    lands after its successor's dispatch (FENCE)."""
    system = build(SEED.with_knobs({"provider_fences": "yes"}), instance("crash_before_dispatch"))
    assert not [v for v in system.variables if v.family == "pfence"]
    assert not [a for a in system.actions if a.params.get("outcome") == "fenced out"]
    assert verdict("crash_before_dispatch", "FENCE") is Status.VIOLATED


def test_dispatch_never_reads_the_log():
    """article line 86: `rec.state=S.DISPATCHED` whatever the log says (the caller dispatches
    because `propose` returned ok to it, line 103-104): given a log that could hold a cancel
    (`cancel_api=log`), the memory guard still sends the cancelled record."""
    moves = {(a.name, old, new) for a, _, old, new in rec_moves("cancel", "seed+cancel_api=log")}
    assert ("dispatch", "REJECTED_CONFLICT", "DISPATCHED") in moves


# ----- execute() and External, lines 67-74 and 92-94 ---------------------------------------
def test_execute_sends_the_semantic_key_and_the_provider_answers_the_saved_ok():
    """article line 93: `idem = rec.key`; line 71: `if idem in self.known: return
    self.known[idem]`: a second delivery of the same request is answered, not applied."""
    system, _ = explored("transport_retry")
    assert "seen.k0" in {v.name for v in system.variables}
    outcomes = {
        a.params["outcome"] for a, _, _ in transitions("transport_retry") if a.name == "deliver"
    }
    assert outcomes == {"applied", "deduplicated"}
    assert verdict("transport_retry", "I1") is Status.HOLDS


def test_the_ack_is_never_written_so_a_normal_run_ends_dispatched():
    """article lines 94 and 112: `return self.ext.apply(rec, idem)` and `sys.execute(rec)`:
    the "ok" is returned and nobody stores it. With no fault, every run ends with the effect
    applied once and the record still DISPATCHED (DEADLOCK: never settled)."""
    system, states = explored("ack_loss", ack_losses=0)
    ends = [st for st in states if not any(system.enabled(a, st) for a in system.actions)]
    assert ends
    for st in ends:
        assert show(system, st, "rec.k0") == "DISPATCHED" and st["applied.k0"] == 1
    assert "discard_ack" in {a.name for a, _, _ in transitions("ack_loss", ack_losses=0)}
    assert verdict("ack_loss", "DEADLOCK") is Status.VIOLATED


def test_acked_is_written_only_by_reconcile():
    """article line 91: `rec.state = S.ACKED if external_has_effect else S.RECORDED` is the
    only write of ACKED: every move to ACKED is the status read, straight from UNKNOWN."""
    seen = set()
    for name in CLASSES:
        for a, _, old, new in rec_moves(name):
            if new == "ACKED":
                seen.add((a.name, old))
    assert seen == {("read_status", "UNKNOWN")}


# ----- finish_unknown() and reconcile(), lines 87-91 ----------------------------------------
def test_reconcile_writes_acked_straight_from_unknown_skipping_reconciling():
    """article lines 88 and 91: `rec.state=S.UNKNOWN`, then `rec.state = S.ACKED if
    external_has_effect ...`: UNKNOWN -> ACKED is not an edge of the article's own state
    machine (it goes through RECONCILING), so P2 and LEGAL break on the ack-loss class."""
    moves = {(a.name, old, new) for a, _, old, new in rec_moves("ack_loss")}
    assert ("timeout", "DISPATCHED", "UNKNOWN") in moves
    assert ("read_status", "UNKNOWN", "ACKED") in moves
    assert verdict("ack_loss", "P2") is Status.VIOLATED
    assert verdict("ack_loss", "LEGAL") is Status.VIOLATED


def test_reconcile_without_the_effect_sends_the_record_back_to_recorded():
    """article line 91: `... else S.RECORDED`: an absent effect makes the record RECORDED
    again and it is dispatched again; with a provider that ignores the key the late first
    request and the second both apply (I1)."""
    moves = {(a.name, old, new) for a, _, old, new in rec_moves("provider_non_idempotent")}
    assert ("read_status", "UNKNOWN", "RECORDED") in moves
    assert verdict("provider_non_idempotent", "I1") is Status.VIOLATED


# ----- the crash branch of run(), lines 108-110 ---------------------------------------------
def test_the_restart_rolls_a_dispatched_record_back_and_dispatches_it_again():
    """article lines 108-110: `rec.state=S.RECORDED`, then `sys.dispatch(rec);
    sys.execute(rec)`: the restart resumes the record from the log by writing DISPATCHED back
    to RECORDED (not an edge of the spec: LEGAL) and dispatches it under a new fence. The
    intent is not lost (FULFIL holds) and the provider dedupes the key (I1 holds)."""
    moves = {(a.name, old, new) for a, _, old, new in rec_moves("crash_before_dispatch")}
    assert ("rollback", "DISPATCHED", "RECORDED") in moves
    assert verdict("crash_before_dispatch", "LEGAL") is Status.VIOLATED
    assert verdict("crash_before_dispatch", "FULFIL") is Status.HOLDS
    assert verdict("crash_before_dispatch", "I1") is Status.HOLDS


def test_a_memory_wipe_is_not_a_restart_so_nothing_resumes_the_record():
    """article lines 108-110 are the fixture's only recovery and run on its restart; no code
    reads the log for work otherwise, so after a wipe (P4) a RECORDED record stays unowned
    and the model's re-ask is refused as a duplicate (line 81)."""
    system = build(SEED, instance("crash_before_dispatch"), wipe=True)
    state = replay(
        system,
        T1[:2]
        + [
            ("wipe", {}),
            (
                "propose",
                {
                    "call": "t2",
                    "proposal": "t2",
                    "worker": "w0",
                    "key": "k0",
                    "decision": "duplicate",
                },
            ),
        ],
    )
    assert show(system, state, "rec.k0") == "RECORDED" and show(system, state, "owner.k0") == "none"
    assert system.fault_only(state)  # only a crash, then its restart, could resume it
    assert verdict("crash_before_dispatch", "P4") is Status.VIOLATED


# ----- what the fixture has no code for ----------------------------------------------------
def test_there_is_no_cancel_api_so_a_cancel_reaches_nothing():
    """article lines 76-94: the fixture's System has no cancel method. The user's cancel
    before dispatch changes no record (REJECTED_CONFLICT is never written, LEGAL holds) and
    the refund is applied anyway (P3)."""
    for a, before, after in transitions("cancel"):
        if a.name == "cancel":
            assert before["rec.k0"] == after["rec.k0"] and after["cancelled.k0"] == 1
    assert verdict("cancel", "P3") is Status.VIOLATED
    assert verdict("cancel", "LEGAL") is Status.HOLDS


def test_there_is_no_lease_so_clock_skew_has_nothing_to_expire():
    """article lines 63-65: `Rec` holds key, tool, args, state and fence: no owner, no lease,
    no expiry; the caller's claim is the `rec` it holds (line 101). The zombie class's fault
    has nothing to act on."""
    system = build(SEED, instance("zombie"))
    assert instance("zombie").faults["lease_expiries"] >= 1
    assert not [a for a in system.actions if a.name == "expire_lease"]


# ----- the fixture's own three runs, lines 96-118 --------------------------------------------
RUNS = {  # inject -> (instance, steps after T1, m2's proposal, the record's final state)
    "none": (
        "reorder",
        [
            ("deliver", {"key": "k0", "fence": "1", "outcome": "applied"}),
            ("discard_ack", {"key": "k0", "worker": "w0", "fence": "1"}),
        ],
        "t2race",
        "DISPATCHED",
    ),
    "ack_loss": (
        "ack_loss",
        [
            ("deliver", {"key": "k0", "fence": "1", "outcome": "applied"}),
            ("lose_ack", {"key": "k0", "fence": "1"}),
            ("timeout", {"key": "k0", "worker": "w0", "fence": "1"}),
            ("read_status", {"key": "k0", "worker": "w0", "from": "UNKNOWN"}),
        ],
        "t2",
        "ACKED",
    ),
    "crash_before_dispatch": (
        "crash_before_dispatch",
        [
            ("crash", {"worker": "w0"}),
            ("rollback", {"worker": "w0"}),
            ("dispatch", {"key": "k0", "worker": "w0", "fence": "2"}),
            ("deliver", {"key": "k0", "fence": "2", "outcome": "applied"}),
            ("discard_ack", {"key": "k0", "worker": "w0", "fence": "2"}),
        ],
        "t2",
        "DISPATCHED",
    ),
}


@pytest.mark.parametrize("inject", sorted(RUNS))
def test_the_fixtures_three_runs_end_as_it_prints_them(inject):
    """article lines 96-118: `run(7, inj)` for inj in ack_loss, crash_before_dispatch, none
    prints accepted=1, effects=1 and the record's state: ACKED after the ack loss (line 107),
    DISPATCHED otherwise (lines 110 and 112 never store the "ok"); m2 is refused (line 103).
    In the crash run the model's dispatch also sent fence 1's request (the fixture's dispatch
    and execute are two calls; the model's dispatch writes and sends in one step)."""
    name, steps, m2, final = RUNS[inject]
    system = build(SEED, instance(name))
    m2_call = {"t2race": "t2", "t2": "t2"}[m2]
    state = replay(
        system,
        T1
        + steps
        + [
            (
                "propose",
                {
                    "call": m2_call,
                    "proposal": m2,
                    "worker": "w0",
                    "key": "k0",
                    "decision": "duplicate",
                },
            )
        ],
    )
    assert show(system, state, "rec.k0") == final
    assert state["applied.k0"] == 1
    assert show(system, state, "prop.t1") == "RECORDED"
    assert show(system, state, f"prop.{m2}") == "REJECTED_DUPLICATE"
