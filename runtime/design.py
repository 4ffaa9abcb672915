"""The design the intent log follows: a shipped profile's design or a design file, and the
library's decisions as pure functions of it.

`load(provider)` reads ``spec/designs/NAME.json`` (a profile name) or a file written by
``toolcommit design -o FILE`` through `toolcommit.model.design_file` (one reader for
both) and refuses a design whose knobs the library does not implement, naming the knob.
The decisions below are the only places the library reads a knob; the test
``tests/runtime/test_design_decisions.py`` compares each with the model's own moves for the
same design, in every reachable state of the shipped instances, so the two cannot drift.

Decisions
---------
``unknown_action(d, window_open)``  what an UNKNOWN record this writer holds leads to:
    ``replay`` (re-send under the same key: `on_unknown=replay_then_reconcile` while the
    replay window is open), ``seal`` (to RECONCILING, fence bumped where fencing is on;
    then a status read), ``park`` (`on_unknown=dead_letter`).
``may_read(d, arrivals_over)``  whether a RECONCILING record may be read now: where the
    design replays, only once no request of the key can still arrive (the delay bound D
    since its last send), so a record is never parked on an "absent" read a late request
    could still contradict.
``window_open(d, first_sent, now)``, ``read_wait(d, sent_at, now)``  the timing those two
    read: a re-send inside the replay window W; the seconds left of the delay bound D.
``after_read(d, present)``  the state a status read leads to (``ACKED`` / ``DEAD_LETTER``);
    without a status read (`status_read=no`) ``DEAD_LETTER`` whatever happened.
``after_replay(d, answered)``  ``ACKED`` on an answer, else still ``RECONCILING`` (an error,
    a 409 in use, a timeout: no answer, never re-sent).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import TYPE_CHECKING, Any, Mapping, Optional, Union

from toolcommit.model.errors import ToolcommitError
from toolcommit.spec import SHIPPED_DESIGNS

if TYPE_CHECKING:
    from toolcommit.model.environment import Wire

SHIPPED = SHIPPED_DESIGNS  # the profile names `load` reads from spec/designs/

# the options the library implements, per knob (a knob absent here: any option)
IMPLEMENTS = {
    "dedupe_by": ("semantic_key",),
    "canonicalizer": ("normalizing",),
    "insert": ("atomic",),
    "idempotency_key": ("semantic_key", "none"),
    "fencing": ("on", "off"),
    "on_unknown": ("reconcile", "replay_then_reconcile", "dead_letter"),
    "on_absent": ("dead_letter", "rerecord"),
    "on_restart": ("reload_log",),
    "dispatch_guard": ("log_cas",),
    "late_replay": ("reject",),
    "on_ack": ("record",),
    "cancel_api": ("log",),
    "lease": ("expiring",),
    "epoch": ("per_intent", "none"),
    "sdk_retries": ("on", "off"),
    "status_via": ("search", "list"),
    "reaccept": ("reject",),
    "reask": ("proceed", "hold"),
}
#: knobs a design file of this release names, which the library implements one way only (an
#: older file, without them, is read as naming these): the tool's schema and identity
#: fields decide which calls are one intent, the principal is part of it, and an outcome is
#: heard on the caller's side (`toolcommit.runtime.identity`, `toolcommit.runtime.caller`)
IDENTITY = {"identity": ("schema",), "principal": ("part",), "told": ("caller",)}


class DesignError(ToolcommitError):
    """A provider= that names no shipped design, an unreadable design file, or a design the
    library does not implement."""


@dataclass(frozen=True)
class Design:
    """One design: its source, environment, guarantee, knobs, and the timing it assumes
    (seconds; None = unbounded): `replay_window` (W, the design's), `delay_bound` (D) and
    `key_lifetime` (L, the environment's), the provider's assumptions, and `wire` (the
    profile's: where the provider reads the key, None where it names no header)."""

    source: str
    environment: str
    guarantee: str
    knobs: Mapping[str, str]
    replay_window: Optional[float]
    delay_bound: Optional[float]
    key_lifetime: Optional[float]
    provider: Mapping[str, str] = field(default_factory=dict)
    wire: Optional["Wire"] = None

    def with_timing(self, **seconds: Optional[float]) -> "Design":
        """This design with `delay_bound`, `replay_window` or `key_lifetime` (seconds) set:
        the numbers measured on your network; the file's verdict assumed its own."""
        bad = sorted(set(seconds) - {"delay_bound", "replay_window", "key_lifetime"})
        if bad:
            raise DesignError(
                f"with_timing: {bad[0]!r} is not delay_bound, replay_window or key_lifetime"
            )
        changes: dict[str, Any] = {k: None if v is None else float(v) for k, v in seconds.items()}
        return replace(self, **changes)

    @property
    def name(self) -> str:
        """The design's name as a log stores it: the shipped profile's, or the file's name."""
        return self.source if self.source in SHIPPED else os.path.basename(self.source)

    @property
    def digest(self) -> str:
        """A digest of what the log's decisions read: the environment, guarantee, knobs,
        timing and provider assumptions (not where the design was read from), so two
        designs with one digest decide alike and a log refuses any other (`IntentLog`)."""
        doc = {
            "environment": self.environment,
            "guarantee": self.guarantee,
            "knobs": dict(self.knobs),
            "provider": dict(self.provider),
            "timing": [self.replay_window, self.delay_bound, self.key_lifetime],
        }
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    @property
    def doc(self) -> dict[str, Any]:
        """What the log stores of this design (``tc_design.doc``): what `digest` covers,
        and its source; `from_doc` reads it back (any design: a file, custom timing). A
        provider file's design stores its wire too (no built-in profile holds it)."""
        from toolcommit.model.environment import names

        w, keep = self.wire, {}
        if self.environment not in names():
            keep["wire"] = w and {"key_header": w.key_header, "hosts": list(w.hosts)}
        return {
            "source": self.source,
            "environment": self.environment,
            "guarantee": self.guarantee,
            "knobs": dict(self.knobs),
            "provider": dict(self.provider),
            "timing": [self.replay_window, self.delay_bound, self.key_lifetime],
            **keep,
        }

    @property
    def sends_key(self) -> bool:
        return self.knobs["idempotency_key"] == "semantic_key"

    @property
    def key_header(self) -> Optional[str]:
        """The header the provider reads the idempotency key from (the profile's ``wire``),
        None where the design sends no key or the profile names no header."""
        return self.wire.key_header if self.sends_key and self.wire is not None else None

    @property
    def sends_fence(self) -> bool:
        return self.knobs["fencing"] == "on"

    @property
    def status_read(self) -> bool:
        return self.provider.get("status_read", "yes") == "yes"

    @property
    def settles_by_read(self) -> bool:
        """Whether an unknown outcome is settled by a status read (not parked unread)."""
        return self.status_read and self.knobs["on_unknown"] != "dead_letter"

    @property
    def replays(self) -> bool:
        return self.knobs["on_unknown"] == "replay_then_reconcile"

    @property
    def new_epochs(self) -> bool:
        """Whether the user's new attempt gets the next epoch (``epoch=per_intent``); under
        ``none`` it is the same key as the first, a duplicate of a given-up record."""
        return self.knobs["epoch"] != "none"

    @property
    def at_most_once(self) -> bool:
        return self.guarantee == "at-most-once"


def unknown_action(d: Design, window_open: bool) -> str:
    """``replay``, ``seal`` or ``park`` for an UNKNOWN record (module docstring)."""
    policy = d.knobs["on_unknown"]
    if policy == "dead_letter":
        return "park"
    if policy == "replay_then_reconcile" and window_open:
        return "replay"
    return "seal"


def may_read(d: Design, arrivals_over: bool) -> bool:
    """Whether a RECONCILING record may be read now (module docstring). Where D is unbounded
    waiting cannot help and the read is made at once, as the model's is."""
    if d.replays and d.delay_bound is not None:
        return arrivals_over
    return True


def window_open(d: Design, first_sent: Optional[float], now: float) -> bool:
    """Whether a re-send at `now` falls inside the design's replay window, counted from the
    key's first send (store clock); a first send not known: closed."""
    w = d.replay_window
    return first_sent is not None and (w is None or now < first_sent + w)


def read_wait(d: Design, sent_at: Optional[float], now: float) -> float:
    """Seconds before a status read may settle a record whose last send was at `sent_at`
    (0: now): where the design replays, the delay bound D after that send (`may_read`)."""
    bound = d.delay_bound
    left = 0.0 if bound is None or sent_at is None else sent_at + bound - now
    return 0.0 if may_read(d, left <= 0) else left


def after_read(d: Design, present: bool) -> str:
    if not d.status_read:
        return "DEAD_LETTER"
    if present:
        return "ACKED"
    return "RECORDED" if d.knobs["on_absent"] == "rerecord" else "DEAD_LETTER"


def after_replay(d: Design, answered: bool) -> str:
    return "ACKED" if answered else "RECONCILING"


# ----- loading -------------------------------------------------------------------------------
def _read_doc(provider: str) -> tuple[dict[str, Any], str]:
    """The document of a shipped design or a design file, checked by the one design-file
    reader (`toolcommit.model.design_file`: the schema's rules, then the names)."""
    from toolcommit.model.design_file import checked, read_file, strict_json
    from toolcommit.model.errors import InputError

    try:
        if provider in SHIPPED:
            data = resources.files("toolcommit.spec").joinpath(f"designs/{provider}.json")
            return dict(checked(strict_json(data.read_bytes(), provider), provider).doc), provider
        if os.path.lexists(provider):
            return dict(read_file(provider).doc), provider
    except InputError as e:
        raise DesignError(str(e)) from None
    raise DesignError(
        f"provider={provider!r} is neither a shipped design ({', '.join(SHIPPED)}) "
        "nor a design file; write one with `toolcommit design --env NAME -o FILE`"
    )


def load(provider: Union[str, os.PathLike[str], Design, None]) -> Design:
    """The `Design` of `provider` (a shipped profile's name, a design file's path, or a
    `Design`); DesignError naming the choices for None or an unknown name, or for a design
    the library does not implement."""
    if isinstance(provider, Design):
        return provider
    if provider is None:
        raise DesignError(
            "the intent log needs provider=: the provider it talks to decides "
            f"the design; one of {', '.join(SHIPPED)}, or the path of a design file "
            "(`toolcommit design --env NAME -o FILE`)"
        )
    d = read(provider)
    named = {k: v for k, v in IDENTITY.items() if k in d.knobs}
    for knob, options in {**IMPLEMENTS, **named}.items():
        if d.knobs[knob] not in options:
            raise DesignError(
                f"{d.source}: {knob}={d.knobs[knob]} is a design the library does "
                f"not implement (it implements {knob}={' or '.join(options)})"
            )
    if d.knobs["on_absent"] == "rerecord" and d.status_read:
        raise DesignError(
            f"{d.source}: on_absent=rerecord needs an edge RECONCILING -> RECORDED "
            "the log contract does not have; the library implements dead_letter"
        )
    return d


def from_doc(doc: Mapping[str, Any], digest: str) -> Design:
    """The design a log stores (`Design.doc`), checked against the `digest` stored beside
    it (DesignError if the two disagree: the row was altered)."""
    from toolcommit.model.environment import profile

    try:
        w, d, lifetime = doc["timing"]
        env = str(doc["environment"])
        design = Design(
            str(doc["source"]),
            env,
            str(doc["guarantee"]),
            {str(k): str(v) for k, v in doc["knobs"].items()},
            _f(w),
            _f(d),
            _f(lifetime),
            {str(k): str(v) for k, v in doc["provider"].items()},
            _wire(doc["wire"]) if "wire" in doc else profile(env).wire,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise DesignError(f"the design the log stores cannot be read ({e})") from None
    if design.digest != digest:
        raise DesignError(
            f"the design the log stores (digest {design.digest}) is not the one it names "
            f"(digest {digest}): its design row was altered"
        )
    return design


def read(provider: Union[str, os.PathLike[str]]) -> Design:
    """The `Design` of a shipped profile's name or a design file's path, every knob of the
    file kept, whether the library implements it or not (what ``validate --design`` checks a
    log against); DesignError for an unknown name or an unreadable file."""
    from toolcommit.model import timing
    from toolcommit.model.design_file import design_of
    from toolcommit.model.environment import profile
    from toolcommit.runtime.provider import follow

    try:
        doc, source = _read_doc(follow(os.fspath(provider)))
    except DesignError:
        raise
    except ToolcommitError as e:  # a provider file that names no design proven for it
        raise DesignError(str(e)) from None
    try:
        design, env = design_of(doc)
    except ToolcommitError as e:
        raise DesignError(f"{source}: {e}") from None
    assumptions = {
        **profile(env).assumptions,
        **{
            k: v
            for k, v in doc.get("assumes", {}).get("environment", {}).items()
            if isinstance(v, str)
        },
    }
    env_time = {**profile(env).timing}
    for k, v in doc.get("assumes", {}).get("environment", {}).items():
        if k in ("delay_bound", "key_lifetime"):
            env_time[k] = timing.seconds(v)
    w = timing.seconds(design.get("replay_window", "unbounded"))
    return Design(
        source,
        env,
        str(doc.get("guarantee", "")),
        {k: design[k] for k in design if k in IMPLEMENTS or k in doc.get("knobs", {})},
        None if w is None else float(w),
        _f(env_time.get("delay_bound")),
        _f(env_time.get("key_lifetime")),
        assumptions,
        profile(env).wire,
    )


def _wire(raw: Optional[Mapping[str, Any]]) -> Optional["Wire"]:
    """The wire a log stores for a provider file's design (None: it names none)."""
    from toolcommit.model.environment import Wire

    if raw is None:
        return None
    return Wire(str(raw["key_header"]), tuple(str(h) for h in raw["hosts"]), None, "")


def _f(v: Optional[float]) -> Optional[float]:
    return None if v is None else float(v)
