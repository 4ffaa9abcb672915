"""Check one config over a list of instances (the failure-class suite by default).

Pure: returns a `SuiteResult` of typed verdicts; printing and files are the CLI's job.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from toolcommit.model.instance import Instance, failure_classes, instance
from toolcommit.model.knobs import Config

from toolcommit.checker.verify.check import ALL, InstanceResult, Limits, check_instance, check_p5
from toolcommit.checker.engines.verdict import Status, Verdict, overall


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
    engine: str = "explicit"

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


@dataclass
class Engine:
    """Which engine judges the instances, with its own bounds."""

    name: str = "explicit"
    depth: int = 15          # smt: unrolling depth
    runs: int = 1000         # random: runs, seed and steps per run
    seed: int = 0
    max_steps: int = 60


def run_symbolic(config: Config, instances: list[Instance], props, engine: Engine,
                 limits: Limits = Limits(), progress: Optional[Callable] = None) -> SuiteResult:
    """Judge the invariants in `props` with the SMT (bounded) or the random engine."""
    from toolcommit.model.errors import UsageError
    from toolcommit.model.semantics import build
    from toolcommit.checker.verify.check import INVARIANTS
    wanted = [p for p in props if p in INVARIANTS]
    if not wanted:
        raise UsageError(f"the {engine.name} engine judges invariants only "
                         f"({', '.join(INVARIANTS)}); use --engine explicit for the others")
    results = []
    for inst in instances:
        system = build(config, inst)
        if engine.name == "smt":
            from toolcommit.checker.engines.smt.bmc import check as bmc_check
            tick = (lambda d, sec, n=inst.name: progress(n, {"states": 0, "depth": d, "seconds": sec})) \
                if progress else None
            verdicts = bmc_check(system, wanted, engine.depth, limits.timeout, tick)
            stats = {"states": "-", "depth": engine.depth}
        else:
            from toolcommit.checker.engines.simulate import check as sim_check
            verdicts, sim = sim_check(system, wanted, engine.runs, engine.seed, engine.max_steps)
            stats = {"states": "-", "depth": engine.max_steps, "runs": sim.get("runs"),
                     "steps": sim.get("steps"), "faults": sim.get("faults")}
        results.append(InstanceResult(inst, config, verdicts, stats))
    return SuiteResult(config, results, None, tuple(wanted), engine=engine.name)


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
