"""Workers' recovery: crashes and restarts, takeovers of unowned records, and P4's memory
wipe (a mixin of the semantics builder). Lease expiry, the other end of a claim, is a fault
(`faults.py`), built only with `lease=expiring`.

`on_restart` says what happens to a record nobody holds: nothing (`replay_chat`: only the
planner re-proposes, and the log refuses that as a duplicate); any live worker takes it over
and treats a `DISPATCHED` one as `UNKNOWN` (`reload_log`); or the restarting worker resumes
it, written back to `RECORDED` to be dispatched again (`rollback`: the article's fixture,
whose restart sets `rec.state=S.RECORDED` and dispatches under a new fence). Only a restart
rolls back: a record orphaned by a memory wipe stays orphaned until a crashed worker
restarts (the fixture has no code that finds work in the log otherwise).
"""

from __future__ import annotations

from .expr import all_of, any_of, in_, ite
from .values import P_ABSENT, P_PROPOSED, RV, UNSETTLED, const, r


class Recovery:
    """Crash, restart, takeover, rollback and wipe actions; mixed into the builder."""

    def takeover(self, k: int, w: int) -> None:
        """With on_restart=reload_log, worker w reloads key k's unowned, unsettled record
        from the log; a DISPATCHED one becomes UNKNOWN (its outcome cannot be known)."""
        if self.k["on_restart"] != "reload_log":
            return
        rec = self.rec[k]
        self.act(
            "takeover",
            {"key": self.keys[k].name, "worker": f"w{w}"},
            all_of(self.alive[w] == 1, self.owner[k] == self.W, in_(rec, r(*UNSETTLED))),
            {self.owner[k].name: w, rec.name: ite(rec == RV["DISPATCHED"], RV["UNKNOWN"], rec)},
        )

    def lifecycle(self, w: int) -> None:
        """Worker w crashes (a budgeted fault) and restarts; with on_restart=rollback the
        restart is `rollback`: it also resumes every unowned, unsettled record from the log,
        whatever its state, as RECORDED (the fixture's `rec.state=S.RECORDED`), to be
        dispatched again under a new fence."""
        wn = f"w{w}"
        if not self.has("crashes"):
            return
        up = self._forget(w)
        up.update({self.alive[w].name: 0, **self.spend("crashes")})
        self.act(
            "crash",
            {"worker": wn},
            all_of(self.alive[w] == 1, self.budget["crashes"] > 0),
            up,
            fault=True,
        )
        if self.k["on_restart"] != "rollback":
            self.act("restart", {"worker": wn}, self.alive[w] == 0, {self.alive[w].name: 1})
            return
        up = {self.alive[w].name: 1}
        for k, rec in enumerate(self.rec):
            orphan = all_of(self.owner[k] == self.W, in_(rec, r(*UNSETTLED)))
            up[self.owner[k].name] = ite(orphan, w, self.owner[k])
            up[rec.name] = ite(orphan, RV["RECORDED"], rec)
        self.act("rollback", {"worker": wn}, self.alive[w] == 0, up)

    def _forget(self, w: int) -> dict:
        """Worker w's planner memory is gone: its leases lapse, its checks are lost."""
        up = {o.name: ite(o == w, self.W, o) for o in self.owner}
        for p in self.props:
            if self.racy:
                c = self.chk[p.name]
                up[c.name] = ite(c == w, self.W, c)
                up[self.prop[p.name].name] = ite(c == w, P_ABSENT, self.prop[p.name])
        held = any_of(*[o == w for o in self.owner], *[c == w for c in self.chk.values()])
        up[self.retry_ok.name] = ite(held, 1, self.retry_ok)
        return up

    def wipe(self) -> None:
        """P4's adversary: all planner memory deleted, at any time, without budget."""
        up = {o.name: const(self.W) for o in self.owner}
        for p in self.props:
            if self.racy:
                c = self.chk[p.name]
                up[c.name] = const(self.W)
                up[self.prop[p.name].name] = ite(
                    self.prop[p.name] == P_PROPOSED, P_ABSENT, self.prop[p.name]
                )
        up[self.retry_ok.name] = const(1)
        holds = any_of(
            *[o != self.W for o in self.owner],
            *[self.chk[p.name] != self.W for p in self.props if self.racy],
        )
        self.act("wipe", {}, holds, up, fault=True)
