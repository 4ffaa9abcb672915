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
