"""The design vocabulary: what a design chooses (every knob, then the design's own timing
params), the guarantees, and how a design departs from naive.

Pure and light (spec and model only), so the runtime, the design search and the checker
share one home for it.

>>> "insert" in knob_names() and departures(preset_design("naive")) == []
True
>>> guarantee_of(["I1", "I1net", "P1", "P3", "OWN", "VISIBLE"]), guarantee_of(["I1"])
('at-most-once', None)
"""

from __future__ import annotations

from typing import Optional

from toolcommit.model import timing
from toolcommit.model.knobs import preset
from toolcommit.spec import protocol

# the design's own timing params (spec `timing`, of: design): part of a design like a knob
DESIGN_TIMING = tuple(n for n, p in timing.params().items() if p["of"] == "design")


def knob_names() -> tuple[str, ...]:
    """The knobs, then the design's timing params: what a design chooses."""
    return tuple(protocol().knobs) + DESIGN_TIMING


def preset_design(name: str) -> dict:
    """Preset `name` as a design: every knob's option and every design timing param shown."""
    cfg = preset(name)
    return {**cfg.knobs, **{t: timing.show(cfg.timing[t], t) for t in DESIGN_TIMING}}


def options_of(k: str) -> tuple[str, ...]:
    """A knob's options, or a timing param's values among the presets (naive's first)."""
    if k in protocol().knobs:
        return tuple(protocol().knobs[k].options)
    return tuple(dict.fromkeys(preset_design(p)[k] for p in ("naive", "seed", "recommended")))


def meaning_of(k: str, option: str) -> str:
    """What choosing `option` for `k` means, in the spec's words."""
    if k in protocol().knobs:
        return protocol().knobs[k].options[option]
    spec = timing.params()[k]
    return f"{spec['symbol']} = {option}: {spec['meaning']}"


def guarantees() -> list[tuple[str, tuple[str, ...]]]:
    """(name, required properties) of every guarantee, strongest first."""
    raw = protocol().raw["guarantees"]
    return [(g, tuple(v["requires"])) for g, v in raw.items() if g != "about"]


def guarantee_of(props) -> Optional[str]:
    """The strongest guarantee whose properties `props` include (None if none)."""
    return next((g for g, req in guarantees() if set(req) <= set(props)), None)


def departures(design: dict) -> list[str]:
    """The choices of `design` that differ from naive's, in knob_names() order."""
    naive = preset_design("naive")
    return [k for k in knob_names() if design[k] != naive[k]]
