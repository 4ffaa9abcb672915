"""`toolcommit validate --format html`: the verdict, each finding on a timeline per writer
with the file:line of every event, a key's full history (`--key`) the same way, what a
trace's source let toolcommit judge, and the JSON report embedded.

Built from the JSON report alone (what `--format json` prints), so the page shows what the
data says and nothing else.
"""

from __future__ import annotations

import json

from toolcommit.checker.render.html.page import esc, page, table, verdict
from toolcommit.checker.render.html.timeline import events_list, timeline_svg


def _finding(i: int, f: dict, meanings: dict) -> list[str]:
    tid = f"finding-{i}"
    head = f"{i}. {f['property']} [{f['certainty']}] on {f['key']}"
    out = [
        f'<section id="{tid}"><h3>{esc(head)}</h3>',
        f'<p class="meta">{esc(f["property"])}: {esc(meanings.get(f["property"], ""))}</p>',
    ]
    if f.get("steps"):
        out += [
            f'<div class="diagram">{timeline_svg(f["steps"], tid)}</div>',
            events_list(f["steps"], tid),
        ]
    out.append(f"<p><b>However:</b> {esc(f['explanation'])}.</p>")
    if f.get("more"):
        out.append(
            f'<p class="meta">({f["more"]} more occurrence(s) of {esc(f["property"])} '
            "on this key)</p>"
        )
    return out + ["</section>"]


def render_validate_html(data: str) -> str:
    """The page of the JSON report `data` (validate's, with a trace's source or a ledger
    where the command added them)."""
    from toolcommit.checker.render.findings import meanings

    doc = json.loads(data)
    t, s = doc.get("totals", {}), doc.get("stats", {})
    body = [
        "<h1>toolcommit validate</h1>",
        f'<p class="lead">{verdict(doc["verdict"])}: {t.get("certain", 0)} certain, '
        f"{t.get('possible', 0)} possible finding(s); {s.get('keys', 0)} keys, "
        f"{s.get('intents', 0)} intents, {s.get('writers', 0)} writers</p>",
    ]
    body += [f'<p class="meta">warning: {esc(w)}</p>' for w in doc.get("warnings", [])]
    findings = doc.get("findings", [])
    if findings:
        body.append("<h2>Findings</h2>")
        body.append(
            table(
                ["#", "property", "certainty", "key", "events"],
                [
                    [
                        f'<a href="#finding-{i}">{i}</a>',
                        esc(f["property"]),
                        esc(f["certainty"]),
                        esc(f["key"]),
                        str(len(f.get("steps", []))),
                    ]
                    for i, f in enumerate(findings, 1)
                ],
            )
        )
    for i, f in enumerate(findings, 1):
        body += _finding(i, f, meanings())
    for n, (key, steps) in enumerate(doc.get("history", {}).items(), 1):
        tid = f"history-{n}"
        body += [
            f'<section id="{tid}"><h2>History of {esc(key)}</h2>',
            f'<div class="diagram">{timeline_svg(steps, tid)}</div>',
            events_list(steps, tid),
            "</section>",
        ]
    source = doc.get("source")
    if source:
        st = source.get("stats", {})
        body.append(f"<h2>What this {esc(source.get('name', ''))} trace let toolcommit judge</h2>")
        body.append(f'<p class="meta">{esc(json.dumps(st, sort_keys=True))}</p>')
        body.append(
            table(
                ["property", "judged", "why"],
                [
                    [esc(r.get("property", "")), esc(r.get("status", "")), esc(r.get("why", ""))]
                    for r in source.get("judged", [])
                ],
            )
        )
        body += [f'<p class="meta">note: {esc(n)}</p>' for n in source.get("notes", [])]
    ledger = doc.get("ledger")
    if ledger:
        body.append(
            f"<h2>Ledger</h2><p>{ledger.get('effects_joined', 0)} effect(s) joined from "
            f"{esc(', '.join(ledger.get('files', [])))}</p>"
        )
        body += [f'<p class="meta">note: {esc(n)}</p>' for n in ledger.get("notes", [])]
    if doc.get("design"):
        body += _design(doc["design"])
    if doc["verdict"] == "CONFORMS":
        body.append(
            "<p>Every logged transition is an edge of the spec graph on one chain per "
            "key, no intent took effect twice, and no line was lost.</p>"
        )
    return page(f"toolcommit validate: {doc['verdict']}", body, data)


def _design(d: dict) -> list[str]:
    """The ``--design`` section: the knobs by how they were judged, the coverage table."""
    k = d["knobs"]
    out = [
        f"<h2>Design {esc(d['design'])}</h2>",
        f"<p>{esc(d['guarantee'])}, environment {esc(d['environment'])}: "
        f"{sum(d['totals'].values())} departure(s)</p>",
        table(
            ["knobs", "how"],
            [
                [esc(", ".join(k["checked"])), "checked against each logged step"],
                [
                    esc(", ".join(f"{x} ({y})" for x, y in k["generic"].items())),
                    "checked by the generic findings",
                ],
                [esc(", ".join(k["hidden"])), "not visible in a log"],
                [esc(", ".join(k["unchecked"])), "not checked (no rule)"],
            ],
        ),
        f"<h3>Coverage: {d['reached']} of {len(d['coverage'])} paths reached</h3>",
    ]
    rows = []
    for p in d["coverage"]:
        first = p["first"]
        where = esc(f"{first['file']}:{first['line']}") if first else ("NOT REACHED", "UNKNOWN")
        rows.append(
            [
                esc(p["name"]),
                str(p["count"]),
                where,
                esc(p["meaning"] + (" (by the writer's clock)" if p["clock"] else "")),
            ]
        )
    return out + [table(["path", "times", "first line", "meaning"], rows)]
