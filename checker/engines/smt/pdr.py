"""PDR (property-directed reachability) with z3's Spacer, its invariant checked independently.

Spacer runs on the Horn clauses `init -> Inv`, `Inv /\\ T -> Inv'`, `Inv /\\ not P -> false`
over Int variables, without the lemmas: it finds its own invariant, an independent
cross-check of the lemma proofs in `toolcommit.checker.engines.smt.induction`. The invariant
is then checked by an ordinary solver (initial, inductive, implies P) before a proof is
reported, so Spacer is not trusted; if Spacer finds a property false, BMC names the shortest
counterexample.
"""

from __future__ import annotations

import z3

from toolcommit.checker.engines.smt import bmc
from toolcommit.checker.engines.smt.encode import Encoding
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.model.errors import InternalError
from toolcommit.model.system import System


def pdr(system: System, props: list, lemmas: dict, clock, progress=None) -> dict:
    """Spacer on the Horn encoding; the found invariant is checked independently."""
    out = {}
    open_props = list(props)
    while open_props:
        r, inv, why = _spacer(system, open_props, lemmas, clock)
        if progress is not None:
            progress("pdr", len(open_props), clock.elapsed)
        if r == "proved":
            for p in open_props:
                out[p] = Verdict(
                    p,
                    Status.HOLDS,
                    "proved",
                    reason="PDR invariant, checked independently",
                    extra={
                        "engine": "pdr",
                        "invariant_size": inv,
                        "lemmas": sorted(n for n in lemmas if n not in system.invariants),
                    },
                )
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
                out[p] = Verdict(
                    p,
                    Status.UNKNOWN,
                    reason="pdr found the conjunction false; BMC timed out naming a counterexample",
                    extra={"engine": "pdr"},
                )
            break
    return out


def _spacer(system: System, props: list, lemmas: dict, clock):
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
    h.add(
        z3.ForAll(
            x0 + x1 + [enc.act_at(0)],
            z3.Implies(z3.And([inv(*x0), enc.domain(0), enc.trans(0)] + strengthen), inv(*x1)),
        )
    )
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
    for what, f in (
        ("initial", z3.And(enc.init(0), z3.Not(at0))),
        ("inductive", z3.And([at0, enc.domain(0), enc.trans(0), z3.Not(at1)] + strengthen)),
        ("implies the property", z3.And(at0, z3.Not(goal))),
    ):
        s = z3.Solver()
        s.add(f)
        if s.check() != z3.unsat:
            raise InternalError(f"the PDR invariant is not {what}: Spacer and z3 disagree")
    return "proved", len(at0.children()) if z3.is_and(at0) else 1, ""
