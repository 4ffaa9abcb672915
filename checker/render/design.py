"""Renderers of a `Synthesis` (`toolcommit design`): text and JSON.

Each minimal design is listed by its departures from `naive`, each with the counterexample
that appears when that departure is turned back; when no design holds, the weakest set of
environment promises that makes one hold, with the counterexample without them.
"""
from __future__ import annotations

import json

from toolcommit.model.environment import held_fixed, profile
from toolcommit.model.knobs import preset
from toolcommit.spec import protocol

from toolcommit.checker.design.synthesis import Failure, Synthesis, departures, unsearched


def _steps(f: Failure) -> str:
    if f.counterexample is None:
        return f.reason
    return " ; ".join(s.label() for s in f.counterexample.steps[1:])


def _failure(f: Failure) -> str:
    if f is None:
        return "holds"
    if f.counterexample is None:
        return f"{f.instance}: {f.property} {f.status.value} ({f.reason})"
    return f"{f.instance} violates {f.property} in {f.steps} steps"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _knob(k: str, option: str) -> str:
    return f"{k}={option}: {protocol().knobs[k].options[option]}"


def render_text(s: Synthesis, explain: bool = True) -> str:
    naive = preset("naive").knobs
    fixed = ", ".join(f"{k}={v}" for k, v in held_fixed(s.env).items())
    lines = [f"toolcommit design: environment {s.env}: {profile(s.env).meaning}",
             f"holds fixed: {fixed}",
             f"properties judged: {', '.join(s.props)}",
             f"instances: {', '.join(s.instances)}"]
    lines += [f"  not judged: {name} ({why})" for name, why in s.skipped]
    lines += [f"not proposed: {opt} ({why})" for opt, why in unsearched()]
    lines.append(f"searched: {s.checked} designs judged, {s.pruned} pruned by monotonicity, "
                 f"{s.seconds:.1f}s" + ("" if s.complete else f" (stopped: {s.stop_reason})"))
    lines += ["", "recommended: " + _failure(s.recommended)]
    if s.minimal:
        fewest = len(s.minimal[0].departures)
        lines += ["", f"Minimal designs ({len(s.minimal)} found; none of their departures from "
                  f"naive can be turned back; fewest: {fewest}):"]
        for i, m in enumerate(s.minimal, 1):
            lines.append(f"  {i}. {_n(len(m.departures), 'departure')} from naive"
                         + (" (fewest)" if len(m.departures) == fewest else ""))
            for k in m.departures:
                f = m.needed.get(k)
                lines.append(f"     {_knob(k, m.design[k])}")
                lines.append(f"        back to {naive[k]}: {_failure(f)}")
                if explain and f is not None and f.counterexample is not None:
                    lines.append(f"          {_steps(f)}")
    elif s.strengthening:
        lines += ["", f"No design holds in {s.env} (recommended and every design one knob away "
                  "were judged).", "Weakest environment promises under which one holds:"]
        for st in s.strengthening:
            promise = ", ".join(f"{n}={v}" for n, v in st.promises)
            d = st.design
            lines.append(f"  - {promise}")
            lines.append(f"      then this design holds ({_n(len(d.departures), 'departure')} from naive):")
            for k in d.departures:
                lines.append(f"        {_knob(k, d.design[k])}")
                if k in d.needed:
                    lines.append(f"          back to {naive[k]}: {_failure(d.needed[k])}")
            lines.append(f"      without the promise: {_failure(st.without)}")
            if explain and st.without is not None and st.without.counterexample is not None:
                lines.append(f"        {_steps(st.without)}")
    else:
        lines += ["", f"No design holds in {s.env}, and no set of up to three environment "
                  "promises found one" + ("" if s.complete else " before the time limit") + "."]
    return "\n".join(lines) + "\n"


def _failure_json(f):
    if f is None:
        return None
    out = {"instance": f.instance, "property": f.property, "status": f.status.value}
    if f.counterexample is not None:
        out["steps"] = f.steps
        out["trace"] = [s.label() for s in f.counterexample.steps[1:]]
    elif f.reason:
        out["reason"] = f.reason
    return out


def render_json(s: Synthesis) -> str:
    doc = {"environment": s.env, "holds_fixed": held_fixed(s.env), "properties": list(s.props),
           "instances": s.instances, "not_judged": [dict(zip(("instance", "why"), x)) for x in s.skipped],
           "not_proposed": [dict(zip(("option", "why"), x)) for x in unsearched()],
           "checked": s.checked, "pruned": s.pruned, "complete": s.complete,
           "recommended": _failure_json(s.recommended),
           "minimal": [{"departures": {k: m.design[k] for k in m.departures},
                        "needed": {k: _failure_json(f) for k, f in m.needed.items()}}
                       for m in s.minimal],
           "strengthening": [{"promises": dict(st.promises),
                              "design": {k: st.design.design[k] for k in departures(st.design.design)},
                              "without": _failure_json(st.without)} for st in s.strengthening]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
