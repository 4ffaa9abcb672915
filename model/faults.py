"""Faults of the log's side of real systems (a mixin of the semantics builder): stale status
reads and intent-log failover.

Each exists only where an instance gives it a budget (an environment profile does); with no
budget nothing here adds a variable or an action.

- `stale_read` (`stale_reads`): the status read answers from an eventually consistent view
  (a search index, late delivery events) that has not yet seen the effect: "absent" although
  it was applied. The record takes the absent outcome (DEAD_LETTER, or RECORDED with
  `on_absent=rerecord`).
- `failover` (`failovers`): the intent log fails over to a replica that missed its last
  acknowledged write for a key: a just-accepted record is gone (back to "no record", lease
  void), or a DISPATCHED record is back to RECORDED (the request may already be out). This
  is the store losing state, not a protocol step, so it is exempt from the LEGAL and P2
  monitors. The fence counter is kept (a simplification: fences come from a durable
  sequence); later writes (ACKED, UNKNOWN, ...) are not rolled back.
"""
from __future__ import annotations

from .expr import Expr, all_of
from .values import RV


class LogFaults:
    """Stale reads and failover; mixed into the builder (uses its variables)."""

    def stale_read(self, k: int, w: int, guard: Expr, params: dict, extra: dict) -> None:
        """A status read (enabled by `guard`) that answers "absent" although key k's effect
        was applied; `extra` are the read's other updates."""
        if not self.has("stale_reads") or self.a["status_read"] == "no":
            return
        absent = RV["RECORDED"] if self.k["on_absent"] == "rerecord" else RV["DEAD_LETTER"]
        self.act("stale_read", params,
                 all_of(guard, self.applied[k] > 0, self.budget["stale_reads"] > 0),
                 {self.rec[k].name: absent, **extra, **self.spend("stale_reads")}, fault=True)

    def failover(self) -> None:
        if not self.has("failovers"):
            return
        for k, key in enumerate(self.keys):
            rec, b = self.rec[k], self.budget["failovers"]
            self.act("failover", {"key": key.name, "lost": "the accepted record"},
                     all_of(rec == RV["RECORDED"], b > 0),
                     {rec.name: RV["PROPOSED"], self.owner[k].name: self.W,
                      **self.spend("failovers")}, fault=True, monitor=False)
            self.act("failover", {"key": key.name, "lost": "the DISPATCHED write"},
                     all_of(rec == RV["DISPATCHED"], b > 0),
                     {rec.name: RV["RECORDED"], **self.spend("failovers")}, fault=True,
                     monitor=False)
