"""What the harness's provider promises, and what the library does there. Pure.

Two kinds of profile:

- the harness's own four (``fenced``, ``keyed``, ``fences-only``, ``bare``): one promise
  switched on or off each, to show what the library's guarantee rests on;
- one per profile of `spec/environments.json` (``ideal``, ``stripe``, ``email``,
  ``fenced-store``, ``async-log``), *derived* from that file's documented facts
  (`from_environment`, each over ideal's assumptions): the facts live there, this module
  only turns each into a rule of the fake, so the fake and the model cannot tell two
  stories. ``async-log``'s one behaviour is the intent log's store failing over, which the
  harness does not do: its fake is ideal's provider.

Time is compressed: one hour of a profile is `HOUR` seconds here (Stripe's 24-hour key
lifetime is 24 s, the 15-minute delay bound a quarter of a second, a design's 1-hour replay
window one second).

How a fact becomes a rule of the fake
-------------------------------------
``provider_idempotent=yes``  one application per key; a repeat is answered from the first
                             response (500s included), or, where writes are conditional
                             (``provider_fences=yes``: a create-once key), 412 "already
                             exists" with the first effect's id
``in_flight_key``            ``refused``: 409 ``idempotency_key_in_use`` while a request under
                             the key executes; ``serialized``: the repeat waits for it
``errors_before`` > 0        the plan may refuse a request before it executes (429), nothing
                             saved
``errors_after`` > 0         the plan may have a request execute and answer 500 (saved)
``key_expiries`` > 0         a key is pruned `key_lifetime` after its first use (compressed)
``provider_fences=yes``      fence tokens checked; a status read with a fence seals
``status_read=yes``          ``GET /list`` (consistent); ``GET /search`` lags by the delay
                             bound where ``stale_reads`` > 0 (the documents give no number
                             beyond "under a minute"; the model's stale read has none)
``deadlines`` > 0            a request arriving past the delay bound after its send is
                             refused (RequestExpired); without deadlines the bound is an
                             assumption, and the fake makes it true: such a request is never
                             delivered
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Optional

from toolcommit.model import timing as model_timing
from toolcommit.model.environment import configure, resolve
from toolcommit.model.environment import names as environment_names
from toolcommit.model.environment import profile as environment
from toolcommit.model.knobs import preset

HOUR = 1.0  # seconds here per hour of a profile
ENVIRONMENTS = tuple(environment_names())  # every profile of spec/environments.json


def compress(seconds: Optional[int]) -> float:
    """A profile's duration (seconds; None: forever) in harness seconds."""
    return math.inf if seconds is None else seconds / 3600.0 * HOUR


@dataclass(frozen=True)
class Profile:
    """What the provider of a run promises (see the module docstring)."""

    name: str
    idempotency: bool  # one application per key
    ttl: float  # seconds a key is kept (inf: forever)
    fences: bool  # fence tokens checked, a fenced status read seals
    meaning: str
    env: str = ""  # the spec/environments.json profile it is derived from
    repeat: str = "saved"  # saved (the first response replayed) | exists (412, create-once)
    in_flight: str = "serialized"  # refused (409) | serialized
    reads: tuple = ("list",)  # the status reads offered
    search_lag: float = 0.0
    delay_bound: float = math.inf
    deadlines: bool = False
    faults: tuple = ()  # provider faults a plan may inject (plan.PROVIDER_FAULTS)


PROFILES = {
    "fenced": Profile(
        "fenced",
        True,
        5.0,
        True,
        "idempotency keys kept 5 s with their saved responses, fence tokens "
        "checked, a status read by key that seals: the recommended design's "
        "assumptions",
    ),
    "keyed": Profile(
        "keyed",
        True,
        5.0,
        False,
        "idempotency keys kept 5 s with their saved responses and a status read, "
        "but no fence tokens",
    ),
    "fences-only": Profile(
        "fences-only",
        False,
        0.0,
        True,
        "fence tokens checked and a status read that seals, but no "
        "idempotency keys (a non-idempotent provider with fencing)",
    ),
    "bare": Profile(
        "bare",
        False,
        0.0,
        False,
        "no idempotency keys, no fences (a non-idempotent provider); a status read by key",
    ),
}


def from_environment(name: str) -> Profile:
    """The fake of environment `name`, from its facts (see the module docstring)."""
    p = environment(name)
    a = configure(preset("recommended"), name).assumptions  # the profile's over ideal's
    b, t = p.budgets, p.timing
    idem, fences = a.get("provider_idempotent") == "yes", a.get("provider_fences") == "yes"
    delay = compress(t.get("delay_bound"))
    ttl = compress(t.get("key_lifetime")) if b.get("key_expiries") else math.inf
    reads = ("list", "search") if a.get("status_read") == "yes" else ()
    faults = tuple(
        f
        for f, on in (
            ("slow", True),
            ("error_before", b.get("errors_before")),
            ("error_after", b.get("errors_after")),
            ("late", b.get("deadlines")),
        )
        if on
    )
    return Profile(
        name,
        idem,
        ttl if idem else 0.0,
        fences,
        p.meaning,
        env=name,
        repeat="exists" if fences else "saved",
        in_flight=a.get("in_flight_key", "serialized"),
        reads=reads,
        search_lag=delay if b.get("stale_reads") else 0.0,
        delay_bound=delay,
        deadlines=bool(b.get("deadlines")),
        faults=faults,
    )


for _env in ENVIRONMENTS:
    PROFILES[_env] = from_environment(_env)


def profile_for(assumptions: dict) -> str:
    """The harness profile whose promises match a model trace's assumptions
    (``provider_idempotent``, ``provider_fences``: ``yes`` / ``no``)."""
    idem = assumptions.get("provider_idempotent", "yes") == "yes"
    fences = assumptions.get("provider_fences", "yes") == "yes"
    return {
        (True, True): "fenced",
        (True, False): "keyed",
        (False, True): "fences-only",
        (False, False): "bare",
    }[(idem, fences)]


@dataclass(frozen=True)
class Design:
    """The knobs of a shipped design file (`spec/designs/<env>.json`) the harness's
    library runtime acts on, and its replay window in harness seconds."""

    env: str
    guarantee: str
    knobs: dict = field(default_factory=dict)
    window: float = 0.0

    def __getitem__(self, knob: str) -> str:
        return self.knobs[knob]


# the design file the library follows in an environment other than its shipped one: a
# provider file's (its `design`, or torture's --design); forked workers inherit it
DESIGN_FILES: dict[str, str] = {}
# the path each provider file was given as (for the rerun command)
PROVIDER_PATHS: dict[str, str] = {}


def add_provider(path: str) -> str:
    """The harness profile of the provider file at `path` (read and checked: InputError),
    its fake derived from its facts as a built-in profile's is; its name. The library
    follows the design the file names, if it names one."""
    name = resolve(path)
    PROFILES[name] = from_environment(name)
    PROVIDER_PATHS[name] = path
    source = environment(name).file
    if source is not None and source.design is not None:
        DESIGN_FILES.setdefault(name, source.design)
    return name


def design_source(env: str) -> str:
    """What the library loads as its design in `env`: a design file's path, or the shipped
    design's name."""
    return DESIGN_FILES.get(env, env)


def has_design(env: str) -> bool:
    """Whether the library has a design for `env` (`spec/designs/<env>.json`, or a design
    file given for it)."""
    if env in DESIGN_FILES:
        return True
    return resources.files("toolcommit.spec").joinpath("designs", f"{env}.json").is_file()


@lru_cache(maxsize=None)
def design(env: str) -> Design:
    """The design the library follows in `env`: the one `toolcommit design --env env` ships
    (`spec/designs/<env>.json`), or the design file given for it (`DESIGN_FILES`)."""
    from toolcommit.model.design_file import checked, strict_json

    if env in DESIGN_FILES:
        where = DESIGN_FILES[env]
        with open(where, "rb") as f:
            data = f.read()
    else:
        where = f"spec/designs/{env}.json"
        data = resources.files("toolcommit.spec").joinpath("designs", f"{env}.json").read_bytes()
    doc = checked(strict_json(data, where), where).doc  # the one design-file reader
    w = model_timing.seconds(doc.get("timing", {}).get("replay_window", "0s"))
    return Design(env, doc["guarantee"], dict(doc["knobs"]), compress(w))
