"""`validate --design`: read the logs, order each key's chain, and let `refine` judge it.

`check(paths, claim)` reads the logs once more (after the generic check), keeps each key's
lines (what `refine.Line` holds: a few fields per line), orders each key's transitions into
its chain without clocks (each writer's own order kept; from each state the transition that
leaves it first by fence, writer and seq, as `chains` does), and returns a `DesignCheck`:
the departures as ``DESIGN`` findings, the coverage of the design's paths and its knobs,
classified. `with_design` adds it to the generic `Report`. The check runs in this process
whatever ``--jobs`` says, so a sharded run gives the same report.

Limitations
-----------
Memory grows with the log (every key's lines are kept until the end); a key whose chain
breaks (RACE, LEGAL: the generic findings) is judged up to where it breaks.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

from toolcommit.model.canon import CanonError, canonical_intent

from toolcommit.checker.logs import refine
from toolcommit.checker.logs.findings import Citation, Finding
from toolcommit.checker.logs.read import DEFAULT_MAX_LINE_BYTES, read_batches
from toolcommit.checker.logs.refine import Claim, Departure, Line
from toolcommit.checker.logs.report import Report, count, verdict_of

PROPERTY = "DESIGN"   # the finding's name (spec/log-findings.json)


@dataclass(frozen=True)
class DesignCheck:
    """What ``--design`` found: the departures, the paths of the design with how often the
    logs took each (and where first), and the knobs by how they were judged."""

    claim: Claim
    departures: tuple[Departure, ...]
    coverage: tuple[dict, ...]
    knobs: dict

    def findings(self) -> list[Finding]:
        return [finding(self.claim, d) for d in self.departures]

    def to_json(self) -> dict:
        c = self.claim
        return {"design": c.source, "environment": c.environment, "guarantee": c.guarantee,
                "departures": [d.to_json() for d in self.departures],
                "coverage": list(self.coverage),
                "reached": sum(1 for p in self.coverage if p["count"]),
                "knobs": self.knobs}


def finding(claim: Claim, d: Departure) -> Finding:
    """A departure as a finding, its story the key's chain up to the departing line."""
    steps = tuple(Citation(x.type, x.writer, x.text(), x.file, x.line) for x in d.story)
    return Finding(PROPERTY, d.key, d.certainty, tuple(sorted({x.writer for x in d.story})),
                   tuple(sorted({(x.file, x.line) for x in d.story})), steps,
                   d.explanation(claim.source))


def with_design(report: Report, dc: DesignCheck) -> Report:
    """`report` with the design's departures among its findings and the verdict they make."""
    mine = dc.findings()
    found = tuple(sorted([*report.findings, *mine],
                         key=lambda f: (f.certainty != "certain", f.property, f.key)))
    base = report.totals or count(report.findings)
    add = count(mine)
    totals = {k: base.get(k, 0) + add[k] for k in ("certain", "possible")}
    return replace(report, verdict=verdict_of(totals), findings=found, totals=totals, design=dc)


# ----- reading -----------------------------------------------------------------------------------
def check(paths: Sequence[str], claim: Claim,
          max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> DesignCheck:
    """Judge the logs `paths` against `claim` (see the module docstring); `InputError` on
    unusable input, as the generic check."""
    keys: dict[str, list[Line]] = {}
    effects: dict[str, list[Line]] = {}
    accepted: list[tuple[str, int, str, Line]] = []
    hits: list[tuple[str, Line]] = []
    for path in paths:
        for numbers, events in read_batches(path, max_line_bytes, helper=False):
            for n, ev in zip(numbers, events):
                _keep(ev, path, n, keys, effects, accepted, hits)
    departures: list[Departure] = []
    final = {}
    for key, lines in keys.items():
        chain = order(lines)
        final[key] = chain[-1].to if chain else None
        d, h = refine.judge_key(claim, key, chain + effects.get(key, []))
        hits += h
        if d is not None:
            departures.append(d)
    judged = {d.key for d in departures}
    more, h = refine.judge_epochs(claim, accepted, final)
    departures += [d for d in more if d.key not in judged]
    hits += h
    departures.sort(key=lambda d: (d.certainty != "certain", d.key))
    return DesignCheck(claim, tuple(departures), tuple(coverage(claim, hits)),
                       refine.knob_classes(claim))


def _keep(ev, path: str, n: int, keys, effects, accepted, hits) -> None:
    t = ev.type
    if t == "transition":
        keys.setdefault(ev.key, []).append(Line(
            t, ev.writer, ev.seq, path, n, refine.parse_ts(ev.ts), ev.from_, ev.to, ev.fence,
            ev.reason))
    elif t == "proposal":
        ln = Line(t, ev.writer, ev.seq, path, n, refine.parse_ts(ev.ts), decision=ev.decision,
                  epoch=ev.epoch)
        if ev.decision in ("duplicate", "conflict"):
            hits.append((ev.decision, ln))
        elif ev.epoch is not None:
            intent = _intent(ev)
            if intent is not None:
                accepted.append((intent, ev.epoch, ev.key, ln))
    elif t == "effect":
        key = ev.key or ev.idempotency_key
        effects.setdefault(key, []).append(Line(
            t, ev.writer, ev.seq, path, n, refine.parse_ts(ev.ts), fence=ev.fence,
            kind=ev.kind))


def _intent(ev) -> Optional[str]:
    try:
        return canonical_intent(ev.tool, ev.args, ev.scope).digest
    except (CanonError, TypeError, ValueError):
        return None


def order(lines: list[Line]) -> list[Line]:
    """A key's chain: from the initial state (or the first line's, for a log that starts
    later), at each state the transition leaving it first by (fence, writer, seq) among
    each writer's next one; what does not chain is left out (the generic check judges it)."""
    queues: dict[str, list[Line]] = {}
    for ln in sorted(lines, key=lambda x: (x.writer, x.seq)):
        queues.setdefault(ln.writer, []).append(ln)
    starts = [ln for ln in lines if ln.frm == "PROPOSED"]
    state = "PROPOSED" if starts else lines[0].frm
    heads = {w: 0 for w in queues}
    chain: list[Line] = []
    while True:
        ready = [queues[w][i] for w, i in heads.items()
                 if i < len(queues[w]) and queues[w][i].frm == state]
        if not ready:
            return chain
        nxt = min(ready, key=lambda x: (x.fence or 0, x.writer, x.seq))
        heads[nxt.writer] += 1
        chain.append(nxt)
        state = nxt.to


def coverage(claim: Claim, hits: Sequence[tuple[str, Line]]) -> list[dict]:
    """Each path of the design: its meaning, how often the logs took it and where first."""
    seen: dict[str, list] = {}
    for name, ln in hits:
        c = seen.setdefault(name, [0, ln])
        c[0] += 1
        if (ln.file, ln.line) < (c[1].file, c[1].line):
            c[1] = ln
    out = []
    for p in refine.paths(claim):
        n, first = seen.get(p["name"], (0, None))
        out.append({**p, "count": n,
                    "first": None if first is None else {"file": first.file,
                                                         "line": first.line}})
    return out
