"""A re-ask meets the intent in doubt (a mixin of the semantics builder; knob `reask`).

The user, told the first request may or may not have happened, asks again in a new
message. With `intent_id=minted` the new request's id is in the scope, so its call derives
a key of its own: nothing in the log ties it to the first. Two keys are *siblings* when
calls of different requests derive them from the same tool and canonical arguments (under
`principal=part`, of the same principal), whatever their epoch: a re-ask after a doubt and
the user's retry after a give-up are one intent with its attempts. Found statically from
the proposals. What a new request's call meets when its key
has no record and a sibling's record exists:

- `proceed`: nothing; it is accepted at once;
- `refuse`: while a sibling is unsettled (RECORDED, DISPATCHED, UNKNOWN, RECONCILING) the
  call is refused and nothing is written: the proposal stays unsent, the user may ask
  again at any later point (the same proposal), and is then accepted;
- `hold`: while a sibling is unsettled the call waits (the same guard); once every sibling
  settled, a sibling whose outcome its own request never heard (`told.<key>` = 0: it did
  not end by its ack reaching the call that sent it) answers the call: ACKED: not sent,
  told it was done; DEAD_LETTER where the design's give-up does not mean "a final read
  found nothing" (`_absent_final`): refused, told it may have happened. Either way the
  call is REJECTED_DUPLICATE with no record of its own, and the sibling's outcome is now
  told (a later request proceeds). A new attempt after a give-up (`after_give_up`) is
  answered by an ACKED sibling told or not. Otherwise (told, given up after a final read
  found nothing, compensated, cancelled) it is accepted under its own key.

Told is heard from the caller's side under `told=caller`: where a caller may stop waiting
(`caller_deadlines`, `gone.<key>`), an ack that reaches the worker after its caller gave up
is heard by nobody; `told=on_ack` marks it told all the same.

The re-ask itself is a proposal of the first intent in another request, with trigger
`after_doubt`: a record of its intent went UNKNOWN (`doubt.<intent>`), so the user was told
it may or may not have happened. With one request per instance there are no siblings and
nothing here adds a variable or an action: every other instance builds the same System.
"""

from __future__ import annotations

from .expr import FALSE, Expr, all_of, any_of, in_, ite, not_
from .values import P_DUP, RV, UNSETTLED, r


class Reask:
    """Siblings, the `told` flags, and the guards of `refuse` and `hold`; mixed into the
    builder (uses its keys, records and proposals)."""

    def several_requests(self) -> bool:
        return len(self.inst.requests()) > 1

    def _content(self, p) -> tuple:
        """What a call meets its siblings by: its canonical arguments (and its principal,
        under `principal=part`), not its attempt (epoch): a re-ask and the user's retry
        after a give-up are one intent."""
        return (self.form_of(p),) + self.whose(p)

    def _siblings(self) -> dict[int, tuple[int, ...]]:
        """key -> the keys calls of another request derive from the same content."""
        out: dict[int, set[int]] = {}
        for p in self.props:
            for q in self.props:
                kp, kq = self.key_of[p.name], self.key_of[q.name]
                if kp != kq and p.req != q.req and self._content(p) == self._content(q):
                    out.setdefault(kp, set()).add(kq)
        return {k: tuple(sorted(v)) for k, v in out.items()}

    def declare_told(self) -> None:
        """`told.<key>` (its outcome reached the call that sent it): per sibling key under
        `hold`, and per key of an intent the user may re-ask (whatever the design: a user
        told the outcome does not re-ask)."""
        keys = (
            {s for sib in self.siblings.values() for s in sib}
            if self.k["reask"] == "hold"
            else set()
        )
        keys |= set(self._reasked_keys())
        self.told = {
            k: self.var(f"told.{self.keys[k].name}", 2, family="told", index=(self.keys[k].name,))
            for k in sorted(keys)
        }
        self.gone = (
            {
                k: self.var(
                    f"gone.{self.keys[k].name}", 2, family="gone", index=(self.keys[k].name,)
                )
                for k in sorted(keys)
            }
            if self.has("caller_deadlines")
            else {}
        )

    def stop_waiting(self) -> None:
        """`caller_deadlines`: the call that sent key k's request stops waiting while it is
        in flight (`gone.<key>`); the user is told it may or may not have happened."""
        for k, gone in self.gone.items():
            intents = {p.intent for p in self.props if self.key_of[p.name] == k}
            self.act(
                "stop_waiting",
                {"key": self.keys[k].name},
                all_of(
                    self.rec[k] == RV["DISPATCHED"], gone == 0, self.budget["caller_deadlines"] > 0
                ),
                {
                    gone.name: 1,
                    **{self.doubt[i].name: 1 for i in sorted(intents) if i in self.doubt},
                    **self.spend("caller_deadlines"),
                },
                fault=True,
            )

    def heard(self, k: int) -> Expr:
        """The user heard key k's outcome: it is told, and (where a caller may give up)
        the call that sent it was still waiting."""
        if k in self.gone:
            return all_of(self.told[k] == 1, self.gone[k] == 0)
        return self.told[k] == 1

    def _reasked_keys(self) -> list[int]:
        """Keys of the first request's calls of an intent with a re-ask (`after_doubt`)."""
        asked = {p.intent for p in self.props if p.trigger == "after_doubt"}
        return sorted(
            {
                self.key_of[p.name]
                for p in self.props
                if p.intent in asked and p.trigger != "after_doubt"
            }
        )

    def declare_doubt(self) -> None:
        """`doubt.<intent>` per intent with a re-ask (trigger `after_doubt`): a record of
        the intent went UNKNOWN, so the user was told it may or may not have happened."""
        asks = dict.fromkeys(p.intent for p in self.props if p.trigger == "after_doubt")
        self.doubt = {i: self.var(f"doubt.{i}", 2, family="doubt", index=(i,)) for i in asks}

    def doubt_updates(self, updates: dict) -> dict:
        """`doubt.<intent>` := 1 where the action writes UNKNOWN to a record of the intent."""
        for i, flag in self.doubt.items():
            keys = {k for p in self.props if p.intent == i for k in self._keys_of(p)}
            hits = [
                updates[self.rec[k].name] == RV["UNKNOWN"]
                for k in sorted(keys)
                if self.rec[k].name in updates
            ]
            if hits:
                updates[flag.name] = ite(any_of(*hits), 1, flag)
        return updates

    def doubt_trigger(self, p) -> Expr:
        """`after_doubt`: the user was told a call of p's intent may or may not have
        happened, and no call of it has told them its outcome since."""
        flag = self.doubt.get(p.intent)
        if flag is None:
            return FALSE
        mine = {
            self.key_of[q.name]
            for q in self.props
            if q.intent == p.intent and q.trigger != "after_doubt"
        }
        return all_of(flag == 1, *[not_(self.heard(k)) for k in sorted(mine) if k in self.told])

    def reask_wait(self, k: int) -> Expr:
        """`refuse`/`hold`: a sibling of key k is unsettled, so a call of k waits."""
        if self.k["reask"] == "proceed" or k not in self.siblings:
            return FALSE
        return any_of(*[in_(self.rec[s], r(*UNSETTLED)) for s in self.siblings[k]])

    def _absent_final(self) -> bool:
        """Whether this design's DEAD_LETTER means "a read found nothing, and nothing of the
        key can land after it": a status read that is never stale, after the fence seal
        (`reconcile` with a provider that fences) or after waiting out a finite delay bound
        (`replay_then_reconcile`). Any other give-up may hide an applied effect."""
        if self.a["status_read"] != "yes" or (
            self.has("stale_reads") and self.k["status_via"] == "search"
        ):
            return False
        policy = self.k["on_unknown"]
        if policy == "reconcile":
            return self.provider_fenced()
        return policy == "replay_then_reconcile" and self.cfg.timing["delay_bound"] is not None

    def reask_answers(self, p, k: int) -> list[tuple[int, str, Expr]]:
        """`hold`: (sibling, decision, guard) for each way a sibling of k answers p, a call
        of k: an untold sibling ACKED (done), or an untold DEAD_LETTER that may hide an
        effect (refused). A new attempt after a give-up (`after_give_up`) is answered by
        an ACKED sibling told or not: the user retries because the intent was given up,
        not for want of an answer, and a request of the intent has since carried it out."""
        if self.k["reask"] != "hold" or k not in self.siblings:
            return []
        out = []
        for s in self.siblings[k]:
            untold = self.told[s] == 0
            name = self.keys[s].name
            done = self.rec[s] == RV["ACKED"]
            out.append(
                (
                    s,
                    f"answered: done (key {name} ACKED)",
                    done if p.trigger == "after_give_up" else all_of(untold, done),
                )
            )
            if not self._absent_final():
                out.append(
                    (
                        s,
                        f"refused: may have happened (key {name} given up)",
                        all_of(untold, self.rec[s] == RV["DEAD_LETTER"]),
                    )
                )
        return out

    def reask_answered(self, p, k: int) -> Expr:
        """Some sibling answers p, a call of key k (so it is not accepted)."""
        return any_of(*[g for _, _, g in self.reask_answers(p, k)])

    def reask_propose(self, p, k: int, w: int, fresh: Expr, params: dict) -> None:
        """The `hold` answers: the call is refused as a duplicate of its sibling's outcome,
        which is now told."""
        for s, decision, guard in self.reask_answers(p, k):
            self.act(
                "propose",
                {**params, "decision": decision},
                all_of(fresh, guard),
                {self.prop[p.name].name: P_DUP, self.told[s].name: 1, **self.own_flag(p, s)},
            )

    def told_on_ack(self, k: int, settles_from_dispatch: Expr) -> dict:
        """`told.<key>` := 1 when an ack settles k's record from DISPATCHED: the call that
        sent it hears its outcome; under `told=caller` only if that call was still waiting
        (`told=on_ack` marks it told all the same, though nobody heard)."""
        if k not in self.told:
            return {}
        if self.k["told"] == "caller" and k in self.gone:  # a caller that gave up: not heard
            settles_from_dispatch = all_of(settles_from_dispatch, self.gone[k] == 0)
        return {self.told[k].name: ite(settles_from_dispatch, 1, self.told[k])}

    def answered_in(self, props) -> Expr:
        """A call of `props` answered by a hold (refused with no record of its own key):
        visible to the user, who was told the earlier outcome and may ask again."""
        if self.k["reask"] != "hold":
            return FALSE
        return any_of(
            *[
                all_of(self.prop[p.name] == P_DUP, self.rec[self.key_of[p.name]] == RV["PROPOSED"])
                for p in props
                if self.key_of[p.name] in self.siblings
            ]
        )
