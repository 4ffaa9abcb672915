"""What an on-call engineer asks of an intent log: every record not settled, whoever holds
it; whether its holder is alive; when the design lets it be settled; and the one command
that settles it. `snapshot` reads a log (its records, writers, clock and the design it
stores: any design, a design file or custom timing included); `entries` is pure: a
`Snapshot` in, `Entry` values out (`toolcommit status` prints them).

A record is *in progress* while a live writer drives it: RECORDED, or DISPATCHED under its
lease, its request out for less than the design's delay bound. It is *in doubt* when the
outcome of a request already sent is not known and no call is driving it to one: UNKNOWN,
RECONCILING, and DISPATCHED once its holder is gone (its lease ran out, its writer name was
opened again, or it stopped) or once its request has been out longer than the delay bound
under a lease its process keeps renewing (its answer never recorded: a store fault). A
RECORDED record whose holder is gone is *not sent* (a takeover sends it). *Given up* is
DEAD_LETTER and COMPENSATED: settled without an effect the log can show (listed, never a
reason to page: the user was told).

Examples
--------
>>> from toolcommit.runtime.design import load
>>> from toolcommit.runtime.records import Record
>>> r = Record("k", "i", 0, "refund", "s", {}, "t1", "RECONCILING", 2, "pod-0", 1,
...            lease_until=0.0, first_sent=100.0, sent_at=100.0)
>>> s = Snapshot(load("stripe"), 400.0, [(r, False)], {"pod-0": (1, False, False)})
>>> [e] = entries(s, s.design, "toolcommit recover intents.db")
>>> e.kind, e.owner_alive, e.settles_in
('in doubt', False, 600.0)
>>> e.next_step
'toolcommit recover intents.db --tools MODULE --wait 601'
"""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass
from typing import Any, Optional

from toolcommit.model.states import OPEN
from toolcommit.runtime.design import (
    SHIPPED,
    Design,
    DesignError,
    from_doc,
    load,
    read_wait,
    window_open,
)
from toolcommit.runtime.records import Record
from toolcommit.runtime.store.reader import LogReader

IN_DOUBT = "in doubt"
IN_PROGRESS = "in progress"
NOT_SENT = "not sent"
GIVEN_UP = "given up"
KINDS = (IN_DOUBT, NOT_SENT, IN_PROGRESS, GIVEN_UP)  # in the order `entries` lists them
UNSETTLED = OPEN
LISTED = (*UNSETTLED, "DEAD_LETTER", "COMPENSATED")


@dataclass(frozen=True)
class Snapshot:
    """One moment of a log: its design (None: it stores none this release can read), the
    store's clock, its listed records each with whether a request of it may be on its way
    from its holder (``in_flight``), and its writers (name -> (incarnation, running,
    gone): `gone` where its process is known to have ended, on this host or, on
    PostgreSQL, by its server process; unknown is not gone)."""

    design: Optional[Design]
    now: float
    records: list[tuple[Record, bool]]
    writers: dict[str, tuple[int, bool, bool]]
    stored: Optional[tuple[str, str]] = None  # (name, digest) the log names, if any


def snapshot(log: LogReader) -> Snapshot:
    """Read the log `log` (a `LogReader`: one moment of it). The design is the one the log
    stores (`Design.doc`); a log that stores only its name (written before logs kept the
    design) gets the shipped design of that name where the digest agrees, else None."""
    rows_w = log.writers()
    backends = log.server_processes() if any(x[5] is not None for x in rows_w) else None
    writers = {
        w: (i, r, r and _gone(host, pid, backend, backends))
        for w, i, r, host, pid, backend in rows_w
    }
    now = log.now()
    design, stored = stored_design(log)
    return Snapshot(design, now, log.records_in_flight(LISTED), writers, stored)


def _gone(
    host: Optional[str], pid: Optional[int], backend: Optional[int], backends: Optional[set[int]]
) -> bool:
    """Whether a writer's process is known to have ended: its server process is gone
    (PostgreSQL: a killed process's connection closes with it), or it ran on this host and
    no process has its pid."""
    if backend is not None and backends is not None and int(backend) not in backends:
        return True
    if host != socket.gethostname() or pid is None:
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists, another user's
        return False
    return False


def stored_design(log: LogReader) -> tuple[Optional[Design], Optional[tuple[str, str]]]:
    """The design the log stores (`Design.doc`; for a log written before logs kept it, the
    shipped design it names where the digest agrees; else None), and the (name, digest) it
    names (None: none). A stored name is only ever looked up among the shipped designs,
    never opened as a file."""
    row = log.stored_design()
    if row is None:
        return None, None
    name, digest, doc = row
    if doc is not None:
        return from_doc(doc, digest), (name, digest)
    if name in SHIPPED and load(name).digest == digest:
        return load(name), (name, digest)
    return None, (name, digest)


def design_of(s: Snapshot, given: Optional[str]) -> Design:
    """The design to read `s` under: the one the log stores; `given` (a name or design
    file) only where the log stores none it can read, and never another than the one
    it names (DesignError, saying which)."""
    if given is None:
        if s.design is not None:
            return s.design
        raise DesignError(
            "the log does not keep its design "
            + (f"({s.stored[0]}, digest {s.stored[1]})" if s.stored else "(none stored)")
            + ": give it with --provider NAME|FILE"
        )
    d = load(given)
    if s.stored is not None and d.digest != s.stored[1]:
        raise DesignError(
            f"--provider {given}: the log was created under design {s.stored[0]} (digest "
            f"{s.stored[1]}), not this one (digest {d.digest}); leave --provider out, and "
            "the log's own design is read"
        )
    return d


@dataclass(frozen=True)
class Entry:
    """One record not settled, or given up: `kind` (`IN_DOUBT`, `IN_PROGRESS`, `NOT_SENT`,
    `GIVEN_UP`), its age (seconds since its first send on the store's clock; None if never
    sent), its owner (``writer#incarnation``) and whether that process is alive (its
    incarnation current, running, its lease on the record not run out), the seconds its
    lease has left, the seconds until the design lets it be settled (0: now; None: not
    by a command, or never), what it waits for, and the one step that settles it."""

    key: str
    tool: str
    scope: str
    state: str
    kind: str
    age: Optional[float]
    owner: Optional[str]
    owner_alive: bool
    lease_left: float
    settles_in: Optional[float]
    waits_for: str
    next_step: str

    def as_json(self) -> dict[str, Any]:
        def r3(x: Optional[float]) -> Optional[float]:
            return None if x is None else round(x, 3)

        return {
            "key": self.key,
            "tool": self.tool,
            "scope": self.scope,
            "state": self.state,
            "kind": self.kind,
            "age_s": r3(self.age),
            "owner": self.owner,
            "owner_alive": self.owner_alive,
            "lease_left_s": r3(self.lease_left),
            "settles_in_s": r3(self.settles_in),
            "waits_for": self.waits_for,
            "next_step": self.next_step,
        }


def alive(s: Snapshot, r: Record) -> bool:
    """Whether `r`'s holder is a live process: its incarnation the writer's current one,
    running, and its lease on `r` not run out (store clock)."""
    inc, running, gone = s.writers.get(r.owner or "", (None, False, True))
    return (
        r.owner is not None
        and inc == r.owner_inc
        and running
        and not gone
        and r.lease_until > s.now
    )


def take_at(s: Snapshot, r: Record) -> float:
    """When (store clock) `recover` may take `r` over from a holder that is not alive: now
    where its writer name was opened again since or its lease ran out, else when its lease
    does (a killed process's lease runs on: `recover` honours every lease)."""
    inc = s.writers.get(r.owner or "", (None, False, True))[0]
    if inc is not None and r.owner_inc < inc:
        return s.now
    return max(s.now, r.lease_until)


def _overdue(d: Design, r: Record, now: float) -> bool:
    """A DISPATCHED record whose request has been out longer than the delay bound."""
    return d.delay_bound is not None and r.sent_at is not None and now - r.sent_at > d.delay_bound


def kind_of(d: Design, r: Record, live: bool, now: float) -> Optional[str]:
    """The kind of `r` (see the module docstring), None for a settled one."""
    if r.state in ("DEAD_LETTER", "COMPENSATED"):
        return GIVEN_UP
    if r.state == "RECORDED":
        return IN_PROGRESS if live else NOT_SENT
    if r.state == "DISPATCHED" and live and not _overdue(d, r, now):
        return IN_PROGRESS
    return IN_DOUBT if r.state in UNSETTLED else None


def settle_at(d: Design, r: Record, in_flight: bool, take_at: float) -> float:
    """When (store clock) the design lets `r` be settled by whoever holds it from `take_at`
    on: a give-up or a replay then, else a status read once the delay bound ran from its
    last send; a takeover of a request that may have been on its way (DISPATCHED, or
    `in_flight`) counts as that send, and only such a takeover (`IntentLog.take`)."""
    if not d.settles_by_read:
        return take_at
    if r.state == "DISPATCHED" or in_flight:
        last: Optional[float] = take_at
    else:
        last = r.sent_at
    if d.replays and r.state in ("DISPATCHED", "UNKNOWN") and window_open(d, r.first_sent, take_at):
        return take_at
    return take_at + read_wait(d, last, take_at)


def _step(where: str, d: Design, wait: float) -> str:
    """The one command that settles a record `wait` seconds from now."""
    tools = " --tools MODULE" if d.settles_by_read else ""
    return f"{where}{tools}" + (f" --wait {math.ceil(wait) + 1}" if wait > 0 else "")


def entry(s: Snapshot, d: Design, r: Record, in_flight: bool, where: str) -> Optional[Entry]:
    """`r` as an `Entry` under design `d` (None: settled); `where` is the command that
    settles the log's records (``toolcommit recover DB``)."""
    now, live = s.now, alive(s, r)
    kind = kind_of(d, r, live, now)
    if kind is None:
        return None
    since = r.first_sent if r.first_sent is not None else r.sent_at
    lease = max(0.0, r.lease_until - now)
    owner = None if r.owner is None else f"{r.owner}#{r.owner_inc}"
    at: Optional[float]
    if kind == GIVEN_UP:
        at, waits, step = None, _given_up(d, r), "none: settled (the user was told)"
    elif kind == IN_PROGRESS:
        at, waits = None, f"the call of {owner} under way (lease {lease:.0f} s left)"
        step = f"none while {owner} is alive; if it dies: {where}"
    elif live and r.state == "DISPATCHED":
        at = None
        waits = (
            f"an answer {owner} never recorded: its request went out {now - (r.sent_at or now):.0f}"
            f" s ago, longer than the delay bound ({d.delay_bound:.0f} s), under a lease it "
            "keeps renewing (a store fault: its ack not written)"
        )
        step = f"restart {r.owner} (its restart takes the record over and settles it)"
    else:
        taken = now if live else take_at(s, r)
        at = settle_at(d, r, in_flight and not live, taken)
        wait = at - now
        waits = _waits(d, r, owner, live, taken - now, wait)
        step = (
            f"none: {owner} is alive and settles it (its settler); if it dies: "
            f"{_step(where, d, wait)}"
            if live
            else _step(where, d, wait)
        )
    return Entry(
        r.key,
        r.tool,
        r.scope,
        r.state,
        kind,
        None if since is None else now - since,
        owner,
        live,
        lease,
        None if at is None else max(0.0, at - now),
        waits,
        step,
    )


def _given_up(d: Design, r: Record) -> str:
    if r.state == "DEAD_LETTER":
        return "nothing: given up visibly" + (
            "" if d.settles_by_read else " (the effect may have happened)"
        )
    return "nothing: reversed or never applied"


def _waits(
    d: Design, r: Record, owner: Optional[str], live: bool, take_in: float, wait: float
) -> str:
    """What settles `r` next (a sentence): who, in `take_in` seconds, then what the design
    does, `wait` seconds from now."""
    if live:
        who = f"{owner} (alive, its lease renewed)"
    elif take_in > 0:
        who = f"a takeover once {owner}'s lease runs out, in {take_in:.0f} s (its process is gone)"
    else:
        who = "a takeover (its holder is gone)"
    if r.state == "RECORDED":
        return f"{who}: it sends the request, never sent yet"
    if not d.settles_by_read:
        return f"{who}, then a give-up: the design reads no status"
    if wait <= take_in and d.replays and r.state in ("DISPATCHED", "UNKNOWN"):
        return f"{who}, then a replay under the same key"
    via = d.knobs["status_via"]
    if wait > take_in:
        return (
            f"{who}, then the delay bound: a request of it may still arrive for "
            f"{wait - take_in:.0f} s more, then a status read by {via}"
        )
    return f"{who}, then a status read by {via}"


def entries(s: Snapshot, d: Design, where: str) -> list[Entry]:
    """Every record of `s` not settled, or given up: in doubt first, then not sent, in
    progress, given up; the oldest first."""
    found = [e for e in (entry(s, d, r, f, where) for r, f in s.records) if e is not None]
    return sorted(found, key=lambda e: (KINDS.index(e.kind), -(e.age or 0.0), e.key))
