"""A log finding as a timeline per writer, as Porcupine draws a history per client: one lane
per writer (the provider's effects on a lane of their own), the finding's events in log order
from left to right, each with its file:line, and a line joining them in the order the
checker read the key's chain (never by clock: the logs' order is all there is).

Reads the JSON form of a finding's steps (`kind`, `writer`, `text`, `file`, `line`), so the
timeline draws exactly what `--format json` reports.
"""

from __future__ import annotations

import posixpath

from toolcommit.checker.render.html.page import esc

LANE, LEFT = 62, 230  # px: a lane's height, the widest names' margin
LANE_COLOUR = "#aab4bf"  # only the writers' lanes use it
KIND = {
    "proposal": "#0969da",
    "transition": "#1a7f37",
    "effect": "#cf222e",
    "crash": "#9a6700",
    "restart": "#9a6700",
    "note": "#57606a",
}


def lane_of(step: dict) -> str:
    """The lane an event is drawn on: its writer, else the provider (an effect) or the log."""
    return step.get("writer") or ("provider" if step.get("kind") == "effect" else "log")


def where(step: dict) -> str:
    return f"{step['file']}:{step['line']}" if step.get("file") else ""


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _lines(i: int, text: str) -> tuple[str, str]:
    """An event's words for its box, on two lines: a transition split after its arrow (its
    detail, such as the fence, goes on the second), anything else at its middle space."""
    if " -> " in text:
        source, target = text.split(" -> ", 1)
        first, second = f"{i}. {source} →", target
    else:
        words = f"{i}. {text}".split(" ")
        half = max(1, len(words) // 2)
        first, second = " ".join(words[:half]), " ".join(words[half:])
    return _short(first, 22), _short(second, 22)


def timeline_svg(steps: list[dict], tid: str) -> str:
    """The timeline of `steps`; each event links to its row `{tid}-e{i}` of the list below.
    Boxes and the lanes' margin are as wide as their longest label needs."""
    lanes = list(dict.fromkeys(lane_of(s) for s in steps)) or ["log"]
    labels = [_lines(i, s.get("text", "")) for i, s in enumerate(steps, 1)]
    files = [_short(posixpath.basename(where(s)), 24) for s in steps]
    chars = max([len(x) for pair in labels for x in pair] + [len(f) * 0.9 for f in files] + [6])
    box = int(chars * 6.5) + 14
    step = box + 16
    left = min(LEFT, max(len(_short(w, 32)) for w in lanes) * 7 + 30)
    width = left + max(len(steps), 1) * step + 20
    height = 30 + len(lanes) * LANE
    y = {w: 30 + i * LANE + LANE / 2 for i, w in enumerate(lanes)}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" font-size="11" '
        'font-family="DejaVu Sans, sans-serif">',
        f'<text x="{left}" y="16" fill="#57606a">log order →</text>',
    ]
    for w in lanes:
        out.append(
            f'<text x="8" y="{y[w] + 4:.0f}" font-weight="600">{esc(_short(w, 32))}'
            f"<title>{esc(w)}</title></text>"
            f'<line x1="{left - 10}" y1="{y[w]:.0f}" x2="{width - 10}" y2="{y[w]:.0f}" '
            f'stroke="{LANE_COLOUR}" stroke-width="3"/>'
        )
    centres = [(left + i * step + box / 2, y[lane_of(s)]) for i, s in enumerate(steps)]
    if len(centres) > 1:
        out.append(
            '<polyline fill="none" stroke="#8c959f" stroke-width="1.5" '
            'stroke-dasharray="3 3" points="'
            + " ".join(f"{cx:.0f},{cy:.0f}" for cx, cy in centres)
            + '"/>'
        )
    for i, (s, (cx, cy), (one, two), f) in enumerate(zip(steps, centres, labels, files), 1):
        colour = KIND.get(s.get("kind"), "#57606a")
        at = where(s)
        out.append(
            f'<a href="#{tid}-e{i}"><g class="event"><title>{i}. {esc(s.get("text", ""))}'
            f"{' (' + esc(at) + ')' if at else ''}</title>"
            f'<rect x="{cx - box / 2:.0f}" y="{cy - 20:.0f}" width="{box}" height="30" '
            f'rx="4" fill="#ffffff" stroke="{colour}"/>'
            f'<rect x="{cx - box / 2:.0f}" y="{cy - 20:.0f}" width="{box}" height="30" '
            f'rx="4" fill="{colour}" fill-opacity="0.14"/>'
            f'<text x="{cx:.0f}" y="{cy - 8:.0f}" text-anchor="middle">{esc(one)}</text>'
            f'<text x="{cx:.0f}" y="{cy + 5:.0f}" text-anchor="middle">{esc(two)}</text>'
            f'<text x="{cx:.0f}" y="{cy + 21:.0f}" text-anchor="middle" fill="#57606a" '
            f'font-family="DejaVu Sans Mono, monospace" font-size="10">{esc(f)}</text>'
            "</g></a>"
        )
    return "\n".join(out + ["</svg>"])


def events_list(steps: list[dict], tid: str) -> str:
    """The events in full, each with its writer and file:line."""
    rows = [
        f'<tr id="{tid}-e{i}"><td>{i}</td><td>{esc(lane_of(s))}</td><td>{esc(s.get("kind", ""))}'
        f'</td><td>{esc(s.get("text", ""))}</td><td class="mono">{esc(where(s))}</td></tr>'
        for i, s in enumerate(steps, 1)
    ]
    return (
        '<table class="states"><tr><th>#</th><th>writer</th><th>kind</th><th>event</th>'
        "<th>file:line</th></tr>" + "\n".join(rows) + "</table>"
    )
