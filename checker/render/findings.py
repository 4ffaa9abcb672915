"""Renderers of a conformance `Report`: text (Elle-style explanations), JSON, Mermaid.

Renderers only read the report's data; they never re-check anything. Each takes the
command's exit code too (only JSON shows it). Text reads like a
counterexample: *Let* names the actors, *Then* lists the steps in log order with file:line,
*However* says which property breaks and why.
"""

from __future__ import annotations

import json
import re
import textwrap
from functools import lru_cache
from importlib import resources
from typing import Optional

from toolcommit.checker.logs.findings import MAX_PER_PROPERTY, Citation, Finding
from toolcommit.checker.logs.report import Report, count
from toolcommit.model.canon import VERSIONS
from toolcommit.spec import protocol


@lru_cache(maxsize=1)
def meanings() -> dict[str, str]:
    """One-line meaning of every finding name: protocol properties and log findings."""
    out = {name: p["meaning"] for name, p in protocol().properties.items()}
    raw = json.loads(
        resources.files("toolcommit.spec").joinpath("log-findings.json").read_text("utf-8")
    )
    out.update(raw["log_findings"])
    return out


def _headline(report: Report) -> str:
    totals = report.totals or count(report.findings)
    s = report.stats
    dropped = (
        f" ({report.dropped} not listed: at most {MAX_PER_PROPERTY} per property)"
        if report.dropped
        else ""
    )
    return (
        f"{report.verdict.value}: {totals['certain']} certain, {totals['possible']} "
        f"possible finding(s){dropped}; "
        f"{s.get('keys', 0)} keys, {s.get('intents', 0)} intents, "
        f"{s.get('writers', 0)} writers, "
        f"{sum(s.get(t, 0) for t in ('proposal', 'transition', 'effect', 'crash', 'restart'))}"
        " events"
    )


def text_finding(f: Finding, index: int = 0) -> str:
    """One finding as a short counterexample."""
    head = f"{index}. " if index else ""
    lines = [
        f"{head}{f.property} [{f.certainty}] on {f.key}",
        f"   {f.property}: {meanings().get(f.property, '')}",
    ]
    if f.writers:
        lines.append(f"   Let: writers {', '.join(f.writers)}; key {f.key}")
    if f.steps:
        lines.append("   Then:")
        for i, s in enumerate(f.steps, 1):
            who = f"{s.writer}: " if s.writer else ""
            where = f"  ({s.where})" if s.where else ""
            lines.append(f"     {i}. {who}{s.text}{where}")
    lines.append(f"   However: {f.explanation}.")
    if f.more:
        lines.append(f"   ({f.more} more occurrence(s) of {f.property} on this key)")
    if f.locations:
        lines.append("   Lines: " + ", ".join(f"{p}:{n}" for p, n in f.locations))
    return "\n".join(lines)


def render_text(report: Report, exit_code: Optional[int] = None) -> str:
    out = [_headline(report)]
    for w in report.warnings:
        out.append(f"warning: {w}")
    for i, f in enumerate(report.findings, 1):
        out.append("")
        out.append(text_finding(f, i))
    if report.dropped:
        out.append(f"\n({report.dropped} further findings not listed)")
    if report.verdict.value == "CONFORMS":
        out.append(
            "Every logged transition is an edge of the spec graph on one chain per key, "
            "no intent took effect twice, and no line was lost."
        )
    if report.design is not None:
        out += [""] + design_text(report.design.to_json())
    return "\n".join(out) + "\n"


def design_text(d: dict, width: int = 100) -> list[str]:
    """The ``--design`` section: the design's knobs by how they were judged, then the
    coverage table (each path of the design, how often the logs took it: ``-`` never)."""
    k = d["knobs"]
    n = sum(d["totals"].values())
    out = [
        f"Design {d['design']} ({d['guarantee'] or 'no guarantee named'}, environment "
        f"{d['environment']}): {n} departure(s)"
    ]
    rows = [
        ("checked here", ", ".join(k["checked"])),
        (
            "checked by the generic findings",
            ", ".join(f"{x} ({y})" for x, y in k["generic"].items()),
        ),
        ("not visible in a log", ", ".join(k["hidden"])),
        ("not checked (no rule)", ", ".join(k["unchecked"])),
    ]
    for label, text in rows:
        if text:
            out += textwrap.wrap(
                f"{label}: {text}", width, initial_indent="  ", subsequent_indent="    "
            )
    cov = d["coverage"]
    out.append(
        f"Coverage: {d['reached']} of {len(cov)} paths of the design reached "
        "(times taken; where first: --format json)"
    )
    for p in cov:
        clock = " (by the writer's clock)" if p["clock"] else ""
        times = p["count"] or "-"
        out += textwrap.wrap(
            f"{p['name']:<22} {times:>5}  {p['meaning']}{clock}",
            width,
            initial_indent="  ",
            subsequent_indent=" " * 32,
        )
    return out


def to_json(report: Report, exit_code: Optional[int] = None) -> dict:
    """The report as JSON data; `exit_code` (the command's, when it has one) right after
    the verdict."""
    out: dict = {"verdict": report.verdict.value}
    if exit_code is not None:
        out["exit_code"] = exit_code
    return (
        out
        | {
            "findings": [f.to_json() for f in report.findings],
            "warnings": list(report.warnings),
            "stats": report.stats,
            "totals": report.totals or count(report.findings),
            "dropped": report.dropped,
            "canonicalizer": max(VERSIONS),
            "history": {k: [_step_json(s) for s in v] for k, v in report.history.items()},
        }
        | ({} if report.design is None else {"design": report.design.to_json()})
    )


def _step_json(s: Citation) -> dict:
    return {"kind": s.kind, "writer": s.writer, "text": s.text, "file": s.file, "line": s.line}


def render_json(report: Report, exit_code: Optional[int] = None) -> str:
    return json.dumps(to_json(report, exit_code), indent=2, ensure_ascii=False) + "\n"


# ----- Mermaid ---------------------------------------------------------------------------
_UNSAFE = re.compile(r"[^\w .,:+\-=>()\[\]{}\"'/@*…→]")


def _m(text: str, n: int = 120) -> str:
    """Text safe inside a Mermaid message: no newlines, semicolons, hashes or arrows."""
    text = _UNSAFE.sub("_", text.replace("->", "→"))
    return text if len(text) <= n else text[: n - 1] + "…"


def mermaid_sections(title: str, sections) -> str:
    """One sequence diagram for every story: `sections` are (heading, key, steps). Each key
    and each writer is one participant; each story is a shaded block headed by a note."""
    keys: dict[str, str] = {}
    writers: dict[str, str] = {}
    for _, key, steps in sections:
        keys.setdefault(key, f"K{len(keys) + 1}")
        for s in steps:
            writers.setdefault(_who(s), f"W{len(writers) + 1}")
    lines = ["sequenceDiagram", f"  title {_m(title)}"]
    lines += [f"  participant {a} as {_m('key ' + k, 60)}" for k, a in keys.items()]
    lines += [f"  participant {a} as {_m(w, 40)}" for w, a in writers.items()]
    if not sections:
        return "\n".join(lines + ["  participant L as log", "  Note over L: no finding"]) + "\n"
    ids = [*keys.values(), *writers.values()]
    span = ids[0] if len(ids) == 1 else f"{ids[0]},{ids[-1]}"  # a note across them all
    for heading, key, steps in sections:
        k = keys[key]
        lines += ["  rect rgb(245, 245, 245)", f"    Note over {span}: {_m(heading, 200)}"]
        for s in steps:
            who = writers[_who(s)]
            text = _m(s.text + (f" ({s.where})" if s.where else ""))
            if s.kind in ("crash", "restart", "note"):
                lines.append(f"    Note over {who}: {text}")
            else:
                lines.append(f"    {who}{'-->>' if s.kind == 'effect' else '->>'}{k}: {text}")
        lines.append("  end")
    return "\n".join(lines) + "\n"


def _who(s: Citation) -> str:
    return s.writer or ("provider" if s.kind == "effect" else "log")


def render_mermaid(report: Report, exit_code: Optional[int] = None) -> str:
    """One Mermaid document: a sequence diagram with a block per focus key's full history
    if any, else a block per finding (comments first: the headline, warnings, and each
    finding's explanation)."""
    out = [f"%% {_headline(report)}"]
    for w in report.warnings:
        out.append(f"%% warning: {_m(w, 300)}")
    if report.history:
        sections = [
            (f"history of {key}: {report.verdict.value}", key, steps)
            for key, steps in report.history.items()
        ]
    else:
        sections = []
        for i, f in enumerate(report.findings, 1):
            out.append(f"%% {i}. {f.property} [{f.certainty}] {_m(f.explanation, 400)}")
            sections.append((f"{i}. {f.property} [{f.certainty}] on {f.key}", f.key, f.steps))
    out.append(
        mermaid_sections(f"{report.verdict.value}: {len(report.findings)} finding(s)", sections)
    )
    return "\n".join(out)


RENDERERS = {"text": render_text, "json": render_json, "mermaid": render_mermaid}
