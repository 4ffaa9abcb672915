"""Renderers of `toolcommit prove`'s verdicts: text (violations explained) and JSON
(counterexamples as ITF traces). They only read the verdicts and what the command ran on.
"""

from __future__ import annotations

import json

from toolcommit.checker.engines.verdict import Status, overall
from toolcommit.checker.render.counterexample import render_itf, render_text
from toolcommit.checker.render.fit import DEFAULT, fit


def render_proof_text(
    config, inst, method: str, verdicts, seconds: float, width: int = DEFAULT
) -> str:
    """One line per verdict, the lemmas used, each violation explained, the overall status
    and the wall time; no line wider than `width`."""
    lines = [
        f"toolcommit prove: {config.label()} on {inst.name} "
        f"({', '.join(f'{k}={v}' for k, v in inst.bounds().items())}), method {method}",
        "assumptions: " + ", ".join(f"{k}={v}" for k, v in config.assumptions.items()),
        "",
    ]
    for v in verdicts:
        why = f" -- {v.reason}" if v.reason and v.status is not Status.UNKNOWN else ""
        lines.append(f"  {v.line()}{why}")
    lemmas = next(
        (v.extra.get("lemma_families") for v in verdicts if v.extra.get("lemma_families")), None
    )
    if lemmas:
        lines += ["", "lemmas used (each proved inductive with the others): " + ", ".join(lemmas)]
    for v in verdicts:
        if v.status is Status.VIOLATED:
            lines += ["", render_text(v.counterexample, width).rstrip()]
    lines += ["", f"{overall(verdicts).value} in {seconds:.2f}s"]
    return fit("\n".join(lines) + "\n", width)


def render_proof_json(config, inst, method: str, max_k: int, verdicts, seconds: float) -> str:
    """The run and its verdicts as JSON (the lemmas themselves left out)."""
    doc = {
        "config": config.label(),
        "instance": inst.name,
        "bounds": inst.bounds(),
        "method": method,
        "max_k": max_k,
        "seconds": round(seconds, 3),
        "status": overall(verdicts).value,
        "verdicts": [],
    }
    for v in verdicts:
        out = {
            "property": v.property,
            "status": v.status.value,
            "scope": v.scope,
            "reason": v.reason,
            **{k: x for k, x in v.extra.items() if k != "lemmas"},
        }
        if v.counterexample is not None:
            out["steps"] = v.counterexample.length
            out["counterexample"] = render_itf(v.counterexample)
        doc["verdicts"].append(out)
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
