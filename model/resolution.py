"""Two ways to resolve an UNKNOWN record besides reconciling (a mixin of the semantics
builder): the sealed saga (`on_unknown=sealed_compensate`) and the human approval gate
(`on_unknown=human_approval`).

Both begin as `reconcile` does: UNKNOWN -> RECONCILING with the key's fence bumped and
the provider sealed (at once, or as a message the status read waits for), so that where
the provider fences no request older than the seal lands afterwards. Then the status read,
the same read `read_status` makes, so a stale "absent" fools it too:

- sealed saga (`compensate_after_seal`, by the lease holder): applied: the reversal is
  issued; a provider that can compensate reverses one effect (COMPENSATED); one that
  cannot (`compensable=no`, a sent email) refuses, and the record parks DEAD_LETTER with
  the effect standing: the user is told the attempt was given up and may ask again.
  Absent: COMPENSATED, nothing to reverse. Without a status read the effect cannot be
  found (a reversal needs the effect's id): DEAD_LETTER.
- human gate (`review`, then `approve`, by the human, on any record whatever its lease):
  the record waits in UNKNOWN until a human takes it up (`review`: the seal). After the
  read: applied: ACKED; absent: the human approves a new attempt: the record parks
  DEAD_LETTER and the intent's next-epoch key is RECORDED in the same log write, for the
  old record's lease holder to dispatch (the spec has no edge back to DISPATCHED: a new
  attempt is a new key, PROTOCOL.md choice 2). Where the key scheme gives no next epoch
  (call-id dedupe, `epoch=none`) or that key has a record already, DEAD_LETTER and the
  user is told. Without a status read the human cannot look: DEAD_LETTER, the user told.

Next-epoch keys exist only under `human_approval` (one per proposal's key, derived in
`semantics._derive_keys`); a re-issued record can be re-issued again only where its own
next key was derived.
"""

from __future__ import annotations

from .expr import TRUE, Expr, all_of, ite, min_, not_
from .values import RV, const


class Resolution:
    """Sealed saga and human gate actions; mixed into the builder (uses its variables)."""

    def fence_and_seal(self, k: int, name: str, params: dict, guard: Expr) -> None:
        """UNKNOWN -> RECONCILING as action `name`: with fencing the fence goes up by one
        and the provider is sealed (`seal_updates`); at the fence bound the move is cut."""
        rec = self.rec[k]
        if self.k["fencing"] == "off":
            self.act(name, params, guard, {rec.name: RV["RECONCILING"]})
            return
        for f in range(1, self.F + 1):
            up = {rec.name: RV["RECONCILING"], self.fence[k].name: f, **self.seal_updates(k, f)}
            self.act(name, {**params, "fence": str(f)}, all_of(guard, self.fence[k] == f - 1), up)
        self.act(
            name,
            {**params, "fence": "beyond bound"},
            all_of(guard, self.fence[k] == self.F),
            {},
            cut=True,
        )

    # ----- replay under the same key, then reconcile ------------------------------------------
    def replay_then_reconcile(self, k: int, w: int, unknown: Expr) -> None:
        """UNKNOWN -> RECONCILING, re-sending the request under the same key while the
        replay window is open (the provider's saved response, or the effect if the first
        never arrived, is the answer: an ack settles ACKED through `receive_ack`, an error is
        consumed and never re-sent); then, once no request of the key can still arrive, the
        status read (`arrivals_over`)."""
        kn, wn, rec = self.keys[k].name, f"w{w}", self.rec[k]
        params = {"key": kn, "worker": wn}
        for f in range(1, self.F + 1):
            up = {rec.name: RV["RECONCILING"], **self._send(k, f), **self.seal_updates(k, f)}
            self.act(
                "reconcile",
                {**params, "fence": str(f), "replay": "under the same key"},
                all_of(unknown, self.fence[k] == f - 1, self.may_send(k, f)),
                up,
            )
        self.act(
            "reconcile",
            {**params, "fence": "beyond bound", "replay": "under the same key"},
            all_of(unknown, self.fence[k] == self.F, self.may_send(k, self.F + 1)),
            {},
            cut=True,
        )
        if self.win[k] is not None:
            self.fence_and_seal(
                k,
                "reconcile",
                {**params, "replay": "none: the window is closed"},
                all_of(unknown, self.win[k] == 1),
            )
        sealed = self.seal_read_guard(k)
        guard = all_of(
            self._owned(k, w),
            rec == RV["RECONCILING"],
            self.arrivals_over(k),
            *([sealed] if sealed is not None else []),
        )
        after = self.seal_read_updates(k)
        self.act("read_status", params, guard, {rec.name: self._read(k), **after})
        self.stale_read(k, w, guard, params, after)
        self.reseal(k, w)

    def _sealed_read(self, k: int) -> tuple[Expr, dict]:
        """(guard, updates) every status read under the seal shares: RECONCILING, and the
        seal acknowledged where it is a message."""
        sealed = self.seal_read_guard(k)
        guard = all_of(self.rec[k] == RV["RECONCILING"], *([sealed] if sealed is not None else []))
        return guard, self.seal_read_updates(k)

    def _read(self, k: int) -> Expr:
        """Record state after a status read of key k."""
        absent = RV["RECORDED"] if self.k["on_absent"] == "rerecord" else RV["DEAD_LETTER"]
        if self.a["status_read"] == "no":
            return const(RV["DEAD_LETTER"])
        return ite(self.applied[k] > 0, RV["ACKED"], absent)

    def _compensation(self, k: int) -> dict:
        up = {self.rec[k].name: RV["COMPENSATED"]}
        if self.a["compensable"] == "yes":
            up[self.comp[k].name] = min_(self.applied[k], self.comp[k] + 1)
        return up

    # ----- the sealed saga -----------------------------------------------------------------
    def sealed_saga(self, k: int, w: int, unknown: Expr) -> None:
        """Seal, then read and reverse (module docstring)."""
        kn, wn, rec = self.keys[k].name, f"w{w}", self.rec[k]
        self.fence_and_seal(k, "reconcile", {"key": kn, "worker": wn}, unknown)
        read, after = self._sealed_read(k)
        guard = all_of(self._owned(k, w), read)
        params = {"key": kn, "worker": wn}
        if self.a["status_read"] == "no":
            self.act(
                "compensate_after_seal",
                {
                    **params,
                    "status": "no status read",
                    "outcome": "the effect cannot be found to reverse: DEAD_LETTER",
                },
                guard,
                {rec.name: RV["DEAD_LETTER"], **after},
            )
        else:
            self.act(
                "compensate_after_seal",
                {**params, "status": "applied", **self._reversal(k)[0]},
                all_of(guard, self.applied[k] > 0),
                {**self._reversal(k)[1], **after},
            )
            self.act(
                "compensate_after_seal",
                {**params, "status": "absent", "outcome": "nothing to reverse: COMPENSATED"},
                all_of(guard, self.applied[k] == 0),
                {rec.name: RV["COMPENSATED"], **after},
            )
            self.stale_read(k, w, guard, params, after, absent=RV["COMPENSATED"])
        self.reseal(k, w)

    def _reversal(self, k: int) -> tuple[dict, dict]:
        """(outcome parameter, updates) of reversing key k's applied effect."""
        rec = self.rec[k]
        if self.a["compensable"] == "no":
            return (
                {"outcome": "the provider cannot reverse it: DEAD_LETTER, the effect stands"},
                {rec.name: RV["DEAD_LETTER"]},
            )
        comp = self.comp[k]
        return (
            {"outcome": "reverses it: COMPENSATED"},
            {rec.name: RV["COMPENSATED"], comp.name: min_(self.applied[k], comp + 1)},
        )

    # ----- the human approval gate ---------------------------------------------------------
    def human(self) -> None:
        """The approval gate's actions, one set per key (module docstring)."""
        if self.k["on_unknown"] != "human_approval":
            return
        for k, key in enumerate(self.keys):
            self.fence_and_seal(k, "review", {"key": key.name}, self.rec[k] == RV["UNKNOWN"])
            self._approve(k)
            for w in range(self.W):
                self.reseal(k, w)

    def _approve(self, k: int) -> None:
        kn, rec = self.keys[k].name, self.rec[k]
        read, after = self._sealed_read(k)
        told = "parks it in DEAD_LETTER and tells the user"
        if self.a["status_read"] == "no":
            self.act(
                "approve",
                {"key": kn, "status": "no status read", "decision": told},
                read,
                {rec.name: RV["DEAD_LETTER"], **after},
            )
            return
        self.act(
            "approve",
            {"key": kn, "status": "applied", "decision": "approves it as done: ACKED"},
            all_of(read, self.applied[k] > 0),
            {rec.name: RV["ACKED"], **after},
        )
        reads = [("absent", self.applied[k] == 0, False)]
        if self.has("stale_reads") and self.k["status_via"] == "search":
            reads.append(
                (
                    "absent, from a stale view (it was applied)",
                    all_of(self.applied[k] > 0, self.budget["stale_reads"] > 0),
                    True,
                )
            )
        for status, cond, fault in reads:
            spend = self.spend("stale_reads") if fault else {}
            for decision, guard, up in self._absent_decisions(k, told):
                self.act(
                    "approve",
                    {"key": kn, "status": status, "decision": decision},
                    all_of(read, cond, guard),
                    {**up, **after, **spend},
                    fault=fault,
                )

    def _absent_decisions(self, k: int, told: str):
        """(decision, guard, updates) of the human finding key k's effect absent: a new
        attempt under the next-epoch key where there is one without a record, else park."""
        rec, nk = self.rec[k], self.next_of.get(k)
        park = {rec.name: RV["DEAD_LETTER"]}
        if nk is None:
            yield told, TRUE, park
            return
        up = {**park, self.rec[nk].name: RV["RECORDED"], self.owner[nk].name: self.owner[k]}
        if self.via[nk] is not None:
            up[self.via[nk].name] = (
                self.via[k]
                if self.via[k] is not None
                else self.call_ids.index(min(self.callers[k]))
            )
        nkn = self.keys[nk].name
        free = self.rec[nk] == RV["PROPOSED"]
        yield (
            f"approves a new attempt: parks it in DEAD_LETTER and records key {nkn} "
            f"(the next epoch) for dispatch",
            free,
            up,
        )
        yield f"key {nkn} has a record already: {told}", not_(free), park
