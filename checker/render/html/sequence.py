"""A counterexample as a sequence diagram in SVG: one lifeline per actor (the participants
and messages of `counterexample.messages`, the ones the Mermaid diagram draws), each step a
numbered band that links to the state after it in the table below the diagram, and each
row of that table linking back to its band.

Ids are `{pid}-d{k}` (the band of step k) and `{pid}-s{k}` (its state row), `pid` a name
the report gives each counterexample.
"""

from __future__ import annotations

from toolcommit.checker.engines.trace import Counterexample
from toolcommit.checker.render.counterexample import (
    changes,
    messages,
    participants,
    render_text,
    sentence,
)
from toolcommit.checker.render.html.page import esc

CALL, REPLY, NOTE, FAULT = "#0b57d0", "#8250df", "#fff8c5", "#cf222e"  # CALL: only arrows use it
ROW, TOP, LEFT, CHAR = 24, 54, 44, 6.6  # px: a message row, the header, step numbers, a char
MIN_GAP = 120


def _box(name: str) -> float:
    return len(name) * 7 + 16


def _gaps(actors: list[tuple[str, str]], rows) -> list[float]:
    """Space between neighbouring lifelines: room for their names and every message's text."""
    gaps = [
        max(float(MIN_GAP), (_box(a[1]) + _box(b[1])) / 2 + 14) for a, b in zip(actors, actors[1:])
    ]
    pos = {a: i for i, (a, _) in enumerate(actors)}
    for kind, a, b, text in rows:
        i, j = sorted((pos[a], pos[b]))
        need = len(text) * CHAR + 24
        if kind != "note" and i == j:  # a message to itself: beside its lifeline
            if i < len(gaps):
                gaps[i] = max(gaps[i], need + 20)
            continue
        span = max(j - i, 1)
        for g in range(i, min(i + span, len(gaps))):
            gaps[g] = max(gaps[g], need / span)
    return gaps


def sequence_svg(cx: Counterexample, pid: str) -> str:
    """The diagram (see the module docstring)."""
    actors = participants(cx)
    ids = [a for a, _ in actors]
    steps = [(k, messages(cx, st), st.fault) for k, st in enumerate(cx.steps[1:], 1)]
    gaps = _gaps(actors, [m for _, ms, _ in steps for m in ms])
    xs = [LEFT + 70.0]
    for g in gaps:
        xs.append(xs[-1] + g)
    x = dict(zip(ids, xs))
    width = int(xs[-1] + 90)
    rows = sum(max(len(ms), 1) for _, ms, _ in steps)
    height = int(TOP + rows * ROW + 3 * ROW)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sequence" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-size="12" '
        'font-family="DejaVu Sans, sans-serif">',
        "<defs>"
        + "".join(
            f'<marker id="{pid}-{n}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
            f'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="{c}"/></marker>'
            for n, c in (("call", CALL), ("reply", REPLY))
        )
        + "</defs>",
    ]
    for a, name in actors:
        w = _box(name)
        out.append(
            f'<rect x="{x[a] - w / 2:.0f}" y="8" width="{w}" height="26" rx="4" '
            f'fill="#f6f8fa" stroke="#57606a"/>'
            f'<text x="{x[a]:.0f}" y="25" text-anchor="middle" font-weight="600">'
            f"{esc(name)}</text>"
            f'<line x1="{x[a]:.0f}" y1="34" x2="{x[a]:.0f}" y2="{height - 8}" '
            'stroke="#8c959f" stroke-dasharray="4 4"/>'
        )
    y = TOP
    for k, ms, fault in steps:
        band = max(len(ms), 1) * ROW
        out.append(
            f'<a href="#{pid}-s{k}"><g id="{pid}-d{k}" class="step">'
            f"<title>step {k}: {esc(sentence(cx.steps[k]))}</title>"
            f'<rect x="2" y="{y - 4}" width="{width - 4}" height="{band}" '
            f'fill="{"#f6f8fa" if k % 2 else "#ffffff"}" fill-opacity="0.6"/>'
            f'<text x="8" y="{y + 12}" fill="{FAULT if fault else "#57606a"}" '
            f'font-weight="600">{k}.</text>'
        )
        for i, (kind, a, b, text) in enumerate(ms):
            out.append(_message(kind, x[a], x[b], y + i * ROW, text, pid, fault))
        out.append("</g></a>")
        y += band
    out.append(
        f'<text x="{(xs[0] + xs[-1]) / 2:.0f}" y="{y + 18}" text-anchor="middle" '
        f'fill="{FAULT}" font-weight="700">{esc(cx.property)} violated after step '
        f"{cx.length}</text>"
    )
    return "\n".join(out + ["</svg>"])


def _message(kind: str, xa: float, xb: float, y: float, text: str, pid: str, fault: bool) -> str:
    t = esc(text)
    if kind == "note":
        lo, hi = min(xa, xb) - 50, max(xa, xb) + 50
        w = max(hi - lo, len(text) * CHAR + 16)
        mid = (lo + hi) / 2
        return (
            f'<rect x="{mid - w / 2:.0f}" y="{y - 2}" width="{w:.0f}" height="{ROW - 6}" '
            f'fill="{NOTE}" stroke="{FAULT if fault else "#d4a72c"}"/>'
            f'<text x="{mid:.0f}" y="{y + 12}" text-anchor="middle">{t}</text>'
        )
    colour, dash = (CALL, "") if kind == "call" else (REPLY, ' stroke-dasharray="6 3"')
    if xa == xb:  # a message to itself
        return (
            f'<path d="M{xa:.0f},{y + 4} h30 v12 h-30" fill="none" stroke="{colour}" '
            f'stroke-width="1.5"{dash} marker-end="url(#{pid}-{kind})"/>'
            f'<text x="{xa + 36:.0f}" y="{y + 14}">{t}</text>'
        )
    return (
        f'<line x1="{xa:.0f}" y1="{y + 14}" x2="{xb:.0f}" y2="{y + 14}" stroke="{colour}" '
        f'stroke-width="1.5"{dash} marker-end="url(#{pid}-{kind})"/>'
        f'<text x="{(xa + xb) / 2:.0f}" y="{y + 9}" text-anchor="middle">{t}</text>'
    )


def states_table(cx: Counterexample, pid: str) -> str:
    """One row per step: its sentence, what changed, and the whole state after it."""
    out = [
        '<table class="states"><tr><th>step</th><th>what happens</th><th>changes</th>'
        "<th>state after it</th></tr>"
    ]
    for k, st in enumerate(cx.steps):
        what = "initial state" if k == 0 else esc(sentence(st))
        moved = (
            ""
            if k == 0
            else "<br>".join(esc(c) for c in changes(cx, cx.steps[k - 1].state, st.state))
        )
        full = ", ".join(f"{esc(n)}={esc(cx.var(n).show(v))}" for n, v in st.state.items())
        back = f'<a href="#{pid}-d{k}">{k}</a>' if k else "0"
        out.append(
            f'<tr id="{pid}-s{k}"><td>{back}</td><td>{what}</td>'
            f'<td class="changes">{moved}</td><td><details><summary>{len(st.state)} '
            f'variables</summary><span class="mono">{full}</span></details></td></tr>'
        )
    return "\n".join(out + ["</table>"])


def counterexample_section(cx: Counterexample, pid: str, title: str) -> str:
    """A counterexample's section: heading, diagram, states, and the text explanation."""
    return "\n".join(
        [
            f'<section id="{pid}"><h3>{esc(title)}</h3>',
            f'<p class="meta">{esc(cx.property)} on {esc(cx.instance)} under {esc(cx.config)}: '
            f"{cx.length} steps, found by the {esc(cx.engine)} engine and replayed through the "
            "model; click a step for the state after it.</p>",
            f'<div class="diagram">{sequence_svg(cx, pid)}</div>',
            states_table(cx, pid),
            f"<details><summary>explained in words</summary><pre>{esc(render_text(cx))}</pre>"
            "</details></section>",
        ]
    )
