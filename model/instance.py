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

import re
from dataclasses import dataclass, replace
from typing import Mapping

from toolcommit.spec import instances, protocol

from .errors import UsageError
from .values import LISTED_WHEN_SET

# The largest bounds any command accepts, checked before any work: the state space grows
# exponentially in each (workers are permuted, every fault may strike at every step). The
# shipped instances use workers <= 2, max_fence 3 and budgets <= 1; docs/check.md's largest
# command workers=5, max_fence=6, budgets <= 4. "faults" is the cap of each fault's budget.
MAX_BOUNDS = {"workers": 6, "max_fence": 8, "faults": 8}


def bound_range(name: str) -> tuple[int, int]:
    """(least, largest) value of bound `name`; `UsageError` naming the valid bounds otherwise."""
    if name in ("workers", "max_fence"):
        return 1, MAX_BOUNDS[name]
    if name in protocol().faults:
        return 0, MAX_BOUNDS["faults"]
    valid = ", ".join(["workers", "max_fence", *protocol().faults])
    raise UsageError(f"unknown bound {name!r}; valid bounds: {valid}")


def allowed_bounds() -> str:
    """The allowed bounds in words, for error messages."""
    return (
        f"workers 1..{MAX_BOUNDS['workers']}, max_fence 1..{MAX_BOUNDS['max_fence']}, "
        f"each fault budget 0..{MAX_BOUNDS['faults']}"
    )


def check_bound(name: str, value) -> None:
    """Raise `UsageError` unless `value` is a whole number in `bound_range(name)`.

    Examples
    --------
    >>> check_bound("workers", 2)
    >>> check_bound("workers", 1000)
    Traceback (most recent call last):
    ...
    toolcommit.model.errors.UsageError: bound workers must be a whole number from 1 to 6, got 1000 (allowed: workers 1..6, max_fence 1..8, each fault budget 0..8)
    """
    lo, hi = bound_range(name)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise UsageError(
            f"bound {name} must be a whole number from {lo} to {hi}, got {value!r} "
            f"(allowed: {allowed_bounds()})"
        )


FIRST_INTENT = "i1"
FIRST_PRINCIPAL = "u1"


@dataclass(frozen=True)
class Proposal:
    """One tool call the model may emit: its call id, argument form, epoch, trigger, the
    user intent it serves (`i1`, the user's first request, unless the instance has the user
    ask again, `new_intent`) and the user request (message) it is emitted in: the intent's
    own unless `request` names another (the user re-asking the same intent in a new
    message, whose minted id makes a new scope), and whose it is: the principal that asked
    (`u1` unless it names another, whose intent is asked from the start)."""

    name: str
    call_id: str
    form: str
    epoch: int
    trigger: str
    intent: str = FIRST_INTENT
    request: str = ""
    principal: str = FIRST_PRINCIPAL

    @property
    def req(self) -> str:
        """The user request the call is emitted in (its intent's, unless it names one)."""
        return self.request or self.intent

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

    def intents(self) -> tuple[str, ...]:
        """The user intents the proposals serve, the first request's first."""
        return tuple(dict.fromkeys([FIRST_INTENT] + [p.intent for p in self.proposals]))

    def principals(self) -> tuple[str, ...]:
        """Whose the proposals are (the principal that asked), the first request's first."""
        return tuple(dict.fromkeys([FIRST_PRINCIPAL] + [p.principal for p in self.proposals]))

    def requests(self) -> tuple[str, ...]:
        """The user requests (messages) the proposals are emitted in, the first's first."""
        return tuple(dict.fromkeys([FIRST_INTENT] + [p.req for p in self.proposals]))

    def with_bounds(self, bounds: Mapping[str, int]) -> "Instance":
        """A copy with `workers`, `max_fence` or fault budgets overridden (see `check_bound`)."""
        faults = dict(self.faults)
        inst = self
        for name, value in bounds.items():
            check_bound(name, value)
            if name in ("workers", "max_fence"):
                inst = replace(inst, **{name: value})
            else:
                faults[name] = value
        return replace(inst, faults=faults)

    def bounds(self) -> dict[str, int]:
        """Workers, fence bound and fault budgets (a real system's fault and the user's
        second request only when set)."""
        return {
            "workers": self.workers,
            "max_fence": self.max_fence,
            **{f: n for f, n in self.faults.items() if n or f not in LISTED_WHEN_SET},
        }


def instance_names() -> list[str]:
    return list(instances()["instances"])


def failure_classes() -> list[str]:
    """Instances that stand for one failure class each, in spec order."""
    return [n for n, i in instances()["instances"].items() if "class" in i]


def stress_instances() -> list[str]:
    """Instances that combine the faults (`"stress": true`), each at budget one, on which
    `design` judges a candidate beside the failure classes (an environment adds its
    profile's budgets)."""
    return [n for n, i in instances()["instances"].items() if i.get("stress")]


def proposal(name: str) -> Proposal:
    raw = instances()["proposals"]
    if name not in raw:
        raise UsageError(f"unknown proposal {name!r}; valid proposals: {', '.join(raw)}")
    p = raw[name]
    return Proposal(
        name,
        p["call_id"],
        p["form"],
        p["epoch"],
        p["trigger"],
        p.get("intent", FIRST_INTENT),
        p.get("request", ""),
        p.get("principal", FIRST_PRINCIPAL),
    )


def instance(name: str) -> Instance:
    """The named instance from `spec/instances.json`."""
    raw = instances()["instances"]
    if name not in raw:
        raise UsageError(f"unknown instance {name!r}; valid instances: {', '.join(raw)}")
    i = raw[name]
    faults = {f: int(i["faults"].get(f, 0)) for f in protocol().faults if f != "wipe"}
    return Instance(
        name,
        i["meaning"],
        tuple(proposal(p) for p in i["proposals"]),
        i["workers"],
        i["max_fence"],
        faults,
        dict(i.get("assumptions", {})),
        i.get("class", ""),
    )


def personalities() -> tuple[str, dict]:
    """P5's base instance and its model personalities (name -> proposal names), from
    `spec/instances.json`."""
    raw = instances()["personalities"]
    return raw["base"], raw["variants"]


def personality(name: str) -> Instance:
    """P5's base instance with the proposals of personality `name` (named
    `<base>/<personality>`; `environment.instance_in` puts it in an environment).

    >>> base, variants = personalities()
    >>> personality(next(iter(variants))).name.startswith(base + "/")
    True
    """
    base, variants = personalities()
    if name not in variants:
        raise UsageError(f"unknown personality {name!r}; valid: {', '.join(variants)}")
    return replace(
        instance(base), name=f"{base}/{name}", proposals=tuple(proposal(p) for p in variants[name])
    )


def parse_bounds(text: str | None) -> dict[str, int]:
    """Parse `--bounds workers=3,crashes=2`; names and values are checked (`check_bound`)."""
    out: dict[str, int] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"\s*[0-9]{1,9}\s*", value):
            raise UsageError(f"--bounds takes name=number[,name=number], got {item!r}")
        out[name.strip()] = int(value)
        check_bound(name.strip(), out[name.strip()])
    return out
