"""The planner and the log's decisions on proposals (a mixin of the semantics builder).

`propose` is the model emitting a tool call and, with an atomic insert, the log deciding
at once: accept, duplicate, conflict, or (per knobs) a late replay or an overwrite of a
given-up record; `check`/`insert` are the two halves of a racy check-then-insert.
"""

from __future__ import annotations

from .expr import FALSE, Expr, all_of, any_of, in_, not_
from .instance import Proposal
from .values import GAVE_UP, IN_DOUBT, P_ABSENT, P_CONFLICT, P_DUP, P_PROPOSED, P_RECORDED, RV, r


class Planner:
    """Proposal actions; mixed into the builder (uses its variables)."""

    # ----- planner and log: proposals ---------------------------------------------
    def planner(self) -> None:
        for p in self.props:
            for w in range(self.W):
                self._propose(p, w)
            if self.racy:
                self._insert(p)

    def _conflict(self, p: Proposal) -> Expr:
        if self.k["revision"] != "conflict":
            return FALSE
        mine = self.keys[self.key_of[p.name]]
        held = [
            self.rec[i] != RV["PROPOSED"]
            for i, key in enumerate(self.keys)
            if key.version != p.version and key.epoch == mine.epoch
        ]
        return any_of(*held)

    def _propose(self, p: Proposal, w: int) -> None:
        k = self.key_of[p.name]
        rec, prop = self.rec[k], self.prop[p.name]
        base = all_of(prop == P_ABSENT, self.alive[w] == 1, self.trigger(p))
        exists = rec != RV["PROPOSED"]
        params = {
            "call": p.call_id,
            "proposal": p.name,
            "worker": f"w{w}",
            "key": self.keys[k].name,
        }
        overwrite = self.k["reaccept"] == "overwrite"
        gave_up = in_(rec, r(*GAVE_UP)) if overwrite else FALSE
        late = self.k["late_replay"]
        in_doubt = in_(rec, r(*IN_DOUBT)) if late != "reject" else FALSE
        if late == "replay_same_key" and self.win[k] is not None:
            in_doubt = all_of(in_doubt, self.win[k] == 0)  # after the window: a duplicate
        if overwrite:
            self.act(
                "propose",
                {**params, "decision": "accepted (overwrites)"},
                all_of(base, gave_up),
                self._accept(p, k, w),
            )
        if late == "replay_same_key":
            self._replay_same_key(p, k, w, base, params)
        if late == "compensate":
            self._replay_compensate(p, k, w, base, params)
        duplicate = all_of(base, exists, not_(gave_up), not_(in_doubt))
        if late == "compensate":
            nk = self.rec[self.next_key[p.name]]
            duplicate = all_of(
                base, exists, not_(gave_up), any_of(not_(in_doubt), nk != RV["PROPOSED"])
            )
        self.act(
            "propose",
            {**params, "decision": "duplicate"},
            duplicate,
            {prop.name: P_DUP, **self.own_flag(p, k)},
        )
        conflict = self._conflict(p)
        if conflict is not FALSE:
            self.act(
                "propose",
                {**params, "decision": "conflict"},
                all_of(base, not_(exists), conflict),
                {prop.name: P_CONFLICT},
            )
        fresh = all_of(base, not_(exists), not_(conflict), not_(self.reask_wait(k)))
        self.reask_propose(p, k, w, fresh, params)
        fresh = all_of(fresh, not_(self.reask_answered(p, k)))
        if self.racy:
            self.act(
                "check",
                {**params, "decision": "absent"},
                fresh,
                {prop.name: P_PROPOSED, self.chk[p.name].name: w},
            )
        else:
            self.act("propose", {**params, "decision": "accepted"}, fresh, self._accept(p, k, w))

    def _accept(self, p: Proposal, k: int, w: int) -> dict:
        up = {
            self.rec[k].name: RV["RECORDED"],
            self.owner[k].name: w,
            self.prop[p.name].name: P_RECORDED,
            **self.by_update(p, k),
        }
        if self.via[k] is not None:
            up[self.via[k].name] = self.call_ids.index(p.call_id)
        return up

    def _insert(self, p: Proposal) -> None:
        k = self.key_of[p.name]
        for w in range(self.W):
            up = self._accept(p, k, w)
            up[self.chk[p.name].name] = self.W
            self.act(
                "insert",
                {
                    "call": p.call_id,
                    "proposal": p.name,
                    "worker": f"w{w}",
                    "key": self.keys[k].name,
                },
                all_of(self.prop[p.name] == P_PROPOSED, self.chk[p.name] == w, self.alive[w] == 1),
                up,
            )

    def _replay_same_key(self, p, k, w, base, params) -> None:
        for f in range(1, self.F + 1):
            up = self._send(k, f, p)
            up.update(
                {
                    self.rec[k].name: RV["DISPATCHED"],
                    self.owner[k].name: w,
                    self.prop[p.name].name: P_RECORDED,
                    **self.own_flag(p, k),
                }
            )
            if self.via[k] is not None:
                up[self.via[k].name] = self.call_ids.index(p.call_id)
            self.act(
                "propose",
                {**params, "decision": "replayed under the same key", "fence": str(f)},
                all_of(
                    base,
                    in_(self.rec[k], r(*IN_DOUBT)),
                    self.fence[k] == f - 1,
                    self.may_send(k, f),
                ),
                up,
            )
        self.act(
            "propose",
            {**params, "decision": "replayed under the same key", "fence": "beyond bound"},
            all_of(
                base,
                in_(self.rec[k], r(*IN_DOUBT)),
                self.fence[k] == self.F,
                self.may_send(k, self.F + 1),
            ),
            {},
            cut=True,
        )

    def _replay_compensate(self, p, k, w, base, params) -> None:
        nk = self.next_key[p.name]
        up = self._compensation(k)
        up.update(self._accept(p, nk, w))
        self.act(
            "propose",
            {
                **params,
                "decision": "compensated first, accepted as next epoch",
                "next_key": self.keys[nk].name,
            },
            all_of(base, in_(self.rec[k], r(*IN_DOUBT)), self.rec[nk] == RV["PROPOSED"]),
            up,
        )
