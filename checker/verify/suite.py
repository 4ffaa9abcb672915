"""Check one config over a list of instances (the failure-class suite by default).

Pure: returns a `SuiteResult` of typed verdicts; printing and files are the CLI's job.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping, Optional

from toolcommit.checker.engines.base import Engine, Limits, Tick, state_predicates_only, within
from toolcommit.checker.engines.explicit.engine import Explicit
from toolcommit.checker.engines.verdict import Status, Verdict, overall
from toolcommit.checker.verify.check import InstanceResult, check_instance
from toolcommit.checker.verify.hyper import check_p5
from toolcommit.model.environment import instance_in
from toolcommit.model.instance import Instance, failure_classes, instance, stress_instances
from toolcommit.model.knobs import Config
from toolcommit.model.properties import default_names, names, prop
from toolcommit.spec import protocol


def suite_names() -> list[str]:
    """The default instance plus one instance per failure class, in spec order."""
    return ["default"] + failure_classes()


def design_names() -> list[str]:
    """What `design` judges a candidate on by default: the suite, then the stress
    instances (every fault of the profile combined with delays, lease expiry and SDK
    retries), so no design is called minimal on faults met one at a time only."""
    return suite_names() + stress_instances()


@dataclass(frozen=True)
class Breach:
    """The first violation seen once an assumption is weakened: why a design relies on it."""

    instance: str
    property: str
    steps: int


@dataclass
class SuiteResult:
    config: Config
    results: list  # InstanceResult per instance
    p5: Optional[Verdict] = None
    props: tuple = ()
    reliance: Optional[Mapping[str, Optional[Breach]]] = (
        None  # see `reliance`; None when not computed
    )
    engine: str = "explicit"
    claim: str = ""  # what was judged, when it is a design file's claim (see `outside`)
    outside: Optional["SuiteResult"] = None  # verdicts outside that claim (`--all`): shown,
    #                                           never part of `status`

    def verdicts(self) -> list[Verdict]:
        out = [v for r in self.results for v in r.verdicts]
        return out + ([self.p5] if self.p5 else [])

    @property
    def assumes(self) -> list[str]:
        """The timing orders any instance's model used, each once."""
        return list(dict.fromkeys(a for r in self.results for a in getattr(r, "assumes", ())))

    def guarantee(self) -> Optional[str]:
        """The strongest guarantee (spec `guarantees`) whose properties were all judged and
        hold on every instance; None if none."""
        from toolcommit.spec import protocol

        status = {}
        for r in self.results:
            for v in r.verdicts:
                status[v.property] = status.get(v.property, True) and v.status is Status.HOLDS
        for g, raw in protocol().raw["guarantees"].items():
            if g != "about" and all(status.get(p) for p in raw["requires"]):
                return g
        return None

    @property
    def status(self) -> Status:
        return overall(self.verdicts())


def engine_props(engine: Engine, requested) -> tuple[str, ...]:
    """The properties to judge: `requested` (checked), or by default every one `engine`
    can judge, with the adversary and hyper ones where the engine can carry them."""
    if requested:
        wanted = names(requested)
        if not isinstance(engine, Explicit):
            state_predicates_only(engine.name, [p for p in wanted if prop(p).kind != "adversary"])
        return wanted
    if isinstance(engine, Explicit):
        return default_names()
    return tuple(p for p in default_names() if engine.judges(p))


def run_suite(
    config: Config,
    instances: list[Instance],
    props=None,
    limits: Limits = Limits(),
    progress: Optional[Callable] = None,
    engine: Engine = Explicit(),
    deadline: float = 0.0,
) -> SuiteResult:
    """Judge `props` on every instance with `engine`; hyper properties (P5) once, since
    they compare models rather than judge one (explicit engine only). `deadline` (a
    `time.monotonic()` instant; 0: none) bounds the whole suite: each search's timeout is
    cut to the time left (`engines.base.within`)."""
    props = engine_props(engine, props)
    results: list[InstanceResult] = []
    for i, inst in enumerate(instances, 1):
        tick = (
            (lambda t, name=inst.name: progress(replace(t, phase=_phase(name, t))))
            if progress
            else None
        )
        results.append(check_instance(config, inst, props, within(limits, deadline), tick, engine))
        if progress:  # an instance done: a suite of quick instances shows progress too
            s = results[-1].stats
            progress(
                Tick(
                    f"{inst.name}, {i} of {len(instances)} done",
                    _int(s.get("states")),
                    _int(s.get("depth")),
                    float(s.get("seconds") or 0.0),
                )
            )
    p5 = None
    if "P5" in props and isinstance(engine, Explicit):
        tick = (lambda t: progress(replace(t, phase="P5"))) if progress else None
        p5 = check_p5(config, within(limits, deadline), tick, engine=engine)
    return SuiteResult(config, results, p5, tuple(props), engine=engine.name)


def outside_claim(suite: SuiteResult, props, instance_names) -> SuiteResult:
    """`suite` without the verdicts of the claim (`props` on `instance_names`): what it
    judged beyond it. P5 is outside unless claimed."""
    claimed = set(props)
    results = []
    for r in suite.results:
        kept = [
            v
            for v in r.verdicts
            if not (v.property in claimed and r.instance.name in instance_names)
        ]
        if kept:
            results.append(replace(r, verdicts=kept))
    p5 = suite.p5 if "P5" not in claimed else None
    return replace(
        suite,
        results=results,
        p5=p5,
        props=tuple(
            p
            for p in suite.props
            if any(p == v.property for r in results for v in r.verdicts) or p == "P5" and p5
        ),
    )


def _phase(name: str, t: Tick) -> str:
    """A tick's label: the instance, and which of its searches (P4's) if not the main one."""
    return name if t.phase == "bfs" else f"{name}, {t.phase}"


def _int(value) -> int:
    return value if isinstance(value, int) else 0


def resolve_instances(
    names_: Optional[list[str]], bounds: dict, env: str = "ideal"
) -> list[Instance]:
    """The named instances (default: the suite) in environment `env`, then `bounds`."""
    return [
        instance_in(instance(n), env).with_bounds(bounds)
        for n in dict.fromkeys(names_ or suite_names())
    ]


def reliance(
    config: Config,
    instances: list[Instance],
    props=None,
    engine: Engine = Explicit(),
    step: Optional[Callable[[str], None]] = None,
) -> dict[str, Optional[Breach]]:
    """For each environment assumption: the first violation seen when it is weakened
    (checked by `engine`); `step`, if given, is told before each check what it weakens
    ("provider_fences=no on default, assumption 2 of 5").

    Returns {assumption: None | Breach}: None means the verdicts do not depend on it (on
    these instances); otherwise the counterexample that shows why the design relies on it.
    """
    asked = [p for p in names(props) if prop(p).kind != "hyper"]
    props = [p for p in asked if prop(p).kind != "adversary"] or asked
    if not props:
        return {}
    out = {}
    every = protocol().assumptions
    for n, (name, spec) in enumerate(every.items(), 1):
        current = config.assumptions[name]
        found = None
        for option in spec["options"]:
            if option == current:
                continue
            weaker = config.with_knobs({name: option})
            for inst in instances:
                if name in inst.assumptions:
                    continue
                if step is not None:
                    step(f"{name}={option} on {inst.name}, assumption {n} of {len(every)}")
                r = check_instance(weaker, inst, props, engine=engine)
                bad = [v for v in r.verdicts if v.status is Status.VIOLATED]
                if bad:
                    found = Breach(inst.name, bad[0].property, bad[0].counterexample.length)
                    break
            if found:
                break
        out[name] = found
    return out
