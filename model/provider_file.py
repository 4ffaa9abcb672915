"""The reader of a provider file (`spec/provider.schema.json`): what one API promises, in
the shape of a profile of `spec/environments.json`, written by its user.

`read(path)` checks the file against the schema's rules (by hand: the library needs no
jsonschema) and every name against `spec/protocol.json`, and returns the profile as
`spec/environments.json` would hold it: the file's behaviours, then one uncited behaviour
for every promise the file does not make (a promise not made is absent: no idempotency, no
fences, no status read, no undo, a request under a key in flight refused) and for each
default fault budget. A setting no provider can promise is refused with the reason. Errors
are `InputError`s naming the file and line, what is wrong and what to do.

Pure but for reading the file; depends on the spec only (the runtime imports it).

Examples
--------
>>> from toolcommit.model.provider_file import from_text
>>> doc = from_text('''{"kind": "toolcommit provider", "version": 1, "name": "acme",
...   "meaning": "a test", "behaviours": []}''', "acme.json")
>>> doc.name, [b["sets"] for b in doc.profile["behaviours"]][:2]
('acme', [{'provider_idempotent': 'no'}, {'provider_fences': 'no'}])
>>> from_text('{"kind": "toolcommit provider", "version": 1}', "x.json")
Traceback (most recent call last):
...
toolcommit.model.errors.InputError: x.json:1: the provider file lacks "name"; add it (see docs/provider-file.md)
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from toolcommit.spec import environments, protocol

from . import timing
from .errors import InputError, UsageError
from .values import ENV_FAULTS

KIND = "toolcommit provider"
DOCS = "docs/provider-file.md"
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
TOP = ("$schema", "kind", "version", "name", "meaning", "wire", "behaviours", "faults")
TOP += ("timing", "design")
BEHAVIOUR = ("sets", "what", "source", "why_no_source", "inherent", "assumed")
MAX_BUDGET = 3

# a promise the file does not make: the option that promises nothing
ABSENT = {
    "provider_idempotent": "no",
    "provider_fences": "no",
    "status_read": "no",
    "compensable": "no",
    "in_flight_key": "refused",
}

# settings no provider can promise, with the reason (the built-in profiles' `inherent`)
NEVER = {
    ("errors_before", 0): "a request can be refused before it executes at any API "
    "(validation, a rate limit, a 5xx at the edge): no provider can promise none",
    ("errors_after", 0): "a request can execute and still answer an error (a 500, a timeout "
    "at a proxy): no provider can promise none",
}

WHY_ABSENT = "the file makes no such promise: a promise a provider file does not make is absent"


@dataclass(frozen=True)
class ProviderDoc:
    """A read provider file: its name, where it was read, its profile (the shape of a
    `spec/environments.json` profile, absent promises and default budgets added), the
    design file it names (resolved against its folder, or None) and the digest of what it
    says (every field but `design` and `$schema`: a design proven for it embeds the same)."""

    name: str
    path: str
    profile: Mapping[str, Any]
    design: Optional[str]
    digest: str
    raw: Mapping[str, Any]


def read(path: str) -> ProviderDoc:
    """The provider file at `path`; InputError (file:line, what, what to do) if unusable."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise InputError(f"cannot read the provider file ({reason}); give a readable file", path)
    return from_text(text, path)


def looks_like_file(name: str) -> bool:
    """Whether an `--env` value names a file rather than a profile."""
    return name.endswith(".json") or "/" in name or "\\" in name or Path(name).is_file()


def from_mapping(raw: Mapping[str, Any], where: str) -> ProviderDoc:
    """A provider file's document already parsed (a design file embeds one), `where` naming
    it in messages. Its `design` path is dropped: it was relative to a file not read here."""
    kept = {k: v for k, v in raw.items() if k != "design"}
    return from_text(json.dumps(kept, indent=2), where)


def from_text(text: str, path: str) -> ProviderDoc:
    """The provider file `text`, read from `path` (for messages and the design's folder)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON ({e.msg}); fix the syntax", path, e.lineno) from None
    where = _Locator(text, path)
    _check_top(raw, where)
    behaviours = [_check_behaviour(b, i, where) for i, b in enumerate(raw["behaviours"])]
    settings = _settings(behaviours, where)
    faults = raw.get("faults", {})
    for f, n in faults.items():
        _refuse_never(f, n, where, ("faults", f))
    times = {k: v for k, v in raw.get("timing", {}).items()}
    for k, v in times.items():
        _duration(v, where, ("timing", k))
        if k in settings and timing.seconds(str(settings[k])) != timing.seconds(v):
            raise where.error(
                f"timing.{k}={v} contradicts a behaviour that sets {k}={settings[k]}; keep one",
                ("timing", k),
            )
    added = _absent(settings, times, faults, where)
    profile = {"meaning": raw["meaning"], "behaviours": behaviours + added}
    if "wire" in raw:
        profile["wire"] = raw["wire"]
    design = raw.get("design")
    if design is not None:
        design = str(Path(path).parent / design)
    promises = {k: v for k, v in raw.items() if k not in ("$schema", "design")}
    digest = hashlib.sha256(json.dumps(promises, sort_keys=True).encode()).hexdigest()[:16]
    return ProviderDoc(raw["name"], path, profile, design, digest, raw)


def _check_top(raw: Any, where: _Locator) -> None:
    if not isinstance(raw, dict):
        raise where.error("a provider file is one JSON object; see " + DOCS, ())
    for key in ("kind", "version", "name", "meaning", "behaviours"):
        if key not in raw:
            raise where.error(f'the provider file lacks "{key}"; add it (see {DOCS})', ())
    for key in raw:
        if key not in TOP:
            raise where.error(
                f'unknown field "{key}"; a provider file has {", ".join(TOP[1:])}', (key,)
            )
    if raw["kind"] != KIND or raw["version"] != 1:
        raise where.error(f'kind must be "{KIND}" and version 1', ("kind",))
    name = raw["name"]
    if not isinstance(name, str) or not NAME.match(name):
        raise where.error(
            f"name {name!r} must be 1-64 of a-z, 0-9, '.', '_', '-' (starting with a "
            "letter or digit): what every output calls the provider",
            ("name",),
        )
    if name in environments()["profiles"]:
        raise where.error(
            f"name {name!r} is a built-in profile's; name the provider file's own provider",
            ("name",),
        )
    if not isinstance(raw["meaning"], str) or not raw["meaning"].strip():
        raise where.error("meaning must say what the provider is, in one sentence", ("meaning",))
    if not isinstance(raw["behaviours"], list):
        raise where.error("behaviours must be a list of behaviours", ("behaviours",))
    _check_wire(raw.get("wire"), where)
    for part in ("faults", "timing"):
        if not isinstance(raw.get(part, {}), dict):
            raise where.error(f"{part} must be an object of name: value", (part,))
    for f, n in raw.get("faults", {}).items():
        if f not in ENV_FAULTS:
            raise where.error(
                f"faults.{f}: not a provider's fault; one of {', '.join(ENV_FAULTS)}",
                ("faults", f),
            )
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_BUDGET:
            raise where.error(
                f"faults.{f}={n!r}: give a whole number 0-{MAX_BUDGET}", ("faults", f)
            )
    for k in raw.get("timing", {}):
        if k not in _env_timing():
            raise where.error(
                f"timing.{k}: not the environment's number; one of {', '.join(_env_timing())}",
                ("timing", k),
            )
    if "design" in raw and not isinstance(raw["design"], str):
        raise where.error("design must be a design file's path, relative to this file", ("design",))


def _check_wire(wire: Any, where: _Locator) -> None:
    if wire is None:
        return
    ok = (
        isinstance(wire, dict)
        and wire.get("key_placement") == "header"
        and isinstance(wire.get("key_header"), str)
        and wire["key_header"]
        and isinstance(wire.get("hosts"), list)
        and wire["hosts"]
        and all(isinstance(h, str) and h for h in wire["hosts"])
    )
    if not ok:
        raise where.error(
            'wire needs "key_header" (the header\'s name), "key_placement": "header" and '
            '"hosts" (a non-empty list of host names)',
            ("wire",),
        )
    _check_source(wire.get("source", {"url": "-", "rests_on": "-"}), where, ("wire", "source"))


def _check_behaviour(b: Any, i: int, where: _Locator) -> dict:
    at = ("behaviours", i)
    if not isinstance(b, dict):
        raise where.error(f"behaviours[{i}] must be an object {{sets, what, source}}", at)
    for key in b:
        if key not in BEHAVIOUR:
            raise where.error(
                f'behaviours[{i}]: unknown field "{key}"; one of {", ".join(BEHAVIOUR)}',
                (*at, key),
            )
    for key in ("sets", "what", "source"):
        if key not in b:
            raise where.error(f'behaviours[{i}] lacks "{key}"; add it (see {DOCS})', at)
    if not isinstance(b["sets"], dict) or not b["sets"]:
        raise where.error(f"behaviours[{i}].sets must name at least one setting", (*at, "sets"))
    if not isinstance(b["what"], str) or not b["what"].strip():
        raise where.error(f"behaviours[{i}].what must say the behaviour in words", (*at, "what"))
    if b["source"] is None:
        if not isinstance(b.get("why_no_source"), str) or not b["why_no_source"].strip():
            raise where.error(
                f"behaviours[{i}] has no source: say why in why_no_source, or cite the "
                "document (source: {url, rests_on})",
                at,
            )
    else:
        _check_source(b["source"], where, (*at, "source"))
    for key, value in b["sets"].items():
        _check_setting(key, value, where, (*at, "sets", key))
    return dict(b)


def _check_source(src: Any, where: _Locator, at: tuple) -> None:
    ok = isinstance(src, dict) and set(src) == {"url", "rests_on"}
    if not ok or not all(isinstance(v, str) and v.strip() for v in src.values()):
        raise where.error(
            "a source is {url, rests_on}: the document and the sentence read there", at
        )


def _check_setting(key: str, value: Any, where: _Locator, at: tuple) -> None:
    assumptions = protocol().assumptions
    if key in assumptions:
        options = assumptions[key]["options"]
        if value not in options:
            raise where.error(f"{key}={value!r}: one of {', '.join(options)}", at)
    elif key in ENV_FAULTS:
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_BUDGET:
            raise where.error(f"{key}={value!r}: a fault budget, a whole number 0-{MAX_BUDGET}", at)
        _refuse_never(key, value, where, at)
    elif key in _env_timing():
        _duration(value, where, at)
    else:
        raise where.error(
            f"{key}: not an environment assumption, fault budget or timing number; one of "
            f"{', '.join([*assumptions, *ENV_FAULTS, *_env_timing()])}",
            at,
        )


def _refuse_never(key: str, value: Any, where: _Locator, at: tuple) -> None:
    if (key, value) in NEVER:
        raise where.error(
            f"{key}={value} is refused: {NEVER[key, value]}; drop it (the default budget is 1)",
            at,
        )


def _duration(value: Any, where: _Locator, at: tuple) -> None:
    try:
        timing.seconds(str(value))
    except UsageError as e:
        raise where.error(f"{at[-1]}: {e}", at) from None


def _settings(behaviours: list, where: _Locator) -> dict:
    """Every setting the behaviours make; InputError where two disagree."""
    out: dict = {}
    for i, b in enumerate(behaviours):
        for key, value in b["sets"].items():
            if key in out and out[key] != value:
                raise where.error(
                    f"behaviours[{i}] sets {key}={value!r}, an earlier one {key}="
                    f"{out[key]!r}; a provider makes one promise per setting",
                    ("behaviours", i, "sets", key),
                )
            out[key] = value
    return out


def _absent(settings: dict, times: dict, faults: dict, where: _Locator) -> list:
    """The behaviours the file implies: absent promises, the default budgets, the timing
    the file gives outside behaviours (assumed), and its `faults` budgets."""
    out = [_implied({k: v}, WHY_ABSENT) for k, v in ABSENT.items() if k not in settings]
    idem = settings.get("provider_idempotent") == "yes"
    lifetime = settings.get("key_lifetime", times.get("key_lifetime"))
    if idem and lifetime is None:
        raise where.error(
            "the provider honours idempotency keys (provider_idempotent=yes) but the file "
            'does not say how long it keeps them: set key_lifetime (e.g. "24h", or '
            '"forever") in that behaviour or in timing',
            (),
        )
    for k, v in times.items():
        out.append(_implied({k: v}, "given in the file's timing, not cited", assumed=True))
    budgets = {"errors_before": 1, "errors_after": 1}
    if idem and timing.seconds(str(lifetime)) is not None:
        budgets["key_expiries"] = 1
    if settings.get("status_read") == "yes":
        budgets["stale_reads"] = 1
    expiry = f"the provider keeps a key {lifetime}: a design relies on that lifetime, not on none"
    never = {**{k: why for (k, _), why in NEVER.items()}, "key_expiries": expiry}
    for k, n in budgets.items():  # a default budget of a fault no provider can promise away
        if k not in settings and k not in faults:  # is inherent: design never offers 0
            why = "a fault no behaviour promises away: its default budget"
            out.append(_implied({k: n}, why, inherent=never.get(k, "")))
    for k, n in faults.items():
        out.append(_implied({k: n}, "the file's fault budget", inherent=never.get(k, "")))
    return out


def _implied(sets: dict, why: str, assumed: bool = False, inherent: str = "") -> dict:
    b = {"sets": sets, "what": why, "source": None, "why_no_source": why}
    b = {**b, "inherent": inherent} if inherent else b
    return {**b, "assumed": True} if assumed else b


def _env_timing() -> list:
    return [k for k, p in timing.params().items() if p["of"] == "environment"]


class _Locator:
    """The line of a value in the file's text, by its path of keys and indexes."""

    def __init__(self, text: str, path: str):
        self.text, self.path = text, path
        self._lines: Optional[dict] = None

    def error(self, message: str, at: tuple) -> InputError:
        return InputError(message, self.path, self.line(at))

    def line(self, at: tuple) -> int:
        if self._lines is None:
            self._lines = {}
            try:
                self._scan(_skip(self.text, 0), ())
            except (ValueError, IndexError):
                pass
        while at and at not in self._lines:
            at = at[:-1]
        return self._lines.get(at, 1)

    def _scan(self, i: int, at: tuple) -> int:
        assert self._lines is not None
        self._lines[at] = self.text.count("\n", 0, i) + 1
        c = self.text[i]
        if c in "{[":
            close, n = ("}" if c == "{" else "]"), 0
            i = _skip(self.text, i + 1)
            while self.text[i] != close:
                if c == "{":
                    key, i = json.decoder.scanstring(self.text, i + 1)
                    i = _skip(self.text, _skip(self.text, i) + 1)  # past ':'
                    i = self._scan(i, (*at, key))
                else:
                    i = self._scan(i, (*at, n))
                    n += 1
                i = _skip(self.text, i)
                if self.text[i] == ",":
                    i = _skip(self.text, i + 1)
            return i + 1
        _, end = json.JSONDecoder().raw_decode(self.text, i)
        return end


def _skip(text: str, i: int) -> int:
    while text[i] in " \t\r\n":
        i += 1
    return i
