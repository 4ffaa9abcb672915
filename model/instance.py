"""Instances: the model's personality (which calls it may emit), workers and fault budgets.

Named instances live in `spec/instances.json`; bounds may be overridden from the CLI with
`--bounds workers=3,crashes=2`.

Examples
--------
>>> inst = instance("ack_loss")
>>> [p.call_id for p in inst.proposals], inst.faults["ack_losses"]
(['t1', 't2'], 1)
>>> inst.with_bounds({"workers": 2}).workers
2
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from toolcommit.spec import instances, protocol

from .errors import UsageError


@dataclass(frozen=True)
class Proposal:
    """One tool call the model may emit: its call id, argument form, epoch and trigger."""

    name: str
    call_id: str
    form: str
    epoch: int
    trigger: str

    @property
    def version(self) -> int:
        """Canonicalizer version: a revised prompt starts version 2."""
        return 2 if self.form == "revised" else 1


@dataclass(frozen=True)
class Instance:
    name: str
    meaning: str
    proposals: tuple[Proposal, ...]
    workers: int
    max_fence: int
    faults: Mapping[str, int]
    assumptions: Mapping[str, str]
    failure_class: str = ""

    def with_bounds(self, bounds: Mapping[str, int]) -> "Instance":
        """A copy with `workers`, `max_fence` or fault budgets overridden."""
        faults = dict(self.faults)
        inst = self
        for name, value in bounds.items():
            if not isinstance(value, int) or value < 0:
                raise UsageError(f"bound {name} must be a whole number >= 0, got {value!r}")
            if name in ("workers", "max_fence"):
                if value < 1:
                    raise UsageError(f"bound {name} must be at least 1")
                inst = replace(inst, **{name: value})
            elif name in protocol().faults:
                faults[name] = value
            else:
                valid = ", ".join(["workers", "max_fence", *protocol().faults])
                raise UsageError(f"unknown bound {name!r}; valid bounds: {valid}")
        return replace(inst, faults=faults)

    def bounds(self) -> dict[str, int]:
        return {"workers": self.workers, "max_fence": self.max_fence, **self.faults}


def instance_names() -> list[str]:
    return list(instances()["instances"])


def failure_classes() -> list[str]:
    """Instances that stand for one failure class each, in spec order."""
    return [n for n, i in instances()["instances"].items() if "class" in i]


def proposal(name: str) -> Proposal:
    raw = instances()["proposals"]
    if name not in raw:
        raise UsageError(f"unknown proposal {name!r}; valid proposals: {', '.join(raw)}")
    p = raw[name]
    return Proposal(name, p["call_id"], p["form"], p["epoch"], p["trigger"])


def instance(name: str) -> Instance:
    """The named instance from `spec/instances.json`."""
    raw = instances()["instances"]
    if name not in raw:
        raise UsageError(f"unknown instance {name!r}; valid instances: {', '.join(raw)}")
    i = raw[name]
    faults = {f: int(i["faults"].get(f, 0)) for f in protocol().faults if f != "wipe"}
    return Instance(name, i["meaning"], tuple(proposal(p) for p in i["proposals"]),
                    i["workers"], i["max_fence"], faults, dict(i.get("assumptions", {})),
                    i.get("class", ""))


def parse_bounds(text: str | None) -> dict[str, int]:
    """Parse `--bounds workers=3,crashes=2`."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise UsageError(f"--bounds takes name=number[,name=number], got {item!r}")
        out[name.strip()] = int(value)
    return out
