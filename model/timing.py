"""Time, as little as the questions need (`spec/protocol.json`, `timing`).

Three numbers: the provider's key lifetime L and the network's delay bound D (the
environment's), and the runtime's replay window W (the design's). The model has no clock:
it reads the numbers only through the order they impose on events, which is all the
protocol's questions turn on (TLA+'s ASSUME, one per relation):

- W < L: every send the window allows comes before the key can be pruned, so `expire_key`
  waits for the key's window to close (`close_window`);
- W + D < L: every request sent in the window has arrived (or never will) before the key
  can be pruned, so `expire_key` also waits until no request of the key is on its way;
- D finite: a design that waits D after its last send knows no request of the key can
  still arrive (`replay_then_reconcile` reads only then).

A design that never re-sends under a key has an effective window of zero (W_eff = 0): its
one send is the first. This is an over-approximation of real time (a finer clock would
also order different keys' windows against each other): every timed run is a run of the
model, so a HOLDS carries over; a counterexample respects every relation above.

Lease expiry stays untimed: a process pause (GC, a stalled VM) can outlast any lease term,
so from the holder's side its lease can end between any two of its steps.

Examples
--------
>>> seconds("15m"), seconds("24h"), seconds("forever")
(900, 86400, None)
>>> show(None, "key_lifetime"), show(3600, "replay_window")
('forever', '1h')
>>> Relations(window=3600, delay=900, lifetime=86400).text()
'W + D < L (replay_window=1h, delay_bound=15m, key_lifetime=24h)'
>>> seconds("soon")
Traceback (most recent call last):
...
toolcommit.model.errors.UsageError: duration 'soon' is not a number with a unit (30s, 15m, 1h, 24h, 2d) or forever / unbounded
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

from toolcommit.spec import protocol

from .errors import UsageError

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
ENDLESS = ("forever", "unbounded")


def params() -> Mapping[str, Mapping]:
    return protocol().raw["timing"]["params"]


def seconds(text: str) -> Optional[int]:
    """A duration in seconds; None for forever / unbounded; UsageError otherwise."""
    t = str(text).strip().lower()
    if t in ENDLESS:
        return None
    m = re.fullmatch(r"([0-9]{1,9})\s*([smhd])", t)  # ASCII digits: "٣٠s" is no duration
    if not m:
        raise UsageError(
            f"duration {text!r} is not a number with a unit (30s, 15m, 1h, 24h, 2d) "
            "or forever / unbounded"
        )
    return int(m.group(1)) * UNITS[m.group(2)]


def show(value: Optional[int], name: str = "") -> str:
    """A duration as written in the spec: the largest whole unit, or the param's endless word."""
    if value is None:
        return params()[name]["default"] if name in params() else "unbounded"
    if value == 0:
        return "0s"
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if value % n == 0 and (unit != "d" or value >= 2 * n):  # 24h, not 1d
            return f"{value // n}{unit}"
    return f"{value}s"


def defaults(preset_name: str = "") -> dict[str, Optional[int]]:
    """Every timing param at its default, the design's at the preset's value."""
    out = {}
    for name, spec in params().items():
        out[name] = seconds(
            spec.get(preset_name, spec["default"]) if spec["of"] == "design" else spec["default"]
        )
    return out


def check_param(name: str, value: str) -> Optional[int]:
    """`value` parsed for param `name` (UsageError naming the params if it is not one)."""
    if name not in params():
        raise UsageError(f"unknown timing parameter {name!r}; valid: {', '.join(params())}")
    return seconds(value)


def _lt(a: Optional[int], b: Optional[int]) -> bool:
    """a < b with None as infinity (inf < inf is false)."""
    if a is None:
        return False
    return b is None or a < b


def _add(a: Optional[int], b: Optional[int]) -> Optional[int]:
    return None if a is None or b is None else a + b


@dataclass(frozen=True)
class Relations:
    """The order W, D and L impose (module docstring); `window` is W_eff."""

    window: Optional[int]
    delay: Optional[int]
    lifetime: Optional[int]

    @property
    def expiry_after_window(self) -> bool:
        """W < L: a key is pruned only after its window closed."""
        return _lt(self.window, self.lifetime)

    @property
    def expiry_after_arrivals(self) -> bool:
        """W + D < L: a key is pruned only once none of its requests is on its way."""
        return _lt(_add(self.window, self.delay), self.lifetime)

    @property
    def delay_bounded(self) -> bool:
        return self.delay is not None

    def text(self) -> str:
        """The strongest relation that holds, with its numbers ('' if none)."""
        window = "0, each key sent once" if self.window == 0 else show(self.window, "replay_window")
        nums = (
            f"replay_window={window}, "
            f"delay_bound={show(self.delay, 'delay_bound')}, "
            f"key_lifetime={show(self.lifetime, 'key_lifetime')}"
        )
        if self.expiry_after_arrivals:
            return f"W + D < L ({nums})"
        if self.expiry_after_window:
            return f"W < L, but W + D >= L ({nums})"
        return f"W >= L ({nums})" if self.lifetime is not None else ""
