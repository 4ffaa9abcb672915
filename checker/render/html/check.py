"""`toolcommit check --format html`: the verdict table (each violated cell a link to its
counterexample), every counterexample as a sequence diagram, the text report, and the JSON
report embedded."""

from __future__ import annotations

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.render.html.page import esc, page, pre, table, verdict
from toolcommit.checker.render.html.sequence import counterexample_section
from toolcommit.checker.verify.suite import SuiteResult
from toolcommit.model.properties import all_names, of_kind


def _pid(instance: str, prop: str) -> str:
    return f"cx-{instance}-{prop}"


def render_check_html(suite: SuiteResult, data: str, text: str) -> str:
    """The page; `data` is the command's JSON report (render_json's, with whatever the
    command adds), embedded as it is, and `text` its text report, shown at the end."""
    cfg = suite.config
    cols = [p for p in all_names() if p in suite.props and p not in of_kind("hyper")]
    rows = []
    for r in suite.results:
        by = {v.property: v for v in r.verdicts}
        cells = []
        for c in cols:
            v = by.get(c)
            if v is None:
                cells.append(("-", ""))
            elif v.status is Status.VIOLATED:
                cells.append(
                    (
                        f'<a href="#{_pid(r.instance.name, c)}">x{v.counterexample.length}</a>',
                        "cell VIOLATED",
                    )
                )
            else:
                cells.append(("ok" if v.status is Status.HOLDS else "?", f"cell {v.status.value}"))
        rows.append([esc(r.instance.name), str(r.stats["states"]), str(r.stats["depth"])] + cells)
    found = [
        (r.instance.name, v)
        for r in suite.results
        for v in r.verdicts
        if v.status is Status.VIOLATED
    ]
    if suite.p5 is not None and suite.p5.status is Status.VIOLATED:
        found.append(("personalities", suite.p5))
    guarantee = suite.guarantee()
    body = [
        f"<h1>toolcommit check: {esc(cfg.label())}</h1>",
        f'<p class="lead">{verdict(suite.status.value)}'
        + (f"; guarantee: {esc(guarantee)}" if guarantee else "")
        + "".join(f"; assumes {esc(a)}" for a in suite.assumes)
        + "</p>",
        '<p class="meta">cells: ok = holds on every reachable state; xN = violated, '
        "shortest counterexample has N steps (click it); ? = unknown</p>",
        table(["instance", "states", "depth"] + cols, rows, "verdicts"),
    ]
    if found:
        body.append("<h2>Counterexamples</h2>")
    for name, v in found:
        body.append(
            counterexample_section(
                v.counterexample,
                _pid(name, v.property),
                f"{name}: {v.property} in {v.counterexample.length} steps",
            )
        )
    body += ["<h2>The report as text</h2>", pre(text)]
    return page(f"toolcommit check: {cfg.label()}", body, data)
