"""`toolcommit design --format html`: the recommendation, per guarantee the design table of
each minimal design (every knob, its departures from naive marked, each linked to the
counterexample that appears when it is turned back, drawn as a sequence diagram), the
promises a stronger guarantee would need, and the JSON report embedded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.render.design import failure_text, recommendation
from toolcommit.checker.render.html.page import esc, page, table, verdict
from toolcommit.checker.render.html.sequence import counterexample_section
from toolcommit.model.design import knob_names, meaning_of, preset_design

if TYPE_CHECKING:
    from toolcommit.checker.design.summary import Summary


def _design(m, prefix: str, title: str, open_: bool) -> list[str]:
    """A minimal design's table, then what breaks without each departure, drawn (open for
    the design to build first, folded for the others)."""
    naive = preset_design("naive")
    rows, sections = [], []
    for k in knob_names():
        f = m.needed.get(k) if k in m.departures else None
        pid = f"{prefix}-{k}"
        if f is not None and f.counterexample is not None:
            why = f'<a href="#{pid}">{esc(failure_text(f))}</a>'
            sections.append(
                counterexample_section(
                    f.counterexample, pid, f"{k} back to {naive[k]}: {failure_text(f)}"
                )
            )
        else:
            why = esc(failure_text(f)) if k in m.departures else ""
        mark = k in m.departures
        rows.append(
            [
                esc(k),
                (
                    f'<span class="depart">{esc(m.design[k])} *</span>'
                    if mark
                    else esc(m.design[k]),
                    "departure" if mark else "",
                ),
                esc(naive[k]),
                esc(meaning_of(k, m.design[k])) if mark else "",
                why,
            ]
        )
    out = [
        f"<h3>{esc(title)}</h3>",
        table(["knob", "option", "naive", "what it does", "without it"], rows, "design"),
    ]
    if sections:
        out += [
            f"<details{' open' if open_ else ''}><summary>what breaks without each "
            f"departure ({len(sections)} counterexamples)</summary>",
            *sections,
            "</details>",
        ]
    return out


def render_design_html(sm: Summary, data: str) -> str:
    """The page; `data` is the synthesis's JSON report, embedded as it is."""
    s = sm.synthesis
    body = [
        f"<h1>toolcommit design: {esc(s.env)}</h1>",
        f'<p class="lead">{esc(recommendation(sm))}</p>',
        f'<p class="meta">{esc(sm.meaning)}</p>',
        f'<p class="meta">searched: {s.checked} designs judged, {s.pruned} pruned by '
        f"monotonicity, on {esc(', '.join(s.instances))}</p>",
    ]
    for li, (lv, first) in enumerate(zip(s.levels, sm.preferred), 1):
        body.append(
            f"<h2>{esc(lv.guarantee or 'the properties asked for')} "
            f"({esc(', '.join(lv.props))}): {verdict(lv.status.value)}</h2>"
        )
        body.append(f"<p>recommended: {esc(failure_text(lv.recommended))}</p>")
        for mi, m in enumerate(lv.minimal, 1):
            body += _design(
                m,
                f"cx-{li}-{mi}",
                f"design {mi}: {len(m.departures)} departures "
                "from naive" + (" (the one to build first)" if m is first else ""),
                m is first,
            )
        if not lv.minimal and lv.strengthening:
            body.append(
                "<p>promises under which one holds:</p><ul>"
                + "".join(
                    "<li>"
                    + esc(
                        ", ".join(
                            f"{n}={v}"
                            + (
                                " [no provider of this kind can promise it]"
                                if n in st.inherent
                                else ""
                            )
                            for n, v in st.promises
                        )
                    )
                    + f"; without: {esc(failure_text(st.without))}</li>"
                    for st in lv.strengthening
                )
                + "</ul>"
            )
        elif not lv.minimal and lv.status is not Status.HOLDS:
            body.append(f"<p>No design holds in {esc(s.env)}.</p>")
    return page(f"toolcommit design: {s.env}", body, data)
