"""The design file: a minimal design `toolcommit design --write FILE` found, as data a team
checks in; `toolcommit check --design FILE` re-judges it and `toolcommit.runtime` follows it.

Pure: `document` turns a found design into a dict, `config_of` a read dict back into the
`Config` that re-judges it (every field checked, errors naming the field and what is
valid). Reading and writing the file are the CLI's.

The document holds every knob's option and the design's timing, the environment, the
guarantee and its properties, the instances it was judged on, what it assumes (the
profile's assumptions, budgets and timing, the orders time imposed, the numbers assumed
without a document), and each departure from naive with the counterexample without it.
"""

from __future__ import annotations

import json
from typing import Mapping

from toolcommit.model.design import DESIGN_TIMING, meaning_of, preset_design
from toolcommit.model.design_file import KIND, VERSION
from toolcommit.model.environment import config_for, held_fixed, instance_in, profile
from toolcommit.model.instance import instance
from toolcommit.model.semantics import build
from toolcommit.spec import protocol

from .synthesis import Failure, Level, Minimal, Synthesis, preferred


def failure_json(f: Failure) -> dict:
    """A failure as data: where it broke, and its trace or the reason it has none (a design
    file's and `design --format json`'s one shape)."""
    out = {"instance": f.instance, "property": f.property, "status": f.status.value}
    if f.counterexample is not None:
        out["steps"] = f.steps
        out["trace"] = [s.label() for s in f.counterexample.steps[1:]]
    elif f.reason:
        out["reason"] = f.reason
    return out


def assumes(env: str, design: Mapping[str, str], instances, given: Mapping = None) -> dict:
    """What a design's verdicts in `env` rest on: the profile's fixed settings (with the
    settings `given` changed), the numbers it assumes without a document, and the timing
    orders the model used on `instances`."""
    cfg = config_for(design, env).with_knobs(dict(given or {}))
    orders = []
    for name in instances:
        for t in build(cfg, instance_in(instance(name), env)).meta.get("timing", ()):
            if t["relation"] not in orders:
                orders.append(t["relation"])
    fixed = {**held_fixed(env), **dict(given or {})}
    return {
        "environment": fixed,
        "assumed": [a for a in profile(env).assumed() if a not in (given or {})],
        "timing": orders,
    }


def document(s: Synthesis, level: Level, m: Minimal) -> dict:
    """The design file's content for minimal design `m` of `level` (proven for a provider
    file: the file's document too, as `provider_file`, so the design reads alone)."""
    naive = preset_design("naive")
    source = profile(s.env).file
    embedded = {"provider_file": dict(source.raw)} if source is not None else {}
    return {
        "kind": KIND,
        "version": VERSION,
        "environment": s.env,
        "guarantee": level.guarantee,
        "guarantee_meaning": protocol()
        .raw["guarantees"]
        .get(level.guarantee, {})
        .get("meaning", ""),
        "properties": list(level.props),
        "instances": list(s.instances),
        "knobs": {k: m.design[k] for k in protocol().knobs},
        "timing": {t: m.design[t] for t in DESIGN_TIMING},
        "assumes": assumes(s.env, m.design, s.instances, s.given),
        "departures": [
            {
                "knob": k,
                "option": m.design[k],
                "naive": naive[k],
                "meaning": meaning_of(k, m.design[k]),
                "without": failure_json(m.needed[k]) if m.needed.get(k) else None,
            }
            for k in m.departures
        ],
        **embedded,
    }


def document_text(s: Synthesis) -> str:
    """The design file `design --write` stores for a search that found a design: the
    preferred minimal design of the level it chose, as JSON text."""
    level = s.chosen
    return json.dumps(document(s, level, preferred(level)), indent=2) + "\n"
