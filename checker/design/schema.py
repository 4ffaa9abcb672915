"""Reading and validating design questions (the types are `toolcommit.checker.design.question`'s).

Question fields (top level): `question`, `title`, `asks`, `preset`, `set`, `instance`,
`scenario`, `properties`, `rows`, `columns`, `limits`, `notes`, `row_header`.
A row or column (a *variant*): `name`, `meaning`, `set`, `instance`, `properties`,
`expect`, `article`, `cells` (rows only: per-column overrides), `not_modelled`, `show`
(rows only: extra text columns), `note`.

Shorthands: `"rows": {"knob": K, "options": [...]}` (one row per option) and
`"columns": {"assumptions": {A: [values], ...}}` (one column per combination, named by the
assumptions' aliases from `spec/protocol.json`: `idem+ comp-`).

Everything here is pure: `parse_question` takes text and returns a validated `Question`
or raises `QuestionError` naming the file and the field; `load_question` only adds the
file or built-in lookup.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from importlib import resources
from pathlib import Path
from typing import Optional

from toolcommit.model.errors import InputError, ToolcommitError, UsageError
from toolcommit.model.instance import allowed_bounds, bound_range, proposal
from toolcommit.model.instance import instance as named_instance
from toolcommit.model.knobs import PRESETS
from toolcommit.model.properties import of_kind, prop
from toolcommit.model.scenario import Pattern, restrict
from toolcommit.model.semantics import build
from toolcommit.spec import protocol

from .grid import cell_model, cell_settings
from .question import (
    FAULT_ALIAS,
    GRAPH,
    PROPERTIES,
    Limits,
    Question,
    Variant,
    alias,
    column_meaning,
    column_name,
)

TOP_FIELDS = (
    "question",
    "title",
    "asks",
    "preset",
    "set",
    "env_set",
    "instance",
    "scenario",
    "properties",
    "rows",
    "columns",
    "limits",
    "notes",
    "row_header",
)
VARIANT_FIELDS = (
    "name",
    "meaning",
    "set",
    "instance",
    "properties",
    "expect",
    "article",
    "cells",
    "not_modelled",
    "show",
    "note",
)
INSTANCE_FIELDS = ("name", "meaning", "proposals", "workers", "max_fence", "faults", "assumptions")
LIMIT_FIELDS = ("max_states", "timeout", "bmc_depth", "bmc_timeout")
MAX_QUESTION_BYTES = 1_000_000  # the built-in questions have under 6 kB
MAX_DEPTH = 32  # nesting of arrays and objects; the built-in ones need 6
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


class QuestionError(InputError):
    """A malformed question: the message names the file and the field, on one line (control
    characters from the file's keys or values are shown escaped)."""

    def __init__(self, message: str, path: str = "", line: int = 0):
        super().__init__(_one_line(message), _one_line(path), line)


def _one_line(text: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f]", lambda m: repr(m.group())[1:-1], text)


# ----- loading and validation -------------------------------------------------------------
def builtin_names() -> list[str]:
    """Names of the built-in questions (`spec/questions/*.json`)."""
    folder = resources.files("toolcommit.spec").joinpath("questions")
    try:
        entries = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(e.name[:-5] for e in entries if e.name.endswith(".json"))


def load_question(ref: str) -> Question:
    """A built-in question by name, or a question file by path; validated.

    Raises
    ------
    QuestionError
        naming the file and the field (e.g. `rows[1].set.late_replay`) and what is valid.
    UsageError
        if `ref` is neither a built-in name nor a file.
    """
    path = Path(ref)
    if ref in builtin_names() and not path.exists():
        res = resources.files("toolcommit.spec").joinpath("questions", f"{ref}.json")
        return parse_question(res.read_text("utf-8"), f"spec/questions/{ref}.json", ref)
    if not path.is_file():
        raise UsageError(
            f"no question {ref!r}: not a built-in ({', '.join(builtin_names())}) "
            "and not a JSON file"
        )
    try:
        size = path.stat().st_size
        if size > MAX_QUESTION_BYTES:
            raise QuestionError(
                f"the file has {size} bytes; a question has at most "
                f"{MAX_QUESTION_BYTES}: trim it or split it into several",
                str(path),
            )
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise QuestionError(f"cannot read: {e}", str(path)) from None
    stem = path.name[:-5] if path.name.endswith(".json") else path.name
    return parse_question(text, str(path), stem)


def parse_question(
    text: str, source: str = "<question>", default_name: str = "question"
) -> Question:
    """Parse and validate a question's JSON text (see the module docstring for fields).

    Examples
    --------
    >>> q = parse_question('{"instance": "ack_loss", "rows": {"knob": "late_replay"}, '
    ...                    '"columns": {"assumptions": {"provider_idempotent": ["yes", "no"]}}}')
    >>> [r.name for r in q.rows], [c.name for c in q.columns]
    (['reject', 'replay_same_key', 'compensate'], ['idem+', 'idem-'])
    >>> parse_question('{"rows": {"knob": "late_replay"}, "columns": [{"name": "c"}]}', "q.json")
    Traceback (most recent call last):
    ...
    toolcommit.checker.design.schema.QuestionError: q.json: instance: rows[0] x columns[0] (reject / c): no instance; give one at the top, in the row or in the column
    """
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark, as `validate` accepts in logs
        text = text[1:]
    if len(text) > MAX_QUESTION_BYTES:
        raise QuestionError(
            f"the question has {len(text)} characters; a question has at most "
            f"{MAX_QUESTION_BYTES}: trim it or split it into several",
            source,
        )
    line = too_deep(text)
    if line:
        raise QuestionError(
            f"arrays and objects nested more than {MAX_DEPTH} deep; a question "
            "needs a handful of levels (see spec/questions/): flatten it",
            source,
            line,
        )
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise QuestionError(
            f"not valid JSON: {e.msg} (column {e.colno})", source, e.lineno
        ) from None
    v = _Validator(source)
    try:
        return v.question(raw, default_name)
    except UsageError as e:  # a name check from the model (knob, action, variable)
        raise QuestionError(str(e), source) from None


def too_deep(text: str, limit: int = MAX_DEPTH) -> int:
    r"""The line where JSON `text` first nests arrays and objects more than `limit` deep, or 0.

    Strings are skipped, so brackets inside them do not count. Linear in the text; meant to
    run before decoding (a decoder recurses once per level).

    Examples
    --------
    >>> too_deep('{"a": [["[[[["]]}', limit=3), too_deep('{\n"a": [[[]]]}', limit=3)
    (0, 2)
    """
    depth = 0
    bare = _STRING.sub('""', text)
    for m in _BRACKET.finditer(bare):
        if m.group() in "[{":
            depth += 1
            if depth > limit:
                return bare.count("\n", 0, m.start()) + 1
        else:
            depth -= 1
    return 0


class _Validator:
    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str):
        raise QuestionError(f"{where}: {message}", self.source)

    def fields(self, raw, allowed, where: str) -> dict:
        if not isinstance(raw, dict):
            self.fail(where or "question", "must be a JSON object")
        for k in raw:
            if k not in allowed:
                self.fail(
                    f"{where}.{k}" if where else k,
                    f"unknown field; valid fields: {', '.join(allowed)}",
                )
        return raw

    def text(self, raw, where: str, required=False) -> str:
        if raw is None:
            if required:
                self.fail(where, "required")
            return ""
        if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
            return " ".join(raw)
        if not isinstance(raw, str):
            self.fail(where, "must be a string")
        return raw

    def settings(self, raw, where: str) -> dict:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail(where, "must be an object of knob or assumption -> option")
        p = protocol()
        for k, val in raw.items():
            if k in FAULT_ALIAS:
                if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val <= 8:
                    self.fail(f"{where}.{k}", "a fault budget: a whole number 0..8")
                continue
            if k in p.knobs:
                options = list(p.knobs[k].options)
            elif k in p.assumptions:
                options = list(p.assumptions[k]["options"])
            else:
                self.fail(
                    f"{where}.{k}",
                    "unknown knob, assumption or environment fault budget; "
                    "valid: " + ", ".join(list(p.knobs) + list(p.assumptions) + list(FAULT_ALIAS)),
                )
            if val not in options:
                self.fail(f"{where}.{k}", f"no option {val!r}; valid options: {', '.join(options)}")
        return dict(raw)

    def env_settings(self, raw) -> dict:
        """`env_set`: per environment profile, settings applied over the question's `set`
        when the question is asked in that profile (`ask --env NAME`)."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail("env_set", "must be an object of environment -> settings")
        from toolcommit.model.environment import names as env_names

        for env in raw:
            if env not in env_names():
                self.fail(f"env_set.{env}", f"unknown environment; valid: {', '.join(env_names())}")
        return {env: self.settings(v, f"env_set.{env}") for env, v in raw.items()}

    def props(self, raw, where: str, scenario: bool) -> Optional[tuple]:
        if raw is None:
            return None
        if not isinstance(raw, list) or not raw:
            self.fail(where, f"must be a non-empty list of properties: {', '.join(PROPERTIES)}")
        for i, p in enumerate(raw):
            if p not in PROPERTIES:
                self.fail(
                    f"{where}[{i}]",
                    f"unknown property {p!r}; valid: {', '.join(PROPERTIES)}"
                    + (
                        f" ({p} compares personalities across instances and is not a cell property)"
                        if p in of_kind("hyper")
                        else ""
                    ),
                )
            if scenario and p in GRAPH and not prop(p).end_predicate:
                self.fail(
                    f"{where}[{i}]",
                    f"{p} is judged only without a scenario: a scenario "
                    "blocks events, which makes deadlocks of its own; drop it or the scenario",
                )
        return tuple(raw)

    def inst(self, raw, where: str):
        if raw is None:
            return None
        if isinstance(raw, str):
            try:
                named_instance(raw)
            except UsageError as e:
                self.fail(where, str(e))
            return raw
        d = self.fields(raw, INSTANCE_FIELDS, where)
        props = d.get("proposals")
        if not isinstance(props, list) or not props:
            self.fail(f"{where}.proposals", "required: a non-empty list of proposal names")
        for i, name in enumerate(props):
            if not isinstance(name, str):
                self.fail(f"{where}.proposals[{i}]", "must be a proposal name (a string)")
            try:
                proposal(name)
            except UsageError as e:
                self.fail(f"{where}.proposals[{i}]", str(e))
            if name in props[:i]:
                self.fail(
                    f"{where}.proposals[{i}]",
                    f"{name} is listed twice; list each proposal "
                    "once (two calls with one call id are two proposals, e.g. t1 and t1dup)",
                )
        for k in ("workers", "max_fence"):
            self.bound(d.get(k, 1), k, f"{where}.{k}")
        faults = d.get("faults", {})
        if not isinstance(faults, dict):
            self.fail(f"{where}.faults", "must be an object of fault -> budget")
        for f, n in faults.items():
            if f not in protocol().faults:
                self.fail(
                    f"{where}.faults.{f}", f"unknown fault; valid: {', '.join(protocol().faults)}"
                )
            self.bound(n, f, f"{where}.faults.{f}")
        out = {**d, "assumptions": self.settings(d.get("assumptions"), f"{where}.assumptions")}
        for k in ("name", "meaning"):
            if k in d:
                out[k] = self.text(d[k], f"{where}.{k}")
        return out

    def bound(self, value, name: str, where: str) -> None:
        """A bound within the caps every command shares (`toolcommit.model.instance.MAX_BOUNDS`)."""
        lo, hi = bound_range(name)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            self.fail(
                where,
                f"must be a whole number from {lo} to {hi}, got {value!r} "
                f"(allowed: {allowed_bounds()}; larger instances are not searched)",
            )

    def variant(self, raw, where: str, row: bool, scenario: bool, columns=()) -> Variant:
        allowed = (
            VARIANT_FIELDS
            if row
            else tuple(f for f in VARIANT_FIELDS if f not in ("cells", "show"))
        )
        d = self.fields(raw, allowed, where)
        name = d.get("name")
        if not isinstance(name, str) or not name.strip():
            self.fail(f"{where}.name", "required: a non-empty string")
        expect = d.get("expect", "")
        if expect not in ("", "HOLDS", "VIOLATED"):
            self.fail(f"{where}.expect", "must be HOLDS or VIOLATED")
        cells = {}
        raw_cells = d.get("cells", {})
        if not isinstance(raw_cells, dict):
            self.fail(f"{where}.cells", "must be an object of column name -> settings")
        for col, c in raw_cells.items():
            if col not in columns:
                self.fail(f"{where}.cells.{col}", f"no such column; columns: {', '.join(columns)}")
            cells[col] = self.variant(
                {"name": col, **c} if isinstance(c, dict) else c,
                f"{where}.cells.{col}",
                False,
                scenario,
            )
        show = d.get("show", {})
        if not isinstance(show, dict) or not all(isinstance(x, str) for x in show.values()):
            self.fail(f"{where}.show", "must be an object of column header -> text")
        return Variant(
            name,
            self.text(d.get("meaning"), f"{where}.meaning"),
            self.settings(d.get("set"), f"{where}.set"),
            self.inst(d.get("instance"), f"{where}.instance"),
            self.props(d.get("properties"), f"{where}.properties", scenario),
            expect,
            self.text(d.get("article"), f"{where}.article"),
            cells,
            self.text(d.get("not_modelled"), f"{where}.not_modelled"),
            dict(show),
            self.text(d.get("note"), f"{where}.note"),
        )

    def columns(self, raw, scenario: bool):
        if isinstance(raw, dict) and set(raw) == {"assumptions"}:
            spec = raw["assumptions"]
            if not isinstance(spec, dict) or not spec:
                self.fail(
                    "columns.assumptions", "must be an object of assumption -> list of options"
                )
            axes = []
            for a, opts in spec.items():
                if a not in protocol().assumptions and a not in FAULT_ALIAS:
                    self.fail(
                        f"columns.assumptions.{a}",
                        "unknown assumption or environment "
                        "fault budget; valid: "
                        + ", ".join(list(protocol().assumptions) + list(FAULT_ALIAS)),
                    )
                valid = (
                    protocol().assumptions[a]["options"] if a not in FAULT_ALIAS else list(range(9))
                )
                if (
                    not isinstance(opts, list)
                    or not opts
                    or any(o not in valid or isinstance(o, bool) for o in opts)
                ):
                    self.fail(
                        f"columns.assumptions.{a}",
                        "must be a non-empty list of: " + ", ".join(map(str, valid)),
                    )
                axes.append([(a, o) for o in opts])
            cols = []
            for combo in itertools.product(*axes):
                name = " ".join(column_name(a, o) for a, o in combo)
                cols.append(Variant(name, ", ".join(f"{a}={o}" for a, o in combo), dict(combo)))
            legend = {FAULT_ALIAS.get(a) or alias(a): column_meaning(a) for a in spec}
            return tuple(cols), legend
        if not isinstance(raw, list) or not raw:
            self.fail("columns", 'required: a list of variants, or {"assumptions": {...}}')
        return tuple(
            self.variant(c, f"columns[{i}]", False, scenario) for i, c in enumerate(raw)
        ), {}

    def rows(self, raw, scenario: bool, columns) -> tuple:
        if isinstance(raw, dict) and set(raw) <= {"knob", "options"}:
            knob = raw.get("knob")
            if not isinstance(knob, str) or knob not in protocol().knobs:
                self.fail(
                    "rows.knob", f"unknown knob {knob!r}; valid: {', '.join(protocol().knobs)}"
                )
            options = raw.get("options", list(protocol().knobs[knob].options))
            valid = protocol().knobs[knob].options
            if not isinstance(options, list) or not options:
                self.fail("rows.options", f"must be a non-empty list of: {', '.join(valid)}")
            for i, o in enumerate(options):
                if o not in list(valid):
                    self.fail(
                        f"rows.options[{i}]",
                        f"knob {knob} has no option {o!r}; valid: {', '.join(valid)}",
                    )
            return tuple(Variant(o, valid[o], {knob: o}) for o in options)
        if not isinstance(raw, list) or not raw:
            self.fail("rows", 'required: a list of variants, or {"knob": K, "options": [...]}')
        return tuple(
            self.variant(r, f"rows[{i}]", True, scenario, columns) for i, r in enumerate(raw)
        )

    def question(self, raw, default_name: str) -> Question:
        d = self.fields(raw, TOP_FIELDS, "")
        name = d.get("question", default_name)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            self.fail("question", "must be a name of letters, digits, '-', '_' or '.'")
        pre = d.get("preset", "recommended")
        if pre not in PRESETS:
            self.fail("preset", f"unknown preset {pre!r}; valid presets: {', '.join(PRESETS)}")
        raw_sc = d.get("scenario", [])
        if not isinstance(raw_sc, list):
            self.fail("scenario", "must be a list of event patterns")
        try:
            scenario = tuple(Pattern.parse(p, None, f"scenario[{i}]") for i, p in enumerate(raw_sc))
        except UsageError as e:
            raise QuestionError(str(e), self.source) from None
        for i, p in enumerate(scenario):
            if p.action not in protocol().actions:
                self.fail(
                    f"scenario[{i}].action",
                    f"unknown action {p.action!r}; valid actions: " + ", ".join(protocol().actions),
                )
        props = self.props(d.get("properties"), "properties", bool(scenario))
        if props is None:
            props = tuple(
                p for p in PROPERTIES if not (scenario and p in GRAPH and not prop(p).end_predicate)
            )
        if "columns" not in d:
            self.fail("columns", "required")
        if "rows" not in d:
            self.fail("rows", "required")
        columns, legend = self.columns(d["columns"], bool(scenario))
        rows = self.rows(d["rows"], bool(scenario), [c.name for c in columns])
        for kind, items in (("rows", rows), ("columns", columns)):
            names = [v.name for v in items]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                self.fail(kind, f"two entries named {sorted(dup)[0]!r}; names must be unique")
        lim = self.fields(d.get("limits", {}), LIMIT_FIELDS, "limits")
        for k, val in lim.items():
            counted = k in ("max_states", "bmc_depth")
            if (
                isinstance(val, bool)
                or not isinstance(val, int if counted else (int, float))
                or (isinstance(val, float) and not math.isfinite(val))
                or val < 0
                or val > 10**12
            ):
                self.fail(
                    f"limits.{k}",
                    (
                        "must be a whole number from 0 to 10^12"
                        if counted
                        else "must be a finite number of seconds, 0 to 10^12"
                    )
                    + ", 0 = no limit"
                    + (f", got {str(val)[:30]}" if isinstance(val, (int, float)) else ""),
                )
        notes = d.get("notes", [])
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            self.fail("notes", "must be a list of strings")
        q = Question(
            name,
            self.text(d.get("title"), "title") or name,
            self.text(d.get("asks"), "asks"),
            self.source,
            pre,
            self.settings(d.get("set"), "set"),
            self.inst(d.get("instance"), "instance"),
            scenario,
            props,
            rows,
            columns,
            Limits().override(**lim),
            tuple(notes),
            self.text(d.get("row_header"), "row_header"),
            legend,
            env_set=self.env_settings(d.get("env_set")),
        )
        self.cells(q)
        return q

    def cells(self, q: Question) -> None:
        """Every cell must have an instance and consistent assumptions; scenario names are
        checked against each cell's model."""
        for r in q.rows:
            for c in q.columns:
                where = (
                    f"rows[{q.rows.index(r)}] x columns[{q.columns.index(c)}] ({r.name} / {c.name})"
                )
                s = cell_settings(q, r, c)
                if s["instance"] is None:
                    self.fail(
                        "instance",
                        f"{where}: no instance; give one at the top, in the row or in the column",
                    )
                try:
                    cfg, inst = cell_model(q, r, c)
                    if s["not_modelled"]:
                        continue
                    if q.scenario:
                        restrict(build(cfg, inst), q.scenario)
                except ToolcommitError as e:
                    self.fail(where, str(e))
