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

Guarantees. Asked for no properties, the search runs once per guarantee of the spec
(`guarantees`: exactly-once, then at-most-once with a visible give-up, then at-least-once),
strongest first, and stops at the first that a design keeps; each level that no design
keeps says why: the weakest environment promises that would make one hold, each marked
when no provider of the profile's kind can make it (`Behaviour.inherent`); such a promise
explains an impossibility and is never offered as the way out. Asked for properties, it
runs once, for them.

A design is one option per knob and the design's timing (`replay_window`): the window
departs from naive like a knob, and turning it back to unbounded shows the counterexample
that needs it.

Limits: `limits` bound each instance's search and `seconds` the whole search. A candidate
judged UNKNOWN holds nothing and refutes nothing: a search that met one, or ran out of
time, never says "no design holds" and never reports a design it did not confirm on every
instance; it says UNKNOWN with what it did confirm.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from toolcommit.checker.engines.base import Limits
from toolcommit.checker.engines.explicit.engine import Explicit
from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance
from toolcommit.model import timing
from toolcommit.model.design import (
    DESIGN_TIMING,
    departures,
    guarantee_of,
    guarantees,
    knob_names,
    options_of,
    preset_design,
)
from toolcommit.model.environment import configure, instance_in, profile
from toolcommit.model.instance import Instance, instance
from toolcommit.model.knobs import preset
from toolcommit.model.properties import names, outcomes, prop
from toolcommit.model.values import ENV_FAULTS
from toolcommit.spec import protocol

from .cores import fork_map

# The outcome properties a design must keep by default: I1 (and what it implies), the
# user's cancel (P3), fulfilment. P2, LEGAL and FENCE judge the mechanism (the article's
# lifecycle and fencing), not the outcome; add them with `props`.
DEFAULT_PROPS = outcomes()

# The engine that judges candidates: many small searches, one shared native engine
SHARED = Explicit(shared=True)

# Instances judged only to confirm a design found on the others (the big combined one).
LAZY = ("default",)

# knob -> {weaker option: options whose every run it also runs} (see the module docstring)
# (an unbounded replay window runs every run of a bounded one: no send it forbids, no
# pruning it orders)
SUPERSETS = {
    "insert": {"check_then_insert": ("atomic",)},
    "dispatch_guard": {"memory": ("log_cas",)},
    "reaccept": {"overwrite": ("reject",)},
    "late_replay": {"replay_same_key": ("reject",), "compensate": ("reject",)},
    "replay_window": {"unbounded": ("1h",)},
}


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
    cut: str = ""  # UNKNOWN because the model's own bound cut the graph ("fence bound"),
    #                     not a limit the user set: open, whatever the limits

    @property
    def steps(self) -> int:
        return self.counterexample.length if self.counterexample is not None else 0


@dataclass
class Environment:
    """A profile, possibly strengthened: assumption overrides and zeroed budgets."""

    name: str
    overrides: dict = field(default_factory=dict)  # assumption -> option
    zeroed: tuple = ()  # budgets set to 0

    def label(self) -> str:
        extra = [f"{a}={v}" for a, v in self.overrides.items()] + [f"{f}=0" for f in self.zeroed]
        return self.name + (f" with {', '.join(extra)}" if extra else "")


class Oracle:
    """Judges designs in one environment on a list of instances; caches and prunes."""

    def __init__(
        self,
        env: Environment,
        instances: Sequence[Instance],
        props: Sequence[str],
        limits: Limits = Limits(),
        progress: Optional[Callable] = None,
        counts: Optional[dict] = None,
    ):
        self.env, self.props, self.limits, self.progress = env, tuple(props), limits, progress
        zero = {f: 0 for f in env.zeroed}
        kept, self.skipped = applicable(env, instances)
        self.instances = [instance_in(i, env.name).with_bounds(zero) for i in kept]
        self.cost = {i.name: 0 for i in self.instances}
        self.cache: dict[tuple, Optional[Failure]] = {}
        self.full = False  # quick mode leaves the LAZY instances to `confirm`
        self.failures: list[tuple[dict, Failure]] = []
        self.counts = counts if counts is not None else {"checked": 0, "pruned": 0}
        self.counts.setdefault("unknown", 0)
        self.counts.setdefault("open", 0)

    def config(self, design: dict):
        """naive plus the design's departures (so the label replays), in the environment."""
        changes = {k: design[k] for k in departures(design)}
        return configure(preset("naive"), self.env.name).with_knobs(
            {**changes, **self.env.overrides}
        )

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
        if self.full and quick is not None:  # failed on a quick instance already
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
        if self.full and (key(design) + (False,)) in self.cache:  # quick ones passed
            insts = [i for i in insts if i.name in LAZY]
        for inst in sorted(insts, key=lambda i: (i.name in LAZY, self.cost[i.name])):
            t0 = time.perf_counter()
            r = check_instance(cfg, inst, self.props, self.limits, engine=SHARED)
            self.cost[inst.name] = max(self.cost[inst.name], r.stats.get("states", 0))
            bad = [v for v in r.verdicts if v.status is not Status.HOLDS]
            if self.progress:
                self.progress(design, inst.name, time.perf_counter() - t0)
            if bad:
                v = next((v for v in bad if v.status is Status.VIOLATED), bad[0])
                failure = Failure(
                    inst.name,
                    v.property,
                    v.status,
                    v.counterexample,
                    v.reason,
                    v.extra.get("cut", ""),
                )
                self.cache[k] = failure
                if v.status is Status.VIOLATED:
                    self.failures.append((dict(design), failure))
                else:
                    self.counts["open" if failure.cut else "unknown"] += 1
                return failure
        self.cache[k] = None
        return None


@dataclass
class Minimal:
    """A design that holds on every instance, none of whose departures can be turned back
    to naive: `needed` has, per departure, the failure with it turned back (an UNKNOWN one:
    that departure's need is unconfirmed, the design kept it to be safe)."""

    design: dict
    needed: dict  # departed knob -> Failure with that knob turned back

    @property
    def departures(self) -> list[str]:
        return departures(self.design)

    @property
    def unconfirmed(self) -> list[str]:
        """Departures whose turn-back was UNKNOWN, not refuted."""
        return [k for k, f in self.needed.items() if f is None or f.status is not Status.VIOLATED]


@dataclass
class Strengthening:
    """Environment promises that make a design hold, and that design's failure without them;
    `inherent` has, per promise no provider of the profile's kind can make, why not."""

    env: Environment
    promises: list  # [(name, value)]: assumption options / budgets set to 0
    design: Minimal  # minimal under the promises (`needed` empty if not minimized)
    without: Failure  # that design in the environment as documented
    inherent: dict = field(default_factory=dict)

    @property
    def offered(self) -> bool:
        """A way out a provider of this kind could take: no inherent promise in it."""
        return not self.inherent


@dataclass
class Level:
    """The search for one guarantee (or the properties asked for)."""

    guarantee: Optional[str]
    props: tuple
    recommended: Optional[Failure] = None  # why recommended fails (None: it holds)
    minimal: list = field(default_factory=list)
    strengthening: list = field(default_factory=list)  # offered ways out, then the why
    complete: bool = True
    stop_reason: str = ""
    unknown: int = 0  # designs judged UNKNOWN because a limit the user set cut them
    open: int = 0  # designs judged UNKNOWN because the fence bound cut their graph
    #                           (a retry loop: no bound settles it); neither held nor refuted

    @property
    def status(self) -> Status:
        """HOLDS: a confirmed design; VIOLATED: the search was whole and no design was
        confirmed (some may be `open`: cut by the fence bound, neither held nor refuted);
        UNKNOWN: a limit the user set leaves it open."""
        if self.minimal:
            return Status.HOLDS
        return Status.VIOLATED if self.complete and not self.unknown else Status.UNKNOWN


def preferred(level: "Level") -> Optional[Minimal]:
    """The design to build first: the first minimal design (fewest departures) that needs
    no human at the gate (the approval gate is a staffing choice, not a default), else the
    first."""
    for m in level.minimal:
        if m.design.get("on_unknown") != "human_approval":
            return m
    return level.minimal[0] if level.minimal else None


@dataclass
class Synthesis:
    env: str
    instances: list  # names judged
    skipped: list  # (instance, why)
    levels: list = field(default_factory=list)
    checked: int = 0
    pruned: int = 0
    seconds: float = 0.0
    given: dict = field(default_factory=dict)  # the environment settings --set changed

    @property
    def chosen(self) -> Optional[Level]:
        """The first level a design keeps, or the last one searched."""
        return next(
            (lv for lv in self.levels if lv.minimal), self.levels[-1] if self.levels else None
        )

    @property
    def status(self) -> Status:
        return self.chosen.status if self.chosen else Status.UNKNOWN

    # the chosen level's fields, for readers of one level
    @property
    def props(self) -> tuple:
        return self.chosen.props

    @property
    def minimal(self) -> list:
        return self.chosen.minimal

    @property
    def strengthening(self) -> list:
        return self.chosen.strengthening

    @property
    def recommended(self) -> Optional[Failure]:
        return self.chosen.recommended

    @property
    def complete(self) -> bool:
        return all(lv.complete for lv in self.levels)

    @property
    def stop_reason(self) -> str:
        return next((lv.stop_reason for lv in self.levels if lv.stop_reason), "")


def neighbours(design: dict) -> list[dict]:
    """Every design one knob-option away from `design`, in spec order, except the options
    the spec marks `not_searched` (see `unsearched`)."""
    out = []
    for k in knob_names():
        unsearched_ = protocol().knobs[k].not_searched if k in protocol().knobs else {}
        for option in options_of(k):
            if option != design[k] and option not in unsearched_:
                out.append({**design, k: option})
    return out


def unsearched() -> list[tuple[str, str]]:
    """[("knob=option", why)] for the options `design` never proposes: safe in the model
    only because of something the model idealizes (spec/protocol.json `not_searched`)."""
    return [
        (f"{k}={o}", why)
        for k, knob in protocol().knobs.items()
        for o, why in knob.not_searched.items()
    ]


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


def confirmed_minimal(oracle: Oracle, design: dict, clock: _Clock) -> Optional[Minimal]:
    """`design` (which holds on every instance) minimized on the quick instances and
    confirmed on all; minimized judging every instance if that confirmation fails; None if
    the clock runs out first (nothing unconfirmed is returned)."""
    m = minimize(oracle, design, clock)
    if m is not None and oracle.confirm(m.design) is None:
        return m
    full, oracle.full = oracle.full, True
    try:
        m = minimize(oracle, design, clock)
    finally:
        oracle.full = full
    return m


def search_designs(oracle: Oracle, clock: _Clock, limit: int = 0) -> list[Minimal]:
    """Minimal designs reached from recommended and its neighbours (see module docstring):
    searched on the quick instances, each then confirmed on the LAZY ones; if one is not
    confirmed, the search is run again judging every instance throughout. Only designs
    confirmed on every instance are returned."""
    found = _search(oracle, clock, limit)
    if not all(oracle.confirm(m.design) is None for m in found) and not clock.out():
        oracle.full = True
        found = _search(oracle, clock, limit)
    return [m for m in found if oracle.confirm(m.design) is None]


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
    rec = preset_design("recommended")
    # fewest departures first; among equals, the one closest to recommended (a human gate
    # or a blind retry is not preferred to reconcile for sorting first by name)
    return sorted(
        found,
        key=lambda m: (
            len(m.departures),
            sum(m.design[k] != rec[k] for k in knob_names()),
            key(m.design),
        ),
    )


def environment_departures(env: str) -> list[tuple[str, object, object]]:
    """(name, the profile's value, the ideal value) for each way the profile is harsher."""
    p = profile(env)
    out = []
    for a, spec in protocol().assumptions.items():
        if p.assumptions.get(a, spec["default"]) != spec["default"]:
            out.append((a, p.assumptions[a], spec["default"]))
    out += [(f, n, 0) for f, n in p.budgets.items() if f in ENV_FAULTS and n]
    return out


def strengthen(
    env: str,
    instances,
    props,
    limits,
    clock: _Clock,
    max_size: int = 3,
    progress=None,
    counts: Optional[dict] = None,
    promisable: bool = True,
    given: Optional[dict] = None,
) -> list[Strengthening]:
    """The smallest sets of environment promises under which recommended or a neighbour
    holds; empty if none up to `max_size` promises (or the clock ran out). With
    `promisable`, only promises a provider of the profile's kind could make are tried (the
    ways out); without, every departure (to say why a guarantee is out of reach), each set
    marking its inherent promises."""
    given = dict(given or {})
    counts = counts if counts is not None else {"checked": 0, "pruned": 0}
    base = Oracle(Environment(env, given), instances, props, limits, progress, counts)
    p = profile(env)
    options = [o for o in environment_departures(env) if not (promisable and p.inherent(o[0]))]
    for size in range(1, min(max_size, len(options)) + 1):
        found = []
        combos = list(itertools.combinations(options, size))
        jobs = [(env, given, combo, instances, props, limits, clock) for combo in combos]
        for combo, (m, tally, late) in zip(combos, fork_map(_strengthened, jobs)):
            for k, n in tally.items():
                counts[k] = counts.get(k, 0) + n
            if late:
                return found
            if m is not None:
                promises = [(n, ideal) for n, _, ideal in combo]
                inherent = {n: p.inherent(n) for n, _ in promises if p.inherent(n)}
                found.append(
                    Strengthening(
                        _promised(env, given, combo), promises, m, base.confirm(m.design), inherent
                    )
                )
        if found:
            return found
    return []


def _promised(env: str, given: dict, combo) -> Environment:
    """The environment `env` (with `given`) plus the promises of `combo`."""
    return Environment(
        env,
        {**given, **{n: ideal for n, _, ideal in combo if n not in ENV_FAULTS}},
        tuple(n for n, _, _ in combo if n in ENV_FAULTS),
    )


def _strengthened(job: tuple) -> tuple[Optional[Minimal], dict, bool]:
    """One set of promises (`strengthen`'s inner search, a piece for `cores.fork_map`):
    the minimal design recommended or a neighbour gives under them (None: none holds),
    the oracle's counts, and whether the clock ran out before it began."""
    env, given, combo, instances, props, limits, clock = job
    tally: dict = {"checked": 0, "pruned": 0, "unknown": 0, "open": 0}
    if clock.out():
        return None, tally, True
    oracle = Oracle(_promised(env, given, combo), instances, props, limits, None, tally)
    for d in [preset_design("recommended")] + neighbours(preset_design("recommended")):
        if clock.out():
            break
        if oracle.check(d) is None and oracle.confirm(d) is None:
            return confirmed_minimal(oracle, d, clock), tally, False
    return None, tally, False


def search_level(
    env: str,
    insts,
    guarantee: Optional[str],
    props,
    limits,
    clock: _Clock,
    progress,
    counts: dict,
    given: Optional[dict] = None,
) -> Level:
    """One level of the search: its minimal designs, or why there are none."""
    oracle = Oracle(Environment(env, dict(given or {})), insts, props, limits, progress, counts)
    unknown0, open0 = counts["unknown"], counts["open"]
    level = Level(guarantee, tuple(props))
    level.recommended = oracle.confirm(preset_design("recommended"))
    level.minimal = search_designs(oracle, clock)
    if not level.minimal and not clock.out() and counts["unknown"] == unknown0:
        level.strengthening = strengthen(
            env, insts, props, limits, clock, progress=progress, counts=counts, given=given
        )
        if not level.strengthening and not clock.out():
            level.strengthening = strengthen(
                env,
                insts,
                props,
                limits,
                clock,
                progress=progress,
                counts=counts,
                promisable=False,
                given=given,
            )
    level.unknown, level.open = counts["unknown"] - unknown0, counts["open"] - open0
    if clock.out():
        level.complete, level.stop_reason = False, f"time limit {clock.seconds:g}s reached"
    return level


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


def synthesize(
    env: str,
    instance_names: Sequence[str],
    props: Optional[Sequence[str]] = None,
    limits: Limits = Limits(),
    seconds: float = 0.0,
    progress=None,
    given: Optional[dict] = None,
) -> Synthesis:
    """Minimal designs for environment `env` on the named instances: for `props`, or else
    for the strongest guarantee a design keeps (module docstring), with why each stronger
    one is out of reach. `given` changes environment assumptions or timing (`--set`: what
    if the delay bound outlived the key?), never a knob: the knobs are what is searched."""
    given = dict(given or {})
    for k in given:
        if k in protocol().knobs or k in DESIGN_TIMING:
            from toolcommit.model.errors import UsageError

            raise UsageError(
                f"design --set {k}: {k} is the design's to choose, not the "
                "environment's; --set takes assumptions and environment timing "
                f"({', '.join(list(protocol().assumptions) + [t for t in timing.params() if t not in DESIGN_TIMING])})"
            )
    configure(preset("naive"), env).with_knobs(given)  # names and values checked here
    levels = [(guarantee_of(names(props)), names(props))] if props else guarantees()
    for _, ps in levels:
        for p in ps:
            if prop(p).kind in ("adversary", "hyper"):
                from toolcommit.model.errors import UsageError

                raise UsageError(
                    f"design judges properties of one model at a time; {p} is "
                    f"{prop(p).kind}: check a design it finds with toolcommit check"
                )
    clock = _Clock(seconds)
    insts = [instance(n) for n in instance_names]
    counts = {"checked": 0, "pruned": 0, "unknown": 0}
    kept, skipped = applicable(Environment(env, given), insts)
    out = Synthesis(env, [i.name for i in kept], skipped, given=given)
    for guarantee, ps in levels:
        level = search_level(env, insts, guarantee, ps, limits, clock, progress, counts, given)
        out.levels.append(level)
        if level.status is not Status.VIOLATED:  # a design, or an open question: stop
            break
    out.checked, out.pruned = counts["checked"], counts["pruned"]
    out.seconds = clock.elapsed()
    return out
