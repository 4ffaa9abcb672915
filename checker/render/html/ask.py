"""`toolcommit ask --format html`: the recommendation, the grid as a coloured matrix whose
violated cells link to their counterexamples, the answer in words, each counterexample as a
sequence diagram, and the JSON report embedded."""

from __future__ import annotations

from toolcommit.checker.design.explain import explain, footnotes, recommendation
from toolcommit.checker.design.grid import Answer
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.render.answers import cell_text
from toolcommit.checker.render.changes import change_lines
from toolcommit.checker.render.html.page import esc, page, table
from toolcommit.checker.render.html.sequence import counterexample_section


def _pid(n: int) -> str:
    return f"cx-{n}"


def render_ask_html(a: Answer, data: str) -> str:
    """The page; `data` is the answer's JSON report, embedded as it is."""
    q, notes = a.question, footnotes(a)
    rows = []
    for r in q.rows:
        line = [f"<b>{esc(r.name)}</b>"]
        for col in q.columns:
            c = a.cell(r.name, col.name)
            n = notes.get((c.row, c.column))
            text = esc(cell_text(c, n))
            status = c.status.value if c.status else "NOT_JUDGED"
            if c.status is Status.VIOLATED:
                text = f'<a href="#{_pid(n)}">{text}</a>'
            line.append((text, f"cell {status}"))
        rows.append(line)
    body = [
        f"<h1>toolcommit ask {esc(q.name)}: {esc(q.title)}</h1>",
        f'<p class="lead">{esc(recommendation(a))}</p>',
    ]
    if q.asks:
        body.append(f"<blockquote>{esc(q.asks)}</blockquote>")
    if q.column_legend:
        body.append(
            '<p class="meta">columns: '
            + esc("; ".join(f"{k} = {v}" for k, v in q.column_legend.items()))
            + "; + yes, - no</p>"
        )
    body += [
        table([esc(q.row_header or "option")] + [esc(c.name) for c in q.columns], rows, "grid"),
        '<p class="meta">green: HOLDS; red: VIOLATED (click for the counterexample); '
        "yellow: UNKNOWN; grey: not judged</p>",
        "<h2>Answer</h2>",
    ]
    body += [f"<p>{esc(p)}</p>" for p in explain(a)]
    changed = change_lines(a, False)
    if changed:
        body += [f"<h2>What {esc(q.env)} changed, and why</h2>"] + [
            f"<p>{esc(p)}</p>" for p in changed
        ]
    cells = a.violated_cells()
    if cells:
        body.append("<h2>Counterexamples</h2>")
    for c in cells:
        n, v = notes[(c.row, c.column)], c.headline
        body.append(
            counterexample_section(
                v.counterexample,
                _pid(n),
                f"[{n}] {c.row} / {c.column}: {v.property} in {v.counterexample.length} steps",
            )
        )
    return page(f"toolcommit ask {q.name}", body, data)
