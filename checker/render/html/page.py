"""The page every HTML report shares: the shell (CSS, the policy that forbids loading
anything, the embedded JSON report), escaping, and the pieces reports have in common."""

from __future__ import annotations

import html
import json

DATA_ID = "toolcommit-data"
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
COLOURS = {
    "HOLDS": "#1a7f37",
    "VIOLATED": "#cf222e",
    "UNKNOWN": "#9a6700",
    "CONFORMS": "#1a7f37",
    "VIOLATES": "#cf222e",
    "INCONCLUSIVE": "#9a6700",
}

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif;
       margin: 24px auto; max-width: 1180px; padding: 0 16px; color: #1f2328; }
h1 { font-size: 20px; margin: 0 0 6px; } h2 { font-size: 17px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 20px 0 6px; }
.lead { font-size: 15px; padding: 10px 14px; background: #ddf4ff; border-left: 4px solid #0969da; }
.meta { color: #59636e; font-size: 13px; }
pre, code, .mono { font-family: "DejaVu Sans Mono", ui-monospace, monospace; font-size: 12px; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; white-space: pre-wrap; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.HOLDS, td.CONFORMS { background: #dafbe1; } td.VIOLATED, td.VIOLATES { background: #ffebe9; }
td.UNKNOWN, td.INCONCLUSIVE { background: #fff8c5; } td.NOT_JUDGED { background: #eaeef2; color: #59636e; }
td.cell a { color: inherit; font-weight: 600; }
.verdict { font-weight: 700; }
.diagram { overflow-x: auto; border: 1px solid #d0d7de; margin: 8px 0; background: #fff; }
.states td { font-size: 12px; } .states tr:target { background: #fff8c5; }
.states .changes { font-family: "DejaVu Sans Mono", ui-monospace, monospace; }
details > summary { cursor: pointer; color: #0969da; }
.depart { font-weight: 600; } td.departure { background: #ddf4ff; }
"""


def esc(text) -> str:
    """Text as HTML (quotes escaped: safe in attributes too)."""
    return html.escape(str(text), quote=True)


def embed(data: str) -> str:
    """The JSON report `data` as a script block a browser never runs and a reader (or a
    test) parses back to the same value: `<` is written as its JSON escape, so no
    `</script>` inside a string can end the block."""
    json.loads(data)  # refuse anything but JSON
    return (
        f'<script type="application/json" id="{DATA_ID}">'
        + data.strip().replace("<", "\\u003c")
        + "</script>"
    )


def page(title: str, body: list[str], data: str) -> str:
    """The whole document: `body` (HTML fragments) and the embedded JSON report `data`."""
    return (
        "\n".join(
            [
                "<!DOCTYPE html>",
                '<html lang="en">',
                "<head>",
                '<meta charset="utf-8">',
                f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
                f"<title>{esc(title)}</title>",
                f"<style>{CSS}</style>",
                "</head>",
                "<body>",
                *body,
                embed(data),
                "</body>",
                "</html>",
            ]
        )
        + "\n"
    )


def verdict(status: str) -> str:
    """A verdict word in its colour."""
    return (
        f'<span class="verdict" style="color:{COLOURS.get(status, "#1f2328")}">{esc(status)}</span>'
    )


def table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    """An HTML table of already-escaped cells (a cell may be (html, class))."""
    out = [
        f'<table class="{cls}">' if cls else "<table>",
        "<tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr>",
    ]
    for r in rows:
        cells = [c if isinstance(c, tuple) else (c, "") for c in r]
        out.append(
            "<tr>"
            + "".join(f'<td class="{k}">{v}</td>' if k else f"<td>{v}</td>" for v, k in cells)
            + "</tr>"
        )
    return "\n".join(out + ["</table>"])


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"
