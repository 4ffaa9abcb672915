"""Hyper properties: P5 compares the settled outcomes of several models of one intent.

Each *model personality* (`spec/instances.json`, `personalities`) is the P5 base instance
with other proposals (other call ids, paraphrases). Each is explored exhaustively by the
explicit engine; the property holds when every personality reaches the same set of settled
outcomes (`outcome`: effects gross and net, record and proposal decisions, with call ids and
key names left out).
"""

from __future__ import annotations

from typing import Optional

from toolcommit.checker.engines.base import Limits, Progress
from toolcommit.checker.engines.explicit.engine import Explicit, concretize
from toolcommit.checker.engines.verdict import Status, Verdict
from toolcommit.model.environment import instance_in
from toolcommit.model.errors import InternalError
from toolcommit.model.instance import Instance, personalities, personality
from toolcommit.model.knobs import Config
from toolcommit.model.properties import effects
from toolcommit.model.semantics import build
from toolcommit.model.system import System


def outcome(system: System, state: dict) -> tuple:
    """What a settled state means to the user: effects (gross, net), record and proposal
    decisions, with call ids and key names left out."""
    families = {v.name: v.family for v in system.variables}
    applied, comp = effects(families, state)
    total = sum(applied.values())
    shown = {
        fam: sorted(system.var(n).show(v) for n, v in state.items() if families[n] == fam and v)
        for fam in ("rec", "prop")
    }
    return (
        f"effects={total}",
        f"net={total - comp}",
        "records=" + ",".join(shown["rec"]),
        "decisions=" + ",".join(shown["prop"]),
    )


def personality_instance(name: str, env: str = "ideal") -> Instance:
    """The P5 base instance, in environment `env`, with the proposals of personality `name`."""
    return instance_in(personality(name), env)


def check_p5(
    config: Config,
    limits: Limits = Limits(),
    progress: Optional[Progress] = None,
    name: str = "P5",
    engine: Explicit = Explicit(),
) -> Verdict:
    """Every model personality reaches the same set of settled outcomes (each explored by
    `engine`)."""
    _, variants = personalities()
    seen: dict[str, dict] = {}
    runs = {}
    for who in variants:
        c, ex = engine.explore(
            build(config, personality_instance(who, config.env)), limits, False, progress
        )
        if not ex.complete:
            return Verdict(name, Status.UNKNOWN, reason=f"{who}: {ex.stop_reason}")
        outs: dict = {}
        for sid in ex.settled_ids:
            outs.setdefault(outcome(c.system, c.unpack(ex.states[sid])), sid)
        if not outs:
            raise InternalError(f"{name} is vacuous: personality {who} never settles")
        seen[who], runs[who] = outs, (c, ex)
    order = list(variants)
    ref = order[0]
    for who in order[1:]:
        for a, b in ((who, ref), (ref, who)):
            extra = sorted(
                set(seen[a]) - set(seen[b]), key=lambda o: runs[a][1].depth_of(seen[a][o])
            )
            if extra:
                o = extra[0]
                c, ex = runs[a]
                note = (
                    f"personality {a} reaches outcome [{'; '.join(o)}], "
                    f"which personality {b} never reaches"
                )
                cx = concretize(c, ex, seen[a][o], name, note)
                return Verdict(
                    name,
                    Status.VIOLATED,
                    reason=f"{a} vs {b}",
                    counterexample=cx,
                    extra={"personalities": [a, b]},
                )
    return Verdict(
        name,
        Status.HOLDS,
        "exhaustively",
        reason=f"{len(order)} personalities, {len(seen[ref])} outcomes each",
        extra={"outcomes": [list(o) for o in sorted(seen[ref])]},
    )
