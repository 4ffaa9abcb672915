"""The workers' actions on each key (a mixin of the semantics builder): dispatch under a
fence, the timeout that leaves a record UNKNOWN, the ack that settles it (or is discarded,
`on_ack`), and what meets an UNKNOWN record under `on_unknown` (a blind retry, a reconcile
and its status read, a replay, a dead letter, a compensation or a sealed saga; a human's
approval waits in `Resolution`). Recovery's actions (crash, restart, takeover) are
`recovery.py`'s.
"""

from __future__ import annotations

from .expr import FALSE, TRUE, Expr, all_of, any_of, in_, ite
from .values import M_ACK, M_DELAYED, M_DONE, M_LOST, M_NONE, RV, r


class Worker:
    """One worker's actions on one key, per fence; mixed into the builder."""

    def workers(self) -> None:
        for k in range(len(self.keys)):
            for w in range(self.W):
                self._worker_key(k, w)
        for w in range(self.W):
            self.lifecycle(w)

    def _owned(self, k: int, w: int) -> Expr:
        return all_of(self.owner[k] == w, self.alive[w] == 1)

    def _worker_key(self, k: int, w: int) -> None:
        kn, wn = self.keys[k].name, f"w{w}"
        rec, owned = self.rec[k], self._owned(k, w)
        if self.k["dispatch_guard"] == "log_cas":
            ready = rec == RV["RECORDED"]
        else:
            ready = in_(rec, r("RECORDED", "REJECTED_CONFLICT"))
        for f in range(1, self.F + 1):
            up = self._send(k, f, resend=False)
            up[rec.name] = RV["DISPATCHED"]
            guard = all_of(
                owned,
                ready,
                self.fence[k] == f - 1,
                self.msg[k][f - 1] == M_NONE,
                self.may_send(k, f),
            )
            self.act("dispatch", {"key": kn, "worker": wn, "fence": str(f)}, guard, up)
            cur = self.fence[k] == f
            self.act(
                "timeout",
                {"key": kn, "worker": wn, "fence": str(f)},
                all_of(
                    owned,
                    rec == RV["DISPATCHED"],
                    cur,
                    in_(self.msg[k][f - 1], (M_DELAYED, M_LOST)),
                ),
                {rec.name: RV["UNKNOWN"], self.retry_ok.name: 1},
            )
            self._receive_ack(k, w, f)
            self.receive_error(k, w, f)
        self._dispatch_bound(k, w, ready)
        self._unknown(k, w)
        self.takeover(k, w)

    def _dispatch_bound(self, k: int, w: int, ready: Expr) -> None:
        """A dispatch or retry the fence budget forbids: marks the state truncated."""
        retry = self.rec[k] == RV["UNKNOWN"] if self.k["on_unknown"] == "blind_retry" else FALSE
        self.act(
            "dispatch",
            {"key": self.keys[k].name, "worker": f"w{w}", "fence": "beyond bound"},
            all_of(
                self._owned(k, w),
                any_of(ready, retry),
                self.fence[k] == self.F,
                self.may_send(k, self.F + 1),
            ),
            {},
            cut=True,
        )

    def _receive_ack(self, k: int, w: int, f: int) -> None:
        """The ack of key k's request at fence f reaches w: ACKED, or nothing (on_ack)."""
        rec, m = self.rec[k], self.msg[k][f - 1]
        params = {"key": self.keys[k].name, "worker": f"w{w}", "fence": str(f)}
        guard = all_of(self._owned(k, w), m == M_ACK)
        if self.k["on_ack"] == "discard":
            self.act("discard_ack", params, guard, {m.name: M_DONE})
            return
        current = TRUE if self.k["fencing"] == "off" else self.fence[k] == f
        direct = all_of(rec == RV["DISPATCHED"], current)
        settles = any_of(direct, rec == RV["RECONCILING"])
        self.act(
            "receive_ack",
            params,
            guard,
            {
                m.name: M_DONE,
                rec.name: ite(settles, RV["ACKED"], rec),
                **self.told_on_ack(k, direct),
            },
        )

    def _unknown(self, k: int, w: int) -> None:
        kn, wn = self.keys[k].name, f"w{w}"
        rec, owned, policy = self.rec[k], self._owned(k, w), self.k["on_unknown"]
        unknown = all_of(owned, rec == RV["UNKNOWN"])
        if policy == "blind_retry":
            for f in range(1, self.F + 1):
                up = self._send(k, f)
                up[rec.name] = RV["DISPATCHED"]
                self.act(
                    "retry",
                    {"key": kn, "worker": wn, "fence": str(f)},
                    all_of(unknown, self.fence[k] == f - 1, self.may_send(k, f)),
                    up,
                )
        elif policy == "reconcile":
            self._reconcile(k, w, unknown)
            sealed = self.seal_read_guard(k)
            guard = all_of(
                owned, rec == RV["RECONCILING"], *([sealed] if sealed is not None else [])
            )
            after = self.seal_read_updates(k)
            self.act(
                "read_status", {"key": kn, "worker": wn}, guard, {rec.name: self._read(k), **after}
            )
            self.stale_read(k, w, guard, {"key": kn, "worker": wn}, after)
            self.reseal(k, w)
        elif policy == "replay_then_reconcile":
            self.replay_then_reconcile(k, w, unknown)
        elif policy == "reconcile_skip":
            self.act(
                "read_status",
                {"key": kn, "worker": wn, "from": "UNKNOWN"},
                unknown,
                {rec.name: self._read(k)},
            )
            self.stale_read(k, w, unknown, {"key": kn, "worker": wn, "from": "UNKNOWN"}, {})
        elif policy == "dead_letter":
            self.act(
                "dead_letter", {"key": kn, "worker": wn}, unknown, {rec.name: RV["DEAD_LETTER"]}
            )
        elif policy == "compensate":
            up = self._compensation(k)
            self.act("compensate", {"key": kn, "worker": wn}, unknown, up)
        elif policy == "sealed_compensate":
            self.sealed_saga(k, w, unknown)
        # human_approval: the record waits in UNKNOWN for the human (`Resolution.human`)

    def _reconcile(self, k: int, w: int, unknown: Expr) -> None:
        self.fence_and_seal(k, "reconcile", {"key": self.keys[k].name, "worker": f"w{w}"}, unknown)
