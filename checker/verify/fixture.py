"""The article's fixture itself (`spec/fixture/tool_commit_sim.txt`, the article's lines
51-118 as printed): run as the article suggests, and its flaws shown on it and in the model.

The `seed` preset models the fixture branch for branch; what the model finds there is in
the checks. This module adds what only the fixture's own text can show:

- `run_fixture`: the article's acceptance run (every failure class it names, 2,000 seeds,
  effects <= 1). Its harness never uses its random generator, so every seed gives the same
  run; three of the five classes have no injector at all, and one (crash before dispatch)
  ends exactly as the uninjected run: the canary passes and says nothing about them;
- `flaws`: the fixture's own flaws that no seed instance shows, each with its article
  lines (`spec/fixture.json`), evidenced on the fixture's code (its `System`, called
  directly) and, where the model can reach it one knob away, by a replayed counterexample.

The text is our shipped data, checked against its recorded SHA-256, and executed in a
fresh namespace (it is stdlib-only and has no side effect but its return values).
"""

from __future__ import annotations

import hashlib
import json
import sys
import types
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Optional

from toolcommit.checker.engines.verdict import Status
from toolcommit.checker.verify.check import check_instance
from toolcommit.model.errors import InternalError
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.spec import instances as instances_spec


@lru_cache(maxsize=1)
def manifest() -> dict:
    return json.loads(
        resources.files("toolcommit.spec").joinpath("fixture.json").read_text("utf-8")
    )


@lru_cache(maxsize=1)
def fixture_text() -> str:
    """The fixture's text, checked against the SHA-256 `spec/fixture.json` records."""
    src = manifest()["source"]
    text = resources.files("toolcommit.spec").joinpath(src["file"]).read_text("utf-8")
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != src["sha256"]:
        raise InternalError(f"spec/{src['file']} is not the article's text (its SHA-256 changed)")
    return text


def load() -> dict:
    """The fixture's module namespace, fresh (its `__main__` block does not run). It is
    registered in `sys.modules` only while it executes (its dataclasses look it up)."""
    name = "toolcommit_fixture_tool_commit_sim"
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        exec(compile(fixture_text(), "tool_commit_sim.py", "exec"), module.__dict__)
    finally:
        del sys.modules[name]
    return module.__dict__


def article_classes() -> list[str]:
    """The instance names of the failure classes the article's table names (its inject values)."""
    wanted = manifest()["suggests"]["classes"]
    by_class = {raw.get("class"): name for name, raw in instances_spec()["instances"].items()}
    return [by_class[c] for c in wanted]


@dataclass(frozen=True)
class Injection:
    """One inject value run over every seed."""

    name: str
    runs: int
    distinct: int  # distinct results over the seeds, the seed field left out
    same_as_none: bool  # every run equals the uninjected run of its seed
    injector: bool  # the fixture's code tests for this inject value at all
    max_effects: int
    violations: int  # runs with more than one effect (the article's acceptance rule)


@dataclass(frozen=True)
class FixtureRun:
    seeds: int
    injections: tuple[Injection, ...]

    @property
    def seed_blind(self) -> bool:
        """Every seed gives the same run, for every inject value."""
        return all(i.distinct == 1 for i in self.injections)

    @property
    def no_injector(self) -> list[str]:
        """Classes the article names whose inject value its code never tests."""
        return [i.name for i in self.injections if i.name != "none" and not i.injector]

    @property
    def unobservable(self) -> list[str]:
        """Classes injected, but whose every run equals the uninjected one: the canary
        cannot tell them apart."""
        return [
            i.name for i in self.injections if i.name != "none" and i.injector and i.same_as_none
        ]

    @property
    def violations(self) -> int:
        return sum(i.violations for i in self.injections)


def run_fixture(seeds: Optional[int] = None) -> FixtureRun:
    """The article's suggested run: `run(seed, inject)` for every seed and class."""
    seeds = seeds or manifest()["suggests"]["seeds"]
    run = load()["run"]

    def strip(r):
        return json.dumps(
            {k: v for k, v in r.items() if k not in ("seed", "inject")}, sort_keys=True
        )

    none = [strip(run(s, "none")) for s in range(seeds)]
    out = []
    for name in article_classes() + ["none"]:
        results = [run(s, name) for s in range(seeds)]
        shapes = [strip(r) for r in results]
        effects = [r["effects"] for r in results]
        out.append(
            Injection(
                name,
                seeds,
                len(set(shapes)),
                shapes == none,
                f'inject=="{name}"' in fixture_text(),
                max(effects),
                sum(e > 1 for e in effects),
            )
        )
    return FixtureRun(seeds, tuple(out))


@dataclass(frozen=True)
class Flaw:
    """A flaw of the fixture's code, its article lines, and the evidence computed for it."""

    name: str
    lines: tuple[int, ...]
    what: str
    evidence: str
    counterexample: object = None


def _duplicate_leaves_the_record(ns: dict) -> str:
    """Line 82 on the fixture: every state of the duplicate set is left as it was."""
    S, System = ns["S"], ns["System"]
    kept = []
    for st in (S.RECORDED, S.DISPATCHED, S.ACKED, S.UNKNOWN, S.RECONCILING):
        sys_ = System()
        rec, _ = sys_.propose("m1", "refund", {"amount": 20}, "user:42:checkout:7")
        rec.state = st
        again, ok = sys_.propose("m2", "refund", {"amount": 20}, "user:42:checkout:7")
        if ok or again.state is not st:
            raise InternalError(
                f"the fixture's duplicate branch changed {st.name}: not the text modelled"
            )
        kept.append(st.name)
    return (
        f"on the fixture: a duplicate proposal met a record in each of {', '.join(kept)} and "
        "left it so, never REJ_DUP; the seed model's duplicate decision writes no record state"
    )


def _given_up_is_overwritten(ns: dict) -> str:
    """Lines 81/84 on the fixture: a COMPENSATED or DEAD record is replaced and accepted."""
    S, System = ns["S"], ns["System"]
    shown = []
    for st in (S.COMPENSATED, S.DEAD, S.REJ_CONFLICT):
        sys_ = System()
        rec, _ = sys_.propose("m1", "refund", {"amount": 20}, "user:42:checkout:7")
        rec.state = st
        again, ok = sys_.propose("m2", "refund", {"amount": 20}, "user:42:checkout:7")
        if not ok or again is rec or again.state is not S.RECORDED:
            raise InternalError(f"the fixture kept a {st.name} record: not the text modelled")
        shown.append(st.name)
    return f"on the fixture: a proposal meeting a {' / '.join(shown)} record got a new RECORDED one (ok=True)"


def flaws() -> list[Flaw]:
    """The fixture's flaws of `spec/fixture.json`, each with computed evidence."""
    ns = load()
    out = []
    for raw in manifest()["flaws"]:
        lines, shown = tuple(raw["lines"]), raw["shown_by"]
        if "no_write" in shown:
            out.append(Flaw(raw["name"], lines, raw["what"], _duplicate_leaves_the_record(ns)))
            continue
        evidence = _given_up_is_overwritten(ns)
        cfg = preset("seed").with_knobs(shown["set"])
        v = check_instance(cfg, instance(shown["instance"]), [shown["property"]]).verdicts[0]
        want = shown["step"]
        hit = v.counterexample is not None and any(
            s.action == want["action"] and s.params.get("decision") == want["decision"]
            for s in v.counterexample.steps
        )
        if v.status is not Status.VIOLATED or not hit:
            raise InternalError(
                f"fixture flaw {raw['name']}: {cfg.label()} on {shown['instance']} "
                f"no longer shows it ({v.status.value})"
            )
        evidence += (
            f"; in the model one knob away ({cfg.label()}, instance {shown['instance']}): "
            f"{shown['property']} in {v.counterexample.length} steps"
        )
        out.append(Flaw(raw["name"], lines, raw["what"], evidence, v.counterexample))
    return out
