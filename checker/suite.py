"""Check one config over a list of instances (the failure-class suite by default).

Pure: returns a `SuiteResult` of typed verdicts; printing and files are the CLI's job.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from toolcommit.model.instance import Instance, failure_classes, instance
from toolcommit.model.knobs import Config

from .check import ALL, InstanceResult, Limits, check_instance, check_p5
from .verdict import Status, Verdict, overall


def suite_names() -> list[str]:
    """The default instance plus one instance per failure class, in spec order."""
    return ["default"] + failure_classes()


@dataclass
class SuiteResult:
    config: Config
    results: list          # InstanceResult per instance
    p5: Optional[Verdict] = None
    props: tuple = ALL
    notes: list = field(default_factory=list)

    def verdicts(self) -> list[Verdict]:
        out = [v for r in self.results for v in r.verdicts]
        return out + ([self.p5] if self.p5 else [])

    @property
    def status(self) -> Status:
        return overall(self.verdicts())


def run_suite(config: Config, instances: list[Instance], props=ALL, limits: Limits = Limits(),
              progress: Optional[Callable] = None) -> SuiteResult:
    """Judge `props` on every instance; P5 once (it compares model personalities)."""
    results: list[InstanceResult] = []
    for inst in instances:
        tick = (lambda info, name=inst.name: progress(name, info)) if progress else None
        results.append(check_instance(config, inst, props, limits, tick))
    p5 = None
    if "P5" in props:
        tick = (lambda info: progress("P5", info)) if progress else None
        p5 = check_p5(config, limits, tick)
    return SuiteResult(config, results, p5, tuple(props))


def resolve_instances(names: Optional[list[str]], bounds: dict) -> list[Instance]:
    return [instance(n).with_bounds(bounds) for n in (names or suite_names())]


def reliance(config: Config, instances: list[Instance], props=ALL) -> dict:
    """For each environment assumption: the first violation seen when it is weakened.

    Returns {assumption: None | (instance, property, steps)}: None means the verdicts do
    not depend on it (on these instances); otherwise the counterexample that shows why
    the design relies on it.
    """
    from toolcommit.spec import protocol
    out = {}
    for name, spec in protocol().assumptions.items():
        current = config.assumptions[name]
        found = None
        for option in spec["options"]:
            if option == current:
                continue
            weaker = config.with_knobs({name: option})
            for inst in instances:
                if name in inst.assumptions:
                    continue
                r = check_instance(weaker, inst, [p for p in props if p != "P4"])
                bad = [v for v in r.verdicts if v.status is Status.VIOLATED]
                if bad:
                    found = (inst.name, bad[0].property, bad[0].counterexample.length)
                    break
            if found:
                break
        out[name] = found
    return out
