"""The design file's one reader: a design file (`toolcommit design --write FILE`) read back
into a design (every knob and design timing param), its environment, and what it claims.

Light (spec and model only): every command that reads a design file and the runtime's
`IntentLog(provider=FILE)` read it with `read_file` (a path) or `checked` (a shipped
design's text), whose rules are spec/design.schema.json's (`toolcommit.model.schema_check`)
and then the names' (`design_of`, `claim_of`). A file is read only if it is a regular file
of at most `MAX_BYTES` (a FIFO or a device is refused, never waited on), as strict JSON
(a key given twice, NaN or Infinity refused). Every error is an InputError naming the file
and the field (what is wrong, what is valid); `design_of` and `claim_of` alone raise
UsageError.

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
import os
import stat
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping, Union

from toolcommit.model import timing
from toolcommit.model.design import DESIGN_TIMING, knob_names, preset_design
from toolcommit.model.environment import held_fixed, register
from toolcommit.model.environment import names as env_names
from toolcommit.model.errors import InputError, UsageError
from toolcommit.model.instance import instance_names
from toolcommit.model.properties import all_names
from toolcommit.model.provider_file import from_mapping
from toolcommit.model.schema_check import first_violation, supported
from toolcommit.spec import protocol

KIND = "toolcommit design"
VERSION = 1
MAX_BYTES = 1 << 20  # a design file is about 20 KB; a larger one is not one
WRITE_ONE = "write one with `toolcommit design --env NAME -o FILE`"


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


# ----- the one reader ------------------------------------------------------------------------
@dataclass(frozen=True)
class DesignFile:
    """A design file read and checked: its document, its design (every knob and design
    timing param), its environment and its claim."""

    doc: Mapping[str, Any]
    design: dict
    environment: str
    claim: Claim


@lru_cache(maxsize=1)
def schema() -> dict:
    """spec/design.schema.json, refused at once if it uses a rule `schema_check` skips."""
    text = resources.files("toolcommit.spec").joinpath("design.schema.json").read_text("utf-8")
    doc = json.loads(text)
    supported(doc)
    return doc


def read_file(path: Union[str, os.PathLike[str]]) -> DesignFile:
    """The design file at `path`, checked (see the module docstring); InputError otherwise."""
    where = os.fspath(path)
    return checked(strict_json(_read_bytes(where), where), where)


def checked(doc: Any, source: str = "") -> DesignFile:
    """A parsed design file judged by the schema, then by the names; InputError naming
    `source` and the field otherwise."""
    found = first_violation(doc, schema())
    if found is not None:
        field_, what = found
        if not isinstance(doc, Mapping) or field_ == "kind":
            field_, what = "kind", f'not a design file (expected "kind": "{KIND}"; {WRITE_ONE})'
        if "not a design file" not in what:
            what += f" (spec/design.schema.json); {WRITE_ONE}"
        raise InputError(f"design file: {field_ or 'the document'}: {what}", source)
    try:
        design, env = design_of(doc)
        claim = claim_of(doc, env)
    except UsageError as e:
        raise InputError(str(e), source) from None
    return DesignFile(doc, design, env, claim)


def _read_bytes(path: str) -> bytes:
    """At most `MAX_BYTES` of the regular file `path`; a FIFO, a device or a folder is
    refused without waiting on it."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise InputError(f"cannot read the design file ({e.strerror or e})", path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                "not a regular file (a FIFO, a device or a folder): give the design file "
                f"itself; {WRITE_ONE}",
                path,
            )
        data = _read_most(fd, path)
    finally:
        os.close(fd)
    if len(data) > MAX_BYTES:
        raise InputError(
            f"larger than {MAX_BYTES} bytes, which no design file is; {WRITE_ONE}", path
        )
    return data


def _read_most(fd: int, path: str) -> bytes:
    chunks, size = [], 0
    while size <= MAX_BYTES:
        try:
            chunk = os.read(fd, min(1 << 16, MAX_BYTES + 1 - size))
        except OSError as e:
            raise InputError(f"cannot read the design file ({e.strerror or e})", path) from None
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _pairs(pairs: list) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {json_text(k)} is given twice in one object")
        out[k] = v
    return out


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def strict_json(data: bytes, source: str = "") -> Any:
    """`data` as JSON, strictly: UTF-8, no key twice in an object, no NaN or Infinity;
    InputError naming `source` and the line otherwise."""
    try:
        text = data.decode("utf-8")
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 (byte {e.start}); {WRITE_ONE}", source) from None
    except RecursionError:
        raise InputError(
            f"not a design file: JSON nested deeper than a reader follows; {WRITE_ONE}", source, 1
        ) from None
    except ValueError as e:
        line = getattr(e, "lineno", 0)  # a key given twice: its key, not its line
        raise InputError(f"not JSON ({getattr(e, 'msg', e)}); {WRITE_ONE}", source, line) from None
