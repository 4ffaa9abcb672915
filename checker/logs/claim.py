"""The terms `refine` judges a log in: the design a log claims to run (`Claim`), one logged
line of a key as the rules read it (`Line`), a step the design does not allow
(`Departure`), what a transition may be (`kinds`, by the ``reason`` the library writes:
`spec/log-design.json`), each knob classified by how a log can show it (`knob_classes`)
and the design's paths (`paths`) for coverage. Pure: values in, values out.

Examples
--------
>>> c = Claim("stripe", "stripe", "exactly-once", {"on_unknown": "replay_then_reconcile"},
...           {}, 3600.0, 900.0)
>>> option(c, "replay_window"), option(c, "delay_bound"), c.replays
('1h', '15m', True)
>>> kinds("RECONCILING", "DEAD_LETTER", None)
('read_absent', 'give_up')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from importlib import resources
from typing import Mapping, NamedTuple, Optional

CLOCK_SLACK = 1.0  # seconds a clock judgement allows either way (a line's stamp lags)
GAVE_UP = ("DEAD_LETTER", "COMPENSATED", "REJECTED_CONFLICT")

#: knob -> the options this module has rules for
RULES = {
    "on_unknown": ("reconcile", "replay_then_reconcile", "dead_letter"),
    "on_absent": ("dead_letter", "rerecord"),
    "fencing": ("on", "off"),
    "epoch": ("none", "per_intent"),
    "on_ack": ("record", "discard"),
    "lease": ("expiring", "none"),
}
#: knob -> the generic findings of `validate` that judge it
GENERIC = {
    "dedupe_by": "CANON",
    "canonicalizer": "CANON",
    "insert": "RACE",
    "dispatch_guard": "RACE, P3",
    "reaccept": "RACE, LEGAL",
    "late_replay": "RACE, LEGAL",
    "cancel_api": "P3",
    "on_restart": "P4, UNSETTLED",
}
#: knob -> why a log cannot show it
HIDDEN = {
    "sdk_retries": "an SDK's own re-sends reach the provider, not the log",
    "status_via": "a read's line does not say where it looked",
    "idempotency_key": "a line does not carry what was sent on the wire",
    "revision": "a proposal does not say which version of a prompt it came from",
    "intent_id": "a scope's request id is the runtime's: a re-ask looks like a new request",
}


@lru_cache(maxsize=1)
def spec() -> dict:
    """`spec/log-design.json`: the reasons and the paths."""
    return json.loads(
        resources.files("toolcommit.spec").joinpath("log-design.json").read_text("utf-8")
    )


def reason(name: str) -> str:
    return spec()["reasons"][name]


@dataclass(frozen=True)
class Claim:
    """The design a log claims to run: knobs (and timing params) by name, the environment's
    assumptions, the replay window W and the delay bound D (seconds; None = unbounded)."""

    source: str
    environment: str
    guarantee: str
    knobs: Mapping[str, str]
    assumptions: Mapping[str, str]
    replay_window: Optional[float]
    delay_bound: Optional[float]

    @property
    def reads(self) -> bool:
        """Whether an unknown outcome is settled by a status read."""
        return (
            self.assumptions.get("status_read", "yes") == "yes"
            and self.knobs.get("on_unknown") != "dead_letter"
        )

    @property
    def replays(self) -> bool:
        return self.knobs.get("on_unknown") == "replay_then_reconcile"

    def facts(self) -> dict[str, str]:
        """What a path's ``when`` is matched against."""
        return {
            **self.assumptions,
            **self.knobs,
            "settles_by_read": _yes(self.reads),
            "replays": _yes(self.replays),
            "delay_bound": "unbounded" if self.delay_bound is None else "bounded",
        }

    def checks(self, knob: str) -> bool:
        return self.knobs.get(knob) in RULES.get(knob, ())


def _yes(b: bool) -> str:
    return "yes" if b else "no"


class Line(NamedTuple):
    """One logged line of a key, as the rules read it (``type``: proposal, transition or
    effect; `ts` the writer's stamp in seconds, None if it wrote none)."""

    type: str
    writer: str
    seq: int
    file: str
    line: int
    ts: Optional[float] = None
    frm: Optional[str] = None
    to: Optional[str] = None
    fence: Optional[int] = None
    reason: Optional[str] = None
    decision: Optional[str] = None
    epoch: Optional[int] = None
    kind: Optional[str] = None  # an effect's: apply or compensate

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def text(self) -> str:
        if self.type == "proposal":
            return f"proposal -> {self.decision}" + (
                "" if self.epoch is None else f" (epoch {self.epoch})"
            )
        if self.type == "effect":
            return f"effect {self.kind}" + ("" if self.fence is None else f" fence {self.fence}")
        fx = "" if self.fence is None else f" (fence {self.fence})"
        why = f" [{self.reason}]" if self.reason else ""
        return f"{self.frm} -> {self.to}{fx}{why}"


@dataclass(frozen=True)
class Departure:
    """A logged step the design does not allow: `knob` (its option in `option`), the step
    the design expected, what the log shows at `line`; `certainty` "possible" when the
    line lacks what tells (named in `expected`); `clock` when it rests on the writer's ts."""

    key: str
    knob: str
    option: str
    expected: str
    found: str
    line: Line
    certainty: str = "certain"
    clock: bool = False
    story: tuple[Line, ...] = ()

    def explanation(self, source: str) -> str:
        clock = (
            f"; this rests on the writer's clock (its ts stamps, {CLOCK_SLACK:g} s slack)"
            if self.clock
            else ""
        )
        if self.certainty != "certain":
            return (
                f"{self.knob}={self.option} of {source}: the log cannot tell whether "
                f"{self.found} at {self.line.where} is a step of the design: "
                f"{self.expected}{clock}"
            )
        return (
            f"{self.knob}={self.option} of {source}: the design's step here: "
            f"{self.expected}; the log shows {self.found} at {self.line.where}{clock}"
        )

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "knob": self.knob,
            "option": self.option,
            "expected": self.expected,
            "found": self.found,
            "file": self.line.file,
            "line": self.line.line,
            "certainty": self.certainty,
            "clock": self.clock,
        }


# ----- reading a transition --------------------------------------------------------------------
def readings(ln: Line) -> tuple[str, ...]:
    """The step kinds a transition may be (several when its reason is missing)."""
    return kinds(ln.frm, ln.to, ln.reason)


@lru_cache(maxsize=4096)
def kinds(frm: str, to: str, r: Optional[str]) -> tuple[str, ...]:
    """`readings` of a transition from `frm` to `to` with reason `r`."""
    pair = (frm, to)
    if pair == ("DISPATCHED", "UNKNOWN"):
        if r and r.startswith(reason("takeover_restart")):
            return ("takeover_restart",)
        if r and r.startswith(reason("takeover_lease")):
            return ("takeover_lease",)
        return ("unknown",)
    if pair == ("UNKNOWN", "RECONCILING"):
        return _by_reason(r, {"replay": "replay", "seal": "seal"})
    if pair == ("RECONCILING", "ACKED"):
        return _by_reason(r, {"replay_answered": "replay_answered", "present": "read_present"})
    if pair == ("RECONCILING", "DEAD_LETTER"):
        if r is None:
            return ("read_absent", "give_up")
        return ("read_absent",) if r == reason("absent") else ("give_up",)
    if pair == ("RECONCILING", "RECORDED"):
        return ("rerecord",)
    return (
        {
            ("RECORDED", "DISPATCHED"): "dispatch",
            ("DISPATCHED", "ACKED"): "answered",
            ("UNKNOWN", "DEAD_LETTER"): "give_up",
            ("UNKNOWN", "COMPENSATED"): "compensate",
            ("RECONCILING", "COMPENSATED"): "compensate",
            ("RECORDED", "REJECTED_CONFLICT"): "cancel",
        }.get(pair, "other"),
    )


def _by_reason(r: Optional[str], by: dict[str, str]) -> tuple[str, ...]:
    for name, kind in by.items():
        if r == reason(name):
            return (kind,)
    return tuple(by.values())


def plain(claim: Claim, pairs) -> bool:
    """Whether no rule can find a departure in a chain of these (from, to) transitions
    without effects: no outcome in doubt in it (nothing reaches UNKNOWN or RECONCILING,
    the only states whose exits the design constrains), and an answer is one the design
    records (`on_ack`). Its paths are then counted by `kinds` alone."""
    return claim.knobs.get("on_ack") != "discard" and not any(
        to in ("UNKNOWN", "RECONCILING", "RECORDED") and frm != "PROPOSED" for frm, to in pairs
    )


def option(claim: Claim, name: str) -> str:
    """`name`'s option in `claim`: a knob's, a timing's (W or D, as a duration) or an
    assumption's of the environment (``status_read``)."""
    if name in claim.knobs:
        return str(claim.knobs[name])
    if name in ("replay_window", "delay_bound"):
        v = getattr(claim, name)
        return "unbounded" if v is None else duration(v)
    return str(claim.assumptions.get(name, "?"))


def duration(s: float) -> str:
    """`s` seconds as the design file writes a duration (``1h``, ``15m``, ``90s``)."""
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{int(s // n)}{unit}"
    return f"{s:g}s"


# ----- the knobs, classified ---------------------------------------------------------------------
def knob_classes(claim: Claim) -> dict:
    """Each knob (and timing the log can show) of `claim`: ``checked`` by this module's
    rules, ``generic`` (knob -> the findings that judge it), ``hidden`` (knob -> why the log
    cannot show it), ``unchecked`` (knob=option: no rule for it here)."""
    out: dict = {"checked": [], "generic": {}, "hidden": {}, "unchecked": []}
    for knob, opt in claim.knobs.items():
        if knob in RULES and opt in RULES[knob]:
            out["checked"].append(f"{knob}={opt}")
        elif knob in GENERIC:
            out["generic"][knob] = GENERIC[knob]
        elif knob in HIDDEN:
            out["hidden"][knob] = HIDDEN[knob]
        elif knob != "replay_window":
            out["unchecked"].append(f"{knob}={opt}")
    out["checked"].append(f"status_read={option(claim, 'status_read')}")
    if claim.replays:
        out["checked"] += [
            f"replay_window={option(claim, 'replay_window')} (clock)",
            f"delay_bound={option(claim, 'delay_bound')} (clock)",
        ]
    return out


# ----- coverage ----------------------------------------------------------------------------------
def paths(claim: Claim) -> list[dict]:
    """The paths of `spec/log-design.json` that are the design's (their ``when`` holds), each
    with its meaning filled in from the design's options."""
    facts = claim.facts()
    shown = {**facts, "delay_bound": option(claim, "delay_bound")}
    out = []
    for p in spec()["paths"]:
        if all(facts.get(k) in v for k, v in p["when"].items()):
            out.append(
                {
                    "name": p["name"],
                    "meaning": p["meaning"].format_map(_Blank(shown)),
                    "clock": bool(p.get("clock")),
                }
            )
    return out


class _Blank(dict):
    def __missing__(self, k: str) -> str:
        return "?"


@lru_cache(maxsize=4096)  # the lines of one decision share a stamp
def parse_ts(ts: Optional[str]) -> Optional[float]:
    """An RFC 3339 stamp in seconds since the epoch (None if absent or unreadable: a clock
    judgement then says what is missing)."""
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
