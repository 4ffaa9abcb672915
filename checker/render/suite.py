"""Renderers of a `SuiteResult` (`toolcommit check`): the verdict table as text, the
suite as JSON, and every counterexample as a pasteable pytest test.

They only read the suite and its self-contained counterexamples; nothing here runs an
engine or rebuilds the model.
"""

from __future__ import annotations

import json

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.render.counterexample import render_itf, render_python, render_text
from toolcommit.checker.render.fit import DEFAULT, fit, sequence, table
from toolcommit.checker.verify.suite import SuiteResult
from toolcommit.model.knobs import bearing
from toolcommit.model.properties import all_names, of_kind
from toolcommit.spec import protocol


def _cell(v) -> str:
    if v is None:
        return "-"
    if v.status is Status.HOLDS:
        return "ok"
    if v.status is Status.VIOLATED:
        return f"x{v.counterexample.length}"
    return "?"


def _knobs(suite: SuiteResult) -> dict:
    """The config's knobs that bear on the instances checked."""
    return bearing(suite.config.knobs, [r.instance for r in suite.results])


def render_suite_text(suite: SuiteResult, explain: str = "first", width: int = DEFAULT) -> str:
    """The verdict table, coverage, unknowns, shortest counterexamples (explained per
    `explain`: "first", "all" or "none") and the summary line; no line wider than `width`
    (a table too wide is split into groups of properties, each beside the instances)."""
    cfg = suite.config
    lines = (
        [f"toolcommit check: {cfg.label()}"]
        + ([f"judged: {suite.claim}"] if suite.claim else [])
        + [
            "knobs: " + ", ".join(f"{k}={v}" for k, v in _knobs(suite).items()),
            "assumptions: " + ", ".join(f"{k}={v}" for k, v in cfg.assumptions.items()),
        ]
    )
    lines += _own_assumptions(suite) + ["", _legend(suite), ""]
    lines += _table(suite, width) + _coverage(suite) + _early(suite) + _denominator(suite)
    if suite.p5 is not None:
        lines += [
            "",
            f"P5 (model personalities): {suite.p5.line()}"
            + (
                f" -- {suite.p5.reason}"
                if suite.p5.status is Status.HOLDS and suite.p5.reason
                else ""
            ),
        ]
    lines += _unknowns(suite) + _violations(suite, explain, width)
    lines += _outside(suite, width) + ["", _summary(suite)]
    return fit("\n".join(lines) + "\n", width)


def _table(suite: SuiteResult, width: int) -> list[str]:
    """One row per instance: states, depth and a cell per property judged."""
    cols = [
        p for p in all_names() if p in suite.props and p not in of_kind("hyper")
    ]  # hyper: apart
    rows = [["instance", "states", "depth"] + cols]
    for r in suite.results:
        by = {v.property: v for v in r.verdicts}
        states = f"{r.stats['states']}" + ("+" if r.stats.get("early") else "")
        rows.append(
            [r.instance.name, states, str(r.stats["depth"])] + [_cell(by.get(c)) for c in cols]
        )
    return table(rows, width, align="lrr" + "r" * len(cols), gap=1, keep=1, rule=False)


def _own_assumptions(suite: SuiteResult) -> list[str]:
    """The instances that run under assumptions of their own (a failure class that fixes
    one), each with what differs from the line above."""
    out = []
    for r in suite.results:
        own = {
            k: v for k, v in r.instance.assumptions.items() if suite.config.assumptions.get(k) != v
        }
        if own:
            out.append(
                f"  {r.instance.name} runs with " + ", ".join(f"{k}={v}" for k, v in own.items())
            )
    return out


def _outside(suite: SuiteResult, width: int) -> list[str]:
    """The verdicts outside a design file's claim (`check --design FILE --all`): shown, not
    counted in the status or the exit code."""
    o = suite.outside
    if o is None:
        return []
    if not o.results and o.p5 is None:
        return ["", "outside the claim: nothing else to judge"]
    out = ["", "Outside the claim (--all: not part of the verdict or the exit code):"]
    out += _own_assumptions(o) + _table(o, width)
    if o.p5 is not None:
        out.append(f"P5 (model personalities): {o.p5.line()}")
    out += _violations(o, "none", width)
    vs = o.verdicts()
    n = {s: sum(v.status is s for v in vs) for s in Status}
    return out + [
        "",
        f"outside the claim: {n[Status.VIOLATED]} violated, {n[Status.UNKNOWN]} "
        f"unknown, {n[Status.HOLDS]} hold",
    ]


def _legend(suite: SuiteResult) -> str:
    if suite.engine == "explicit":
        return (
            "cells: ok = holds on every reachable state of the instance; xN = violated, "
            "shortest counterexample has N steps; ? = unknown"
        )
    scopes = sorted({v.scope for v in suite.verdicts() if v.status is Status.HOLDS})
    return (
        f"engine: {suite.engine}; cells: ok = holds {' / '.join(scopes) or '(none hold)'}, "
        "not a proof; xN = violated in N steps; ? = unknown"
    )


def _coverage(suite: SuiteResult) -> list[str]:
    """Which declared actions never fired: a fault that cannot fire checks nothing. Only a
    search that saw every reachable state can say an action never fires; a search stopped
    at a limit is named, without that claim."""
    whole = [r for r in suite.results if not r.stats.get("early")]  # (see _early)
    if suite.engine != "explicit" or not whole:
        return []
    cut = [r.instance.name for r in whole if not r.stats.get("complete", True)]
    whole = [r for r in whole if r.instance.name not in cut]
    idle = [
        (r.instance.name, sorted(a for a, n in r.coverage.items() if n == 0) + _absent(r))
        for r in whole
    ]
    idle = [(name, acts) for name, acts in idle if acts]
    out = [""]
    if not whole:
        pass
    elif not idle:
        out.append(
            "coverage: every action of every instance searched to the end fired at least once"
            if cut
            else "coverage: every action of every instance fired at least once"
        )
    else:
        out += [
            "coverage: actions this instance never fires (no fault or call of it leads there):"
        ] + [f"  {name}: {', '.join(acts)}" for name, acts in idle]
    if cut:
        out.append(f"coverage not judged where the search stopped at a limit: {', '.join(cut)}")
    return out


def _absent(r) -> list[str]:
    """The instance's faults with a budget that this design has no action for (a zombie's
    lease expiry where there are no leases): the failure class cannot happen here."""
    faults = protocol().faults
    return [
        f"{faults[f]} (budget {f}={n}, no such action in this design)"
        for f, n in r.instance.faults.items()
        if n > 0 and faults[f] not in r.coverage
    ]


def _early(suite: SuiteResult) -> list[str]:
    """Instances whose search stopped once every property asked for was violated (`--first`):
    their counts (marked +) and coverage are of the part searched."""
    early = [r for r in suite.results if r.stats.get("early")]
    if not early:
        return []
    return [
        "",
        "stopped early (--first): every property asked for is violated, so the search "
        "ended there; states (marked +) are of the part searched, and coverage is not "
        "reported:",
    ] + [
        f"  {r.instance.name}: {r.stats['states']} states to depth {r.stats['depth']}"
        for r in early
    ]


def _denominator(suite: SuiteResult) -> list[str]:
    """For the random engine: how many runs and steps, and which faults fired."""
    if suite.engine != "random":
        return []
    out = ["", "denominator (random engine):"]
    for r in suite.results:
        faults = ", ".join(f"{k}={v}" for k, v in sorted((r.stats.get("faults") or {}).items()))
        out.append(
            f"  {r.instance.name}: {r.stats.get('runs')} runs, {r.stats.get('steps')} steps;"
            f" faults fired: {faults or 'none'}"
        )
    return out


def _unknowns(suite: SuiteResult) -> list[str]:
    out = [
        f"  {r.instance.name}: {v.line()}"
        for r in suite.results
        for v in r.verdicts
        if v.status is Status.UNKNOWN
    ]
    return ["", "Unknown:"] + out if out else []


def _violations(suite: SuiteResult, explain: str, width: int) -> list[str]:
    found = [
        (r.instance.name, v)
        for r in suite.results
        for v in r.verdicts
        if v.status is Status.VIOLATED
    ]
    if suite.p5 is not None and suite.p5.status is Status.VIOLATED:
        found.append(("personalities", suite.p5))
    if not found:
        return []
    out = ["", "Shortest counterexamples:"]
    for name, v in found:
        out += sequence(
            f"  {name} {v.property} ({v.counterexample.length} steps): ",
            [s.label() for s in v.counterexample.steps[1:]],
            " ;",
            width,
            4,
        )
    if explain == "none":
        return out
    chosen = found if explain == "all" else [_headline(found)]
    for _, v in chosen:
        out += ["", render_text(v.counterexample, width).rstrip()]
    return out


def _headline(found):
    """The violation a suite explains first: the first of the table's first property (I1,
    the article's headline claim), else the first found."""
    lead = all_names()[0]
    return next((f for f in found if f[1].property == lead), found[0])


def _summary(suite: SuiteResult) -> str:
    vs = suite.verdicts()
    n = {s: sum(v.status is s for v in vs) for s in Status}
    tail = "".join("\n" + line for line in _guarantee_lines(suite) + _assume_lines(suite))
    if suite.status is Status.HOLDS:
        how = "exhaustively" if suite.engine == "explicit" else "within the engine's bounds"
        head = f"HOLDS: all {len(vs)} verdicts hold {how} on {len(suite.results)} instance(s)"
        return head + "".join("\n" + line for line in _reliance_lines(suite)) + tail
    return (
        f"{suite.status.value}: {n[Status.VIOLATED]} violated, {n[Status.UNKNOWN]} unknown, "
        f"{n[Status.HOLDS]} hold"
    ) + tail


def _guarantee_lines(suite: SuiteResult) -> list[str]:
    """The guarantee the verdicts above give, named with its properties (none if the run
    judged too few of them to name one)."""
    g = suite.guarantee()
    if g is None:
        return []
    req = protocol().raw["guarantees"][g]["requires"]
    return [f"  guarantee: {g} ({', '.join(req)} hold on every instance)"]


def _assume_lines(suite: SuiteResult) -> list[str]:
    return [f"  assumes {a}" for a in suite.assumes]


def _reliance_lines(suite: SuiteResult) -> list[str]:
    if not suite.reliance:
        return []
    cfg, out = suite.config, []
    for name, found in suite.reliance.items():
        if found:
            out.append(
                f"  relies on {name}={cfg.assumptions[name]}: without it, {found.instance} "
                f"violates {found.property} in {found.steps} steps"
            )
        else:
            out.append(
                f"  does not rely on {name}={cfg.assumptions[name]}: every verdict above "
                "holds without it too"
            )
    return out


def render_programs(suite: SuiteResult) -> str:
    """Every counterexample of `suite` as a pasteable pytest test."""
    return "\n\n".join(
        render_python(v.counterexample)
        for r in suite.results
        for v in r.verdicts
        if v.counterexample is not None
    )


def render_json(suite: SuiteResult) -> str:
    """The suite as JSON: config, status, reliance, and per instance its statistics,
    coverage and verdicts (counterexamples as ITF traces)."""
    doc = {
        "config": suite.config.label(),
        "engine": suite.engine,
        "knobs": _knobs(suite),
        "assumptions": dict(suite.config.assumptions),
        "status": suite.status.value,
        "instances": [],
    }
    if suite.reliance:
        doc["reliance"] = {
            k: ({"instance": b.instance, "property": b.property, "steps": b.steps} if b else None)
            for k, b in suite.reliance.items()
        }
    for r in suite.results:
        doc["instances"].append(
            {
                "instance": r.instance.name,
                "bounds": r.instance.bounds(),
                "assumptions": dict(r.instance.assumptions),
                "stats": r.stats,
                "coverage": r.coverage,
                "verdicts": [verdict_json(v) for v in r.verdicts],
            }
        )
    if suite.p5 is not None:
        doc["P5"] = verdict_json(suite.p5)
    doc["guarantee"] = suite.guarantee()
    doc["assumes"] = suite.assumes
    if suite.claim:
        doc["claim"] = suite.claim
    if suite.outside is not None:
        doc["outside_claim"] = json.loads(render_json(suite.outside))
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def verdict_json(v) -> dict:
    """One verdict as JSON, its counterexample (if any) as an ITF trace."""
    out = {"property": v.property, "status": v.status.value, "scope": v.scope, "reason": v.reason}
    if v.counterexample is not None:
        out["steps"] = v.counterexample.length
        out["counterexample"] = render_itf(v.counterexample)
    return out
