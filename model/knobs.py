"""Policy knobs, environment assumptions and the named presets, all read from `spec/`.

A `Config` is the complete, validated choice of every knob and assumption. Misuse is
rejected here, when the config is made, with a message that lists the valid names.

Examples
--------
>>> c = preset("recommended")
>>> c.knobs["on_unknown"]
'reconcile'
>>> c.with_knobs({"on_unknown": "blind_retry"}).knobs["on_unknown"]
'blind_retry'
>>> preset("nope")
Traceback (most recent call last):
...
toolcommit.model.errors.UsageError: unknown preset 'nope'; valid presets: naive, seed, recommended
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from toolcommit.spec import protocol

from . import timing
from .errors import UsageError

PRESETS = ("naive", "seed", "recommended")


@dataclass(frozen=True)
class Config:
    """Every knob and assumption, by name; `preset` names where it started."""

    preset: str
    knobs: Mapping[str, str]
    assumptions: Mapping[str, str]
    changed: tuple[str, ...] = field(default=())
    env: str = "ideal"  # the environment profile the assumptions came from
    timing: Mapping[str, Optional[int]] = field(default_factory=dict)  # seconds; None:
    #                         forever / unbounded (spec `timing`; `timing.defaults` if empty)

    def __post_init__(self):
        if not self.timing:
            object.__setattr__(self, "timing", timing.defaults(self.preset))

    def with_knobs(self, updates: Mapping[str, str]) -> "Config":
        """A copy with `updates` applied to knobs, assumptions or timing params (a duration
        such as 1h, or forever / unbounded); names are checked."""
        knobs, assumptions, times = dict(self.knobs), dict(self.assumptions), dict(self.timing)
        for name, value in updates.items():
            if name in knobs:
                _check_option(name, value, protocol().knobs[name].options)
                knobs[name] = value
            elif name in assumptions:
                _check_option(name, value, protocol().assumptions[name]["options"])
                assumptions[name] = value
            elif name in timing.params():
                times[name] = timing.check_param(name, value)
            else:
                valid = ", ".join(list(knobs) + list(assumptions) + list(timing.params()))
                raise UsageError(
                    f"unknown knob {name!r}; valid knobs, assumptions and timing "
                    f"parameters: {valid}"
                )
        changed = tuple(dict.fromkeys(self.changed + tuple(updates)))
        return Config(self.preset, knobs, assumptions, changed, self.env, times)

    def setting(self, name: str) -> str:
        """The value of knob, assumption or timing param `name`, as `--set` writes it."""
        if name in self.knobs:
            return self.knobs[name]
        if name in self.assumptions:
            return self.assumptions[name]
        return timing.show(self.timing[name], name)

    def label(self) -> str:
        """`preset` plus any changed knobs, then the environment unless ideal, e.g.
        `recommended+fencing=off` or `recommended+epoch=none@stripe`."""
        extra = [f"{n}={self.setting(n)}" for n in self.changed]
        return "+".join([self.preset] + extra) + ("" if self.env == "ideal" else f"@{self.env}")

    def relied_on(self) -> dict[str, str]:
        """The environment assumptions this config was checked under."""
        return dict(self.assumptions)


# Knobs that bear only on instances with more than one user request (a second intent, or a
# re-ask of the first in a new message): an instance with one request builds the same
# System under each of their options, so its records leave them out.
SEVERAL_INTENTS_ONLY = ("intent_id", "reask")
# Knobs that bear only where an instance has a fault budget: the SDK's retries exist only
# with transport duplicates, where the read looks matters only if a read can be stale, when
# an outcome counts as heard only where a caller can give up.
BUDGET_ONLY = {
    "sdk_retries": "duplicates",
    "status_via": "stale_reads",
    "told": "caller_deadlines",
}
# Knobs that bear only where an instance has a call the knob reads: the schema merges only
# a coerced value or an added argument; the principal matters only with several principals.
FORMS_ONLY = {"identity": ("coerced", "annotated")}
PRINCIPALS_ONLY = ("principal",)


def _bears_on(k: str, inst) -> bool:
    if k in FORMS_ONLY:
        return any(p.form in FORMS_ONLY[k] for p in inst.proposals)
    if k in PRINCIPALS_ONLY:
        return len(inst.principals()) > 1
    return True


def bearing(knobs: Mapping[str, str], instances) -> dict[str, str]:
    """`knobs` without those that bear on none of `instances` (see SEVERAL_INTENTS_ONLY,
    BUDGET_ONLY, FORMS_ONLY and PRINCIPALS_ONLY).

    >>> from toolcommit.model.instance import instance
    >>> "intent_id" in bearing(preset("recommended").knobs, [instance("ack_loss")])
    False
    >>> bearing(preset("recommended").knobs, [instance("two_intents")])["intent_id"]
    'minted'
    """
    several = any(len(i.requests()) > 1 for i in instances)
    budget = {f for i in instances for f, n in i.faults.items() if n}
    out = {}
    for k, v in knobs.items():
        if k in SEVERAL_INTENTS_ONLY and not several:
            continue
        if k in BUDGET_ONLY and BUDGET_ONLY[k] not in budget:
            continue
        if not any(_bears_on(k, i) for i in instances):
            continue
        out[k] = v
    return out


def _check_option(name: str, value: str, options) -> None:
    if value not in options:
        raise UsageError(
            f"knob {name!r} has no option {value!r}; valid options: {', '.join(options)}"
        )


def preset(name: str) -> Config:
    """The named preset: `naive`, `seed` or `recommended`."""
    if name not in PRESETS:
        raise UsageError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}")
    p = protocol()
    knobs = {k: knob.presets[name] for k, knob in p.knobs.items()}
    assumptions = {a: spec["default"] for a, spec in p.assumptions.items()}
    return Config(name, knobs, assumptions)


def stored_knobs(knobs: Mapping[str, str]) -> dict[str, str]:
    """`knobs` as stored records write them: a knob at its `implied` option (the behaviour
    every design had before that knob existed) is left out, so records stored before it
    existed stay valid and unchanged; `complete_knobs` restores it.

    >>> "on_ack" in stored_knobs(preset("recommended").knobs)
    False
    >>> stored_knobs(preset("seed").knobs)["on_ack"]
    'discard'
    """
    spec = protocol().knobs
    return {k: v for k, v in knobs.items() if k not in spec or spec[k].implied != v}


def stored_assumptions(assumptions: Mapping[str, str]) -> dict[str, str]:
    """`assumptions` as stored records write them: one added after records were first
    stored is left out at its `implied` option, as `stored_knobs` does for knobs."""
    spec = protocol().assumptions
    return {k: v for k, v in assumptions.items() if k not in spec or spec[k].get("implied") != v}


def complete_assumptions(stored: Mapping[str, str]) -> dict[str, str]:
    """Every assumption of a stored record (those left out at their implied option back)."""
    spec = protocol().assumptions
    return {
        **{k: a["implied"] for k, a in spec.items() if "implied" in a and k not in stored},
        **stored,
    }


def complete_knobs(
    stored: Mapping[str, str],
    bounds: Mapping[str, int] | None = None,
    requests: int | None = None,
    inst=None,
) -> dict[str, str]:
    """Every knob of a stored record: the stored ones, and each `implied` knob it leaves out
    at its implied option (in spec order, then any the spec does not know); given the
    record's `bounds`, a knob that bears on none of them (`BUDGET_ONLY`) is not put back,
    nor, given its instance's number of user `requests`, one that bears only on several
    (`SEVERAL_INTENTS_ONLY`) where it has one, nor, given the instance `inst`, one that
    reads a call it does not have (`FORMS_ONLY`, `PRINCIPALS_ONLY`).

    >>> complete_knobs(stored_knobs(preset("seed").knobs)) == dict(preset("seed").knobs)
    True
    """
    spec = protocol().knobs

    def bears(k):
        if k in SEVERAL_INTENTS_ONLY and requests is not None and requests <= 1:
            return False
        if inst is not None and not _bears_on(k, inst):
            return False
        return bounds is None or k not in BUDGET_ONLY or bounds.get(BUDGET_ONLY[k], 0) > 0

    out = {
        k: stored.get(k, knob.implied)
        for k, knob in spec.items()
        if k in stored or (knob.implied is not None and bears(k))
    }
    return {**out, **{k: v for k, v in stored.items() if k not in out}}


def parse_settings(items) -> dict[str, str]:
    """Parse `knob=option` strings (from `--set`) into a dict."""
    out = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"--set takes knob=option, got {item!r}")
        out[name.strip()] = value.strip()
    return out
