"""Renderers of a design search's `Summary` (`toolcommit design`): text and JSON.

The text opens with the recommendation in one sentence: the guarantee a design keeps in the
environment (or why none is known), then what it assumes. Then, per guarantee searched,
strongest first: the minimal designs found, each with every knob's option (departures from
naive marked) and, per departure, the counterexample that appears when it is turned back;
or, when none holds, the weakest environment promises that make one hold, each promise no
provider of the kind can make marked as such and never offered as the way out.

They format what `toolcommit.checker.design.summary.summarize` decided: nothing here
searches, chooses a design or builds a model.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from toolcommit.checker.design.file import failure_json
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.render.fit import DEFAULT, fit, sequence, table
from toolcommit.model.design import departures, knob_names, meaning_of, preset_design

if TYPE_CHECKING:
    from toolcommit.checker.design.summary import Summary
    from toolcommit.checker.design.synthesis import Failure, Level, Minimal


def _steps(f: Failure, indent: str, width: int) -> list[str]:
    """The failure's steps, broken between steps (or its reason)."""
    if f.counterexample is None:
        return [indent + f.reason]
    return sequence(
        indent, [s.label() for s in f.counterexample.steps[1:]], " ;", width, len(indent) + 2
    )


def failure_text(f) -> str:
    """What turning a departure back (or dropping a promise) does, in words."""
    if f is None:
        return "holds"
    if f.counterexample is None:
        return f"{f.instance}: {f.property} {f.status.value} ({f.reason})"
    return f"{f.instance} violates {f.property} in {f.steps} steps"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _guarantee(lv: Level) -> str:
    return lv.guarantee or "the properties asked for"


def recommendation(sm: Summary) -> str:
    """The one sentence the report opens with."""
    s = sm.synthesis
    lv = s.chosen
    if lv is None:
        return f"Recommendation for {s.env}: none (nothing was searched)."
    if lv.status is Status.HOLDS:
        n = lv.minimal.index(sm.first(lv)) + 1
        stronger = [x for x in s.levels if x is not lv]
        why = (
            f"; {', '.join(_guarantee(x) for x in stronger)} is out of reach here (below)"
            if stronger
            else ""
        )
        return f"Recommendation for {s.env}: {_guarantee(lv)} (design {n} below): {sm.advice}{why}."
    if lv.status is Status.UNKNOWN:
        return (
            f"Recommendation for {s.env}: UNKNOWN: the search stopped before it could "
            f"confirm a design for {_guarantee(lv)} ({lv.stop_reason or 'a candidate was judged UNKNOWN'})."
        )
    return f"Recommendation for {s.env}: no design keeps any guarantee searched; see the promises below."


def _design_lines(m: Minimal, explain, width: int, indent: str = "     ") -> list[str]:
    naive = preset_design("naive")
    rows = [["knob", "option", "naive"]] + [
        [k, m.design[k] + (" *" if k in m.departures else ""), naive[k]] for k in knob_names()
    ]
    lines = [indent + line for line in table(rows, width - len(indent), rule=False)]
    lines.append(f"{indent}departures (* above), each with what breaks without it:")
    for k in m.departures:
        f = m.needed.get(k)
        lines.append(f"{indent}  {k}={m.design[k]}: {meaning_of(k, m.design[k])}")
        note = "" if f is None or f.status is Status.VIOLATED else " (its need is unconfirmed)"
        lines.append(f"{indent}    back to {naive[k]}: {failure_text(f)}{note}")
        if f is not None and f.counterexample is not None and explain():
            lines += _steps(f, f"{indent}      ", width)
    return lines


def _promise(n: str, v, inherent: dict) -> str:
    why = inherent.get(n)
    return f"{n}={v}" + (f" [no provider of this kind can promise it: {why}]" if why else "")


def _level_lines(env: str, lv: Level, explain, width: int) -> list[str]:
    head = f"{_guarantee(lv)} ({', '.join(lv.props)})"
    lines = ["", f"{head}: {lv.status.value}", f"  recommended: {failure_text(lv.recommended)}"]
    if lv.minimal:
        fewest = len(lv.minimal[0].departures)
        lines.append(
            f"  Minimal designs ({len(lv.minimal)} found; none of their departures from "
            f"naive can be turned back; fewest: {fewest}):"
        )
        for i, m in enumerate(lv.minimal, 1):
            lines.append(
                f"  {i}. {_n(len(m.departures), 'departure')} from naive"
                + (" (fewest)" if len(m.departures) == fewest else "")
            )
            lines += _design_lines(m, explain, width)
        return lines
    if lv.status is Status.UNKNOWN:
        lines.append(
            f"  UNKNOWN: {lv.stop_reason or 'a limit cut the search of a candidate'}; "
            f"{lv.unknown} candidate(s) judged UNKNOWN, no design confirmed on every "
            "instance. Raise --timeout or --max-states."
        )
        return lines
    offered = [st for st in lv.strengthening if st.offered]
    lines.append(
        f"  No design holds in {env} (recommended and every design one knob away "
        "were judged)."
        + (
            f" {lv.open} candidate(s) were left open by the fence bound "
            "(a retry loop is cut there, never judged): neither held nor "
            "refuted."
            if lv.open
            else ""
        )
    )
    if offered:
        lines.append("  Weakest environment promises under which one holds:")
    elif lv.strengthening:
        lines.append(
            "  Impossible with a provider of this kind: every promise that would make "
            "one hold is one no such provider can make:"
        )
    else:
        lines.append("  No set of up to three environment promises makes one hold.")
    for st in lv.strengthening:
        lines.append("    - " + ", ".join(_promise(n, v, st.inherent) for n, v in st.promises))
        lines.append(
            f"        then this design holds ({_n(len(st.design.departures), 'departure')} "
            "from naive): " + ", ".join(f"{k}={st.design.design[k]}" for k in st.design.departures)
        )
        lines.append(f"        without the promise: {failure_text(st.without)}")
        if st.without is not None and st.without.counterexample is not None and explain():
            lines += _steps(st.without, "          ", width)
    return lines


def _explainer(explain):
    """Whether to print the next counterexample's steps: `explain` is "all", "first" (only
    the first one shown) or "none" (True and False: all and none)."""
    explain = {True: "all", False: "none"}.get(explain, explain)
    left = [{"all": -1, "first": 1, "none": 0}[explain]]

    def next_one() -> bool:
        if left[0] == 0:
            return False
        left[0] -= 1 if left[0] > 0 else 0
        return True

    return next_one


def render_text(sm: Summary, explain="all", width: int = DEFAULT) -> str:
    """The recommendation, then the evidence per guarantee; no line wider than `width`.
    `explain`: which counterexamples are printed step by step ("first", "all" or "none")."""
    s = sm.synthesis
    fixed = ", ".join(f"{k}={v}" for k, v in sm.holds_fixed.items())
    lines = [
        recommendation(sm),
        "",
        f"toolcommit design: environment {s.env}: {sm.meaning}",
        f"holds fixed: {fixed}",
    ]
    if sm.assumes is not None:
        for t in sm.assumes["timing"]:
            lines.append(f"assumes: {t}")
        for n in sm.assumes["assumed"]:
            lines.append(
                f"assumes {n}={sm.holds_fixed[n]} without a document saying so (see: {sm.see})"
            )
    lines.append(f"instances: {', '.join(s.instances)}")
    lines += [f"  not judged: {name} ({why})" for name, why in s.skipped]
    lines += [f"not proposed: {opt} ({why})" for opt, why in sm.not_proposed]
    lines.append(
        f"searched: {s.checked} designs judged, {s.pruned} pruned by monotonicity, "
        f"{s.seconds:.1f}s" + ("" if s.complete else f" (stopped: {s.stop_reason})")
    )
    explain = _explainer(explain)
    for level in s.levels:
        lines += _level_lines(s.env, level, explain, width)
    return fit("\n".join(lines) + "\n", width)


def _failure_json(f):
    return None if f is None else failure_json(f)


def _minimal_json(m: Minimal) -> dict:
    return {
        "design": dict(m.design),
        "departures": {k: m.design[k] for k in m.departures},
        "needed": {k: _failure_json(f) for k, f in m.needed.items()},
        "unconfirmed": m.unconfirmed,
    }


def _level_json(lv: Level) -> dict:
    return {
        "guarantee": lv.guarantee,
        "properties": list(lv.props),
        "status": lv.status.value,
        "complete": lv.complete,
        "stop_reason": lv.stop_reason,
        "unknown": lv.unknown,
        "open": lv.open,
        "recommended": _failure_json(lv.recommended),
        "minimal": [_minimal_json(m) for m in lv.minimal],
        "strengthening": [
            {
                "promises": dict(st.promises),
                "inherent": st.inherent,
                "offered": st.offered,
                "design": {k: st.design.design[k] for k in departures(st.design.design)},
                "without": _failure_json(st.without),
            }
            for st in lv.strengthening
        ],
    }


def render_json(sm: Summary) -> str:
    s = sm.synthesis
    lv = s.chosen
    doc = {
        "environment": s.env,
        "holds_fixed": dict(sm.holds_fixed),
        "recommendation": recommendation(sm),
        "status": s.status.value,
        "guarantee": lv.guarantee if lv is not None and lv.minimal else None,
        "instances": s.instances,
        "not_judged": [dict(zip(("instance", "why"), x)) for x in s.skipped],
        "not_proposed": [dict(zip(("option", "why"), x)) for x in sm.not_proposed],
        "checked": s.checked,
        "pruned": s.pruned,
        "complete": s.complete,
        "levels": [_level_json(x) for x in s.levels],
    }
    if sm.assumes is not None:
        doc["assumes"] = sm.assumes
        doc["preferred"] = lv.minimal.index(sm.first(lv)) + 1
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
