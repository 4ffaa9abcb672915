"""A small log writer: a model trace (a `Counterexample`) as the intent log it would leave.

This is how the model checker and the log checker meet: every stored counterexample becomes a
log that `toolcommit validate` must reject, and every happy path of the recommended model a
log it must accept. Pure: a trace and its `System` in, a list of event dicts out (write them
with `events_to_jsonl`).

What each model step writes, in the public log format (`spec/log.schema.json`)
-----------------------------------------------------------------------------------------
- ``propose`` / ``insert``: a ``proposal`` line by the worker (``writer`` = the worker's
  name), with the call's ``call_id`` and epoch, ``tool``/``scope`` from the intent (the scope
  ends in ``#<intent>`` where the runtime mints an intent id per user request: the
  system's ``scope_tag``) and
  ``args`` from the call's *form* in `spec/instances.json` (so a paraphrase is written with
  its own literal arguments and the checker's canonicalizer, not the model's key, decides
  that it is one intent). ``decision`` is ``accepted`` for every model decision that writes a
  record (accepted, overwrites, replayed, accepted as next epoch), else ``duplicate`` (a
  hold's answer to a re-ask included, `reask=hold`) or ``conflict``. ``check`` (the first half of check-then-insert) only reads: no line.
- any step that changes ``rec.<key>``: one ``transition`` line per changed key, ``from`` and
  ``to`` the two record states, ``fence`` = ``fence.<key>`` after the step (when non-zero),
  written by the step's worker (``user`` for ``cancel``). The line says exactly what the
  model did, legal or not: an illegal step (what LEGAL and P2 catch) is written as is.
- ``deliver`` with outcome ``applied``: an ``effect`` line by the writer ``provider``, kind
  ``apply``, the request's ``fence``, the arguments of the proposal that last wrote the
  key's record, and a fresh ``effect_id``. A compensation (``comp.<key>`` grows) is an
  ``effect`` of kind ``compensate``. Deduplicated or fenced-out deliveries write nothing.
- ``crash`` / ``restart``: those lines by the worker; ``wipe`` (P4's adversary): a
  ``crash`` line for every worker. Network and lease faults (``delay``, ``lose_ack``,
  ``redeliver``, ``expire_lease``, ``revise_prompt``) write nothing: no process logs them.

Every writer numbers its lines ``seq`` 1, 2, ...; ``ts`` is a fake, deterministic clock
(one second per line), never read by the checker.

Limitations
-----------
The model's I1 counts every effect of the instance as one user intent; the log checker can
only group effects by canonical intent. The "revised" form (``"20.00"`` plus a currency, a
canonicalizer-v2 change) is another intent under canonicalizer v1, so a double effect across
a prompt revision is not an I1 the log can show.

Examples
--------
>>> from toolcommit.model import instance, knobs, semantics
>>> from toolcommit.checker.engines.trace import from_actions, find_action
>>> system = semantics.build(knobs.preset("naive"), instance.instance("cancel"))
>>> acts = [find_action(system, n, p) for n, p in [
...     ("check", {"call": "t1", "proposal": "t1", "worker": "w0", "key": "k0",
...                "decision": "absent"}),
...     ("insert", {"call": "t1", "proposal": "t1", "worker": "w0", "key": "k0"}),
...     ("cancel", {"key": "k0"})]]
>>> for ev in counterexample_to_events(from_actions(system, acts, "P3", "doc"), system):
...     print(ev["writer"], ev["type"], ev.get("decision") or ev["from"] + " -> " + ev["to"])
w0 proposal accepted
w0 transition PROPOSED -> RECORDED
user transition RECORDED -> REJECTED_CONFLICT
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Iterable, Mapping, Optional

from toolcommit.checker.engines.trace import Counterexample
from toolcommit.model.system import System

PROVIDER = "provider"
USER = "user"
_ACCEPTING = (
    "accepted",
    "accepted (overwrites)",
    "replayed under the same key",
    "compensated first, accepted as next epoch",
)
_ANSWERED = ("answered:", "refused:")  # a hold's answer (`reask=hold`): no record written


@lru_cache(maxsize=1)
def _instances_doc() -> dict:
    return json.loads(
        resources.files("toolcommit.spec").joinpath("instances.json").read_text("utf-8")
    )


def forms() -> tuple[dict, dict]:
    """(the intent: tool, scope, args; form name -> its arguments) from spec/instances.json."""
    doc = _instances_doc()
    return doc["intent"], {name: f["args"] for name, f in doc["forms"].items()}


def _decision(model_decision: str) -> str:
    if model_decision in _ACCEPTING:
        return "accepted"
    if model_decision in ("duplicate", "conflict"):
        return model_decision
    if model_decision.startswith(_ANSWERED):
        return "duplicate"
    raise ValueError(f"no log decision for the model's decision {model_decision!r}")


def counterexample_to_events(
    cx: Counterexample, system: System, start: str = "2024-05-01T12:00:00Z"
) -> list[dict]:
    """The log a run of `system` along `cx` writes (see the module docstring).

    Parameters
    ----------
    cx : Counterexample
        A trace of `system` (from an engine, `parse_itf` or `from_actions`).
    system : System
        The system the trace runs in (its keys, proposals and variable labels).
    start : str
        Only its date part is used: the fake clock starts at 12:00:00 that day.

    Returns
    -------
    list of dict
        Events in log order, each with ``type``, ``writer``, ``seq`` and ``ts``.
    """
    intent, args_of = forms()
    inst = system.meta["instance"]
    props = {p.name: p for p in inst.proposals}
    keys = [k["name"] for k in system.meta["keys"]]
    workers = list(system.meta.get("workers", ()))
    labels = {k: system.var(f"rec.{k}").labels for k in keys}
    day = start[:10]
    out: list[dict] = []
    seq: dict[str, int] = {}
    writer_of: dict[str, str] = {}  # key -> proposal that last wrote its record
    effects = 0

    def emit(ev: dict) -> None:
        w = ev["writer"]
        seq[w] = seq.get(w, 0) + 1
        n = len(out)
        line = {
            "type": ev.pop("type"),
            "writer": w,
            "seq": seq[w],
            "ts": f"{day}T{12 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
        }
        line.update({k: v for k, v in ev.items() if k != "writer"})
        out.append(line)

    def call(p_name: str) -> dict:
        p = props[p_name]
        tag = system.meta.get("scope_tag", {}).get(p_name)
        return {
            "tool": intent["tool"],
            "args": args_of[p.form],
            "scope": intent["scope"] + (f"#{tag}" if tag else ""),
        }

    for i, step in enumerate(cx.steps[1:], start=1):
        before, after = cx.steps[i - 1].state, step.state
        a, params = step.action, dict(step.params)
        worker = params.get("worker")
        if a in ("propose", "insert"):
            p = props[params["proposal"]]
            decision = _decision(params.get("decision", "accepted"))
            key = params.get("next_key", params["key"])
            epoch = p.epoch + (1 if "next_key" in params else 0)
            emit(
                {
                    "type": "proposal",
                    "writer": worker,
                    "call_id": p.call_id,
                    "key": key,
                    "decision": decision,
                    **call(p.name),
                    "epoch": epoch,
                }
            )
            if decision == "accepted":
                writer_of[key] = p.name
        elif a in ("crash", "restart", "rollback"):  # a rollback is a restart that resumes
            emit({"type": "crash" if a == "crash" else "restart", "writer": worker})
        elif a == "wipe":
            for w in workers:
                emit({"type": "crash", "writer": w})
        # the record transitions this step made, one line per key, in key order
        for k in keys:
            v0, v1 = before[f"rec.{k}"], after[f"rec.{k}"]
            if v0 == v1:
                continue
            fence = after.get(f"fence.{k}", 0)
            ev = {
                "type": "transition",
                "writer": USER if a == "cancel" else (worker or USER),
                "key": k,
                "from": labels[k][v0],
                "to": labels[k][v1],
            }
            if fence:
                ev["fence"] = fence
            emit(ev)
        if a == "deliver" and params.get("outcome") == "applied":
            k = params["key"]
            effects += 1
            emit(
                {
                    "type": "effect",
                    "writer": PROVIDER,
                    "key": k,
                    "kind": "apply",
                    **call(_proposal_of(k, writer_of, system)),
                    "fence": int(params["fence"]),
                    "effect_id": f"e{effects}",
                }
            )
        for k in keys:
            c0, c1 = before.get(f"comp.{k}", 0), after.get(f"comp.{k}", 0)
            if c1 > c0:
                effects += 1
                emit(
                    {
                        "type": "effect",
                        "writer": PROVIDER,
                        "key": k,
                        "kind": "compensate",
                        **call(_proposal_of(k, writer_of, system)),
                        "effect_id": f"e{effects}",
                    }
                )
    return out


def _proposal_of(key: str, writer_of: Mapping[str, str], system: System) -> str:
    """The proposal whose arguments a request for `key` carries: the one that last wrote the
    key's record, else the first proposal mapped to the key."""
    p: Optional[str] = writer_of.get(key)
    if p is not None:
        return p
    for name, k in system.meta["key_of"].items():
        if system.meta["keys"][k]["name"] == key:
            return name
    raise ValueError(f"no proposal writes key {key!r}")


_ORDER = (
    "type",
    "writer",
    "seq",
    "ts",
    "call_id",
    "key",
    "idempotency_key",
    "from",
    "to",
    "decision",
    "kind",
    "tool",
    "args",
    "scope",
    "fence",
    "epoch",
    "effect_id",
    "reason",
)


def events_to_jsonl(events: Iterable[dict]) -> str:
    """Serialize events deterministically as JSON Lines (the format `toolcommit validate`
    reads): known fields in a fixed order, then any others sorted; UTF-8 text, one event
    per line, each line ending in a newline.

    >>> print(events_to_jsonl([{"seq": 1, "writer": "w1", "type": "crash"}]), end="")
    {"type":"crash","writer":"w1","seq":1}
    """
    out = []
    for ev in events:
        ordered = {k: ev[k] for k in _ORDER if k in ev}
        for k in sorted(ev):
            if k not in ordered:
                ordered[k] = ev[k]
        out.append(
            json.dumps(ordered, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
        )
    return "".join(out)
