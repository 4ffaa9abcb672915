"""The protocol's semantics, written once: `build(config, instance) -> System`.

Actors and their actions follow `spec/protocol.json`; each action's one-line meaning is
there. Policy knobs and environment assumptions are resolved here, at build time, so the
resulting `System` is a plain guarded-command program that the explicit engine compiles to
Python and the SMT engine to z3.

Abstractions (see spec/PROTOCOL.md, "Choices"):
- one user intent (scope, tool, arguments), or two where the instance lets the user ask for
  the same thing again (`model/intents.py`); calls differ in call id, argument form,
  canonicalizer version, epoch and intent; semantic keys are derived statically from the
  knobs;
- per-key counters saturate at 2 (two effects already break I1);
- a zombie's further log writes are not modelled: its harm is its requests still in flight.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from toolcommit.spec import protocol

from .clock import Clock
from .expr import (
    FALSE,
    TRUE,
    Const,
    Expr,
    Var,
    all_of,
    any_of,
    in_,
    ite,
    lift,
    not_,
    structure,
    sum_,
)
from .faults import LogFaults
from .instance import Instance, Proposal
from .intents import Intents
from .knobs import Config
from .planner import Planner
from .principals import Principals
from .properties import monitors, table
from .provider import Provider
from .reask import Reask
from .recovery import Recovery
from .resolution import Resolution
from .system import Action, Symmetry, System, VarDecl
from .values import (
    CAP,
    GAVE_UP,
    M_DELAYED,
    M_INFLIGHT,
    MONITOR_ORDER,
    MSG_VALUES,
    P2_ALLOWED,
    P_DUP,
    P_PROPOSED,
    PLAIN_MSG,
    PROP_VALUES,
    RV,
    SEAL_VALUES,
    SEEN_VALUES,
    SETTLED,
    r,
    record_values,
)
from .worker import Worker


@dataclass(frozen=True)
class Key:
    """A semantic key as the implementation derives it under the config's knobs."""

    name: str
    ident: tuple
    version: int
    epoch: int

    def label(self) -> str:
        return "/".join(str(p) for p in self.ident)


@lru_cache(maxsize=1)
def _legal_edges() -> tuple:
    return tuple((e.source, e.target) for e in protocol().record.edges)


class _Builder(
    Planner, Worker, Provider, LogFaults, Intents, Reask, Principals, Resolution, Recovery, Clock
):
    """Collects variables and actions; one method per actor."""

    def __init__(self, config: Config, inst: Instance):
        self.cfg, self.inst = config, inst
        self.k, self.a = config.knobs, config.assumptions
        self.W, self.F = inst.workers, inst.max_fence
        self.props = inst.proposals
        self.vars: list[VarDecl] = []
        self.init: dict[str, int] = {}
        self.actions: list[Action] = []
        self._monitors: dict[str, dict] = {}  # per record variable (`_breaks`, `_was`)
        self._derive_keys()

    # ----- static derivation of keys and tokens -----------------------------------
    def form_of(self, p: Proposal) -> str:
        """The argument form p's key is derived from: the canonicalizer merges a paraphrase
        (20.0) with the original, the schema (`identity=schema`) a coerced value ("20")
        and an argument outside the identity fields (a reason)."""
        form = p.form
        if self.k["canonicalizer"] == "normalizing" and form == "paraphrase":
            form = "orig"
        if self.k["identity"] == "schema" and form in ("coerced", "annotated"):
            form = "orig"
        return form

    def whose(self, p: Proposal) -> tuple:
        """The principal in p's identity: `(principal,)` under `principal=part` where the
        instance has several, else nothing (one principal, or the principal left out)."""
        several = len(self.inst.principals()) > 1
        return (p.principal,) if several and self.k["principal"] == "part" else ()

    def _ident(self, p: Proposal, epoch: int) -> tuple:
        if self.k["dedupe_by"] == "call_id":
            return ("call", p.call_id)
        form = self.form_of(p)
        if self.k["epoch"] == "none":
            epoch = 1
        if self.k["epoch"] == "per_retry" and p.trigger == "after_failure":
            epoch = (epoch, p.call_id)
        ident = ("refund", form, "e%s" % (epoch if isinstance(epoch, int) else "%d+%s" % epoch))
        ident += ("v%d" % p.version,) if self.k["revision"] == "conflict" else ()
        minted = self.k["intent_id"] == "minted" and self.several_requests()
        return ident + ((p.req,) if minted else ()) + self.whose(p)

    def _derive_keys(self) -> None:
        self.keys: list[Key] = []
        by_ident: dict[tuple, int] = {}

        def key_for(p: Proposal, epoch: int) -> int:
            ident = self._ident(p, epoch)
            if ident not in by_ident:
                by_ident[ident] = len(self.keys)
                self.keys.append(Key(f"k{len(self.keys)}", ident, p.version, epoch))
            return by_ident[ident]

        self.key_of = {p.name: key_for(p, p.epoch) for p in self.props}
        self.next_key = {}
        if self.k["late_replay"] == "compensate":
            for p in self.props:
                self.next_key[p.name] = key_for(p, p.epoch + 1)
        self.next_of = {}  # key -> its next-epoch key, for the human gate's new attempt
        if self.k["on_unknown"] == "human_approval":
            for p in self.props:
                nk = key_for(p, p.epoch + 1)
                if nk != self.key_of[p.name]:
                    self.next_of.setdefault(self.key_of[p.name], nk)
        callers: dict[int, set[str]] = {}
        for p in self.props:
            callers.setdefault(self.key_of[p.name], set()).add(p.call_id)
            if p.name in self.next_key:
                callers.setdefault(self.next_key[p.name], set()).add(p.call_id)
        for k, nk in self.next_of.items():
            callers.setdefault(nk, set()).update(callers[k])
        self.callers = callers
        self.call_ids = sorted({p.call_id for p in self.props})
        self.siblings = self._siblings()

    def token_kind(self) -> str:
        return self.k["idempotency_key"]

    def needs_via(self, k: int) -> bool:
        return self.token_kind() == "call_id" and len(self.callers.get(k, ())) > 1

    # ----- variables ------------------------------------------------------------
    def var(self, name, size, init=0, labels=(), family="", index=()) -> Var:
        self.vars.append(VarDecl(name, size, tuple(labels), family or name, tuple(index)))
        self.init[name] = init
        return Var(name)

    def declare(self) -> None:
        W, F = self.W, self.F
        self.retry_ok = self.var("retry_ok", 2)
        self.budget = {
            f: self.var(f"budget.{f}", n + 1, n, family="budget", index=(f,))
            for f, n in self.inst.faults.items()
            if n > 0
        }
        self.revised = self.var("revised", 2) if "revisions" in self.budget else None
        self.declare_intents()
        self.alive = [
            self.var(f"alive.w{w}", 2, 1, ("DOWN", "UP"), "alive", (f"w{w}",)) for w in range(W)
        ]
        self.prop = {
            p.name: self.var(f"prop.{p.name}", len(PROP_VALUES), 0, PROP_VALUES, "prop", (p.name,))
            for p in self.props
        }
        self.racy = self.k["insert"] == "check_then_insert"
        wl = [f"w{w}" for w in range(W)] + ["none"]
        self.chk = (
            {p.name: self.var(f"chk.{p.name}", W + 1, W, wl, "chk", (p.name,)) for p in self.props}
            if self.racy
            else {}
        )
        self.rec, self.owner, self.fence, self.pfence = [], [], [], []
        self.applied, self.comp, self.cancelled, self.via, self.msg, self.mtok = (
            [],
            [],
            [],
            [],
            [],
            [],
        )
        for i, key in enumerate(self.keys):
            n = key.name
            self.rec.append(self.var(f"rec.{n}", len(RV), 0, record_values(), "rec", (n,)))
            self.owner.append(self.var(f"owner.{n}", W + 1, W, wl, "owner", (n,)))
            self.fence.append(self.var(f"fence.{n}", F + 1, 0, family="fence", index=(n,)))
            self.pfence.append(
                self.var(f"pfence.{n}", F + 1, 0, family="pfence", index=(n,))
                if self.provider_fenced()
                else None
            )
            self.applied.append(self.var(f"applied.{n}", CAP + 1, 0, family="applied", index=(n,)))
            self.comp.append(
                self.var(f"comp.{n}", CAP + 1, 0, family="comp", index=(n,))
                if self.compensation_used()
                else None
            )
            self.cancelled.append(
                self.var(f"cancelled.{n}", 2, 0, family="cancelled", index=(n,))
                if "cancels" in self.budget
                else None
            )
            cl = self.call_ids
            self.via.append(
                self.var(f"via.{n}", len(cl), 0, cl, "via", (n,)) if self.needs_via(i) else None
            )
            mv = MSG_VALUES if self.errors_modelled() else MSG_VALUES[:PLAIN_MSG]
            self.msg.append(
                [
                    self.var(f"msg.{n}.{f}", len(mv), 0, mv, "msg", (n, str(f)))
                    for f in range(1, F + 1)
                ]
            )
            self.mtok.append(
                [
                    self.var(f"mtok.{n}.{f}", len(cl), 0, cl, "mtok", (n, str(f)))
                    for f in range(1, F + 1)
                ]
                if self.needs_via(i)
                else None
            )
        self._declare_seals()
        self.declare_windows()
        self.declare_told()
        self.declare_doubt()
        self.declare_by()
        sv = SEEN_VALUES if self.saved_errors() else ()
        self.seen = {
            t: self.var(f"seen.{t}", len(sv) or 2, 0, sv, family="seen", index=(t,))
            for t in self.tokens()
        }
        flags = {m.name: m.flag for m in monitors()}
        assert set(flags) == set(MONITOR_ORDER), "spec monitors and the model's flags differ"
        self.bad = {p: self.var(flags[p], 2, family="bad", index=(p,)) for p in MONITOR_ORDER}

    def _declare_seals(self) -> None:
        """The seal in flight per key, where the seal is a message: its state and fence."""
        self.sealm, self.sealf = [], []
        for k, key in enumerate(self.keys):
            on = self.pfence[k] is not None and self.seal_is_message()
            n = key.name
            self.sealm.append(
                self.var(f"seal.{n}", len(SEAL_VALUES), 0, SEAL_VALUES, "seal", (n,))
                if on
                else None
            )
            self.sealf.append(
                self.var(f"sealf.{n}", self.F + 1, 0, family="sealf", index=(n,)) if on else None
            )

    def provider_fenced(self) -> bool:
        return self.k["fencing"] == "on" and self.a["provider_fences"] == "yes"

    def compensation_used(self) -> bool:
        return (
            self.k["on_unknown"] in ("compensate", "sealed_compensate")
            or self.k["late_replay"] == "compensate"
        )

    def tokens(self) -> list[str]:
        kind = self.token_kind()
        if kind == "none":
            return []
        if kind == "semantic_key":
            return [k.name for k in self.keys]
        return list(self.call_ids)

    # ----- helpers ----------------------------------------------------------------
    def act(self, name, params, guard, updates, fault=False, cut=False, monitor=True) -> None:
        updates = {n: lift(e) for n, e in updates.items() if e is not None}
        if monitor:
            updates = self._monitor(updates)
        updates = self.doubt_updates(updates)
        self.actions.append(Action(name, dict(params), guard, updates, fault, cut))

    def _monitor(self, updates: dict) -> dict:
        """Add LEGAL and P2 monitor updates for every record variable the action writes."""
        bad_legal, bad_p2 = [], []
        for rec in self.rec:
            if rec.name in updates:
                bad, p2 = self._breaks(rec, updates[rec.name])
                bad_legal.append(bad)
                bad_p2.append(p2)
        if bad_legal:
            updates[self.bad["LEGAL"].name] = ite(any_of(*bad_legal), 1, self.bad["LEGAL"])
            p2 = any_of(*bad_p2)
            if p2 is not FALSE:
                updates[self.bad["P2"].name] = ite(p2, 1, self.bad["P2"])
        return updates

    def _breaks(self, rec: Var, new: Expr) -> tuple[Expr, Expr]:
        """When writing `new` to `rec` breaks LEGAL (no edge of the spec's record graph) and
        when it breaks P2 (leaves UNKNOWN other than by an allowed edge).

        Built once per build for each value written (by its structure: the monitors of every
        action that writes it share them); a constant's folded exactly as the general form
        folds it.
        """
        memo = self._monitors.setdefault(rec.name, {})
        key = ("const", new.value) if isinstance(new, Const) else ("expr", structure(new))
        done = memo.get(key)
        if done is None:
            done = memo[key] = self._breaks_built(rec, new)
        return done

    def _breaks_built(self, rec: Var, new: Expr) -> tuple[Expr, Expr]:
        legal = _legal_edges()  # spec order: the generated code must not depend on the
        #                          process's string hashing (a set's order)
        if isinstance(new, Const):
            ok = any_of(new == rec, *[self._was(rec, a) for a, b in legal if RV[b] == new.value])
            p2 = FALSE if new.value in r(*P2_ALLOWED) else self._was(rec, "UNKNOWN")
            return not_(ok), p2
        now = {b: new == RV[b] for b in dict.fromkeys(b for _, b in legal)}
        ok = any_of(new == rec, *[all_of(self._was(rec, a), now[b]) for a, b in legal])
        p2 = all_of(self._was(rec, "UNKNOWN"), not_(in_(new, r(*P2_ALLOWED))))
        return not_(ok), p2

    def _was(self, rec: Var, value: str) -> Expr:
        """`rec == RV[value]`, built once per build."""
        memo = self._monitors.setdefault(rec.name, {})
        e = memo.get(("was", value))
        if e is None:
            e = memo[("was", value)] = rec == RV[value]
        return e

    def spend(self, fault: str) -> dict:
        b = self.budget[fault]
        return {b.name: b - 1}

    def has(self, fault: str) -> bool:
        return fault in self.budget

    def trigger(self, p: Proposal) -> Expr:
        t = p.trigger
        if t == "always":
            return TRUE
        if t == "after_failure":
            return self.retry_ok == 1
        if t == "after_revision":
            return self.revised == 1 if self.revised is not None else FALSE
        if t == "after_give_up":
            return any_of(*[in_(rec, r(*GAVE_UP[:2])) for rec in self.rec])
        if t == "after_new_intent":
            return self.intent_trigger(p)
        if t == "after_doubt":
            return self.doubt_trigger(p)
        raise ValueError(t)

    # ----- workers: dispatch, acks, timeouts, recovery ----------------------------
    def _send(self, k: int, f: int, p: Proposal | None = None, resend: bool = True) -> dict:
        """Updates for sending key k's request under fence f (the caller's guard includes
        `may_send(k, f)`: a re-send needs the key's replay window open). `resend=False` for
        a dispatch, which re-sends only after the record went back to RECORDED (the ways
        `resends` lists; a test explores every design the suite builds to confirm it)."""
        if resend:
            self.check_send(k, f)
        up = {self.fence[k].name: f, self.msg[k][f - 1].name: M_INFLIGHT}
        if self.mtok[k] is not None:
            up[self.mtok[k][f - 1].name] = (
                self.call_ids.index(p.call_id) if p is not None else self.via[k]
            )
        return up

    # ----- properties --------------------------------------------------------------------
    def properties(self) -> tuple[dict, dict, Expr]:
        total = sum_(self.applied)
        state_inv = {
            "I1": self.effects_bounded(net=False),
            "I1net": self.effects_bounded(net=True),
            "P1": all_of(*[a <= 1 for a in self.applied]),
        }
        inv = {
            p.name: (state_inv[p.name] if p.kind == "invariant" else self.bad[p.name] == 0)
            for p in table()
            if p.state_predicate
        }
        settled = all_of(
            *[in_(rec, r("PROPOSED", *SETTLED)) for rec in self.rec],
            *[p != P_PROPOSED for p in self.prop.values()],
            *[not_(in_(m, (M_INFLIGHT, M_DELAYED))) for ms in self.msg for m in ms],
        )
        effect = total >= 1
        wit = {
            "I1": effect,
            "I1net": effect,
            "P1": effect,
            "P2": any_of(*[rec == RV["UNKNOWN"] for rec in self.rec]),
            "P3": any_of(*[c == 1 for c in self.cancelled if c is not None]),
            "OWN": any_of(*[p == P_DUP for p in self.prop.values()]),
            "FENCE": any_of(
                *[
                    all_of(in_(m, (M_INFLIGHT, M_DELAYED)), self.fence[k] > f + 1)
                    for k, ms in enumerate(self.msg)
                    for f, m in enumerate(ms)
                ]
            ),
            "LEGAL": any_of(*[rec != 0 for rec in self.rec]),
            "happy": all_of(
                settled, self.each_applied_once(), any_of(*[rec == RV["ACKED"] for rec in self.rec])
            ),
        }
        return inv, wit, settled

    def symmetries(self) -> tuple[Symmetry, ...]:
        """Interchangeable workers, and interchangeable calls (same intent, form, epoch,
        trigger)."""
        out = list(self._call_symmetries())
        if self.W >= 2:
            slots = tuple((f"alive.w{w}",) for w in range(self.W))
            valued = tuple(o.name for o in self.owner) + tuple(c.name for c in self.chk.values())
            out.append(Symmetry("workers", slots, valued))
        return tuple(out)

    def _call_symmetries(self):
        """Calls that differ only in their call id: permute their proposal variables and,
        when each has a key of its own, their keys' variables (and call-id tokens)."""
        if self.next_key or self.next_of or any(v is not None for v in self.via):
            return
        groups: dict[tuple, list] = {}
        for p in self.props:
            groups.setdefault((p.intent, p.req, p.form, p.epoch, p.trigger, p.version), []).append(
                p
            )
        users = {}
        for p in self.props:
            users[self.key_of[p.name]] = users.get(self.key_of[p.name], 0) + 1
        for group in groups.values():
            keys = [self.key_of[p.name] for p in group]
            calls = [p.call_id for p in group]
            own = len(set(keys)) == len(keys) and all(users[k] == 1 for k in keys)
            if len(group) < 2 or not (own or len(set(keys)) == 1):
                continue
            if own and self.token_kind() == "call_id" and len(set(calls)) < len(calls):
                continue
            yield Symmetry(
                "calls " + ",".join(p.name for p in group),
                tuple(self._call_slot(p, own) for p in group),
            )

    def _call_slot(self, p: Proposal, own: bool) -> tuple[str, ...]:
        slot = [self.prop[p.name].name] + ([self.chk[p.name].name] if self.racy else [])
        if own:
            key = self.keys[self.key_of[p.name]].name
            slot += sorted(
                (
                    v.name
                    for v in self.vars
                    if v.index and v.index[0] == key and v.family not in ("seen", "budget", "bad")
                ),
                key=lambda n: (n.split(".")[0], n.split(".")[2:]),
            )
            if self.token_kind() == "semantic_key":
                slot.append(self.seen[key].name)
            elif self.token_kind() == "call_id":
                slot.append(self.seen[p.call_id].name)
        return tuple(slot)


def build(config: Config, inst: Instance, wipe: bool = False) -> System:
    """The transition system of `config` on `inst`; `wipe` adds P4's memory-wipe adversary.

    Assumptions named by the instance override the config's (a failure class such as
    `provider_non_idempotent` is defined by one).
    """
    if inst.assumptions:
        config = config.with_knobs(inst.assumptions)
    b = _Builder(config, inst)
    b.declare()
    b.planner()
    b.workers()
    b.network()
    b.user()
    b.human()
    b.expire()
    b.call_token_expiry()
    b.failover()
    if wipe:
        b.wipe()
    inv, wit, settled = b.properties()
    end_of = {
        "unfulfilled_end": b.fulfilled,
        "invisible_end": b.visible,
        "unapplied_end": b.applied_at_least_once,
    }
    ends = {p.name: end_of[p.reads]() for p in table() if p.reads in end_of}
    meta = {
        "config": config,
        "instance": inst,
        "keys": [
            {"name": k.name, "ident": k.label(), "callers": sorted(b.callers.get(i, ()))}
            for i, k in enumerate(b.keys)
        ],
        "key_of": dict(b.key_of),
        # the intent id the runtime mints into a call's scope (intent_id=minted, several
        # intents): the log writer puts it in the scope it writes
        "scope_tag": (
            {p.name: p.req for p in b.props}
            if b.k["intent_id"] == "minted" and b.several_requests()
            else {}
        ),
        "workers": [f"w{w}" for w in range(b.W)],
        "wipe": wipe,
        "timing": b.timing_used(),
        "resends": b.resends(),
    }
    return System(
        tuple(b.vars), dict(b.init), tuple(b.actions), inv, wit, settled, b.symmetries(), meta, ends
    )
