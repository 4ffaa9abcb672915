"""Refinement: is every logged step one the claimed design allows, knob by knob?

`toolcommit validate --design FILE` checks a log against the design it claims to run (TLA+
trace validation checks a trace against the spec the team wrote). This module is the pure
core: a design's knobs (`Claim`) and one key's lines in chain order (`Line`) in, a
`Departure` (the knob, the step the design expected, the line) and the design's paths the
key exercised out (`judge_key`); `judge_epochs` judges a re-ask's epoch across an intent's
keys. Those terms, and how a transition is read, are `toolcommit.checker.logs.claim`;
reading the log and ordering each key's chain is `toolcommit.checker.logs.refinement`.

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

from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from toolcommit.checker.logs.claim import (
    CLOCK_SLACK,
    GAVE_UP,
    Claim,
    Departure,
    Line,
    duration,
    option,
    readings,
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
            f"a replay {duration(round(ln.ts - st.first_send))} after the first send",
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
            f"a status read once D = {duration(d)} has passed "
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
            f"no status read until D = {duration(d)} after the "
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
