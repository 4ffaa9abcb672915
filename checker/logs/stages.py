"""The stage each event type goes to: one table, read by `Conformance.feed` (the lines its
inlined common cases do not take) and by the native lane (`lane.config`), which hands
every line it does not cover to the same stage."""

from __future__ import annotations

from toolcommit.checker.logs import chains, intents
from toolcommit.checker.logs.store import Store
from toolcommit.checker.logs.writers import Writer, note_crash


def crash(st: Store, ev, w: Writer, loc: int) -> None:
    note_crash(w, ev.seq, loc)


def restart(st: Store, ev, w: Writer, loc: int) -> None:
    pass  # counted only: a restarted writer must read the log (P4 judges its moves)


STAGE = {
    "proposal": intents.proposal,
    "transition": chains.transition,
    "effect": intents.effect,
    "crash": crash,
    "restart": restart,
}
