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
>>> profile("no-such-api")
Traceback (most recent call last):
...
toolcommit.model.errors.UsageError: unknown environment 'no-such-api'; valid environments: ideal, stripe, email, fenced-store, async-log, or a provider file's path (docs/provider-file.md)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Mapping, Optional

from toolcommit.spec import environments, protocol

from . import provider_file, timing
from .design import departures
from .errors import UsageError
from .instance import Instance
from .knobs import Config, parse_settings, preset
from .provider_file import ProviderDoc
from .values import ENV_FAULTS

IDEAL = "ideal"


@dataclass(frozen=True)
class Behaviour:
    """One documented behaviour: what it sets, in words, and the sentence it rests on.

    `inherent` says why no provider of this kind can promise otherwise (so `design` never
    offers its reversal as the way out); `assumed` marks a number the documents do not give,
    stated as an assumption every verdict that uses it lists."""

    sets: Mapping[str, object]
    what: str
    url: Optional[str]
    rests_on: str
    inherent: str = ""
    assumed: bool = False


@dataclass(frozen=True)
class Wire:
    """Where the provider reads the idempotency key on the wire (a profile's ``wire``): the
    header's name (placement ``header``, the one placement there is so far) and the
    provider's hosts, with the document it rests on."""

    key_header: str
    hosts: tuple[str, ...]
    url: Optional[str]
    rests_on: str


@dataclass(frozen=True)
class Profile:
    name: str
    meaning: str
    assumptions: Mapping[str, str]
    budgets: Mapping[str, int]
    behaviours: tuple[Behaviour, ...]
    timing: Mapping[str, Optional[int]] = None  # environment timing params it sets (seconds)
    wire: Optional[Wire] = None  # where its key travels (None: no key header)
    file: Optional[ProviderDoc] = None  # the provider file it was read from (None: built in)

    def inherent(self, name: str) -> str:
        """Why no provider of this kind can promise `name` away ('' if one could)."""
        return next((b.inherent for b in self.behaviours if name in b.sets and b.inherent), "")

    def assumed(self) -> list[str]:
        """The timing params the profile assumes without a document saying so."""
        return [k for b in self.behaviours if b.assumed for k in b.sets if k in timing.params()]


def _behaviour(raw: Mapping) -> Behaviour:
    src = raw.get("source")
    extra = {"inherent": raw.get("inherent", ""), "assumed": bool(raw.get("assumed"))}
    if src is None:
        return Behaviour(dict(raw["sets"]), raw["what"], None, raw["why_no_source"], **extra)
    return Behaviour(dict(raw["sets"]), raw["what"], src["url"], src["rests_on"], **extra)


def _wire(name: str, raw: Optional[Mapping]) -> Optional[Wire]:
    if raw is None:
        return None
    if raw.get("key_placement") != "header" or not isinstance(raw.get("key_header"), str):
        raise ValueError(
            f"spec/environments.json: profile {name} has a wire without a "
            "key_header placed in a header (key_placement: header)"
        )
    src = raw.get("source") or {}
    return Wire(
        raw["key_header"],
        tuple(h.lower() for h in raw.get("hosts", ())),
        src.get("url"),
        src.get("rests_on", raw.get("what", "")),
    )


def _build(name: str, raw: Mapping, file: Optional[ProviderDoc] = None) -> Profile:
    """A profile from its `spec/environments.json` shape."""
    assumptions, faults = protocol().assumptions, protocol().faults
    behaviours = tuple(_behaviour(b) for b in raw["behaviours"])
    a, budgets, times = {}, {}, {}
    for b in behaviours:
        for key, value in b.sets.items():
            if key in assumptions and value in assumptions[key]["options"]:
                a[key] = value
            elif key in faults and isinstance(value, int) and value >= 0:
                if value:  # a budget of 0 (a provider file's) is no budget
                    budgets[key] = max(value, budgets.get(key, 0))
            elif key in timing.params() and timing.params()[key]["of"] == "environment":
                times[key] = timing.seconds(value)
            else:
                raise ValueError(
                    f"spec/environments.json: profile {name} sets {key}={value!r}, "
                    "which is neither an assumption option, a fault budget nor "
                    "an environment timing parameter"
                )
    wire = _wire(name, raw.get("wire"))
    return Profile(name, raw["meaning"], a, budgets, behaviours, times, wire, file)


@lru_cache(maxsize=None)
def _profiles() -> dict[str, Profile]:
    return {name: _build(name, raw) for name, raw in environments()["profiles"].items()}


# the providers read from files in this process, by the name each file gives (forked
# workers inherit them)
_FILES: dict[str, Profile] = {}


def names() -> list[str]:
    """The built-in profiles' names."""
    return list(_profiles())


def resolve(name: str) -> str:
    """The profile name `--env` means: a built-in profile's, or the name of the provider
    file at the path `name` (read, checked and kept for this process; InputError if
    unusable; UsageError if another file already gave that name)."""
    if name in _profiles() or not provider_file.looks_like_file(name):
        return profile(name).name
    return register(provider_file.read(name))


def register(doc: ProviderDoc) -> str:
    """Keep the read provider file `doc` for this process under its name (UsageError if
    another file already gave that name other promises); its name."""
    known = _FILES.get(doc.name)
    if known is not None and known.file is not None and known.file.digest != doc.digest:
        raise UsageError(
            f"{doc.path}: provider {doc.name!r} was already read from {known.file.path}, "
            "which says otherwise; give the two providers different names"
        )
    if known is None or known.file is not None and known.file.design is None and doc.design:
        # the same promises read again from the file itself: keep where its design is
        _FILES[doc.name] = _build(doc.name, doc.profile, doc)
    return doc.name


def profile(name: str) -> Profile:
    """The named profile (a built-in one, a provider file already read, or the provider
    file at the path `name`); UsageError listing the valid ones otherwise."""
    if name in _profiles():
        return _profiles()[name]
    if name in _FILES:
        return _FILES[name]
    if provider_file.looks_like_file(name):
        return _FILES[resolve(name)]
    raise UsageError(
        f"unknown environment {name!r}; valid environments: {', '.join(_profiles())}, "
        "or a provider file's path (docs/provider-file.md)"
    )


def configure(config: Config, name: str) -> Config:
    """`config` in environment `name`: the profile's assumptions and timing over the
    config's (a timing param the config changed itself, by `--set`, stays)."""
    p = profile(name)
    times = {**config.timing, **{k: v for k, v in p.timing.items() if k not in config.changed}}
    return replace(
        config, assumptions={**config.assumptions, **p.assumptions}, env=p.name, timing=times
    )


def config_for(design: Mapping[str, str], env: str) -> Config:
    """naive plus the design's departures, in `env` (so its label replays)."""
    return configure(preset("naive"), env).with_knobs({k: design[k] for k in departures(design)})


def from_label(label: str) -> Config:
    """The config a `Config.label()` names, e.g. `naive+on_unknown=reconcile@stripe`: the
    preset, in the environment after the `@`, with the `+` changes.

    >>> from_label("naive+on_unknown=reconcile@stripe").label()
    'naive+on_unknown=reconcile@stripe'
    """
    label, _, env = label.partition("@")
    name, *changes = label.split("+")
    return configure(preset(name), env or "ideal").with_knobs(parse_settings(changes))


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
    times = {k: timing.show(v, k) for k, v in p.timing.items()}
    return {**a, **{f: p.budgets.get(f, 0) for f in ENV_FAULTS}, **times}
