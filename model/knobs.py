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
from typing import Mapping

from toolcommit.spec import protocol

from .errors import UsageError

PRESETS = ("naive", "seed", "recommended")


@dataclass(frozen=True)
class Config:
    """Every knob and assumption, by name; `preset` names where it started."""

    preset: str
    knobs: Mapping[str, str]
    assumptions: Mapping[str, str]
    changed: tuple[str, ...] = field(default=())
    env: str = "ideal"      # the environment profile the assumptions came from

    def with_knobs(self, updates: Mapping[str, str]) -> "Config":
        """A copy with `updates` applied to knobs or assumptions; names are checked."""
        knobs, assumptions = dict(self.knobs), dict(self.assumptions)
        for name, value in updates.items():
            if name in knobs:
                _check_option(name, value, protocol().knobs[name].options)
                knobs[name] = value
            elif name in assumptions:
                _check_option(name, value, protocol().assumptions[name]["options"])
                assumptions[name] = value
            else:
                valid = ", ".join(list(knobs) + list(assumptions))
                raise UsageError(f"unknown knob {name!r}; valid knobs and assumptions: {valid}")
        changed = tuple(dict.fromkeys(self.changed + tuple(updates)))
        return Config(self.preset, knobs, assumptions, changed, self.env)

    def label(self) -> str:
        """`preset` plus any changed knobs, then the environment unless ideal, e.g.
        `recommended+fencing=off` or `recommended+epoch=none@stripe`."""
        extra = [f"{n}={self.knobs.get(n, self.assumptions.get(n))}" for n in self.changed]
        return "+".join([self.preset] + extra) + ("" if self.env == "ideal" else f"@{self.env}")

    def relied_on(self) -> dict[str, str]:
        """The environment assumptions this config was checked under."""
        return dict(self.assumptions)


# Knobs that bear only on instances with more than one user intent: an instance with one
# intent builds the same System under each of their options, so its records leave them out.
SEVERAL_INTENTS_ONLY = ("intent_id",)


def bearing(knobs: Mapping[str, str], instances) -> dict[str, str]:
    """`knobs` without those that bear on none of `instances` (see SEVERAL_INTENTS_ONLY).

    >>> from toolcommit.model.instance import instance
    >>> "intent_id" in bearing(preset("recommended").knobs, [instance("ack_loss")])
    False
    >>> bearing(preset("recommended").knobs, [instance("two_intents")])["intent_id"]
    'minted'
    """
    several = any(len(i.intents()) > 1 for i in instances)
    return {k: v for k, v in knobs.items() if several or k not in SEVERAL_INTENTS_ONLY}


def _check_option(name: str, value: str, options) -> None:
    if value not in options:
        raise UsageError(f"knob {name!r} has no option {value!r}; valid options: {', '.join(options)}")


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


def complete_knobs(stored: Mapping[str, str]) -> dict[str, str]:
    """Every knob of a stored record: the stored ones, and each `implied` knob it leaves out
    at its implied option (in spec order, then any the spec does not know).

    >>> complete_knobs(stored_knobs(preset("seed").knobs)) == dict(preset("seed").knobs)
    True
    """
    spec = protocol().knobs
    out = {k: stored.get(k, knob.implied) for k, knob in spec.items()
           if k in stored or knob.implied is not None}
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


def from_label(label: str) -> Config:
    """The config a `Config.label()` names, e.g. `naive+on_unknown=reconcile@stripe`."""
    from .environment import configure
    label, _, env = label.partition("@")
    name, *changes = label.split("+")
    return configure(preset(name), env or "ideal").with_knobs(parse_settings(changes))
