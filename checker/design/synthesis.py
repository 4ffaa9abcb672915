"""`toolcommit design`: which designs (knob combinations) keep the properties in an
environment, and, when none does, the least the environment must promise.

Pure: values in, a `Synthesis` out; printing is `toolcommit.checker.render.design`'s.

How the search goes
-------------------
A *design* is one option per knob; its *departures* are the knobs whose option differs from
`naive`'s. An `Oracle` judges a design on the instances (cheapest first, stopping at the
first violation, the big `default` instance last) with the explicit engine and caches every
answer. The search:

1. tries `recommended` and its neighbours (every design one knob-option away from it);
2. *minimizes* each that holds: turns departures back to `naive` one at a time, keeping a
   change whenever the design still holds, until none can be turned back (1-minimal). For a
   minimal design the counterexample of every departure turned back is at hand: it is why
   that departure is needed;
3. reports the minimal designs found, fewest departures first.
4. When no design holds, it strengthens the environment: each set of the profile's
   departures from `ideal` (an assumption set back, a fault budget set to zero), smallest
   first, until `recommended` or a neighbour holds; that set is the weakest extra promise
   the provider (or the log's store) must make, shown with the counterexample without it.

Pruning by monotonicity. For some knobs the naive option provably allows every behaviour
of the other (a *behaviour superset*): `insert=check_then_insert` runs every `atomic` run
(a check immediately followed by its insert), `dispatch_guard=memory` every `log_cas` run
(its guard is weaker), `reaccept=overwrite` every `reject` run and `late_replay`'s other
options every `reject` run (up to the point the rejected call is emitted: leave it unemitted;
no guard reads a proposal's decision). A state predicate (invariant or monitor) broken by a
design is therefore broken by every design that differs from it only by weaker options of
these knobs: such designs are not checked again (`pruned`). Graph properties (FULFIL,
DEADLOCK, PROGRESS) are not monotone under more behaviour, so a failure through them prunes
nothing. Designs that contain a minimal design found earlier (its departures and more) are
skipped as not minimal.

Limits: `limits` bound each instance's search (a candidate judged UNKNOWN does not hold);
`seconds` bounds the whole search, which then says it stopped early.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from toolcommit.model.environment import configure, instance_in, profile
from toolcommit.model.instance import Instance, instance
from toolcommit.model.knobs import preset
from toolcommit.model.properties import names, outcomes, prop
from toolcommit.model.values import ENV_FAULTS
from toolcommit.spec import protocol

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance

# The outcome properties a design must keep by default: I1 (and what it implies), the
# user's cancel (P3), fulfilment. P2, LEGAL and FENCE judge the mechanism (the article's
# lifecycle and fencing), not the outcome; add them with `props`.
DEFAULT_PROPS = outcomes()

# Instances judged only to confirm a design found on the others (the big combined one).
LAZY = ("default",)

# knob -> {weaker option: options whose every run it also runs} (see the module docstring)
SUPERSETS = {
    "insert": {"check_then_insert": ("atomic",)},
    "dispatch_guard": {"memory": ("log_cas",)},
    "reaccept": {"overwrite": ("reject",)},
    "late_replay": {"replay_same_key": ("reject",), "compensate": ("reject",)},
}


def knob_names() -> tuple[str, ...]:
    return tuple(protocol().knobs)


def preset_design(name: str) -> dict:
    return dict(preset(name).knobs)


def departures(design: dict) -> list[str]:
    naive = preset_design("naive")
    return [k for k in knob_names() if design[k] != naive[k]]


def key(design: dict) -> tuple:
    return tuple(design[k] for k in knob_names())


def simulates(weaker: dict, stronger: dict) -> bool:
    """Whether every run of `stronger` is a run of `weaker` (knob by knob, per SUPERSETS)."""
    for k in knob_names():
        a, b = weaker[k], stronger[k]
        if a != b and b not in SUPERSETS.get(k, {}).get(a, ()):
            return False
    return True


@dataclass(frozen=True)
class Failure:
    """Why a design does not hold: the first violated (or unknown) verdict met."""

    instance: str
    property: str
    status: Status
    counterexample: object = None
    reason: str = ""

    @property
    def steps(self) -> int:
        return self.counterexample.length if self.counterexample is not None else 0


@dataclass
class Environment:
    """A profile, possibly strengthened: assumption overrides and zeroed budgets."""

    name: str
    overrides: dict = field(default_factory=dict)     # assumption -> option
    zeroed: tuple = ()                                # budgets set to 0

    def label(self) -> str:
        extra = [f"{a}={v}" for a, v in self.overrides.items()] + [f"{f}=0" for f in self.zeroed]
        return self.name + (f" with {', '.join(extra)}" if extra else "")


class Oracle:
    """Judges designs in one environment on a list of instances; caches and prunes."""

    def __init__(self, env: Environment, instances: Sequence[Instance], props: Sequence[str],
                 limits: Limits = Limits(), progress: Optional[Callable] = None,
                 counts: Optional[dict] = None):
        self.env, self.props, self.limits, self.progress = env, tuple(props), limits, progress
        zero = {f: 0 for f in env.zeroed}
        kept, self.skipped = applicable(env, instances)
        self.instances = [instance_in(i, env.name).with_bounds(zero) for i in kept]
        self.cost = {i.name: 0 for i in self.instances}
        self.cache: dict[tuple, Optional[Failure]] = {}
        self.full = False     # quick mode leaves the LAZY instances to `confirm`
        self.failures: list[tuple[dict, Failure]] = []
        self.counts = counts if counts is not None else {"checked": 0, "pruned": 0}

    def config(self, design: dict):
        """naive plus the design's departures (so the label replays), in the environment."""
        changes = {k: design[k] for k in departures(design)}
        return configure(preset("naive"), self.env.name).with_knobs({**changes, **self.env.overrides})

    def known_failure(self, design: dict) -> Optional[Failure]:
        for d, f in self.failures:
            if prop(f.property).state_predicate and simulates(design, d):
                return f
        return None

    def confirm(self, design: dict) -> Optional[Failure]:
        """`check` on every instance, the LAZY ones included."""
        full, self.full = self.full, True
        try:
            return self.check(design)
        finally:
            self.full = full

    def check(self, design: dict) -> Optional[Failure]:
        """None if `design` holds every property on every instance (in quick mode: but the
        LAZY ones), else the first failure met."""
        k = key(design) + (self.full,)
        if k in self.cache:
            return self.cache[k]
        quick = self.cache.get(key(design) + (False,), None)
        if self.full and quick is not None:       # failed on a quick instance already
            self.cache[k] = quick
            return quick
        found = self.known_failure(design)
        if found is not None:
            self.counts["pruned"] += 1
            self.cache[k] = found
            return found
        self.counts["checked"] += 1
        cfg = self.config(design)
        insts = [i for i in self.instances if self.full or i.name not in LAZY]
        if self.full and (key(design) + (False,)) in self.cache:   # quick ones passed
            insts = [i for i in insts if i.name in LAZY]
        for inst in sorted(insts, key=lambda i: (i.name in LAZY, self.cost[i.name])):
            t0 = time.perf_counter()
            r = check_instance(cfg, inst, self.props, self.limits)
            self.cost[inst.name] = max(self.cost[inst.name], r.stats.get("states", 0))
            bad = [v for v in r.verdicts if v.status is not Status.HOLDS]
            if self.progress:
                self.progress(design, inst.name, time.perf_counter() - t0)
            if bad:
                v = next((v for v in bad if v.status is Status.VIOLATED), bad[0])
                failure = Failure(inst.name, v.property, v.status, v.counterexample, v.reason)
                self.cache[k] = failure
                if v.status is Status.VIOLATED:
                    self.failures.append((dict(design), failure))
                return failure
        self.cache[k] = None
        return None


@dataclass
class Minimal:
    """A design that holds, none of whose departures can be turned back to naive."""

    design: dict
    needed: dict           # departed knob -> Failure with that knob turned back

    @property
    def departures(self) -> list[str]:
        return departures(self.design)


@dataclass
class Strengthening:
    """Environment promises that make a design hold, and that design's failure without them."""

    env: Environment
    promises: list          # [(name, value)]: assumption options / budgets set to 0
    design: Minimal         # minimal under the promises (`needed` empty if not minimized)
    without: Failure        # that design in the environment as documented


@dataclass
class Synthesis:
    env: str
    props: tuple
    instances: list          # names judged
    skipped: list            # (instance, why)
    minimal: list = field(default_factory=list)
    strengthening: list = field(default_factory=list)
    recommended: Optional[Failure] = None     # why recommended fails here (None: it holds)
    checked: int = 0
    pruned: int = 0
    seconds: float = 0.0
    complete: bool = True
    stop_reason: str = ""


def neighbours(design: dict) -> list[dict]:
    """Every design one knob-option away from `design`, in spec order, except the options
    the spec marks `not_searched` (see `unsearched`)."""
    out = []
    for k, knob in protocol().knobs.items():
        for option in knob.options:
            if option != design[k] and option not in knob.not_searched:
                out.append({**design, k: option})
    return out


def unsearched() -> list[tuple[str, str]]:
    """[("knob=option", why)] for the options `design` never proposes: safe in the model
    only because of something the model idealizes (spec/protocol.json `not_searched`)."""
    return [(f"{k}={o}", why) for k, knob in protocol().knobs.items()
            for o, why in knob.not_searched.items()]


def contains(design: dict, smaller: dict) -> bool:
    """Whether `design` makes every departure `smaller` makes (and so is not minimal)."""
    return all(design[k] == smaller[k] for k in departures(smaller))


class _Clock:
    def __init__(self, seconds: float):
        self.t0, self.seconds = time.perf_counter(), seconds

    def out(self) -> bool:
        return bool(self.seconds) and time.perf_counter() - self.t0 >= self.seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0


def minimize(oracle: Oracle, design: dict, clock: _Clock) -> Optional[Minimal]:
    """Turn departures back to naive while the design still holds (to a fixpoint)."""
    naive = preset_design("naive")
    changed = True
    while changed and not clock.out():
        changed = False
        for k in departures(design):
            trial = {**design, k: naive[k]}
            if oracle.check(trial) is None:
                design, changed = trial, True
    if clock.out():
        return None
    needed = {k: oracle.check({**design, k: naive[k]}) for k in departures(design)}
    return Minimal(design, needed)


def confirmed_minimal(oracle: Oracle, design: dict, clock: _Clock) -> Minimal:
    """`design` minimized on the quick instances and confirmed on all; minimized judging
    every instance if that confirmation fails; `design` itself (needed: unknown) if the
    clock runs out first."""
    m = minimize(oracle, design, clock)
    if m is not None and oracle.confirm(m.design) is None:
        return m
    full, oracle.full = oracle.full, True
    try:
        m = minimize(oracle, design, clock)
    finally:
        oracle.full = full
    return m if m is not None else Minimal(design, {})


def search_designs(oracle: Oracle, clock: _Clock, limit: int = 0) -> list[Minimal]:
    """Minimal designs reached from recommended and its neighbours (see module docstring):
    searched on the quick instances, each then confirmed on the LAZY ones; if one is not
    confirmed, the search is run again judging every instance throughout."""
    found = _search(oracle, clock, limit)
    if all(oracle.confirm(m.design) is None for m in found) or clock.out():
        return found
    oracle.full = True
    return _search(oracle, clock, limit)


def _search(oracle: Oracle, clock: _Clock, limit: int = 0) -> list[Minimal]:
    found: list[Minimal] = []
    for d in [preset_design("recommended")] + neighbours(preset_design("recommended")):
        if clock.out() or (limit and len(found) >= limit):
            break
        if any(contains(d, m.design) for m in found) or oracle.check(d) is not None:
            continue
        m = minimize(oracle, d, clock)
        if m is not None and all(key(m.design) != key(f.design) for f in found):
            found.append(m)
    return sorted(found, key=lambda m: (len(m.departures), key(m.design)))


def environment_departures(env: str) -> list[tuple[str, object, object]]:
    """(name, the profile's value, the ideal value) for each way the profile is harsher."""
    p = profile(env)
    out = []
    for a, spec in protocol().assumptions.items():
        if p.assumptions.get(a, spec["default"]) != spec["default"]:
            out.append((a, p.assumptions[a], spec["default"]))
    out += [(f, n, 0) for f, n in p.budgets.items() if f in ENV_FAULTS and n]
    return out


def strengthen(env: str, instances, props, limits, clock: _Clock, max_size: int = 3,
               progress=None, counts: Optional[dict] = None) -> list[Strengthening]:
    """The smallest sets of environment promises under which recommended or a neighbour
    holds; empty if none up to `max_size` promises (or the clock ran out)."""
    base = Oracle(Environment(env), instances, props, limits, progress, counts)
    options = environment_departures(env)
    for size in range(1, min(max_size, len(options)) + 1):
        found = []
        for combo in itertools.combinations(options, size):
            if clock.out():
                return found
            e = Environment(env, {n: ideal for n, _, ideal in combo if n not in ENV_FAULTS},
                            tuple(n for n, _, _ in combo if n in ENV_FAULTS))
            oracle = Oracle(e, instances, props, limits, progress, counts)
            for d in [preset_design("recommended")] + neighbours(preset_design("recommended")):
                if clock.out():
                    break
                if oracle.check(d) is None and oracle.confirm(d) is None:
                    m = confirmed_minimal(oracle, d, clock)
                    promises = [(n, ideal) for n, _, ideal in combo]
                    found.append(Strengthening(e, promises, m, base.confirm(m.design)))
                    break
        if found:
            return found
    return []


def applicable(env: Environment, insts: Sequence[Instance]) -> tuple[list[Instance], list]:
    """Instances whose fixed assumptions the environment does not contradict (a failure class
    such as provider_non_idempotent does not apply to a provider documented, or promised,
    idempotent); `ideal` contradicts none."""
    fixed = {**profile(env.name).assumptions, **env.overrides}
    keep, skipped = [], []
    for i in insts:
        clash = [(a, v) for a, v in i.assumptions.items() if a in fixed and fixed[a] != v]
        if clash:
            a, v = clash[0]
            skipped.append((i.name, f"it fixes {a}={v}; the environment has {a}={fixed[a]}"))
        else:
            keep.append(i)
    return keep, skipped


def synthesize(env: str, instance_names: Sequence[str], props: Optional[Sequence[str]] = None,
               limits: Limits = Limits(), seconds: float = 0.0, progress=None) -> Synthesis:
    """Minimal designs for environment `env` on the named instances, or the environment
    promises that would make one hold."""
    props = names(props or DEFAULT_PROPS)
    for p in props:
        if prop(p).kind in ("adversary", "hyper"):
            from toolcommit.model.errors import UsageError
            raise UsageError(f"design judges properties of one model at a time; {p} is "
                             f"{prop(p).kind}: check a design it finds with toolcommit check")
    clock = _Clock(seconds)
    insts = [instance(n) for n in instance_names]
    counts = {"checked": 0, "pruned": 0}
    oracle = Oracle(Environment(env), insts, props, limits, progress, counts)
    out = Synthesis(env, tuple(props), [i.name for i in oracle.instances], oracle.skipped)
    out.recommended = oracle.confirm(preset_design("recommended"))
    out.minimal = search_designs(oracle, clock)
    if not out.minimal and not clock.out():
        out.strengthening = strengthen(env, insts, props, limits, clock, progress=progress,
                                       counts=counts)
    out.checked, out.pruned = counts["checked"], counts["pruned"]
    out.seconds = clock.elapsed()
    if clock.out():
        out.complete, out.stop_reason = False, f"time limit {seconds:g}s reached"
    return out
