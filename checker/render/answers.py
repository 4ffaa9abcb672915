"""Renderers of an `Answer` (`toolcommit.checker.design.grid`): text, markdown, JSON, and the
counterexample files. They only read the answer; nothing here runs an engine.

Output is deterministic (no timings), so a stored markdown answer can be compared byte for
byte with a regeneration. `links` maps a cell's stem to the path a reader should follow
(relative to wherever the output is stored).
"""

from __future__ import annotations

import json
import posixpath
from typing import Mapping

from toolcommit.checker.design.explain import (
    explain,
    footnotes,
    ordering,
    ordering_steps,
    recommendation,
)
from toolcommit.checker.design.grid import Answer, Cell
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.render.changes import change_lines
from toolcommit.checker.render.counterexample import itf_json, render_mermaid, render_text
from toolcommit.checker.render.fit import DEFAULT, fit, paragraph, sequence, table
from toolcommit.model import timing
from toolcommit.model.values import ENV_FAULTS


def counterexample_files(a: Answer) -> dict[str, str]:
    """Relative path -> content: `<row>__<column>.{itf.json,txt,mmd}` for every VIOLATED
    cell (its headline property), plus `index.json`."""
    files: dict[str, str] = {}
    index = {"question": a.question.name, "cells": {}}
    for c in a.violated_cells():
        v = c.headline
        files[f"{c.stem}.itf.json"] = itf_json(v.counterexample)
        files[f"{c.stem}.txt"] = render_text(v.counterexample)
        files[f"{c.stem}.mmd"] = render_mermaid(v.counterexample)
        index["cells"][c.stem] = {
            "row": c.row,
            "column": c.column,
            "property": v.property,
            "steps": v.counterexample.length,
            "violated": [x.property for x in c.violated],
            "config": c.config.label(),
            "instance": c.instance.name,
        }
    files["index.json"] = json.dumps(index, indent=2, sort_keys=True) + "\n"
    return files


def cell_text(c: Cell, n: int | None, link: str | None = None) -> str:
    """A cell of the grid in words: its verdict, headline property and footnote."""
    if c.outside:
        return c.outside.split(":")[0]  # "not in stripe"
    if not c.judged:
        return "not judged"
    if c.status is Status.HOLDS:
        out = "HOLDS"
    elif c.status is Status.VIOLATED:
        ref = f"[{n}]" if not link else f"[[{n}]]({link})"
        out = f"VIOLATED {c.headline.property}"
        if len(c.violated) > 1:
            out += f" +{len(c.violated) - 1}"
        out += f" {ref}"
    else:
        out = "UNKNOWN"
    if c.changed:
        out = ", ".join(f"{k}={v}" for k, v in c.changed.items()) + ": " + out
    if c.engine == "explicit+smt":
        out += " (smt)"
    if c.agrees is False:
        out += f" (article: {c.expect})"
    elif c.agrees:
        out += " (as the article says)"
    return out


def _grid(a: Answer, links: Mapping[str, str] | None, markdown: bool) -> list[list[str]]:
    q, notes = a.question, footnotes(a)
    shows = list(dict.fromkeys(k for r in q.rows for k in r.show))
    head = [q.row_header or "option"] + shows + [c.name for c in q.columns]
    rows = [head]
    for r in q.rows:
        line = [r.name] + [r.show.get(k, "") for k in shows]
        for col in q.columns:
            c = a.cell(r.name, col.name)
            n = notes.get((c.row, c.column))
            link = links.get(c.stem) if (markdown and links and n) else None
            line.append(cell_text(c, n, link))
        rows.append(line)
    return rows


def _legend(a: Answer) -> list[str]:
    q = a.question
    out = []
    if q.column_legend:
        out.append(
            "columns: "
            + "; ".join(f"{k} = {v}" for k, v in q.column_legend.items())
            + "; + yes, - no"
        )
    out.append(
        "cells: HOLDS = no reachable state breaks any judged property; VIOLATED P [n] = "
        "P breaks, shortest counterexample [n] (+k more properties break); "
        "(smt) = the explicit search hit its limit and bounded SMT judged the rest"
    )
    return out


def _scenario_lines(a: Answer) -> list[str]:
    q = a.question
    if not q.scenario:
        return []
    return [
        "scenario (these events happen in this order; every other event interleaves "
        "freely; properties are judged on runs that complete it):"
    ] + [f"  {i}. {p.label()}" for i, p in enumerate(q.scenario, start=1)]


def _base_lines(a: Answer) -> list[str]:
    q = a.question
    base = q.preset + "".join(f"+{k}={v}" for k, v in {**q.set, **q.env_set.get(q.env, {})}.items())
    insts = list(dict.fromkeys(c.instance.name for c in a.cells.values() if c.instance))
    props = list(dict.fromkeys(p for c in a.cells.values() if c.judged for p in c.properties))
    return [
        f"base: {base}; instance{'s' if len(insts) > 1 else ''}: {', '.join(insts)}",
        f"properties: {', '.join(props)}",
    ] + _environment_lines(a)


def _environment_lines(a: Answer) -> list[str]:
    """Which environment assumptions and real-system fault budgets the grid sweeps, and the
    values it holds fixed for the others (so an answer says under what it holds)."""
    cells = [c for c in a.cells.values() if c.config is not None and c.instance is not None]
    if not cells:
        return []
    values: dict[str, set] = {}
    for c in cells:
        for k, v in c.config.assumptions.items():
            values.setdefault(k, set()).add(v)
        for f in ENV_FAULTS:
            values.setdefault(f, set()).add(c.instance.faults.get(f, 0))
    swept = [k for k, vs in values.items() if len(vs) > 1]
    fixed = [f"{k}={next(iter(vs))}" for k, vs in values.items() if len(vs) == 1]
    env = a.question.env
    times = {}
    for c in cells:
        times.update(
            {
                k: timing.show(c.config.timing[k], k)
                for k in timing.params()
                if c.config.timing[k] != timing.defaults(c.config.preset)[k]
            }
        )
    fixed += [f"{k}={v}" for k, v in times.items()]
    out = [
        f"environment {env}: swept {', '.join(swept) or 'nothing'}; held fixed {', '.join(fixed)}"
    ]
    orders = list(dict.fromkeys(o for c in cells for o in c.timing))
    return out + [f"assumes {o}" for o in orders]


def _engines(a: Answer) -> str:
    used = sorted({c.engine for c in a.cells.values() if c.judged})
    if used == ["explicit"]:
        return "engine: explicit (exhaustive breadth-first search) for every cell"
    line = "engines: " + ", ".join(
        f"{e} for {sum(c.engine == e for c in a.cells.values())} cells" for e in used
    )
    if "explicit+smt" in used:
        lim = a.question.limits
        line += (
            f" (bounded SMT judged what the explicit search left open at its limit, up to "
            f"depth {lim.bmc_depth}, "
            + (f"at most {lim.smt_timeout:g} s a run)" if lim.smt_timeout else "no time limit)")
        )
    return line


def _footnote_lines(a: Answer, links: Mapping[str, str] | None) -> list[str]:
    """The counterexamples as markdown list items, each with its link and steps."""
    notes = footnotes(a)
    out = []
    for c in a.violated_cells():
        n, v = notes[(c.row, c.column)], c.headline
        where = (links or {}).get(c.stem, "")
        others = [x.property for x in c.violated[1:]]
        also = f"; also violated: {', '.join(others)}" if others else ""
        link = f" ([{where}]({where}))" if where else ""
        out.append(
            f"{n}. **{c.row} / {c.column}**: {v.property} in {v.counterexample.length} "
            f"steps{also}{link}  \n   `{ordering(v.counterexample)}`"
        )
    return out


def render_answer_text(
    a: Answer, links: Mapping[str, str] | None = None, width: int = DEFAULT
) -> str:
    """The recommendation, the grid and the answer in words, for a terminal: no line wider
    than `width` (a grid too wide is turned, options as columns, or written one block per
    option; each counterexample's steps are broken between steps)."""
    q = a.question
    lines = [recommendation(a), "", f"toolcommit ask {q.name}: {q.title}", ""]
    if q.asks:
        lines += [q.asks, ""]
    lines += _scenario_lines(a) + _base_lines(a) + _legend(a) + [""]
    lines += table(_grid(a, None, False), width, turn=True)
    lines += ["", _engines(a), "", "Answer:"]
    for p in explain(a):
        lines += paragraph(p, width, "  ") + [""]
    changed = change_lines(a, False)
    if changed:
        lines += [f"What {a.question.env} changed, and why:"]
        lines += [
            x
            for p in changed
            for x in paragraph(p, width, "  ", "    " if p.startswith("- ") else "  ")
        ] + [""]
    lines += _footnote_text(a, links, width)
    return fit("\n".join(lines).rstrip() + "\n", width)


def _footnote_text(a: Answer, links: Mapping[str, str] | None, width: int) -> list[str]:
    """The counterexamples, each with its file (the folder named once) and its steps."""
    notes = footnotes(a)
    cells = a.violated_cells()
    if not cells:
        return []
    where = {c.stem: (links or {}).get(c.stem, "") for c in cells}
    folders = {posixpath.dirname(w) for w in where.values() if w}
    folder = folders.pop() if len(folders) == 1 else None
    out = [
        "Counterexamples (each replayed through the model"
        + (f"; files in {folder}/):" if folder else "):")
    ]
    for c in cells:
        n, v = notes[(c.row, c.column)], c.headline
        others = [x.property for x in c.violated[1:]]
        also = f"; also violated: {', '.join(others)}" if others else ""
        out.append(
            f"  [{n}] {c.row} / {c.column}: {v.property} in {v.counterexample.length} steps{also}"
        )
        if where[c.stem]:
            out.append("      " + (posixpath.basename(where[c.stem]) if folder else where[c.stem]))
        out += sequence("      ", ordering_steps(v.counterexample), " ->", width, 8)
    return out


def render_answer_markdown(a: Answer, links: Mapping[str, str] | None = None) -> str:
    """The table and the answer in words as markdown (the stored `*.answer.md`)."""
    q = a.question
    lines = [
        f"# `toolcommit ask {q.name}`: {q.title}",
        "",
        "<!-- generated by toolcommit ask; regenerate, do not edit -->",
        "",
        f"**{recommendation(a)}**",
        "",
    ]
    if q.asks:
        lines += [f"> {q.asks}", ""]
    sc = _scenario_lines(a)
    if sc:
        lines += [sc[0], ""] + [f"{line.strip()}" for line in sc[1:]] + [""]
    lines += [f"{line}  " for line in _base_lines(a) + _legend(a)] + [""]
    grid = _grid(a, links, True)
    lines.append("| " + " | ".join(_md(c) for c in grid[0]) + " |")
    lines.append("|" + "---|" * len(grid[0]))
    for row in grid[1:]:
        lines.append("| " + " | ".join(_md(c) for c in row) + " |")
    lines += ["", _engines(a) + ".", "", "## Answer", ""]
    for p in explain(a):
        lines += [p, ""]
    changed = change_lines(a, True)
    if changed:
        lines += [f"## What {a.question.env} changed, and why", ""]
        for p in changed:
            lines += ([""] if not p.startswith("- ") and lines[-1] else []) + [p]
        lines += [""]
    fn = _footnote_lines(a, links)
    if fn:
        lines += (
            [
                "## Counterexamples",
                "",
                "Each is a shortest run, replayed through the model "
                "before it is shown; the `.txt` explains it step by step, `.itf.json` is the "
                "trace, `.mmd` a sequence diagram.",
                "",
            ]
            + fn
            + [""]
        )
    lines += ["## How it is modelled", ""]
    lines += [f"- {n}" for n in q.notes]
    for r in q.rows:
        if r.meaning or r.set:
            knobs = ", ".join(f"{k}={v}" for k, v in r.set.items())
            lines.append(f"- row **{r.name}**: {r.meaning}" + (f" (`{knobs}`)" if knobs else ""))
    for col in q.columns:
        if col.meaning and not q.column_legend:
            knobs = ", ".join(f"{k}={v}" for k, v in col.set.items())
            lines.append(
                f"- column **{col.name}**: {col.meaning}" + (f" (`{knobs}`)" if knobs else "")
            )
    lines += [
        "",
        "## Runs",
        "",
        "| row | column | config | instance | engine | states |",
        "|---|---|---|---|---|---|",
    ]
    for r in q.rows:
        for col in q.columns:
            c = a.cell(r.name, col.name)
            if c.judged:
                lines.append(
                    f"| {_md(c.row)} | {_md(c.column)} | `{c.config.label()}` | "
                    f"{c.instance.name} | {c.engine} | {c.states} |"
                )
    return "\n".join(lines).rstrip() + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def render_answer_json(a: Answer, links: Mapping[str, str] | None = None) -> str:
    q, notes = a.question, footnotes(a)
    doc = {
        "question": q.name,
        "title": q.title,
        "asks": q.asks,
        "status": a.status.value,
        "scenario": [p.label() for p in q.scenario],
        "rows": [r.name for r in q.rows],
        "columns": [c.name for c in q.columns],
        "column_legend": dict(q.column_legend),
        "cells": [],
        "answer": explain(a),
        "recommendation": recommendation(a),
    }
    if a.changes is not None:
        doc["environment"] = q.env
        doc["changes"] = [_change(ch) for ch in a.changes]
    for r in q.rows:
        for col in q.columns:
            c = a.cell(r.name, col.name)
            entry = {
                "row": c.row,
                "column": c.column,
                "status": c.status.value if c.status else "NOT_JUDGED",
            }
            if not c.judged:
                entry["not_modelled"] = c.not_modelled
            else:
                entry.update(
                    {
                        "config": c.config.label(),
                        "instance": c.instance.name,
                        "engine": c.engine,
                        "states": c.states,
                        "verdicts": [_verdict(v) for v in c.verdicts],
                    }
                )
            if c.expect:
                entry.update({"expect": c.expect, "article": c.article, "agrees": c.agrees})
            if (c.row, c.column) in notes:
                entry["footnote"] = notes[(c.row, c.column)]
                entry["property"] = c.headline.property
                if links and c.stem in links:
                    entry["counterexample"] = links[c.stem]
                entry["ordering"] = ordering(c.headline.counterexample)
            doc["cells"].append(entry)
    return json.dumps(doc, indent=2) + "\n"


def _change(ch) -> dict:
    return {
        "row": ch.row,
        "column": ch.column,
        "ideal": ch.ideal_status.value,
        "here": ch.here_status.value,
        "joint": ch.joint,
        "causes": [
            {"setting": c.setting, "value": c.value, "documents": [b.url for b in c.behaviours]}
            for c in ch.causes
        ],
    }


def _verdict(v) -> dict:
    out = {"property": v.property, "status": v.status.value}
    if v.scope:
        out["scope"] = v.scope
    if v.reason:
        out["reason"] = v.reason
    if v.counterexample is not None:
        out["steps"] = v.counterexample.length
        out["engine"] = v.counterexample.engine
    return out
