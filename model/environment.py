"""Environment profiles (`spec/environments.json`): what a real provider does, resolved into
environment assumptions and fault budgets.

A profile is a list of behaviours; each sets assumptions (`provider_idempotent`, ...) or
fault budgets (`key_expiries`, ...) and names the public document it rests on. `configure`
puts a profile's assumptions into a `Config` (its `env` names the profile, so labels and
counterexamples say which environment they hold in); `instance_in` adds its budgets to an
instance. `ideal` sets nothing: the defaults of `spec/protocol.json` and each instance's
own budgets, exactly as before profiles existed.

Examples
--------
>>> p = profile("stripe")
>>> p.assumptions["provider_fences"], p.budgets["key_expiries"]
('no', 1)
>>> profile("ideal").assumptions, profile("ideal").budgets
({}, {})
>>> profile("paypal")
Traceback (most recent call last):
...
toolcommit.model.errors.UsageError: unknown environment 'paypal'; valid environments: ideal, stripe, email, fenced-store, async-log
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Mapping, Optional

from toolcommit.spec import environments, protocol

from .errors import UsageError
from .instance import Instance
from .knobs import Config
from .values import ENV_FAULTS

IDEAL = "ideal"


@dataclass(frozen=True)
class Behaviour:
    """One documented behaviour: what it sets, in words, and the sentence it rests on."""

    sets: Mapping[str, object]
    what: str
    url: Optional[str]
    rests_on: str


@dataclass(frozen=True)
class Profile:
    name: str
    meaning: str
    assumptions: Mapping[str, str]
    budgets: Mapping[str, int]
    behaviours: tuple[Behaviour, ...]


def _behaviour(raw: Mapping) -> Behaviour:
    src = raw.get("source")
    if src is None:
        return Behaviour(dict(raw["sets"]), raw["what"], None, raw["why_no_source"])
    return Behaviour(dict(raw["sets"]), raw["what"], src["url"], src["rests_on"])


@lru_cache(maxsize=None)
def _profiles() -> dict[str, Profile]:
    out = {}
    assumptions, faults = protocol().assumptions, protocol().faults
    for name, raw in environments()["profiles"].items():
        behaviours = tuple(_behaviour(b) for b in raw["behaviours"])
        a, budgets = {}, {}
        for b in behaviours:
            for key, value in b.sets.items():
                if key in assumptions and value in assumptions[key]["options"]:
                    a[key] = value
                elif key in faults and isinstance(value, int) and value >= 0:
                    budgets[key] = value
                else:
                    raise ValueError(f"spec/environments.json: profile {name} sets {key}={value!r}, "
                                     "which is neither an assumption option nor a fault budget")
        out[name] = Profile(name, raw["meaning"], a, budgets, behaviours)
    return out


def names() -> list[str]:
    return list(_profiles())


def profile(name: str) -> Profile:
    """The named profile; UsageError listing the valid ones otherwise."""
    if name not in _profiles():
        raise UsageError(f"unknown environment {name!r}; valid environments: {', '.join(_profiles())}")
    return _profiles()[name]


def configure(config: Config, name: str) -> Config:
    """`config` in environment `name`: the profile's assumptions over the config's."""
    p = profile(name)
    return replace(config, assumptions={**config.assumptions, **p.assumptions}, env=name)


def instance_in(inst: Instance, name: str) -> Instance:
    """`inst` with the profile's fault budgets added (an instance's own larger budget stays)."""
    budgets = profile(name).budgets
    if not budgets:
        return inst
    return inst.with_bounds({f: max(n, inst.faults.get(f, 0)) for f, n in budgets.items()})


def held_fixed(name: str) -> dict[str, object]:
    """Every assumption and environment budget the profile fixes, by name: what an answer in
    this environment holds fixed."""
    p = profile(name)
    a = {k: p.assumptions.get(k, spec["default"]) for k, spec in protocol().assumptions.items()}
    return {**a, **{f: p.budgets.get(f, 0) for f in ENV_FAULTS}}

