"""The network and the provider: delivery, idempotency tokens, responses, and the
provider-side faults of real systems (a mixin of the semantics builder).

What the provider does with a request (`deliver`): fence it out if it fences and saw a
newer fence; answer from its idempotency layer if it honours tokens and knows this one
(the *saved* response: an ack, or a saved error replayed as an error); else apply it.

The faults here exist only where an instance gives them a budget (an environment profile
does, `spec/environments.json`); with no budget the builder emits exactly the actions and
variables of the ideal environment, so `--env ideal` keeps every state count.

- `fail_before_apply` (`errors_before`): the request is refused before it executes: a
  validation error, a parameter mismatch for a reused key, a concurrent request holding
  the key, a rate limit. Nothing is applied and nothing saved; or, where a token is known
  to the idempotency layer, it failed after execution began without effect and the error
  is saved for the key.
- `fail_after_apply` (`errors_after`): applied, but the response is an error (a 500 after
  the endpoint ran); the error is what the idempotency layer saves for the key.
- `expire_key` (`key_expiries`): the provider forgets a token (Stripe prunes keys at least
  24 hours old; a Powertools record EXPIREs); the next request with it applies again.
- `expire_request` (`deadlines`): a held request is refused on arrival because it is older
  than the provider's deadline (a signed request that reaches AWS too late).
- `lose_seal` (`seal_losses`): with a budget, the fence seal is a message (sent by
  `reconcile`, delivered by `deliver_seal`, re-sent by `reseal`), not atomic with the
  log's fence bump; the status read waits for the seal's ack.

A worker treats an error response like a timeout (`receive_error`): the record becomes
UNKNOWN, since an error cannot tell it whether the effect happened.
"""

from __future__ import annotations

from .expr import FALSE, TRUE, Expr, all_of, any_of, in_, ite, max_, min_, not_
from .values import (
    CAP,
    M_ACK,
    M_DELAYED,
    M_DONE,
    M_ERR,
    M_INFLIGHT,
    M_LOST,
    RV,
    S_ERR,
    S_OK,
    SEAL_ACK,
    SEAL_LOST,
    SEAL_NONE,
    SEAL_SENT,
    const,
)

# The request slots an SDK's automatic retry re-sends from (stripe-python's `_should_retry`:
# no response, a connection error or a timeout, is re-sent, and so is an error response
# (a 409 or a 5xx; the model lets every error be, a superset) before the call returns it;
# a received 2xx is never re-sent, nor anything the call has returned to the runtime).
SDK_RESENDS = (M_LOST, M_ERR)


class Provider:
    """Network and provider actions; mixed into the builder (uses its variables)."""

    # ----- which environment faults this instance has ---------------------------------
    def errors_modelled(self) -> bool:
        """Whether a request slot can hold an error response (ERR)."""
        return self.key_in_use_refused() or any(
            self.inst.faults.get(f, 0) > 0 for f in ("errors_before", "errors_after", "deadlines")
        )

    def key_in_use_refused(self) -> bool:
        """Whether a request meeting another still executing under its key is refused (409):
        only where requests carry a key the provider honours."""
        return (
            self.a["in_flight_key"] == "refused"
            and self.a["provider_idempotent"] == "yes"
            and self.token_kind() != "none"
        )

    def saved_errors(self) -> bool:
        """Whether the idempotency layer can save an error for a token (3-valued `seen`)."""
        return any(self.inst.faults.get(f, 0) > 0 for f in ("errors_before", "errors_after"))

    def seal_is_message(self) -> bool:
        return self.inst.faults.get("seal_losses", 0) > 0

    # ----- the network ------------------------------------------------------------------
    def network(self) -> None:
        for k in range(len(self.keys)):
            for f in range(1, self.F + 1):
                m = self.msg[k][f - 1]
                params = {"key": self.keys[k].name, "fence": str(f)}
                if self.has("delays"):
                    self.act(
                        "delay",
                        params,
                        all_of(m == M_INFLIGHT, self.budget["delays"] > 0),
                        {m.name: M_DELAYED, **self.spend("delays")},
                        fault=True,
                    )
                if self.has("duplicates") and self.k["sdk_retries"] == "on":
                    self.check_send(k, 2)
                    self.act(
                        "redeliver",
                        params,
                        all_of(
                            in_(m, SDK_RESENDS), self.budget["duplicates"] > 0, self.may_send(k, 2)
                        ),
                        {m.name: M_INFLIGHT, **self.spend("duplicates")},
                        fault=True,
                    )
                if self.has("ack_losses"):
                    self.act(
                        "lose_ack",
                        params,
                        all_of(m == M_ACK, self.budget["ack_losses"] > 0),
                        {m.name: M_LOST, **self.spend("ack_losses")},
                        fault=True,
                    )
                self._deliver(k, f)
                self._provider_faults(k, f)
            self._seal_messages(k)
            self._key_expiry(k)
        self.close_windows()

    # ----- delivery ------------------------------------------------------------------
    def _fenced(self, k: int, f: int) -> Expr:
        return (self.pfence[k] > f) if self.pfence[k] is not None else FALSE

    def _seal_on_delivery(self, k: int, f: int) -> dict:
        return {self.pfence[k].name: max_(self.pfence[k], f)} if self.pfence[k] is not None else {}

    def _deliver(self, k: int, f: int) -> None:
        m, params = self.msg[k][f - 1], {"key": self.keys[k].name, "fence": str(f)}
        arriving = in_(m, (M_INFLIGHT, M_DELAYED))
        fenced = self._fenced(k, f)
        seen = self._seen_expr(k, f)
        seal = self._seal_on_delivery(k, f)
        if fenced is not FALSE:
            self.act(
                "deliver",
                {**params, "outcome": "fenced out"},
                all_of(arriving, fenced),
                {m.name: M_LOST},
            )
        if seen is not FALSE and not self.saved_errors():
            self.act(
                "deliver",
                {**params, "outcome": "deduplicated"},
                all_of(arriving, not_(fenced), seen),
                {m.name: M_ACK, **seal},
            )
        elif seen is not FALSE:
            self.act(
                "deliver",
                {**params, "outcome": "deduplicated"},
                all_of(arriving, not_(fenced), self._seen_expr(k, f, S_OK)),
                {m.name: M_ACK, **seal},
            )
            self.act(
                "deliver",
                {**params, "outcome": "replays the saved error"},
                all_of(arriving, not_(fenced), self._seen_expr(k, f, S_ERR)),
                {m.name: M_ERR, **seal},
            )
        self.act(
            "deliver",
            {**params, "outcome": "applied"},
            all_of(arriving, not_(fenced), not_(seen)),
            self._apply(k, f, M_ACK, S_OK),
        )
        self._key_in_use(k, f, arriving, fenced, seen)

    def _key_in_use(self, k: int, f: int, arriving: Expr, fenced: Expr, seen: Expr) -> None:
        """A request whose token another request of the same token is still executing under
        is refused, unapplied, nothing saved (Stripe's 409 idempotency_key_in_use). The model
        delivers atomically, so "still executing" is "also on its way": of two overlapping
        requests under one key, either may meet the other executing."""
        if not self.key_in_use_refused():
            return
        others = self._same_token_on_its_way(k, f)
        if others is FALSE:
            return
        self.act(
            "deliver",
            {
                "key": self.keys[k].name,
                "fence": str(f),
                "outcome": "refused: its key is in use by a request still executing "
                "(409), unapplied, nothing saved",
            },
            all_of(arriving, not_(fenced), not_(seen), others),
            {self.msg[k][f - 1].name: M_ERR},
        )

    def _same_token_on_its_way(self, k: int, f: int) -> Expr:
        """Another request carrying message (k, f)'s token is in flight or held."""
        mine = self._token_of_msg(k, f)
        out = []
        for k2 in range(len(self.keys)):
            for g in range(1, self.F + 1):
                if (k2, g) == (k, f):
                    continue
                same = self._same_token(mine, k, f, self._token_of_msg(k2, g), k2, g)
                if same is not FALSE:
                    out.append(all_of(same, in_(self.msg[k2][g - 1], (M_INFLIGHT, M_DELAYED))))
        return any_of(*out)

    def _same_token(self, a, ka: int, fa: int, b, kb: int, fb: int) -> Expr:
        """Whether messages (ka, fa) and (kb, fb), with static tokens or per-message token
        variables `a` and `b` (see `_token_of_msg`), carry the same token."""

        def pairs(tok, k, f):
            if isinstance(tok, str):
                return [(TRUE, tok)]
            mt = self.mtok[k][f - 1]
            return [(mt == i, c) for i, c in tok]

        out = [
            all_of(ca, cb) for ca, ta in pairs(a, ka, fa) for cb, tb in pairs(b, kb, fb) if ta == tb
        ]
        return any_of(*out)

    def _apply(self, k: int, f: int, response: int, saved: int) -> dict:
        """Updates for applying key k's request at fence f, answering `response`."""
        up = {
            self.msg[k][f - 1].name: response,
            self.applied[k].name: min_(self.applied[k] + 1, CAP),
            **self._seal_on_delivery(k, f),
        }
        up.update(self._mark_seen(k, f, saved))
        up[self.bad["FENCE"].name] = ite(self.fence_in_force(k) > f, 1, self.bad["FENCE"])
        cancelled = self.intent_cancelled(k)
        if cancelled is not FALSE:
            up[self.bad["P3"].name] = ite(cancelled, 1, self.bad["P3"])
        return up

    def _provider_faults(self, k: int, f: int) -> None:
        m, params = self.msg[k][f - 1], {"key": self.keys[k].name, "fence": str(f)}
        arriving = all_of(in_(m, (M_INFLIGHT, M_DELAYED)), not_(self._fenced(k, f)))
        seen = self._seen_expr(k, f)
        if self.has("errors_before"):
            spend = self.spend("errors_before")
            self.act(
                "fail_before_apply",
                {**params, "outcome": "refused, nothing saved"},
                all_of(arriving, self.budget["errors_before"] > 0),
                {m.name: M_ERR, **spend},
                fault=True,
            )
            saving = self._mark_seen(k, f, S_ERR) if self._token_of_msg(k, f) is not None else {}
            if saving and self.a["provider_idempotent"] == "yes":
                self.act(
                    "fail_before_apply",
                    {**params, "outcome": "failed, error saved"},
                    all_of(arriving, not_(seen), self.budget["errors_before"] > 0),
                    {m.name: M_ERR, **saving, **spend},
                    fault=True,
                )
        if self.has("errors_after"):
            up = self._apply(k, f, M_ERR, S_ERR)
            up.update(self.spend("errors_after"))
            self.act(
                "fail_after_apply",
                params,
                all_of(arriving, not_(seen), self.budget["errors_after"] > 0),
                up,
                fault=True,
            )
        if self.has("deadlines"):
            self.act(
                "expire_request",
                params,
                all_of(m == M_DELAYED, self.budget["deadlines"] > 0),
                {m.name: M_ERR, **self.spend("deadlines")},
                fault=True,
            )

    # ----- responses -------------------------------------------------------------------
    def receive_error(self, k: int, w: int, f: int) -> None:
        """Worker w reads an error response: an error proves nothing, so UNKNOWN."""
        if not self.errors_modelled():
            return
        rec, m = self.rec[k], self.msg[k][f - 1]
        current = rec == RV["DISPATCHED"]
        if self.k["fencing"] == "on":
            current = all_of(current, self.fence[k] == f)
        self.act(
            "receive_error",
            {"key": self.keys[k].name, "worker": f"w{w}", "fence": str(f)},
            all_of(self._owned(k, w), m == M_ERR),
            {
                m.name: M_DONE,
                rec.name: ite(current, RV["UNKNOWN"], rec),
                self.retry_ok.name: ite(current, 1, self.retry_ok),
            },
        )

    # ----- idempotency tokens ------------------------------------------------------------
    def _token_of_msg(self, k: int, f: int):
        """(static token name) or (list of (value, token name)) for message (k, f)."""
        kind = self.token_kind()
        if kind == "none":
            return None
        if kind == "semantic_key":
            return self.keys[k].name
        if self.mtok[k] is None:
            (call,) = self.callers[k]
            return call
        return [(i, c) for i, c in enumerate(self.call_ids)]

    def _seen_expr(self, k: int, f: int, value: int | None = None) -> Expr:
        """The provider knows message (k, f)'s token (with saved response `value`, if given)."""
        if self.a["provider_idempotent"] == "no":
            return FALSE
        tok = self._token_of_msg(k, f)
        if tok is None:
            return FALSE

        def known(t):
            s = self.seen[t]
            if value is not None:
                return s == value
            return s == 1 if not self.saved_errors() else s > 0

        if isinstance(tok, str):
            return known(tok)
        mt = self.mtok[k][f - 1]
        return any_of(*[all_of(mt == i, known(c)) for i, c in tok])

    def _mark_seen(self, k: int, f: int, value: int = S_OK) -> dict:
        tok = self._token_of_msg(k, f)
        if tok is None:
            return {}
        if isinstance(tok, str):
            return {self.seen[tok].name: const(value)}
        mt = self.mtok[k][f - 1]
        return {self.seen[c].name: ite(mt == i, value, self.seen[c]) for i, c in tok}

    def _key_expiry(self, k: int) -> None:
        """The provider forgets key k's token (semantic-key tokens: one per key), no earlier
        than its lifetime allows (`Clock.expiry_guard`)."""
        if not self.has("key_expiries") or self.token_kind() != "semantic_key":
            return
        s = self.seen[self.keys[k].name]
        self.act(
            "expire_key",
            {"token": self.keys[k].name},
            all_of(s > 0, self.budget["key_expiries"] > 0, self.expiry_guard([k])),
            {s.name: 0, **self.spend("key_expiries")},
            fault=True,
        )

    def call_token_expiry(self) -> None:
        """The provider forgets a call-id token. The lifetime orders it only for a token one
        key uses: a token several keys share may be first seen through one and still be sent
        through another after it was pruned, so it is left unordered (more runs, never fewer)."""
        if not self.has("key_expiries") or self.token_kind() != "call_id":
            return
        for c in self.call_ids:
            s = self.seen[c]
            users = [k for k in range(len(self.keys)) if c in self.callers.get(k, ())]
            order = self.expiry_guard(users) if len(users) == 1 else TRUE
            self.act(
                "expire_key",
                {"token": c},
                all_of(s > 0, self.budget["key_expiries"] > 0, order),
                {s.name: 0, **self.spend("key_expiries")},
                fault=True,
            )

    # ----- the fence seal as a message -----------------------------------------------------
    def seal_updates(self, k: int, f: int) -> dict:
        """What `reconcile` at fence f does to the provider's fence: at once (ideal), or by
        sending the seal (with a `seal_losses` budget)."""
        if self.pfence[k] is None:
            return {}
        if not self.seal_is_message():
            return {self.pfence[k].name: f}
        return {self.sealm[k].name: SEAL_SENT, self.sealf[k].name: f}

    def fence_in_force(self, k: int) -> Expr:
        """The fence FENCE judges a delivery against: the log's, except that while a seal
        is a message still unacknowledged (sent or lost) the bump it carries is not yet in
        force at the provider, so the previous fence (reconcile bumps by one) still is."""
        if self.pfence[k] is None or not self.seal_is_message():
            return self.fence[k]
        pending = in_(self.sealm[k], (SEAL_SENT, SEAL_LOST))
        return ite(pending, self.fence[k] - 1, self.fence[k])

    def seal_read_guard(self, k: int) -> Expr:
        """The status read waits for the seal's ack when the seal is a message."""
        if self.pfence[k] is None or not self.seal_is_message():
            return None
        return self.sealm[k] == SEAL_ACK

    def seal_read_updates(self, k: int) -> dict:
        if self.pfence[k] is None or not self.seal_is_message():
            return {}
        return {self.sealm[k].name: SEAL_NONE, self.sealf[k].name: 0}

    def _seal_messages(self, k: int) -> None:
        if self.pfence[k] is None or not self.seal_is_message():
            return
        kn, sm, sf = self.keys[k].name, self.sealm[k], self.sealf[k]
        self.act(
            "deliver_seal",
            {"key": kn},
            sm == SEAL_SENT,
            {sm.name: SEAL_ACK, self.pfence[k].name: max_(self.pfence[k], sf)},
        )
        self.act(
            "lose_seal",
            {"key": kn},
            all_of(in_(sm, (SEAL_SENT, SEAL_ACK)), self.budget["seal_losses"] > 0),
            {sm.name: SEAL_LOST, **self.spend("seal_losses")},
            fault=True,
        )

    def reseal(self, k: int, w: int) -> None:
        """The reconciler re-sends a lost seal (same fence)."""
        if self.pfence[k] is None or not self.seal_is_message():
            return
        self.act(
            "reseal",
            {"key": self.keys[k].name, "worker": f"w{w}"},
            all_of(self._owned(k, w), self.rec[k] == RV["RECONCILING"], self.sealm[k] == SEAL_LOST),
            {self.sealm[k].name: SEAL_SENT},
        )
