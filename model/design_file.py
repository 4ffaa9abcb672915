"""The design file's reader: a design file (`toolcommit design --write FILE`) read back into
a design (every knob and design timing param) and its environment, and what it claims.

Pure and light (spec and model only): the runtime follows a design file with it and the
checker re-judges one; every error is a UsageError naming the field and what is valid.

>>> design, env = design_of({"kind": KIND, "version": VERSION, "environment": "stripe",
...                          "knobs": {"insert": "atomic"}})
>>> (env, design["insert"])
('stripe', 'atomic')
>>> design_of({"kind": KIND, "version": VERSION, "environment": "stripe", "knobs": {"insert": ["atomic"]}})
Traceback (most recent call last):
...
toolcommit.model.errors.UsageError: design file: knobs.insert: ["atomic"] is not a string: give one option (check_then_insert, atomic)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

from toolcommit.model import timing
from toolcommit.model.design import DESIGN_TIMING, knob_names, preset_design
from toolcommit.model.environment import held_fixed, register
from toolcommit.model.environment import names as env_names
from toolcommit.model.errors import UsageError
from toolcommit.model.instance import instance_names
from toolcommit.model.properties import all_names
from toolcommit.model.provider_file import from_mapping
from toolcommit.spec import protocol

KIND = "toolcommit design"
VERSION = 1


def json_text(v, most: int = 40) -> str:
    """`v` as short JSON text, for a message."""
    text = json.dumps(v)
    return text if len(text) <= most else text[: most - 3] + "..."


def _fail(where: str, what: str) -> None:
    raise UsageError(f"design file: {where}: {what}")


def design_of(doc: Mapping) -> tuple[dict, str]:
    """(design: every knob and timing param, environment) of a read design file; UsageError
    naming the field otherwise."""
    if not isinstance(doc, Mapping) or doc.get("kind") != KIND:
        _fail(
            "kind",
            f'not a design file (expected "kind": "{KIND}"; write one with '
            "`toolcommit design --env NAME -o FILE`)",
        )
    if doc.get("version") != VERSION:
        _fail("version", f"{doc.get('version')!r} is not {VERSION}")
    env = doc.get("environment")
    if isinstance(doc.get("provider_file"), Mapping):  # proven for a provider file: kept
        p = register(from_mapping(doc["provider_file"], "design file: provider_file"))
        if p != env:
            _fail("provider_file", f"names provider {p!r}, but environment is {env!r}")
    elif env not in env_names():
        _fail(
            "environment",
            f"{env!r} is not one of {', '.join(env_names())} and the file embeds no "
            "provider_file (write it with `toolcommit design --env FILE -o DESIGN`)",
        )
    knobs, times = doc.get("knobs"), doc.get("timing", {})
    if not isinstance(knobs, Mapping) or not isinstance(times, Mapping):
        _fail(
            "knobs", "must be an object of knob: option (and timing an object of param: duration)"
        )
    design = dict(preset_design("naive"))
    for k, v in {**knobs, **times}.items():
        if not isinstance(v, str):
            _fail(
                f"knobs.{k}" if k in knobs else f"timing.{k}",
                f"{json_text(v)} is not a string: give one option"
                + (
                    f" ({', '.join(protocol().knobs[k].options)})"
                    if k in protocol().knobs
                    else " (a duration such as 1h)"
                ),
            )
        if k not in knob_names():
            _fail(
                f"knobs.{k}",
                f"no such knob or design timing param; valid: {', '.join(knob_names())}",
            )
        if k in protocol().knobs and v not in protocol().knobs[k].options:
            _fail(
                f"knobs.{k}",
                f"{v!r} is not an option; valid: {', '.join(protocol().knobs[k].options)}",
            )
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
    for field_, got, valid in (
        ("properties", props, all_names()),
        ("instances", insts, instance_names()),
    ):
        if not isinstance(got, list) or not got:
            _fail(field_, f"must be a non-empty list; one or more of: {', '.join(valid)}")
        bad = [x for x in got if x not in valid]
        if bad:
            _fail(
                f"{field_}: {bad[0]!r}",
                f"no such {field_[:-1] if field_ == 'instances' else 'property'}; "
                f"valid: {', '.join(valid)}",
            )
    env_given = (doc.get("assumes") or {}).get("environment") or {}
    if not isinstance(env_given, Mapping):
        _fail("assumes.environment", "must be an object of setting: value")
    fixed = held_fixed(env)
    given = {k: v for k, v in env_given.items() if k in fixed and fixed[k] != v}
    budgets = [k for k in given if k not in protocol().assumptions and k not in timing.params()]
    if budgets:
        _fail(
            f"assumes.environment.{budgets[0]}",
            f"{given[budgets[0]]!r}, but the {env} profile has {fixed[budgets[0]]!r}, and a "
            "fault budget is the profile's; write the design again with `toolcommit design`",
        )
    return Claim(tuple(props), tuple(insts), given)
