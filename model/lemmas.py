"""Strengthening lemmas for the unbounded proofs, as expressions over a System's variables.

The lemma names and meanings are data in `spec/lemmas.json`; here each is instantiated per
key (or per key and fence slot) from the System's variables, found by family (`rec`,
`fence`, `msg`, ...) and index, so no protocol rule is restated. A lemma whose variables
the System does not have (no provider fence, no compensation counter, ...) is built with
the variable's fixed value or left out.

These are *candidates*: `toolcommit.checker.engines.smt.induction` keeps only the largest subset that
holds initially and is inductive together with the others (Houdini), so a lemma that is
false under some config is dropped, never assumed.

Examples
--------
>>> from toolcommit.model.knobs import preset
>>> from toolcommit.model.instance import instance
>>> from toolcommit.model.semantics import build
>>> c = candidates(build(preset("recommended"), instance("cancel")))
>>> str(c["pfence_le_fence[k0]"])
'(pfence.k0 <= fence.k0)'
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from .expr import TRUE, Const, Expr, Op, Var, all_of, any_of, implies, in_, not_
from .system import System
from .values import M_DELAYED, M_INFLIGHT, M_NONE, RV

ARRIVING = (M_INFLIGHT, M_DELAYED)
LIVE_NOT = tuple(RV[n] for n in ("PROPOSED", "COMPENSATED", "DEAD_LETTER", "REJECTED_CONFLICT"))


@lru_cache(maxsize=1)
def spec() -> dict:
    """`spec/lemmas.json`: lemma name -> {per, meaning}."""
    text = resources.files("toolcommit.spec").joinpath("lemmas.json").read_text("utf-8")
    return json.loads(text)["lemmas"]


def family_of(name: str) -> str:
    """`stale_request_fenced_out[k0.2]` -> `stale_request_fenced_out`."""
    return name.split("[", 1)[0]


class _Vars:
    """The System's variables by (family, index)."""

    def __init__(self, system: System):
        self.by = {(v.family, v.index): Var(v.name) for v in system.variables}
        self.keys = [v.index[0] for v in system.variables if v.family == "rec"]
        self.slots = {
            k: sorted(
                int(v.index[1]) for v in system.variables if v.family == "msg" and v.index[0] == k
            )
            for k in self.keys
        }

    def get(self, family: str, *index: str):
        return self.by.get((family, tuple(index)))

    def value(self, family: str, *index: str, default: int = 0) -> Expr:
        """The variable, or the constant it would always hold when the System lacks it."""
        v = self.get(family, *index)
        return v if v is not None else Const(default)


def _leaves(e: Expr, var: str):
    """Constant values `e` may take, None for 'unchanged', or raise ValueError (any)."""
    if isinstance(e, Const):
        return {e.value}
    if isinstance(e, Var) and e.name == var:
        return {None}
    if isinstance(e, Op) and e.op == "ite":
        return _leaves(e.args[1], var) | _leaves(e.args[2], var)
    raise ValueError(var)


def writable(system: System) -> dict[str, set]:
    """Variable -> the values it can ever hold, when every action writes it a constant
    (through `ite` branches) or leaves it: its initial value plus those constants."""
    out: dict[str, set] = {v.name: {system.init[v.name]} for v in system.variables}
    for a in system.actions:
        if a.cut:
            continue
        for name, e in a.updates.items():
            if name not in out:
                continue
            try:
                out[name] |= _leaves(e, name) - {None}
            except ValueError:
                del out[name]
    return {n: vals for n, vals in out.items() if len(vals) < system.var(n).size}


def _reask_lemmas(V: _Vars, inst, key_of: dict) -> dict[str, Expr]:
    """`doubt_after_record` and `reask_after_give_up` for intents with a re-ask."""
    out: dict[str, Expr] = {}
    gave_up = (RV["COMPENSATED"], RV["DEAD_LETTER"], RV["REJECTED_CONFLICT"])
    for i in dict.fromkeys(p.intent for p in inst.proposals if p.trigger == "after_doubt"):
        first = sorted(
            {
                f"k{key_of[p.name]}"
                for p in inst.proposals
                if p.intent == i and p.trigger != "after_doubt" and p.name in key_of
            }
        )
        again = sorted(
            {
                f"k{key_of[p.name]}"
                for p in inst.proposals
                if p.intent == i and p.trigger == "after_doubt" and p.name in key_of
            }
            - set(first)
        )
        doubt = V.get("doubt", i)
        if doubt is not None and first:
            out[f"doubt_after_record[{i}]"] = implies(
                doubt == 1, any_of(*[V.get("rec", k) != RV["PROPOSED"] for k in first])
            )
        for k in again:
            for s in first:
                out[f"reask_after_give_up[{k},{s}]"] = implies(
                    V.get("rec", k) != RV["PROPOSED"], in_(V.get("rec", s), gave_up)
                )
    return out


def candidates(system: System) -> dict[str, Expr]:
    """Every lemma instance for `system`: `name[index]` -> expression."""
    V = _Vars(system)
    out: dict[str, Expr] = {}
    for name, vals in writable(system).items():
        out[f"values_written[{name}]"] = in_(Var(name), sorted(vals))
    inst = system.meta.get("instance")
    key_of = system.meta.get("key_of", {})
    give_up_keys, later_keys = set(), {}
    if inst is not None:
        by_key: dict[str, set[str]] = {}
        for p in inst.proposals:
            if p.name in key_of:
                by_key.setdefault(f"k{key_of[p.name]}", set()).add(p.trigger)
        give_up_keys = {k for k, t in by_key.items() if t == {"after_give_up"}}
        intents_of: dict[str, set[str]] = {}
        for p in inst.proposals:
            if p.name in key_of:
                intents_of.setdefault(f"k{key_of[p.name]}", set()).add(p.intent)
        later_keys = {
            k: next(iter(i))
            for k, i in intents_of.items()
            if len(i) == 1 and V.get("asked", next(iter(i))) is not None
        }
        out.update(_reask_lemmas(V, inst, key_of))
    for k in V.keys:
        rec, fence, applied = V.get("rec", k), V.get("fence", k), V.get("applied", k)
        pfence = V.get("pfence", k)
        comp = V.value("comp", k)
        cancelled = V.value("cancelled", k)
        slots = V.slots[k]
        msgs = {f: V.get("msg", k, str(f)) for f in slots}
        none_sent = all_of(fence == 0, *[m == M_NONE for m in msgs.values()])
        out[f"quiet_before_record[{k}]"] = implies(
            rec == RV["PROPOSED"],
            all_of(
                none_sent,
                applied == 0,
                comp == 0,
                cancelled == 0,
                *([pfence == 0] if pfence is not None else []),
            ),
        )
        out[f"recorded_not_yet_sent[{k}]"] = implies(
            rec == RV["RECORDED"], all_of(none_sent, applied == 0)
        )
        for f in slots:
            out[f"slot_above_fence_is_none[{k}.{f}]"] = implies(fence < f, msgs[f] == M_NONE)
        if pfence is not None:
            out[f"pfence_le_fence[{k}]"] = pfence <= fence
            for f in slots:
                arriving = in_(msgs[f], ARRIVING)
                out[f"stale_request_fenced_out[{k}.{f}]"] = implies(
                    all_of(arriving, fence > f), pfence > f
                )
                out[f"in_doubt_requests_fenced[{k}.{f}]"] = implies(
                    all_of(arriving, in_(rec, (RV["RECONCILING"], RV["DEAD_LETTER"]))), pfence > f
                )
        out[f"effect_needs_request[{k}]"] = implies(applied > 0, fence >= 1)
        seen = V.get("seen", k)
        if seen is not None:
            out[f"effect_marks_token[{k}]"] = implies(applied > 0, seen == 1)
        out[f"at_most_once_per_key[{k}]"] = applied <= 1
        out[f"parked_without_effect[{k}]"] = implies(rec == RV["DEAD_LETTER"], applied == 0)
        out[f"compensated_without_net_effect[{k}]"] = implies(
            rec == RV["COMPENSATED"], applied <= comp
        )
        if V.get("cancelled", k) is not None:
            out[f"cancelled_never_sent[{k}]"] = implies(
                cancelled == 1, all_of(rec == RV["REJECTED_CONFLICT"], none_sent)
            )
        if k in give_up_keys:
            earlier = [V.get("rec", j) for j in V.keys if j not in give_up_keys]
            out[f"next_epoch_after_give_up[{k}]"] = implies(
                rec != RV["PROPOSED"],
                any_of(*[in_(r, (RV["COMPENSATED"], RV["DEAD_LETTER"])) for r in earlier]),
            )
        if k in later_keys:
            out[f"asked_before_record[{k}]"] = implies(
                rec != RV["PROPOSED"], V.get("asked", later_keys[k]) == 1
            )
        out[f"conflict_without_effect[{k}]"] = implies(rec == RV["REJECTED_CONFLICT"], applied == 0)
        for j in V.keys:
            if j > k:
                live = [not_(in_(V.get("rec", x), LIVE_NOT)) for x in (k, j)]
                out[f"one_live_record[{k},{j}]"] = not_(all_of(*live))
        owner = V.get("owner", k)
        workers = sorted(v.index[0] for v in system.variables if v.family == "alive")
        if owner is not None:
            out[f"owner_is_alive[{k}]"] = all_of(
                *[implies(owner == i, V.get("alive", w) == 1) for i, w in enumerate(workers)]
            )
    return {n: e for n, e in out.items() if e is not TRUE}
