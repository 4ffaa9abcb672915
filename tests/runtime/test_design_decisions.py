"""The library's decisions are the design's: for each shipped design file, in every reachable
state of the model built from it (the instances it was judged on, as far as a few thousand
states), what the model lets the record's holder do with an UNKNOWN or RECONCILING record,
and what a status read or a replay's answer leads to, equals what `toolcommit.runtime.design`
decides in the same situation. The situations come from the model's states, not a table."""

import functools
import json
from collections import deque
from importlib import resources

import pytest

from toolcommit.checker.design.file import config_for
from toolcommit.model.design_file import design_of
from toolcommit.model.environment import instance_in
from toolcommit.model.expr import evaluate
from toolcommit.model.instance import instance
from toolcommit.model.semantics import build
from toolcommit.runtime import IntentLog
from toolcommit.runtime import design as D

SHIPPED = D.SHIPPED
INSTANCES = ("ack_loss", "transport_retry", "zombie", "crash_before_dispatch", "default")
LIMIT = 1500


def _doc(name):
    return json.loads(
        resources.files("toolcommit.spec").joinpath(f"designs/{name}.json").read_text("utf-8")
    )


def _reachable(system):
    seen, todo = {tuple(sorted(system.init.items()))}, deque([dict(system.init)])
    while todo and len(seen) < LIMIT:
        s = todo.popleft()
        yield s
        for a in system.actions:
            if system.enabled(a, s):
                n = system.step(a, s)
                t = tuple(sorted(n.items()))
                if t not in seen:
                    seen.add(t)
                    todo.append(n)


def _label(system, var, value):
    return system.var(var).show(value)


def _worker_moves(system, s, key):
    """The non-fault moves of worker w0 on `key` enabled in `s`, by library name."""
    out = set()
    for a in system.actions:
        if a.fault or a.params.get("key") != key or a.params.get("worker") not in (None, "w0"):
            continue
        if a.cut and evaluate(a.guard, s):
            return None  # the bound cuts this state: not judged
        if not system.enabled(a, s):
            continue
        if a.name == "reconcile":
            out.add("replay" if a.params.get("replay") == "under the same key" else "seal")
        elif a.name in ("dead_letter", "read_status", "retry", "compensate"):
            out.add({"dead_letter": "park"}.get(a.name, a.name))
    return out


@functools.lru_cache(maxsize=None)
def _situations(name):
    return list(_walk(name))


def _walk(name):
    doc = _doc(name)
    design, env = design_of(doc)
    lib = D.load(name)
    for inst in [i for i in INSTANCES if i in doc["instances"]]:
        system = build(config_for(design, env), instance_in(instance(inst), env))
        names = {v.name for v in system.variables}
        for s in _reachable(system):
            if s["owner.k0"] != 0:
                continue
            yield lib, system, s, names, inst


@pytest.mark.parametrize("name", SHIPPED)
def test_unknown_and_reconciling_moves_are_the_designs(name):
    judged = {"UNKNOWN": 0, "RECONCILING": 0}
    for lib, system, s, names, inst in _situations(name):
        state = _label(system, "rec.k0", s["rec.k0"])
        moves = _worker_moves(system, s, "k0")
        if moves is None or state not in judged:
            continue
        window_open = "win.k0" not in names or s["win.k0"] == 0
        inflight = any(
            _label(system, v, s[v]) in ("INFLIGHT", "DELAYED")
            for v in names
            if v.startswith("msg.k0.")
        )
        # where the seal is a message (seal_losses), the model's read waits for its ack;
        # the library's fenced read is the seal itself, one conditional request
        sealing = "seal.k0" in names and _label(system, "seal.k0", s["seal.k0"]) in ("SENT", "LOST")
        if state == "UNKNOWN":
            assert moves == {D.unknown_action(lib, window_open)}, (inst, s)
        else:
            assert ("read_status" in moves) == (D.may_read(lib, not inflight) and not sealing), (
                inst,
                s,
            )
        judged[state] += 1
    assert judged["UNKNOWN"] > 0 and judged["RECONCILING"] > 0, judged


@pytest.mark.parametrize("name", SHIPPED)
def test_what_a_read_and_a_replays_answer_lead_to_are_the_designs(name):
    checked = set()
    for lib, system, s, names, inst in _situations(name):
        for a in system.actions:
            if a.params.get("key") != "k0" or not system.enabled(a, s):
                continue
            before = _label(system, "rec.k0", s["rec.k0"])
            after = _label(system, "rec.k0", system.step(a, s)["rec.k0"])
            if a.name == "read_status" and before == "RECONCILING":
                assert after == D.after_read(lib, s["applied.k0"] > 0), (inst, a.label())
                checked.add("read")
            elif a.name in ("receive_ack", "receive_error") and before == "RECONCILING":
                assert after == D.after_replay(lib, a.name == "receive_ack"), (inst, a.label())
                checked.add(a.name)
    assert "read" in checked


@pytest.mark.parametrize("name", SHIPPED)
def test_the_ticket_sends_what_the_design_sends(tmp_path, name):
    lib = D.load(name)
    log = IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider=name)
    t = log.dispatch(log.propose("t1", "refund", {"amount": 1}, "s", principal="user:1").key)
    assert (t.idempotency_key is not None) == (lib.knobs["idempotency_key"] == "semantic_key")
    assert (t.fence is not None) == (lib.knobs["fencing"] == "on")
    assert t.via == lib.knobs["status_via"]
    assert t.sdk_retries == (lib.knobs["sdk_retries"] == "on")
    assert log.design.replay_window == D.load(name).replay_window
    log.close()


def test_a_log_without_a_provider_names_the_choices(tmp_path):
    with pytest.raises(D.DesignError, match="ideal, stripe, email, fenced-store"):
        IntentLog.sqlite(str(tmp_path / "i.db"), "w1")
    with pytest.raises(D.DesignError, match="neither a shipped design"):
        IntentLog.sqlite(str(tmp_path / "i.db"), "w1", provider="strip")


def test_a_design_the_library_does_not_implement_is_refused_naming_the_knob(tmp_path):
    doc = _doc("stripe")
    doc["knobs"]["on_unknown"] = "blind_retry"
    path = tmp_path / "weak.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(D.DesignError, match="on_unknown=blind_retry"):
        D.load(str(path))


@pytest.mark.parametrize(
    "knob, value", [("identity", "args"), ("principal", "left_out"), ("told", "on_ack")]
)
def test_a_design_naming_an_identity_the_library_does_not_keep_is_refused(tmp_path, knob, value):
    """Every shipped design names the identity it needs (schema, part, caller: the model's
    instances reask_reworded, two_principals and caller_gives_up break without each); a
    file naming another is refused, naming the knob. A file without these knobs (written
    before they existed) is read as the library keeps them."""
    doc = _doc("stripe")
    assert {k: doc["knobs"][k] for k in D.IDENTITY} == {k: v[0] for k, v in D.IDENTITY.items()}
    doc["knobs"][knob] = value
    path = tmp_path / "weak.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(D.DesignError, match=f"{knob}={value}"):
        D.load(str(path))
    for k in D.IDENTITY:
        del doc["knobs"][k]
    path.write_text(json.dumps(doc))
    assert not set(D.IDENTITY) & set(D.load(str(path)).knobs)
