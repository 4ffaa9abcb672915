"""Refinement: is every logged step one the claimed design allows, knob by knob?

`toolcommit validate --design FILE` checks a log against the design it claims to run (TLA+
trace validation checks a trace against the spec the team wrote). This module is the pure
core: a design's knobs (`Claim`) and one key's lines in chain order (`Line`) in, a
`Departure` (the knob, the step the design expected, the line) and the design's paths the
key exercised out (`judge_key`); `judge_epochs` judges a re-ask's epoch across an intent's
keys. Reading the log and ordering each key's chain is `toolcommit.checker.logs.refinement`.

The steps are told apart by the ``reason`` the library writes (`spec/log-design.json`):
a line whose reason is missing (a log from another runtime, a derived trace) is judged under
every reading it allows; when some readings depart and others do not, the finding is
*possible* and names what is missing. The replay window and the delay bound are measured by
the writer's ``ts`` stamps: those findings rest on its clock (`Departure.clock`), with
`CLOCK_SLACK` either way, because a line is stamped just after the store decided.

Rules (the design's step at each point of a key's chain)
-------------------------------------------------------
``on_unknown``   leaving UNKNOWN: ``replay_then_reconcile`` a replay under the same key while
                 the replay window is open, else a sealed status read; ``reconcile`` a sealed
                 read; ``dead_letter`` UNKNOWN -> DEAD_LETTER. From a sealed read, a status
                 read settles it (``status_read=yes``) or it is given up unread (``no``); a
                 replay's answer ends a replay only.
``replay_window`` a replay more than W after the key's first send departs (clock).
``delay_bound``  where the design replays, a status read less than D after the key's last
                 send (a dispatch, a missed answer, a replay, a takeover) departs (clock).
``on_absent``    an "absent" read: DEAD_LETTER (``dead_letter``) or RECORDED (``rerecord``).
``fencing``      ``on``: a replay or seal bumps the fence, and every applied effect carries
                 one; ``off``: no effect carries one.
``epoch``        ``per_intent``: a new epoch of an intent only after its previous attempt
                 was given up; ``none``: one epoch per intent.
``on_ack``       ``record``: an answer is ACKED; ``discard``: DISPATCHED -> ACKED departs.
``lease``        ``none``: no record is taken over for an expired lease.

The other knobs are listed as checked by the generic properties (`GENERIC`), not visible in
a log (`HIDDEN`), or not checked (an option or a knob this module has no rule for, such as
one added to the model after it).

Limitations
-----------
The window and the bound compare stamps of one key's lines, which after a takeover come from
two writers' clocks: skew beyond `CLOCK_SLACK` can make a finding (it cites both lines). A
replay's missed answer writes no line, so D is measured from the replay's start: a read the
log shows too early was early; one it shows in time may still have been early by the length
of the replay.

Examples
--------
>>> c = Claim("email", "email", "at-most-once", {"on_unknown": "reconcile"}, {}, None, None)
>>> t = lambda seq, frm, to, reason=None: Line("transition", "w1", seq, "a.jsonl", seq,
...                                            frm=frm, to=to, reason=reason)
>>> d, _ = judge_key(c, "k1", [t(1, "PROPOSED", "RECORDED"), t(2, "RECORDED", "DISPATCHED"),
...                           t(3, "DISPATCHED", "UNKNOWN"),
...                           t(4, "UNKNOWN", "RECONCILING", "replay under the same key")])
>>> d.knob, d.line.line, d.certainty
('on_unknown', 4, 'certain')
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from importlib import resources
from typing import Mapping, NamedTuple, Optional, Sequence

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


# ----- one key ---------------------------------------------------------------------------------
@dataclass
class _Key:
    """What the rules remember along one key's chain."""

    first_send: Optional[float] = None
    last_send: Optional[float] = None
    clock_lost: bool = False  # a send line without ts: the timing cannot be measured
    entered: str = ""  # how RECONCILING was entered: replay | seal | ""
    fence: int = 0
    hits: list = field(default_factory=list)


def judge_key(
    claim: Claim, key: str, lines: Sequence[Line]
) -> tuple[Optional[Departure], list[tuple[str, Line]]]:
    """The first departure of `key`'s chain (its transitions in chain order, then its
    effects) from `claim`, if any, and the (path, line) hits of the design's paths before it."""
    st = _Key()
    for i, ln in enumerate(lines):
        if ln.type == "effect":
            d = _effect(claim, key, ln)
        elif ln.type == "transition":
            d = _transition(claim, key, st, ln)
        else:
            continue
        if d is not None:
            return _with_story(d, lines[: i + 1]), st.hits
    return None, st.hits


def _with_story(d: Departure, lines: Sequence[Line]) -> Departure:
    return Departure(
        d.key,
        d.knob,
        d.option,
        d.expected,
        d.found,
        d.line,
        d.certainty,
        d.clock,
        tuple(x for x in lines if x.type == "transition")
        + ((d.line,) if d.line.type != "transition" else ()),
    )


def _transition(claim: Claim, key: str, st: _Key, ln: Line) -> Optional[Departure]:
    """Judge `ln` under each reading it allows: allowed under all, it is a step of the
    design; under none, a departure; under some, a possible one naming what is missing."""
    reads = readings(ln)
    verdicts = [_step(claim, key, st, ln, k) for k in reads]
    departs = [v for v in verdicts if v is not None]
    if not departs:
        _advance(claim, st, ln, reads)
        return None
    d = departs[0]
    if len(departs) == len(verdicts):
        return d
    return Departure(
        key,
        d.knob,
        d.option,
        f"{d.expected}; the line carries no reason that tells "
        f"{' from '.join(_words(k) for k in reads)}",
        ln.text(),
        ln,
        "possible",
        d.clock,
    )


def _words(kind: str) -> str:
    return {
        "replay": "a replay under the same key",
        "seal": "a sealed status read",
        "replay_answered": "a replay's answer",
        "read_present": "a status read",
        "read_absent": "an 'absent' read",
        "give_up": "a give-up",
    }.get(kind, kind)


def _advance(claim: Claim, st: _Key, ln: Line, reads) -> None:
    """Note what the step means for later ones (a send, how RECONCILING was entered) and,
    when it is told apart, count its paths."""
    kind = reads[0] if len(reads) == 1 else ""
    if kind in ("dispatch", "unknown", "replay", "takeover_restart", "takeover_lease"):
        if ln.ts is None:
            st.clock_lost = True
        else:
            st.last_send = ln.ts if st.last_send is None else max(st.last_send, ln.ts)
            if kind == "dispatch" and st.first_send is None:
                st.first_send = ln.ts
    if ln.frm == "UNKNOWN" and ln.to == "RECONCILING":
        st.entered = kind
    if ln.fence is not None:
        st.fence = max(st.fence, ln.fence)
    if kind in ("", "other"):
        return
    if kind in ("read_present", "read_absent"):
        if st.entered == "replay":
            st.hits.append(("replay_unanswered", ln))
        if (
            claim.replays
            and claim.delay_bound is not None
            and ln.ts is not None
            and st.last_send is not None
            and not st.clock_lost
            and ln.ts - st.last_send >= claim.delay_bound
        ):
            st.hits.append(("read_after_delay_bound", ln))
    st.hits.append((kind, ln))


def _step(claim: Claim, key: str, st: _Key, ln: Line, kind: str) -> Optional[Departure]:
    """The departure of `ln` read as `kind`, or None if the design allows it."""
    if kind == "answered" and claim.knobs.get("on_ack") == "discard":
        return _dep(
            claim,
            key,
            "on_ack",
            "no move: the answer is dropped and the record stays DISPATCHED until a status read",
            ln,
        )
    if kind == "takeover_lease" and claim.knobs.get("lease") == "none":
        return _dep(claim, key, "lease", "no takeover: a record has no lease to expire", ln)
    if ln.frm == "UNKNOWN" and ln.to != "UNKNOWN":
        return _from_unknown(claim, key, st, ln, kind)
    if ln.frm == "RECONCILING":
        return _from_reconciling(claim, key, st, ln, kind)
    return None


def _dep(
    claim: Claim,
    key: str,
    knob: str,
    expected: str,
    ln: Line,
    found: str = "",
    clock: bool = False,
    certainty: str = "certain",
) -> Departure:
    return Departure(
        key, knob, option(claim, knob), expected, found or ln.text(), ln, certainty, clock
    )


def option(claim: Claim, name: str) -> str:
    """`name`'s option in `claim`: a knob's, a timing's (W or D, as a duration) or an
    assumption's of the environment (``status_read``)."""
    if name in claim.knobs:
        return str(claim.knobs[name])
    if name in ("replay_window", "delay_bound"):
        v = getattr(claim, name)
        return "unbounded" if v is None else _dur(v)
    return str(claim.assumptions.get(name, "?"))


def _dur(s: float) -> str:
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n and s % n == 0:
            return f"{int(s // n)}{unit}"
    return f"{s:g}s"


def _from_unknown(claim: Claim, key: str, st: _Key, ln: Line, kind: str) -> Optional[Departure]:
    if not claim.checks("on_unknown"):
        return None
    policy = claim.knobs["on_unknown"]
    if policy == "dead_letter":
        return (
            None
            if kind == "give_up"
            else _dep(claim, key, "on_unknown", "UNKNOWN -> DEAD_LETTER (parked unread)", ln)
        )
    if kind not in ("replay", "seal"):
        return _dep(claim, key, "on_unknown", _expected_unknown(claim), ln)
    if (
        claim.checks("fencing")
        and claim.knobs["fencing"] == "on"
        and (ln.fence is None or ln.fence <= st.fence)
    ):
        return _dep(
            claim,
            key,
            "fencing",
            f"UNKNOWN -> RECONCILING with the fence bumped past {st.fence}",
            ln,
        )
    if policy == "reconcile":
        return (
            None
            if kind == "seal"
            else _dep(
                claim,
                key,
                "on_unknown",
                "UNKNOWN -> RECONCILING, sealed for a status read (this design never replays)",
                ln,
                f"a replay under the same key ({ln.text()})",
            )
        )
    opened = _window(claim, st, ln)
    if opened is None:
        return _dep(
            claim,
            key,
            "replay_window",
            "a replay within W of the first send, then a "
            "sealed read; the lines carry no ts to measure W by",
            ln,
            clock=True,
            certainty="possible",
        )
    if kind == "replay" and opened == "closed":
        return _dep(
            claim,
            key,
            "replay_window",
            "no replay once W = "
            f"{option(claim, 'replay_window')} since the first send has passed: a "
            "sealed status read",
            ln,
            f"a replay {_dur(round(ln.ts - st.first_send))} after the first send",
            clock=True,
        )
    if kind == "seal" and opened == "open":
        return _dep(
            claim,
            key,
            "on_unknown",
            "a replay under the same key: the replay window "
            f"(W = {option(claim, 'replay_window')}) is open",
            ln,
            f"a sealed status read, not a replay ({ln.text()})",
            clock=claim.replay_window is not None,
        )
    return None


def _expected_unknown(claim: Claim) -> str:
    if claim.replays:
        return (
            "UNKNOWN -> RECONCILING: a replay under the same key within the replay window, "
            "else a sealed status read"
        )
    return "UNKNOWN -> RECONCILING, sealed for a status read"


def _window(claim: Claim, st: _Key, ln: Line) -> Optional[str]:
    """Whether the replay window was ``open`` or ``closed`` at `ln` by the writer's clock,
    ``either`` within `CLOCK_SLACK` of W (both steps are then the design's), None when the
    lines carry no ts to tell."""
    w = claim.replay_window
    if w is None:
        return "open"
    if ln.ts is None or st.first_send is None or st.clock_lost:
        return None
    age = ln.ts - st.first_send
    if age < w - CLOCK_SLACK:
        return "open"
    return "closed" if age > w + CLOCK_SLACK else "either"


def _from_reconciling(claim: Claim, key: str, st: _Key, ln: Line, kind: str) -> Optional[Departure]:
    if not claim.checks("on_unknown") or claim.knobs["on_unknown"] == "dead_letter":
        return None
    if kind == "replay_answered":
        return (
            None
            if st.entered in ("replay", "")
            else _dep(
                claim, key, "on_unknown", "a status read: no replay was sent from this seal", ln
            )
        )
    if kind in ("read_present", "read_absent", "rerecord"):
        return _read(claim, key, st, ln, kind)
    if kind == "give_up" and claim.reads:
        return _dep(
            claim,
            key,
            "on_unknown",
            "a status read once no request of the key can still arrive, never a give-up unread",
            ln,
        )
    if kind == "compensate":
        return _dep(claim, key, "on_unknown", "a status read, never a reversal", ln)
    return None


def _read(claim: Claim, key: str, st: _Key, ln: Line, kind: str) -> Optional[Departure]:
    if not claim.reads:
        return _dep(
            claim,
            key,
            "status_read",
            "RECONCILING -> DEAD_LETTER given up unread: the provider offers no status read",
            ln,
        )
    absent = kind != "read_present"
    if absent and claim.checks("on_absent"):
        want = "DEAD_LETTER" if claim.knobs["on_absent"] == "dead_letter" else "RECORDED"
        if ln.to != want:
            return _dep(claim, key, "on_absent", f"RECONCILING -> {want} on an 'absent' read", ln)
    if not (claim.replays and claim.delay_bound is not None):
        return None
    d = claim.delay_bound
    if ln.ts is None or st.last_send is None or st.clock_lost:
        return _dep(
            claim,
            key,
            "delay_bound",
            f"a status read once D = {_dur(d)} has passed "
            "since the key's last send; the lines carry no ts to measure D by",
            ln,
            clock=True,
            certainty="possible",
        )
    waited = ln.ts - st.last_send
    if waited < d - CLOCK_SLACK:
        return _dep(
            claim,
            key,
            "delay_bound",
            f"no status read until D = {_dur(d)} after the "
            "key's last send (a request may still land)",
            ln,
            f"a read {waited:.3g} s after the last send ({ln.text()})",
            clock=True,
        )
    return None


def _effect(claim: Claim, key: str, ln: Line) -> Optional[Departure]:
    if ln.kind != "apply" or not claim.checks("fencing"):
        return None
    fenced = bool(ln.fence)
    if claim.knobs["fencing"] == "on" and not fenced:
        return _dep(
            claim,
            key,
            "fencing",
            "every request carries the key's fence",
            ln,
            f"an effect applied without a fence ({ln.text()})",
        )
    if claim.knobs["fencing"] == "off" and fenced:
        return _dep(
            claim,
            key,
            "fencing",
            "no fence is sent",
            ln,
            f"an effect applied under fence {ln.fence}",
        )
    return None


# ----- epochs across an intent's keys -------------------------------------------------------
def judge_epochs(
    claim: Claim, accepted: Sequence[tuple[str, int, str, Line]], final: Mapping[str, str]
) -> tuple[list[Departure], list[tuple[str, Line]]]:
    """Departures of the ``epoch`` knob and the ``new_epoch`` hits: `accepted` holds
    (intent, epoch, key, proposal line) of the accepted proposals that name an epoch;
    `final` each key's last chain state."""
    if not claim.checks("epoch"):
        return [], []
    out, hits = [], []
    by_intent: dict[str, dict[int, tuple[str, Line]]] = {}
    for intent, epoch, key, ln in accepted:
        by_intent.setdefault(intent, {}).setdefault(epoch, (key, ln))
    for epochs in by_intent.values():
        order = sorted(epochs)
        for before, after in zip(order, order[1:]):
            key, ln = epochs[after]
            prev_key = epochs[before][0]
            if claim.knobs["epoch"] == "none":
                out.append(
                    _dep(
                        claim,
                        key,
                        "epoch",
                        f"the re-ask is the first attempt's key "
                        f"{prev_key} (one epoch per intent): a duplicate",
                        ln,
                    )
                )
            elif final.get(prev_key) not in GAVE_UP:
                out.append(
                    _dep(
                        claim,
                        key,
                        "epoch",
                        f"a new epoch only after the previous "
                        f"attempt ({prev_key}, epoch {before}) was given up; it is "
                        f"{final.get(prev_key, 'not settled')}",
                        ln,
                    )
                )
            else:
                hits.append(("new_epoch", ln))
    return out, hits


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
