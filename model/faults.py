"""Faults outside the workers' and the provider's steps (a mixin of the semantics builder):
the user's cancel and prompt revision, lease expiry (clock skew), and the log's side of real
systems: stale status reads and intent-log failover.

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

from typing import Optional

from .expr import Expr, all_of, in_, not_
from .values import RV, SETTLED, r


class LogFaults:
    """User, lease, stale-read and failover faults; mixed into the builder (uses its variables)."""

    # ----- the user --------------------------------------------------------------------
    def user(self) -> None:
        if self.has("cancels"):
            heard = self.k["cancel_api"] == "log"  # none: the cancel reaches nothing
            for k in range(len(self.keys)):
                up = {self.rec[k].name: RV["REJECTED_CONFLICT"]} if heard else {}
                up.update({self.cancelled[k].name: 1, **self.spend("cancels")})
                params = {"key": self.keys[k].name, **({} if heard else {"reaches": "nothing"})}
                self.act(
                    "cancel",
                    params,
                    all_of(self.rec[k] == RV["RECORDED"], self.budget["cancels"] > 0),
                    up,
                    fault=True,
                )
        if self.has("revisions"):
            self.act(
                "revise_prompt",
                {},
                all_of(self.revised == 0, self.budget["revisions"] > 0),
                {self.revised.name: 1, **self.spend("revisions")},
                fault=True,
            )
        self.new_intent()
        self.stop_waiting()

    def expire(self) -> None:
        """Clock skew expires a live worker's lease (only where a claim is a lease)."""
        if not self.has("lease_expiries") or self.k["lease"] == "none":
            return
        for k in range(len(self.keys)):
            for w in range(self.W):
                self.act(
                    "expire_lease",
                    {"key": self.keys[k].name, "worker": f"w{w}"},
                    all_of(
                        self._owned(k, w),
                        self.budget["lease_expiries"] > 0,
                        not_(in_(self.rec[k], r(*SETTLED))),
                    ),
                    {
                        self.owner[k].name: self.W,
                        self.retry_ok.name: 1,
                        **self.spend("lease_expiries"),
                    },
                    fault=True,
                )

    def stale_read(
        self, k: int, w: int, guard: Expr, params: dict, extra: dict, absent: Optional[int] = None
    ) -> None:
        """A status read (enabled by `guard`) that answers "absent" although key k's effect
        was applied; `extra` are the read's other updates; `absent` the record state the
        absent answer leads to (default: per `on_absent`)."""
        if (
            not self.has("stale_reads")
            or self.a["status_read"] == "no"
            or self.k["status_via"] == "list"
        ):
            return
        if absent is None:
            absent = RV["RECORDED"] if self.k["on_absent"] == "rerecord" else RV["DEAD_LETTER"]
        self.act(
            "stale_read",
            params,
            all_of(guard, self.applied[k] > 0, self.budget["stale_reads"] > 0),
            {self.rec[k].name: absent, **extra, **self.spend("stale_reads")},
            fault=True,
        )

    def failover(self) -> None:
        if not self.has("failovers"):
            return
        for k, key in enumerate(self.keys):
            rec, b = self.rec[k], self.budget["failovers"]
            self.act(
                "failover",
                {"key": key.name, "lost": "the accepted record"},
                all_of(rec == RV["RECORDED"], b > 0),
                {rec.name: RV["PROPOSED"], self.owner[k].name: self.W, **self.spend("failovers")},
                fault=True,
                monitor=False,
            )
            self.act(
                "failover",
                {"key": key.name, "lost": "the DISPATCHED write"},
                all_of(rec == RV["DISPATCHED"], b > 0),
                {rec.name: RV["RECORDED"], **self.spend("failovers")},
                fault=True,
                monitor=False,
            )
