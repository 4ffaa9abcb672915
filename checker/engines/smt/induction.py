"""Unbounded proofs of invariants with z3: k-induction with strengthening lemmas, or PDR.

`method="kind"` (default):

1. *Houdini.* The candidates are the lemmas of `spec/lemmas.json` (built by
   `toolcommit.model.lemmas`) plus every invariant of the System. Those false in the
   initial state are dropped; then, repeatedly, any candidate that one step can break from
   a state satisfying all remaining candidates is dropped. What is left holds initially
   and is inductive as a conjunction, so each member is a proved invariant (the largest
   such subset of the candidates). A property in it is PROVED with k = 1.
2. *BMC* to `max_k` steps for the rest: a violation there is a shortest counterexample,
   replayed (`toolcommit.checker.engines.smt.bmc`).
3. *k-induction* for what is still open, k = 1 .. max_k, assuming the proved lemmas in
   every state of the step path and requiring the path to be simple (no state twice): if
   k states satisfying P cannot be followed by one breaking P, P holds at every depth
   (the base case is step 2).

`method="pdr"`: z3's Spacer (property-directed reachability) over the Horn clauses
`init -> Inv`, `Inv /\\ T -> Inv'`, `Inv /\\ not P -> false`, over Int variables, without
the lemmas: Spacer finds its own invariant, an independent cross-check of the lemma proof. The invariant Spacer returns is then checked by an ordinary
solver (initial, inductive, implies P) before the proof is reported, so Spacer is not
trusted. If Spacer finds the property false, BMC produces the (shortest) counterexample.

Every answer is a `Verdict`: HOLDS with scope "proved", VIOLATED with a replayed
counterexample, or UNKNOWN with the reason (induction depth reached, solver reason,
timeout).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import z3

from toolcommit.model.errors import InternalError, UsageError
from toolcommit.model.expr import evaluate
from toolcommit.model.lemmas import candidates, family_of
from toolcommit.checker.engines.smt.encode import Encoding
from toolcommit.model.system import System

from toolcommit.checker.engines.smt import bmc
from toolcommit.checker.engines.verdict import Status, Verdict

METHODS = ("kind", "pdr")
Progress = Callable[[str, int, float], None]


class _Clock:
    def __init__(self, timeout: float):
        self.t0, self.timeout = time.perf_counter(), timeout

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def left_ms(self) -> int:
        if not self.timeout:
            return 4294967295
        return max(1, int((self.timeout - self.elapsed) * 1000))

    def out(self) -> bool:
        return bool(self.timeout) and self.elapsed >= self.timeout


def houdini(system: System, cands: dict, sort: str = "bv", clock: Optional[_Clock] = None,
            progress: Optional[Progress] = None) -> tuple[dict, dict]:
    """The largest subset of `cands` (name -> Expr) that holds initially and is inductive.

    Returns `(kept, dropped)`: kept name -> Expr, dropped name -> why ("initial state" or
    "step from a state satisfying the rest"). With a clock that runs out, raises TimeoutError.
    """
    clock = clock or _Clock(0)
    kept = {}
    dropped = {}
    for n, e in cands.items():
        if evaluate(e, system.init):
            kept[n] = e
        else:
            dropped[n] = "false in the initial state"
    enc = Encoding(system, sort=sort)
    s = bmc._solver(sort)
    s.add(enc.domain(0), enc.trans(0))
    lits = {}
    for n, e in kept.items():
        lits[n] = z3.Bool(f"assume.{n}")
        s.add(z3.Implies(lits[n], enc.boolean(e, 0)))
    post = {n: enc.boolean(e, 1) for n, e in kept.items()}
    it = 0
    while kept:
        it += 1
        goal = z3.Bool(f"goal.{it}")
        s.add(z3.Implies(goal, z3.Or([z3.Not(post[n]) for n in kept])))
        s.set("timeout", clock.left_ms())
        r = s.check(goal, *[lits[n] for n in kept])
        if progress is not None:
            progress("houdini", it, clock.elapsed)
        if r == z3.unsat:
            break
        if r == z3.unknown:
            raise TimeoutError(f"houdini: solver {s.reason_unknown()} after {it} rounds")
        m = s.model()
        gone = [n for n in kept if z3.is_false(m.eval(post[n], model_completion=True))]
        if not gone:
            raise InternalError("houdini: a model breaks no candidate")
        for n in gone:
            del kept[n]
            dropped[n] = f"broken by one step in round {it}"
    return kept, dropped


def _simple_path(enc: Encoding, k: int) -> list:
    names = [v.name for v in enc.system.variables]
    out = []
    for i in range(k + 1):
        for j in range(i + 1, k + 1):
            a, b = enc.vars_at(i), enc.vars_at(j)
            out.append(z3.Or([a[n] != b[n] for n in names]))
    return out


def _kind_step(system: System, prop: str, lemmas: dict, max_k: int, sort: str,
               clock: _Clock, progress: Optional[Progress]) -> tuple[Optional[int], str]:
    """Least k <= max_k at which `prop` is k-inductive relative to `lemmas`, or (None, why)."""
    enc = Encoding(system, sort=sort)
    s = bmc._solver(sort)
    s.add(enc.domain(0))
    for e in lemmas.values():
        s.add(enc.boolean(e, 0))
    for k in range(1, max_k + 1):
        s.add(enc.trans(k - 1))
        for e in lemmas.values():
            s.add(enc.boolean(e, k))
        s.add(enc.invariant(prop, k - 1))
        b = enc.vars_at(k)
        for i in range(k):
            c = enc.vars_at(i)
            s.add(z3.Or([c[n] != b[n] for n in b]))
        q = z3.Bool(f"breaks.{prop}@{k}")
        s.add(z3.Implies(q, z3.Not(enc.invariant(prop, k))))
        s.set("timeout", clock.left_ms())
        r = s.check(q)
        if progress is not None:
            progress(f"k-induction {prop}", k, clock.elapsed)
        if r == z3.unsat:
            return k, ""
        if r == z3.unknown:
            return None, f"solver: {s.reason_unknown()} at k={k}"
    return None, f"not k-inductive for k <= {max_k} with {len(lemmas)} proved lemmas"



def prove(system: System, props=None, method: str = "kind", max_k: int = 12,
          timeout: float = 0.0, progress: Optional[Progress] = None,
          sort: str = "bv") -> list[Verdict]:
    """Prove invariants `props` (default: all) of `system` for every depth.

    Parameters
    ----------
    method : "kind" (Houdini lemmas, then BMC and k-induction) or "pdr" (z3 Spacer).
    max_k : the deepest BMC base case and induction depth tried ("kind"); for "pdr", the
        BMC depth used to name a counterexample is unbounded but timed.
    timeout : seconds for the whole call (0: none).
    progress : called as `progress(phase, step, seconds)`.

    Returns
    -------
    One Verdict per property; `extra` holds the engine, k and the lemmas used.

    Examples
    --------
    >>> from toolcommit.model.knobs import preset
    >>> from toolcommit.model.instance import instance
    >>> from toolcommit.model.semantics import build
    >>> [v.line() for v in prove(build(preset("recommended"), instance("ack_loss")), ["I1"])]
    ['I1: HOLDS proved']
    >>> [v.line() for v in prove(build(preset("naive"), instance("ack_loss")), ["I1"])]
    ['I1: VIOLATED in 8 steps']
    """
    if method not in METHODS:
        raise UsageError(f"unknown method {method!r}; valid methods: {', '.join(METHODS)}")
    props = system.invariant_props(props, "prove")
    clock = _Clock(timeout)
    if method == "pdr":  # independent of the lemmas: a cross-check of the lemma proofs
        out = _pdr(system, props, {}, clock, progress)
        return [out[p] for p in props]
    cands = {**candidates(system), **dict(system.invariants)}
    try:
        kept, dropped = houdini(system, cands, sort, clock, progress)
    except TimeoutError as e:
        return [Verdict(p, Status.UNKNOWN, reason=str(e), extra={"engine": method}) for p in props]
    lemmas = {n: e for n, e in kept.items() if n not in system.invariants}
    used = sorted(lemmas)
    families = sorted({family_of(n) for n in used})
    out: dict[str, Verdict] = {}
    for p in props:
        if p in kept:
            out[p] = Verdict(p, Status.HOLDS, "proved",
                             reason=f"inductive with {len(used)} proved lemmas (k=1)",
                             extra={"engine": "kind", "k": 1, "lemmas": used,
                                    "lemma_families": families,
                                    "proved_invariants": sorted(n for n in kept if n in system.invariants)})
    rest = [p for p in props if p not in out]
    if rest:
        left = (timeout - clock.elapsed) if timeout else 0.0
        if timeout and left <= 0:
            left = 0.001
        base = bmc.check(system, rest, max_k, left, None, sort)
        for v in base:
            if v.status is Status.VIOLATED or v.status is Status.UNKNOWN:
                out[v.property] = v
        for p in [p for p in rest if p not in out]:
            k, why = _kind_step(system, p, kept, max_k, sort, clock, progress)
            if k is not None:
                out[p] = Verdict(p, Status.HOLDS, "proved",
                                 reason=f"{k}-inductive with {len(used)} proved lemmas",
                                 extra={"engine": "kind", "k": k, "lemmas": used,
                                        "lemma_families": families})
            else:
                out[p] = Verdict(p, Status.UNKNOWN,
                                 reason=f"{why}; no violation up to depth {max_k}",
                                 extra={"engine": "kind", "lemmas": used})
    return [out[p] for p in props]


# ----- PDR (z3 Spacer) ------------------------------------------------------------------
def _pdr(system: System, props: list, lemmas: dict, clock: _Clock,
         progress: Optional[Progress]) -> dict:
    """Spacer on the Horn encoding; the found invariant is checked independently."""
    out = {}
    open_props = list(props)
    while open_props:
        r, inv, why = _spacer(system, open_props, lemmas, clock)
        if progress is not None:
            progress("pdr", len(open_props), clock.elapsed)
        if r == "proved":
            for p in open_props:
                out[p] = Verdict(p, Status.HOLDS, "proved",
                                 reason="PDR invariant, checked independently",
                                 extra={"engine": "pdr", "invariant_size": inv,
                                        "lemmas": sorted(n for n in lemmas if n not in system.invariants)})
            break
        if r == "unknown":
            for p in open_props:
                out[p] = Verdict(p, Status.UNKNOWN, reason=f"pdr: {why}", extra={"engine": "pdr"})
            break
        # some property fails: BMC names it with a shortest counterexample
        found = False
        depth = 8
        while not found:
            if clock.out():
                break
            left = (clock.timeout - clock.elapsed) if clock.timeout else 0.0
            vs = bmc.check(system, open_props, depth, left)
            for v in vs:
                if v.status is Status.VIOLATED:
                    out[v.property] = v
                    open_props.remove(v.property)
                    found = True
            if any(v.status is Status.UNKNOWN for v in vs):
                break
            depth *= 2
        if not found:
            for p in open_props:
                out[p] = Verdict(p, Status.UNKNOWN,
                                 reason="pdr found the conjunction false; BMC timed out naming a counterexample",
                                 extra={"engine": "pdr"})
            break
    return out


def _spacer(system: System, props: list, lemmas: dict, clock: _Clock):
    """("proved", invariant size, "") or ("violated", None, "") or ("unknown", None, why)."""
    enc = Encoding(system, sort="int")
    names = [v.name for v in system.variables]
    x0 = [enc.vars_at(0)[n] for n in names]
    x1 = [enc.vars_at(1)[n] for n in names]
    inv = z3.Function("Inv", *([z3.IntSort()] * len(names)), z3.BoolSort())
    strengthen = [enc.boolean(e, i) for e in lemmas.values() for i in (0, 1)]
    goal = z3.And([enc.invariant(p, 0) for p in props])
    h = z3.SolverFor("HORN")
    h.set("timeout", clock.left_ms())
    h.add(z3.ForAll(x0, z3.Implies(enc.init(0), inv(*x0))))
    h.add(z3.ForAll(x0 + x1 + [enc.act_at(0)],
                    z3.Implies(z3.And([inv(*x0), enc.domain(0), enc.trans(0)] + strengthen), inv(*x1))))
    h.add(z3.ForAll(x0, z3.Implies(z3.And(inv(*x0), z3.Not(goal)), False)))
    r = h.check()
    if r == z3.unknown:
        return "unknown", None, h.reason_unknown()
    if r == z3.unsat:
        return "violated", None, ""
    m = h.model()
    interp = m[inv]
    if interp is None:
        at0 = z3.BoolVal(True)
    elif isinstance(interp, z3.FuncInterp):
        if interp.num_entries():
            raise InternalError("the PDR invariant has point entries; cannot certify it")
        at0 = z3.substitute_vars(interp.else_value(), *x0)  # Var(i) is argument i
    else:  # a lambda
        at0 = z3.simplify(interp[tuple(x0)] if len(x0) > 1 else interp[x0[0]])
    at1 = z3.substitute(at0, *zip(x0, x1))
    # the certificate: initial, inductive (under the proved lemmas), strong enough
    for what, f in (("initial", z3.And(enc.init(0), z3.Not(at0))),
                    ("inductive", z3.And([at0, enc.domain(0), enc.trans(0), z3.Not(at1)] + strengthen)),
                    ("implies the property", z3.And(at0, z3.Not(goal)))):
        s = z3.Solver()
        s.add(f)
        if s.check() != z3.unsat:
            raise InternalError(f"the PDR invariant is not {what}: Spacer and z3 disagree")
    return "proved", len(at0.children()) if z3.is_and(at0) else 1, ""
