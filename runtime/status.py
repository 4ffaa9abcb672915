"""What an on-call engineer asks of an intent log: which records are in doubt, which were
given up, how old each is, who holds it, and what the design waits for before it settles.
Pure: records, the design and the store's clock in, `Entry` values out (`toolcommit status`
reads the log and prints them).

A record is *in doubt* when the outcome of a request already sent is not known: UNKNOWN,
RECONCILING, and DISPATCHED once its holder's lease ran out (the holder died or stalled
with the request on its way). DISPATCHED under a live lease is a call in progress, not in
doubt. *Given up* is DEAD_LETTER and COMPENSATED: settled without an effect the log can
show (listed, never a reason to page: the user was told).

Examples
--------
>>> from toolcommit.runtime.design import load
>>> from toolcommit.runtime.records import Record
>>> r = Record("k", "i", 0, "refund", "s", {}, "t1", "RECONCILING", 2, "pod-0", 1,
...            lease_until=0.0, first_sent=100.0, sent_at=100.0)
>>> e = entry(load("stripe"), r, now=400.0)
>>> e.kind, e.age, e.waits_for
('in doubt', 300.0, 'the delay bound: a request of it may still arrive for 600 s, then a status read by list')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from toolcommit.runtime.design import Design, read_wait, window_open
from toolcommit.runtime.records import Record

IN_DOUBT = "in doubt"
GIVEN_UP = "given up"
LISTED = ("DISPATCHED", "UNKNOWN", "RECONCILING", "DEAD_LETTER", "COMPENSATED")


@dataclass(frozen=True)
class Entry:
    """One record worth an engineer's look: `kind` (`IN_DOUBT` or `GIVEN_UP`), its age
    (seconds since its first send on the store's clock; None if never stamped), its holder
    (``writer#incarnation``, None when released), and what the design waits for."""

    key: str
    tool: str
    scope: str
    state: str
    kind: str
    age: Optional[float]
    holder: Optional[str]
    lease_left: float
    waits_for: str

    def as_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "tool": self.tool,
            "scope": self.scope,
            "state": self.state,
            "kind": self.kind,
            "age_s": None if self.age is None else round(self.age, 3),
            "holder": self.holder,
            "lease_left_s": round(self.lease_left, 3),
            "waits_for": self.waits_for,
        }


def kind_of(r: Record, now: float) -> Optional[str]:
    """`IN_DOUBT`, `GIVEN_UP`, or None (settled, cancelled, not yet sent, in progress)."""
    if r.state in ("UNKNOWN", "RECONCILING"):
        return IN_DOUBT
    if r.state == "DISPATCHED" and r.lease_until <= now:
        return IN_DOUBT
    if r.state in ("DEAD_LETTER", "COMPENSATED"):
        return GIVEN_UP
    return None


def waits_for(d: Design, r: Record, now: float) -> str:
    """What settles `r` next under design `d` (a sentence)."""
    if r.state == "DEAD_LETTER":
        return "nothing: given up visibly" + (
            "" if d.settles_by_read else " (the effect may have happened)"
        )
    if r.state == "COMPENSATED":
        return "nothing: reversed or never applied"
    left = r.lease_until - now
    if r.owner is not None and left > 0:
        return f"writer {r.owner}'s lease ({left:.0f} s left): that process is settling it"
    if r.state == "DISPATCHED":
        return (
            "a takeover: its holder's lease ran out with the request sent (the settler, "
            "or toolcommit recover)"
        )
    if not d.status_read or d.knobs["on_unknown"] == "dead_letter":
        return "a give-up: there is no status read (the settler, or toolcommit recover)"
    if r.state == "UNKNOWN" and d.replays and window_open(d, r.first_sent, now):
        return "a replay under the same key (the settler, or the intent's next call)"
    wait = read_wait(d, r.sent_at, now)
    via = d.knobs["status_via"]
    if wait > 0:
        return (
            f"the delay bound: a request of it may still arrive for {wait:.0f} s, then a "
            f"status read by {via}"
        )
    return f"a status read by {via} (the settler, or toolcommit recover --tools)"


def entry(d: Design, r: Record, now: float) -> Optional[Entry]:
    """`r` as an `Entry`, or None when it is nothing to look at."""
    kind = kind_of(r, now)
    if kind is None:
        return None
    since = r.first_sent if r.first_sent is not None else r.sent_at
    holder = None if r.owner is None or r.lease_until <= 0 else f"{r.owner}#{r.owner_inc}"
    return Entry(
        r.key,
        r.tool,
        r.scope,
        r.state,
        kind,
        None if since is None else now - since,
        holder,
        max(0.0, r.lease_until - now),
        waits_for(d, r, now),
    )


def entries(d: Design, records: Iterable[Record], now: float) -> list[Entry]:
    """The records worth a look, in doubt first, then the oldest first."""
    found = [e for e in (entry(d, r, now) for r in records) if e is not None]
    return sorted(found, key=lambda e: (e.kind != IN_DOUBT, -(e.age or 0.0), e.key))
