"""The design file: a minimal design `toolcommit design -o FILE` found, as data a team
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
from dataclasses import dataclass
from typing import Mapping

from toolcommit.model import timing
from toolcommit.model.environment import configure, held_fixed, names as env_names, profile
from toolcommit.model.errors import UsageError
from toolcommit.model.knobs import Config, preset
from toolcommit.model.semantics import build
from toolcommit.model.environment import instance_in
from toolcommit.model.instance import instance, instance_names
from toolcommit.model.properties import all_names
from toolcommit.spec import protocol

from .synthesis import DESIGN_TIMING, Failure, Level, Minimal, Synthesis, departures, knob_names, \
    meaning_of, preferred, preset_design

KIND = "toolcommit design"
VERSION = 1


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
    return {"environment": fixed, "assumed": [a for a in profile(env).assumed() if a not in (given or {})],
            "timing": orders}


def config_for(design: Mapping[str, str], env: str) -> Config:
    """naive plus the design's departures, in `env` (so its label replays)."""
    return configure(preset("naive"), env).with_knobs({k: design[k] for k in departures(design)})


def document(s: Synthesis, level: Level, m: Minimal) -> dict:
    """The design file's content for minimal design `m` of `level`."""
    naive = preset_design("naive")
    return {
        "kind": KIND, "version": VERSION, "environment": s.env,
        "guarantee": level.guarantee,
        "guarantee_meaning": protocol().raw["guarantees"].get(level.guarantee, {}).get("meaning", ""),
        "properties": list(level.props), "instances": list(s.instances),
        "knobs": {k: m.design[k] for k in protocol().knobs},
        "timing": {t: m.design[t] for t in DESIGN_TIMING},
        "assumes": assumes(s.env, m.design, s.instances, s.given),
        "departures": [{"knob": k, "option": m.design[k], "naive": naive[k],
                        "meaning": meaning_of(k, m.design[k]),
                        "without": failure_json(m.needed[k]) if m.needed.get(k) else None}
                       for k in m.departures],
    }


def document_text(s: Synthesis) -> str:
    """The design file `design -o FILE` stores for a search that found a design: the
    preferred minimal design of the level it chose, as JSON text."""
    level = s.chosen
    return json.dumps(document(s, level, preferred(level)), indent=2) + "\n"


def json_text(v, most: int = 40) -> str:
    """`v` as short JSON text, for a message."""
    import json
    text = json.dumps(v)
    return text if len(text) <= most else text[:most - 3] + "..."


def _fail(where: str, what: str) -> None:
    raise UsageError(f"design file: {where}: {what}")


def design_of(doc: Mapping) -> tuple[dict, str]:
    """(design: every knob and timing param, environment) of a read design file; UsageError
    naming the field otherwise."""
    if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
        _fail("kind", f"not a design file (expected \"kind\": \"{KIND}\"; write one with "
                      "`toolcommit design --env NAME -o FILE`)")
    if doc.get("version") != VERSION:
        _fail("version", f"{doc.get('version')!r} is not {VERSION}")
    env = doc.get("environment")
    if env not in env_names():
        _fail("environment", f"{env!r} is not one of {', '.join(env_names())}")
    knobs, times = doc.get("knobs"), doc.get("timing", {})
    if not isinstance(knobs, Mapping) or not isinstance(times, Mapping):
        _fail("knobs", "must be an object of knob: option (and timing an object of param: duration)")
    design = dict(preset_design("naive"))
    for k, v in {**knobs, **times}.items():
        if not isinstance(v, str):
            _fail(f"knobs.{k}" if k in knobs else f"timing.{k}",
                  f"{json_text(v)} is not a string: give one option"
                  + (f" ({', '.join(protocol().knobs[k].options)})" if k in protocol().knobs
                     else " (a duration such as 1h)"))
        if k not in knob_names():
            _fail(f"knobs.{k}", f"no such knob or design timing param; valid: {', '.join(knob_names())}")
        if k in protocol().knobs and v not in protocol().knobs[k].options:
            _fail(f"knobs.{k}", f"{v!r} is not an option; valid: {', '.join(protocol().knobs[k].options)}")
        if k in DESIGN_TIMING:
            try:
                timing.seconds(v)
            except UsageError as e:
                _fail(f"timing.{k}", str(e))
        design[k] = v
    return design, env


@dataclass(frozen=True)
class Claim:
    """What a design file claims: its `properties` hold on its `instances`, in its
    environment, under the profile's assumptions with `given` changed (the settings the
    file assumes that its profile does not: `design --set`)."""

    properties: tuple
    instances: tuple
    given: Mapping


def claim_of(doc: Mapping, env: str) -> Claim:
    """The claim of a read design file in `env` (`design_of` read its knobs); UsageError
    naming the field otherwise."""
    props, insts = doc.get("properties"), doc.get("instances")
    for field_, got, valid in (("properties", props, all_names()), ("instances", insts, instance_names())):
        if not isinstance(got, list) or not got:
            _fail(field_, f"must be a non-empty list; one or more of: {', '.join(valid)}")
        bad = [x for x in got if x not in valid]
        if bad:
            _fail(f"{field_}: {bad[0]!r}", f"no such {field_[:-1] if field_ == 'instances' else 'property'}; "
                                           f"valid: {', '.join(valid)}")
    env_given = (doc.get("assumes") or {}).get("environment") or {}
    if not isinstance(env_given, Mapping):
        _fail("assumes.environment", "must be an object of setting: value")
    fixed = held_fixed(env)
    given = {k: v for k, v in env_given.items() if k in fixed and fixed[k] != v}
    budgets = [k for k in given if k not in protocol().assumptions and k not in timing.params()]
    if budgets:
        _fail(f"assumes.environment.{budgets[0]}",
              f"{given[budgets[0]]!r}, but the {env} profile has {fixed[budgets[0]]!r}, and a "
              "fault budget is the profile's; write the design again with `toolcommit design`")
    return Claim(tuple(props), tuple(insts), given)
