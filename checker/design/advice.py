"""What to build, in one clause list a reader can act on: a design's choices read through the
`act` words of `spec/protocol.json` (each option as an instruction), with the design's
replay window and the environment's key lifetime filled in.

Pure: reads the spec, the profile and the design dict; the renderers of `design` and `ask`
put the result in their opening sentence.

Examples
--------
>>> from toolcommit.model.design import preset_design
>>> advice({**preset_design("recommended"), "on_unknown": "replay_then_reconcile"}, "stripe")
"send the record's semantic key as the idempotency key, turn the SDK's automatic retries off; on an unknown outcome replay under the same key within W = 1h (keys kept 24h), then reconcile by listing the parent object's children (a charge's refunds) and give up visibly if nothing is there; hold a new request for the same thing until an earlier one settles, then answer it with that outcome"
"""

from __future__ import annotations

from toolcommit.model import timing
from toolcommit.model.environment import held_fixed
from toolcommit.spec import protocol

FIRST = ("idempotency_key", "sdk_retries")  # what every request carries, then
OUTCOME = "on_unknown"  # what meets an unknown outcome
LAST = ("reask",)  # what meets the user's next request


def act(knob: str, option: str) -> str:
    """The option as an instruction ('' when there is nothing to do, or `knob` is not a
    knob: an assumption a question's row sets, say)."""
    return protocol().raw["knobs"].get(knob, {}).get("act", {}).get(option, "")


def _words(design: dict, env: str, given: dict) -> dict:
    fixed = {**held_fixed(env), **given}
    window = design.get("replay_window") or timing.params()["replay_window"]["default"]
    lifetime = fixed.get("key_lifetime", timing.params()["key_lifetime"]["default"])
    read = protocol().raw["assumptions"]["status_read"]["act"][fixed.get("status_read", "yes")]
    via, absent = act("status_via", design["status_via"]), act("on_absent", design["on_absent"])
    return {
        "W": window,
        "L": lifetime,
        "via": via,
        "absent": absent,
        "settle": read.format(via=via, absent=absent),
    }


def advice(design: dict, env: str, given: dict | None = None) -> str:
    """The design's instructions: what each request carries, then what meets an unknown
    outcome (with the window, the key's lifetime, the status read and the give-up), then
    what meets the user's next request, in environment `env` with the settings `given`
    changed (`design --set`)."""
    words = _words(design, env, dict(given or {}))
    first = ", ".join(x for x in (act(k, design[k]) for k in FIRST) if x)
    then = act(OUTCOME, design[OUTCOME]).format(**words)
    last = ", ".join(x for x in (act(k, design[k]) for k in LAST if k in design) if x)
    return "; ".join(x for x in (first, then, last) if x)
