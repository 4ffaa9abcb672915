"""Renderers of counterexamples: text (explained like Elle), ITF JSON, Mermaid, Python.

Each renderer reads a `Counterexample` alone (it carries its variables' value names, its
keys and workers) plus the texts of `spec/protocol.json` (each action's sentence) and the
property table (`toolcommit.model.properties`: meanings, monitor flags, how a breach is
read); none changes or computes anything. `parse_itf` reads an ITF trace
back into a `Counterexample`, so stored counterexamples can be replayed.
"""

from __future__ import annotations

import json
import re
from typing import Optional

from toolcommit.checker.engines.trace import Counterexample, Step, context
from toolcommit.checker.render.fit import DEFAULT, fit
from toolcommit.model.errors import InputError
from toolcommit.model.knobs import (
    complete_assumptions,
    complete_knobs,
    stored_assumptions,
    stored_knobs,
)
from toolcommit.model.properties import Property, effects, prop
from toolcommit.model.system import System
from toolcommit.spec import protocol

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"


def _row(name: str) -> Optional[Property]:
    """`name`'s row of the property table; None for a name outside it (a test's label)."""
    try:
        return prop(name)
    except KeyError:
        return None


def _show(cx: Counterexample, name: str, value: int) -> str:
    return cx.var(name).show(value)


def changes(cx: Counterexample, before, after) -> list[str]:
    """`name: old -> new` for every variable that differs, monitors last."""
    out = [
        f"{n}: {_show(cx, n, before[n])} -> {_show(cx, n, after[n])}"
        for n in after
        if before[n] != after[n]
    ]
    return sorted(out, key=lambda line: line.startswith("bad."))


def sentence(step: Step) -> str:
    """The step's sentence from `spec/protocol.json`, filled in with its parameters."""
    params = {
        "call": "?",
        "worker": "?",
        "key": "?",
        "fence": "?",
        "decision": "?",
        "outcome": "?",
        "token": "?",
        "lost": "?",
        **step.params,
    }
    text = (protocol().sentence(step.action) or step.label()).format(**params)
    return text + (" [fault]" if step.fault else "")


def render_text(cx: Counterexample, width: int = DEFAULT) -> str:
    """An explanation: the property, who the actors are, the steps (each wrapped under its
    number), where it breaks; no line wider than `width`."""
    meaning = protocol().properties.get(cx.property, {}).get("meaning", "")
    bounds = ", ".join(f"{k}={v}" for k, v in cx.bounds.items() if v)
    lines = [
        f"{cx.property} VIOLATED on instance {cx.instance} under {cx.config}",
        f"  {cx.property}: {meaning}",
        f"  found by the {cx.engine} engine: {cx.length} steps, shortest for this instance"
        f" (bounds: {bounds})",
    ]
    lines += [f"  assumes {a}" for a in cx.assumes]
    lines += ["", "Let:"]
    for k in cx.keys:
        lines.append(f"  {k.name} = semantic key {k.ident} (calls {', '.join(k.callers)})")
    lines.append(f"  workers = {', '.join(cx.workers)}")
    lines += ["", "Then:"]
    for i, step in enumerate(cx.steps[1:], start=1):
        lines.append(f"  {i:>2}. {sentence(step)}")
        for c in changes(cx, cx.steps[i - 1].state, step.state):
            lines.append(f"        {c}")
    lines += ["", "However:", f"  {_however(cx)}"]
    return fit("\n".join(lines) + "\n", width)


def _however(cx: Counterexample) -> str:
    last = cx.steps[-1].state
    if cx.note:
        return cx.note + "."
    row = _row(cx.property)
    if row is not None and row.reads == "effects":
        applied, comp = effects({v.name: v.family for v in cx.variables}, last)
        where = ", ".join(f"{k}: {v}" for k, v in applied.items())
        return (
            f"after step {cx.length} the one user intent has {sum(applied.values())} external "
            f"effects ({where}; compensated: {comp}), but {cx.property} allows one: a contradiction."
        )
    meaning = protocol().properties[cx.property]["meaning"]
    culprit = _culprit(cx)
    if culprit:
        return f"{cx.property} requires: {meaning}. But {culprit}: a contradiction."
    return f"after step {cx.length}, {cx.property} is broken: {meaning}."


def _culprit(cx: Counterexample) -> str:
    """For a transition property: the step that set its monitor, and what that step did."""
    row = _row(cx.property)
    flag = row.flag if row is not None else ""
    if not flag or flag not in cx.steps[-1].state:
        return ""
    for i in range(1, len(cx.steps)):
        before, step = cx.steps[i - 1].state, cx.steps[i]
        if before[flag] == 0 and step.state[flag] == 1:
            moved = [
                c for c in changes(cx, before, step.state) if c.startswith(("rec.", "applied."))
            ]
            what = f" changes {'; '.join(moved)}" if moved else " happens"
            return f"step {i}, {step.label()},{what}"
    return ""


# ----- ITF ------------------------------------------------------------------------------
def _families(cx: Counterexample) -> list[str]:
    return list(dict.fromkeys(v.family for v in cx.variables))


def _itf_value(decl, value: int):
    return decl.labels[value] if decl.labels else {"#bigint": str(value)}


def _itf_state(cx: Counterexample, state) -> dict:
    out: dict = {}
    for decl in cx.variables:
        value = _itf_value(decl, state[decl.name])
        if not decl.index:
            out[decl.family] = value
            continue
        key = decl.index[0] if len(decl.index) == 1 else {"#tup": list(decl.index)}
        out.setdefault(decl.family, {"#map": []})["#map"].append([key, value])
    return out


def render_itf(cx: Counterexample) -> dict:
    """The counterexample as an ITF trace (Apalache/Quint Informal Trace Format)."""
    meta = {
        "format": "ITF",
        "format-description": ITF_DESCRIPTION,
        "source": "toolcommit spec/protocol.json",
        "description": cx.note or protocol().properties.get(cx.property, {}).get("meaning", ""),
        "property": cx.property,
        "config": cx.config,
        "instance": cx.instance,
        "engine": cx.engine,
        "bounds": dict(cx.bounds),
        "knobs": stored_knobs(cx.knobs),
        "assumptions": stored_assumptions(cx.assumptions),
    }
    if cx.assumes:
        meta["assumes"] = list(cx.assumes)
    states = []
    for i, step in enumerate(cx.steps):
        st = {"#meta": {"index": i, "action": step.label(), "fault": step.fault}}
        st["mbt::actionTaken"] = step.action
        st["mbt::nondetPicks"] = dict(step.params)
        st.update(_itf_state(cx, step.state))
        states.append(st)
    return {"#meta": meta, "vars": _families(cx), "states": states}


def itf_json(cx: Counterexample) -> str:
    """ITF JSON text: the header pretty-printed, then one state per line (diff-friendly)."""
    doc = render_itf(cx)
    states = ",\n".join("  " + json.dumps(st, separators=(",", ":")) for st in doc["states"])
    return (
        '{\n "#meta": '
        + json.dumps(doc["#meta"], sort_keys=True)
        + ',\n "vars": '
        + json.dumps(doc["vars"])
        + ',\n "states": [\n'
        + states
        + "\n ]\n}\n"
    )


def _decode(system: System, family: str, raw, out: dict) -> None:
    decls = [v for v in system.variables if v.family == family]
    if len(decls) == 1 and not decls[0].index:
        out[decls[0].name] = _parse_value(decls[0], raw)
        return
    entries = {json.dumps(k, sort_keys=True): v for k, v in raw["#map"]}
    for d in decls:
        key = d.index[0] if len(d.index) == 1 else {"#tup": list(d.index)}
        out[d.name] = _parse_value(d, entries[json.dumps(key, sort_keys=True)])


def _parse_value(decl, raw) -> int:
    if decl.labels:
        return decl.labels.index(raw)
    return int(raw["#bigint"])


def _requests(system: System):
    """How many user requests the instance `system` was built for has (None: not known)."""
    inst = system.meta.get("instance")
    return None if inst is None else len(inst.requests())


def parse_itf(doc: dict, system: System, path: str = "") -> Counterexample:
    """Read an ITF trace written by `render_itf` back into a Counterexample of `system`
    (which names the values and supplies the keys, workers and wipe flag)."""
    try:
        meta = doc["#meta"]
        steps = []
        for st in doc["states"]:
            state: dict = {}
            for fam in doc["vars"]:
                _decode(system, fam, st[fam], state)
            steps.append(
                Step(
                    st["mbt::actionTaken"],
                    dict(st["mbt::nondetPicks"]),
                    state,
                    bool(st["#meta"].get("fault")),
                )
            )
        description = meta.get("description", "")
        meaning = protocol().properties.get(meta["property"], {}).get("meaning")
        return Counterexample(
            meta["property"],
            meta["config"],
            meta["instance"],
            meta["bounds"],
            complete_knobs(
                meta["knobs"], meta["bounds"], _requests(system), system.meta.get("instance")
            ),
            complete_assumptions(meta["assumptions"]),
            tuple(steps),
            engine=meta["engine"],
            assumes=tuple(meta.get("assumes", ())),
            note=description if description != meaning else "",
            **context(system),
        )
    except (KeyError, ValueError, TypeError, IndexError) as e:
        raise InputError(
            f"not a toolcommit ITF trace ({type(e).__name__}: {e}); "
            "write one with `toolcommit check --write`",
            path,
        ) from None


# ----- Mermaid ------------------------------------------------------------------------------
HUMAN = ("review", "approve")  # the approval gate's actions: a participant of their own


def participants(cx: Counterexample) -> list[tuple[str, str]]:
    """(id, name) of the diagram's actors, left to right: the article's participants, one
    executor per worker, the human approver where the gate acts."""
    out = [("U", "UserIntentScope"), ("M", "Model/Planner"), ("L", "IntentLog")]
    out += [(w.upper(), f"Executor {w}") for w in cx.workers]
    if any(s.action in HUMAN for s in cx.steps):
        out.append(("H", "HumanApprover"))
    return out + [("E", "ExternalAPI")]


def render_mermaid(cx: Counterexample) -> str:
    """A Mermaid sequence diagram with the article's participants."""
    lines = ["sequenceDiagram"] + [f"  participant {i} as {n}" for i, n in participants(cx)]
    for step in cx.steps[1:]:
        lines += [f"  {line}" for line in _arrows(cx, step)]
    lines.append(f"  Note over L,E: {cx.property} violated after step {cx.length}")
    return "\n".join(lines) + "\n"


_MESSAGE = re.compile(r"^(\w+)(-->>|->>)(\w+): (.*)$")
_NOTE = re.compile(r"^Note over (\w+)(?:,(\w+))?: (.*)$")


def messages(cx: Counterexample, step: Step) -> list[tuple[str, str, str, str]]:
    """The step as (kind, from, to, text): kind "call" (a request, a write), "reply" (an
    answer coming back) or "note" (over the actors from..to); the same the Mermaid diagram
    draws, for renderers that draw their own (HTML)."""
    out = []
    for line in _arrows(cx, step):
        m = _MESSAGE.match(line)
        if m:
            out.append(
                ("reply" if m.group(2) == "-->>" else "call", m.group(1), m.group(3), m.group(4))
            )
            continue
        n = _NOTE.match(line)
        out.append(("note", n.group(1), n.group(2) or n.group(1), n.group(3)))
    return out


def _arrows(cx: Counterexample, step: Step) -> list[str]:
    p = step.params
    x = p.get("worker", "w0").upper()
    k, f = p.get("key", ""), p.get("fence", "")
    a = step.action
    table = {
        "propose": [
            f"M->>{x}: tool_call id={p.get('call')}",
            f"{x}->>L: propose {k}",
            f"L-->>{x}: {p.get('decision')}",
        ],
        "check": [f"M->>{x}: tool_call id={p.get('call')}", f"{x}->>L: read {k}: absent"],
        "insert": [f"{x}->>L: insert {k} RECORDED (blind)"],
        "dispatch": [f"{x}->>L: {k} DISPATCHED fence={f}", f"{x}->>E: request {k} fence={f}"],
        "deliver": [f"Note over E: {k} fence={f}: {p.get('outcome')}"],
        "receive_ack": [f"E-->>{x}: ack {k} fence={f}", f"{x}->>L: {k} -> {_rec(cx, step, k)}"],
        "discard_ack": [f"E-->>{x}: ack {k} fence={f} (nothing written)"],
        "timeout": [f"{x}->>L: {k} UNKNOWN (timeout)"],
        "retry": [f"{x}->>E: blind retry {k} fence={f}"],
        "reconcile": [
            f"{x}->>E: seal/status read {k} fence={f}" if f else f"{x}->>L: {k} RECONCILING"
        ],
        "read_status": [f"E-->>{x}: status {k}", f"{x}->>L: {k} -> {_rec(cx, step, k)}"],
        "compensate": [f"{x}->>E: compensate {k}", f"{x}->>L: {k} COMPENSATED"],
        "compensate_after_seal": [
            f"E-->>{x}: status {k}: {p.get('status')}",
            f"{x}->>L: {k} -> {_rec(cx, step, k)} ({p.get('outcome')})",
        ],
        "review": [
            f"H->>L: take up {k}" + (f", seal fence={f}" if f else ""),
            *([f"L->>E: seal {k} fence={f}"] if f else []),
        ],
        "approve": [f"E-->>H: status {k}: {p.get('status')}", f"H->>L: {p.get('decision')}"],
        "dead_letter": [f"{x}->>L: {k} DEAD_LETTER"],
        "takeover": [f"{x}->>L: take over {k} -> {_rec(cx, step, k)}"],
        "cancel": [
            f"U->>L: cancel {k}"
            if "reaches" not in p
            else f"Note over U: cancel {k} (no cancel API)"
        ],
        "revise_prompt": ["U->>M: revise prompt (canonicalizer v2)"],
        "new_intent": [f"U->>M: the same request again (new intent {p.get('intent')})"],
        "lose_ack": [f"Note over E,{x}: ack {k} fence={f} lost"],
        "delay": [f"Note over {x},E: request {k} fence={f} delayed"],
        "redeliver": [f"{x}->>E: same request {k} fence={f} again (transport retry)"],
        "expire_lease": [f"Note over L,{x}: lease of {p.get('worker')} on {k} expires (zombie)"],
        "crash": [f"Note over {x}: {p.get('worker')} crashes"],
        "restart": [f"Note over {x}: {p.get('worker')} restarts"],
        "rollback": [
            f"Note over {x}: {p.get('worker')} restarts",
            f"{x}->>L: unowned records -> RECORDED",
        ],
        "wipe": ["Note over M,L: planner memory wiped"],
        "receive_error": [f"E-->>{x}: error {k} fence={f}", f"{x}->>L: {k} -> {_rec(cx, step, k)}"],
        "fail_before_apply": [f"E-->>{x}: error {k} fence={f}, not applied"],
        "fail_after_apply": [f"E-->>{x}: error {k} fence={f}, applied"],
        "expire_key": [f"Note over E: idempotency key {p.get('token')} expires"],
        "expire_request": [f"Note over E: request {k} fence={f} past its deadline, refused"],
        "deliver_seal": [f"Note over E: seal {k} received"],
        "lose_seal": [f"Note over E,{x}: seal {k} lost"],
        "reseal": [f"{x}->>E: seal {k} again"],
        "stale_read": [
            f"E-->>{x}: stale status {k}: absent",
            f"{x}->>L: {k} -> {_rec(cx, step, k)}",
        ],
        "failover": [f"Note over L: failover loses {k}'s last write"],
    }
    return table.get(a, [f"Note over L: {step.label()}"])


def _rec(cx: Counterexample, step: Step, key: str) -> str:
    name = f"rec.{key}"
    return _show(cx, name, step.state[name]) if name in step.state else "?"


# ----- Python ----------------------------------------------------------------------------
def render_python(cx: Counterexample) -> str:
    """A pytest test that replays `cx` through the model and asserts it still breaks
    its property: paste it into a test suite to pin the bug (or its fix)."""
    name = "".join(c if c.isalnum() else "_" for c in f"{cx.config}_{cx.instance}_{cx.property}")
    steps = "".join(f"        ({s.action!r}, {dict(s.params)!r}),\n" for s in cx.steps[1:])
    wipe = ", wipe=True" if cx.wipe else ""
    row = _row(cx.property)
    if row is not None and row.state_predicate:
        check = f'    assert {cx.property!r} in run["violated"]\n'
    elif row is not None and row.reads == "dead_end":
        check = '    assert run["enabled"] == 0 and not run["settled"]\n'
    else:
        check = "    # PROGRESS, P4 and P5 are judged on the whole graph: this pins the ordering\n"
    return (
        f"def test_{name}_counterexample():\n"
        f'    """{cx.property} on {cx.instance} under {cx.config}: {cx.length} steps '
        f'({cx.engine} engine)."""\n'
        "    from toolcommit.checker.engines.trace import replay_program\n"
        f"    run = replay_program({cx.config!r}, {cx.instance!r}, [\n{steps}    ]{wipe},\n"
        f"                         bounds={dict(cx.bounds)!r})\n" + check
    )
