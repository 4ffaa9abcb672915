"""What a design report states beyond the search, decided before it is drawn.

`summarize` takes a `Synthesis` and computes what its renderers show besides the search
itself: the design to build first at each level, its instructions, what the chosen one
rests on (the timing orders the model used, the numbers assumed without a document) and
the options never proposed. The renderers (`toolcommit.checker.render.design`) format a
`Summary`; they compute nothing and build no model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from toolcommit.checker.design.advice import advice
from toolcommit.checker.design.file import assumes
from toolcommit.checker.design.synthesis import Minimal, Synthesis, preferred, unsearched
from toolcommit.model.environment import held_fixed, profile


@dataclass(frozen=True)
class Summary:
    """A synthesis with what its report says about it.

    ``preferred`` has one entry per level of ``synthesis.levels``: its design to build
    first, or None where no minimal design was found. ``advice`` and ``assumes`` are the
    chosen level's preferred design's instructions and what it rests on (``""`` and None
    when it has none). ``holds_fixed`` is the environment's fixed settings with the ones
    ``--set`` changed; ``meaning`` the environment's one line; ``see`` where the settings
    it assumes without a document are listed (a provider file's path, or the spec command).
    """

    synthesis: Synthesis
    preferred: tuple[Optional[Minimal], ...]
    advice: str
    assumes: Optional[dict]
    not_proposed: tuple[tuple[str, str], ...]
    holds_fixed: dict
    meaning: str
    see: str

    def first(self, level) -> Optional[Minimal]:
        """The design to build first of `level` (one of ``synthesis.levels``)."""
        for lv, m in zip(self.synthesis.levels, self.preferred):
            if lv is level:
                return m
        raise ValueError("not a level of this synthesis")


def summarize(s: Synthesis) -> Summary:
    """What the report of `s` says, computed once (see the module docstring)."""
    lv = s.chosen
    chosen = preferred(lv) if lv is not None and lv.minimal else None
    return Summary(
        s,
        tuple(preferred(x) if x.minimal else None for x in s.levels),
        advice(chosen.design, s.env, s.given) if chosen is not None else "",
        assumes(s.env, chosen.design, s.instances, s.given) if chosen is not None else None,
        tuple(unsearched()),
        {**held_fixed(s.env), **s.given},
        profile(s.env).meaning,
        _see(s.env),
    )


def _see(env: str) -> str:
    """Where `env`'s settings assumed without a document are listed."""
    source = profile(env).file  # a provider file: the reader looks there
    return source.path if source is not None else "toolcommit spec --envs"
