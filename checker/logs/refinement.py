"""`validate --design`: read the logs, order each key's chain, and let `refine` judge it.

`check(paths, claim)` reads the logs once more (after the generic check), keeps each key's
lines (what `claim.Line` holds: a few fields per line), orders each key's transitions into
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
from typing import Sequence

from toolcommit.checker.logs import refine
from toolcommit.checker.logs.claim import (
    Claim,
    Departure,
    Line,
    kinds,
    knob_classes,
    parse_ts,
    paths,
    plain,
)
from toolcommit.checker.logs.findings import MAX_PER_PROPERTY, Citation, Finding
from toolcommit.checker.logs.read import DEFAULT_MAX_LINE_BYTES, read_batches
from toolcommit.checker.logs.report import Report, count, verdict_of
from toolcommit.model.canon import CanonError, canonical_intent

PROPERTY = "DESIGN"  # the finding's name (spec/log-findings.json)


@dataclass(frozen=True)
class DesignCheck:
    """What ``--design`` found: the departures, the paths of the design with how often the
    logs took each (and where first), and the knobs by how they were judged."""

    claim: Claim
    departures: tuple[Departure, ...]  # listed: at most MAX_PER_PROPERTY, the least keys
    coverage: tuple[dict, ...]
    knobs: dict
    totals: dict  # departures by certainty, listed or not
    dropped: int = 0  # departures not listed

    def findings(self) -> list[Finding]:
        return [finding(self.claim, d) for d in self.departures]

    def focus(self, keys) -> "DesignCheck":
        """Only the departures on `keys` (all of them listed: `check` kept them)."""
        kept = tuple(d for d in self.departures if d.key in set(keys))
        return replace(self, departures=kept, totals=_count(kept), dropped=0)

    def to_json(self) -> dict:
        c = self.claim
        return {
            "design": c.source,
            "environment": c.environment,
            "guarantee": c.guarantee,
            "totals": self.totals,
            "dropped": self.dropped,
            "departures": [d.to_json() for d in self.departures],
            "coverage": list(self.coverage),
            "reached": sum(1 for p in self.coverage if p["count"]),
            "knobs": self.knobs,
        }


def finding(claim: Claim, d: Departure) -> Finding:
    """A departure as a finding, its story the key's chain up to the departing line."""
    steps = tuple(Citation(x.type, x.writer, x.text(), x.file, x.line) for x in d.story)
    return Finding(
        PROPERTY,
        d.key,
        d.certainty,
        tuple(sorted({x.writer for x in d.story})),
        tuple(sorted({(x.file, x.line) for x in d.story})),
        steps,
        d.explanation(claim.source),
    )


def with_design(report: Report, dc: DesignCheck) -> Report:
    """`report` with the design's departures among its findings and the verdict they make."""
    found = tuple(
        sorted(
            [*report.findings, *dc.findings()],
            key=lambda f: (f.certainty != "certain", f.property, f.key),
        )
    )
    base = report.totals or count(report.findings)
    totals = {k: base.get(k, 0) + dc.totals[k] for k in ("certain", "possible")}
    return replace(
        report,
        verdict=verdict_of(totals),
        findings=found,
        totals=totals,
        dropped=report.dropped + dc.dropped,
        design=dc,
    )


def _count(departures) -> dict[str, int]:
    certain = sum(d.certainty == "certain" for d in departures)
    return {"certain": certain, "possible": len(departures) - certain}


# ----- reading -----------------------------------------------------------------------------------
# a transition as read: (writer, seq, file, line, ts text, from, to, fence, reason)
_W, _SEQ, _TS, _FRM, _TO, _FENCE, _REASON = 0, 1, 4, 5, 6, 7, 8


def check(
    paths: Sequence[str], claim: Claim, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES, keep=()
) -> DesignCheck:
    """Judge the logs `paths` against `claim` (see the module docstring); `InputError` on
    unusable input, as the generic check. As for the generic findings, at most
    `MAX_PER_PROPERTY` departures are listed, those of the least keys and of `keep`."""
    keys: dict[str, list[tuple]] = {}
    effects: dict[str, list[Line]] = {}
    accepted: list[tuple] = []
    hits: list[tuple[str, Line]] = []
    for path in paths:
        for numbers, events in read_batches(path, max_line_bytes, helper=False):
            for n, ev in zip(numbers, events):
                _keep(ev, path, n, keys, effects, accepted, hits)
    departures: list[Departure] = []
    final = {}
    for key, raw in keys.items():
        chain = order(raw)
        final[key] = chain[-1][_TO] if chain else None
        if key not in effects and plain(claim, [(t[_FRM], t[_TO]) for t in chain]):
            hits += [
                (k, _line(t)) for t in chain for k in kinds(t[_FRM], t[_TO], None) if k != "other"
            ]
            continue
        d, h = refine.judge_key(claim, key, [_line(t) for t in chain] + effects.get(key, []))
        hits += h
        if d is not None:
            departures.append(d)
    judged = {d.key for d in departures}
    more, h = refine.judge_epochs(claim, _intents(accepted), final)
    departures += [d for d in more if d.key not in judged]
    hits += h
    departures.sort(key=lambda d: d.key)
    listed = [d for i, d in enumerate(departures) if i < MAX_PER_PROPERTY or d.key in keep]
    listed.sort(key=lambda d: (d.certainty != "certain", d.key))
    return DesignCheck(
        claim,
        tuple(listed),
        tuple(coverage(claim, hits)),
        knob_classes(claim),
        _count(departures),
        len(departures) - len(listed),
    )


def _line(t: tuple) -> Line:
    w, seq, path, n, ts, frm, to, fence, why = t
    return Line("transition", w, seq, path, n, parse_ts(ts), frm, to, fence, why)


def _keep(ev, path: str, n: int, keys, effects, accepted, hits) -> None:
    t = ev.type
    if t == "transition":
        keys.setdefault(ev.key, []).append(
            (ev.writer, ev.seq, path, n, ev.ts, ev.from_, ev.to, ev.fence, ev.reason)
        )
    elif t == "proposal":
        if ev.decision in ("duplicate", "conflict"):
            hits.append((ev.decision, _proposal(ev, path, n)))
        elif ev.epoch is not None:
            accepted.append((ev, path, n))
    elif t == "effect":
        key = ev.key or ev.idempotency_key
        effects.setdefault(key, []).append(
            Line(t, ev.writer, ev.seq, path, n, parse_ts(ev.ts), fence=ev.fence, kind=ev.kind)
        )


def _proposal(ev, path: str, n: int) -> Line:
    return Line(
        "proposal",
        ev.writer,
        ev.seq,
        path,
        n,
        parse_ts(ev.ts),
        decision=ev.decision,
        epoch=ev.epoch,
    )


def _intents(accepted: list) -> list:
    """(intent, epoch, key, line) of each accepted proposal with a canonical intent; none
    when every proposal has one epoch, which no rule judges (so nothing is canonicalized)."""
    if len({ev.epoch for ev, _, _ in accepted}) < 2:
        return []
    out = []
    for ev, path, n in accepted:
        try:
            intent = canonical_intent(ev.tool, ev.args, ev.scope).digest
        except (CanonError, TypeError, ValueError):
            continue
        out.append((intent, ev.epoch, ev.key, _proposal(ev, path, n)))
    return out


def order(lines: list[tuple]) -> list[tuple]:
    """A key's chain: from the initial state (or the first line's, for a log that starts
    later), at each state the transition leaving it first by (fence, writer, seq) among
    each writer's next one; what does not chain is left out (the generic check judges it)."""
    if _chained(lines):
        return lines
    queues: dict[str, list[tuple]] = {}
    for t in sorted(lines, key=lambda x: (x[_W], x[_SEQ])):
        queues.setdefault(t[_W], []).append(t)
    starts = [t for t in lines if t[_FRM] == "PROPOSED"]
    state = "PROPOSED" if starts else lines[0][_FRM]
    heads = {w: 0 for w in queues}
    chain: list[tuple] = []
    while True:
        ready = [
            queues[w][i]
            for w, i in heads.items()
            if i < len(queues[w]) and queues[w][i][_FRM] == state
        ]
        if not ready:
            return chain
        nxt = min(ready, key=lambda x: (x[_FENCE] or 0, x[_W], x[_SEQ]))
        heads[nxt[_W]] += 1
        chain.append(nxt)
        state = nxt[_TO]


def _chained(lines: list[tuple]) -> bool:
    """Whether `lines` (as read) are one writer's chain from the initial state, in its order
    (the common case, which `order` would return unchanged)."""
    state, w, seq = "PROPOSED", lines[0][_W], -1
    for t in lines:
        if t[_FRM] != state or t[_W] != w or t[_SEQ] <= seq:
            return False
        state, seq = t[_TO], t[_SEQ]
    return True


def coverage(claim: Claim, hits: Sequence[tuple[str, Line]]) -> list[dict]:
    """Each path of the design: its meaning, how often the logs took it and where first."""
    seen: dict[str, list] = {}
    for name, ln in hits:
        c = seen.setdefault(name, [0, ln])
        c[0] += 1
        if (ln.file, ln.line) < (c[1].file, c[1].line):
            c[1] = ln
    out = []
    for p in paths(claim):
        n, first = seen.get(p["name"], (0, None))
        out.append(
            {
                **p,
                "count": n,
                "first": None if first is None else {"file": first.file, "line": first.line},
            }
        )
    return out
