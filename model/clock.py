"""The order time imposes (a mixin of the semantics builder): replay windows, when a key
may be pruned, and the wait for the network's delay bound. `model/timing.py` says why an
order is enough; this module turns the relations it derives into variables and guards.

Where the instance lets the provider prune keys (`key_expiries`) and the design's replay
window W is finite and the design re-sends under a key at all, each key gets a window flag
(`win.KEY`: OPEN, CLOSED) that `close_window` shuts once the key was first sent. Every later
send under the key (a dispatch under a new fence, a retry, a replay, an SDK retry) needs it
open. Then:

- `expire_key` waits for the window to close where W < L, and until no request of the key is
  on its way where W + D < L (`expiry_guard`);
- a read that waits out the delay bound (`on_unknown=replay_then_reconcile`) runs only when no
  request of the key is on its way, where D is finite (`arrivals_over`).

With no pruning nothing here adds a variable or changes a guard, so `--env ideal` keeps
every state count.
"""

from __future__ import annotations

from .expr import TRUE, Expr, all_of, in_, not_
from .timing import Relations, show
from .values import M_DELAYED, M_INFLIGHT

# on_unknown options whose resolution sends under the key again
RESENDING_UNKNOWN = ("blind_retry", "replay_then_reconcile")


class Clock:
    """Window flags, the window's guard on sends, and the timing guards; mixed into the
    builder (uses its variables)."""

    def resends(self) -> bool:
        """Whether the design can send a key's request more than once (statically, from the
        knobs and budgets): a resolution or replay that sends, an SDK retry, or a way back
        to RECORDED after a dispatch (a re-read absent, a rollback, an overwrite, a racy
        insert over the record, a failover). `_send` checks the claim for every re-send it
        builds; the dispatch's is confirmed by exploration in the tests."""
        k = self.k
        return (
            k["on_unknown"] in RESENDING_UNKNOWN
            or k["late_replay"] == "replay_same_key"
            or k["on_absent"] == "rerecord"
            or k["on_restart"] == "rollback"
            or k["reaccept"] == "overwrite"
            or k["insert"] == "check_then_insert"
            or self.has("failovers")
            or (self.has("duplicates") and k["sdk_retries"] == "on")
        )

    def pruning(self) -> bool:
        """Whether the provider may prune a key here (the only thing time orders)."""
        return self.has("key_expiries") and self.token_kind() != "none"

    def relations(self) -> Relations:
        t = self.cfg.timing
        window = t["replay_window"] if self.resends() else 0
        return Relations(window, t["delay_bound"], t["key_lifetime"])

    def windowed(self) -> bool:
        return self.pruning() and self.resends() and self.cfg.timing["replay_window"] is not None

    def declare_windows(self) -> None:
        self.win = [
            self.var(f"win.{key.name}", 2, 0, ("OPEN", "CLOSED"), "win", (key.name,))
            if self.windowed()
            else None
            for key in self.keys
        ]

    def may_send(self, k: int, f: int) -> Expr:
        """The window's guard on sending key k's request under fence f (f > 1: a re-send)."""
        if f == 1 or self.win[k] is None:
            return TRUE
        return self.win[k] == 0

    def check_send(self, k: int, f: int) -> None:
        if (
            f > 1
            and self.pruning()
            and self.cfg.timing["replay_window"] is not None
            and not self.resends()
        ):
            raise AssertionError(f"a re-send of key {self.keys[k].name} that resends() misses")

    def close_windows(self) -> None:
        for k, w in enumerate(self.win):
            if w is not None:
                self.act(
                    "close_window",
                    {"key": self.keys[k].name},
                    all_of(self.fence[k] >= 1, w == 0),
                    {w.name: 1},
                )

    def on_its_way(self, keys) -> Expr:
        """Some request of `keys` is in flight or held in the network."""
        from .expr import any_of

        return any_of(*[in_(m, (M_INFLIGHT, M_DELAYED)) for k in keys for m in self.msg[k]])

    def expiry_guard(self, keys) -> Expr:
        """What pruning a token used by `keys` waits for, by the relations (module docstring)."""
        rel, out = self.relations(), []
        if rel.expiry_after_window:
            out += [self.win[k] == 1 for k in keys if self.win[k] is not None]
        if rel.expiry_after_arrivals:
            out.append(not_(self.on_its_way(keys)))
        return all_of(*out) if out else TRUE

    def arrivals_over(self, k: int) -> Expr:
        """A read that waits out the delay bound D: no request of key k on its way (TRUE
        where D is unbounded: waiting cannot help, and the read happens at once)."""
        if self.cfg.timing["delay_bound"] is None:
            return TRUE
        return not_(self.on_its_way([k]))

    def timing_used(self) -> list[dict]:
        """The timing facts this system rests on (its ASSUME), for reports and records."""
        out, t = [], self.cfg.timing
        if self.pruning():
            rel = self.relations()
            out.append(
                {
                    "relation": rel.text() or "no order: keys may be pruned at any time",
                    "key_lifetime": show(t["key_lifetime"], "key_lifetime"),
                    "delay_bound": show(t["delay_bound"], "delay_bound"),
                    "replay_window": show(t["replay_window"], "replay_window"),
                    "resends": self.resends(),
                }
            )
        if self.k["on_unknown"] == "replay_then_reconcile":
            out.append(
                {
                    "relation": (
                        "the status read waits out delay_bound="
                        f"{show(t['delay_bound'], 'delay_bound')}"
                        if t["delay_bound"] is not None
                        else "delay_bound=unbounded: the read cannot wait out a late request"
                    ),
                    "delay_bound": show(t["delay_bound"], "delay_bound"),
                }
            )
        return out
