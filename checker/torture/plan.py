"""A run's schedule as data: who asks for what, and which faults strike where. Pure.

A `Plan` is a function of its seed (`random_plan`) or of a model counterexample
(`toolcommit.checker.torture.itf.plan_from_itf`): the same seed is the same schedule. The
schedule names *points*, never times, so it does not depend on how fast the machine is:

- process faults strike a worker at its n-th arrival at a hook point (counted over all its
  incarnations): ``kill`` (SIGKILL), ``pause`` (the harness expires its leases and holds it
  there, a zombie, for `Timing.pause` seconds), ``cancel`` (at ``proposed``: the user
  cancels the record just proposed);
- network faults strike the n-th request of one identity at the proxy (`net_action`).

Hook points, in the order a call passes them: ``proposed`` (the log decided),
``dispatched`` (DISPATCHED is written, the request not yet sent), ``sent`` (the answer or
the failure is in, not yet written to the log), ``reconciling`` (RECONCILING is written,
the status read not yet sent).

Which interleaving the operating system then picks still varies from run to run, as in
any test of real processes; the faults, their places and their number do not.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field, replace
from typing import Optional

from toolcommit.model.canon import canonical_intent

POINTS = ("proposed", "dispatched", "sent", "reconciling")
# the provider's faults, told to it by the proxy (`provider`): a request that executes past
# its caller's timeout, one refused before it executes, one that executes and answers 500,
# a key pruned early, a search that misses an applied effect
PROVIDER_FAULTS = ("slow", "error_before", "error_after", "expire_key", "stale")
# dup_drop: the answer lost and the client's SDK re-sending the request (both copies reach
# the provider, neither answer the client)
NET_ACTIONS = ("pass", "drop", "delay", "dup", "dup_drop", "late") + PROVIDER_FAULTS


@dataclass(frozen=True)
class Timing:
    """Seconds: client `timeout` per request, `hold` of a delayed request (longer than the
    timeout), `pause` of a zombie, `restart` delay after a kill, `deadline` of a run."""

    timeout: float = 0.1
    hold: float = 0.3
    pause: float = 0.1
    restart: float = 0.02
    deadline: float = 30.0
    poll: float = 0.005

    def within(self, bound: float) -> "Timing":
        """This timing with a held request delivered well within a delay bound of `bound`
        seconds (a profile's, compressed), still past the client's timeout."""
        if bound == float("inf"):
            return self
        return replace(self, hold=max(min(self.hold, 0.6 * bound), 1.5 * self.timeout))


@dataclass(frozen=True)
class Session:
    """One user intent a worker's model works on: `forms` are equivalent argument objects
    (paraphrases the canonicalizer merges); `calls`, if given, is the model's script of
    (call id or None for a fresh one, form index), else it draws fresh ids; the model
    re-asks up to `retries` times after a failure, and the user asks again once
    (`new_attempt`) after the intent was given up."""

    scope: str
    tool: str
    forms: tuple
    retries: int = 2
    calls: tuple = ()

    @property
    def intent(self) -> str:
        return canonical_intent(self.tool, self.forms[0], self.scope).digest


@dataclass(frozen=True)
class Plan:
    seed: int
    workers: tuple[str, ...]
    sessions: tuple[Session, ...]
    assign: tuple[tuple[int, ...], ...]  # per worker: session indexes, in order
    kills: frozenset = frozenset()  # {(worker, point, n)}
    pauses: frozenset = frozenset()  # {(worker, point, n)}
    cancels: frozenset = frozenset()  # {(worker, "proposed", n)}
    rates: tuple = (0.0, 0.0, 0.0)  # (drop, delay, dup) for requests not in net
    provider_rates: tuple = ()  # ((provider fault or late, rate), ...)
    net: tuple = ()  # explicit ((kind, ident, n), action) rules
    source: str = "seed"
    timing: Timing = field(default_factory=Timing)

    def fault_at(self, worker: str, point: str, n: int) -> Optional[str]:
        """``kill``, ``pause``, ``cancel`` or None for `worker` at its n-th `point`."""
        k = (worker, point, n)
        if k in self.kills:
            return "kill"
        if k in self.pauses:
            return "pause"
        if k in self.cancels:
            return "cancel"
        return None

    def net_action(self, kind: str, ident: str, n: int) -> str:
        """What the proxy does with the n-th request of identity (`kind`, `ident`): an
        explicit rule if one matches, else a draw from `rates` keyed by the seed and the
        request's identity (not by its arrival time)."""
        for (k, i, m), action in self.net:
            if k == kind and m == n and i in (ident, "*"):
                return action
        drop, delay, dup = self.rates
        if not (drop or delay or dup or self.provider_rates):
            return "pass"
        h = hashlib.sha256(f"{self.seed}|{kind}|{ident}|{n}".encode()).digest()
        u = int.from_bytes(h[:8], "big") / 2.0**64
        if n > 4:  # a bounded budget: late retries go through
            return "pass"
        if u < drop:
            return "drop"
        if u < drop + delay:
            return "delay"
        if u < drop + delay + dup and kind == "apply":
            return "dup"
        if kind != "apply":
            return "pass"
        top = drop + delay + dup
        for action, rate in self.provider_rates:
            top += rate
            if u < top:
                return action
        return "pass"

    def planned(self) -> dict:
        """The schedule's own counts (faults placed, before any run)."""
        return {
            "kills": len(self.kills),
            "pauses": len(self.pauses),
            "cancels": len(self.cancels),
            "sessions": len(self.sessions),
            "workers": len(self.workers),
        }


def _forms(amount: int, charge: str) -> tuple:
    """A refund's equivalent spellings. Each names its `charge`: two checkouts' refunds of
    the same amount are different requests, which a ``reask=hold`` design must not hold or
    answer by each other (`toolcommit.runtime.reask`)."""
    base = {"charge": charge, "amount": amount, "reason": "damaged item"}
    return (
        base,
        {"reason": " damaged  item ", "amount": float(amount), "charge": charge},
        {"charge": charge, "reason": "damaged item", "amount": amount},
    )


def random_plan(seed: int, workers: int = 2, timing: Timing = Timing(), faults: tuple = ()) -> Plan:
    """The schedule of run `seed`: 2 to 4 intents over `workers` workers (some proposed by
    two workers at once), up to two kills per worker, perhaps a zombie pause and a cancel,
    and network fault rates drawn per run; with `faults` (a profile's provider faults),
    their rates too, drawn apart so the rest of the schedule stays that of the seed."""
    rng = random.Random(seed)
    names = tuple(f"w{i}" for i in range(workers))
    n_sessions = rng.randint(2, 4)
    sessions = tuple(
        Session(
            f"user:{seed}:checkout:{i}",
            "refund",
            _forms(rng.choice((20, 35, 50)), f"ch_{seed}_{i}"),
            retries=rng.randint(1, 3),
        )
        for i in range(n_sessions)
    )
    assign = [[] for _ in names]
    for i in range(n_sessions):
        first = rng.randrange(workers)
        assign[first].append(i)
        if workers > 1 and rng.random() < 0.4:  # two orchestrators, one intent
            assign[(first + rng.randrange(1, workers)) % workers].append(i)
    kills, pauses, cancels = set(), set(), set()
    for w in names:
        for _ in range(rng.choice((0, 0, 1, 1, 2))):
            kills.add((w, rng.choice(POINTS), rng.randint(1, 3)))
    if rng.random() < 0.3:
        pauses.add((rng.choice(names), rng.choice(POINTS[:3]), rng.randint(1, 2)))
    if rng.random() < 0.15:
        cancels.add((rng.choice(names), "proposed", rng.randint(1, 2)))
    cancels -= {c for c in cancels if c in kills or c in pauses}
    pauses -= {p for p in pauses if p in kills}
    rates = (rng.choice((0.0, 0.2, 0.4)), rng.choice((0.0, 0.15, 0.3)), rng.choice((0.0, 0.1)))
    more = random.Random(f"{seed}|provider")
    provider_rates = tuple((f, more.choice((0.0, 0.1, 0.2))) for f in faults)
    return Plan(
        seed,
        names,
        sessions,
        tuple(tuple(a) for a in assign),
        frozenset(kills),
        frozenset(pauses),
        frozenset(cancels),
        rates,
        tuple(x for x in provider_rates if x[1]),
        timing=timing,
    )
