"""Design questions answered by the engines: a question is data, the answer a typed grid.

A question (`spec/questions/<name>.json`, or any JSON file of the same shape) names a base
configuration (preset, knob changes, instance), an optional *scenario* (events that must
happen in this order, everything else interleaving freely; see
`toolcommit.model.scenario`), the properties to judge, and a grid: *rows* (usually the
options of a knob) by *columns* (usually environment assumptions). Every cell is one
configuration on one instance, judged by the explicit engine; if the explicit search hits
its state or time limit and the SMT engine is present, the open invariants are judged by
bounded model checking, and the cell says so.

This module is pure: `load_question` validates data (a `QuestionError` names the file and
the field), `answer` runs the cells and returns an `Answer`, and `explain` turns an answer
into findings in words that cite counterexamples by footnote number. Rendering (text,
markdown, JSON) is `toolcommit.checker.render.answers`; files and exit codes are `cmd_ask`'s.

Question fields (top level): `question`, `title`, `asks`, `preset`, `set`, `instance`,
`scenario`, `properties`, `rows`, `columns`, `limits`, `notes`, `row_header`.
A row or column (a *variant*): `name`, `meaning`, `set`, `instance`, `properties`,
`expect`, `article`, `cells` (rows only: per-column overrides), `not_modelled`, `show`
(rows only: extra text columns), `note`. A cell's settings are the question's, then the
row's, the column's and the row's `cells[column]`, later ones winning.

Shorthands: `"rows": {"knob": K, "options": [...]}` (one row per option) and
`"columns": {"assumptions": {A: [values], ...}}` (one column per combination).
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Callable, Mapping, Optional

from toolcommit.model.errors import InputError, InternalError, ToolcommitError, UsageError
from toolcommit.model.expr import not_
from toolcommit.model.instance import Instance, instance as named_instance, proposal
from toolcommit.model.knobs import PRESETS, Config, preset
from toolcommit.model.scenario import SCENARIO, Pattern, restrict
from toolcommit.model.semantics import build
from toolcommit.model.system import System
from toolcommit.spec import protocol

from toolcommit.checker.verify.check import GRAPH, INVARIANTS, judge
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.explore import explore
from toolcommit.checker.engines.trace import Counterexample
from toolcommit.checker.engines.verdict import Status, Verdict

PROPERTIES = INVARIANTS + ("P4",) + GRAPH
TOP_FIELDS = ("question", "title", "asks", "preset", "set", "instance", "scenario", "properties",
              "rows", "columns", "limits", "notes", "row_header")
VARIANT_FIELDS = ("name", "meaning", "set", "instance", "properties", "expect", "article",
                  "cells", "not_modelled", "show", "note")
INSTANCE_FIELDS = ("name", "meaning", "proposals", "workers", "max_fence", "faults", "assumptions")
LIMIT_FIELDS = ("max_states", "timeout", "bmc_depth", "bmc_timeout")
ALIAS = {"provider_idempotent": "idem", "provider_fences": "fences", "status_read": "read",
         "compensable": "comp"}
ALIAS_MEANING = {"idem": "the provider honours idempotency keys",
                 "fences": "the provider rejects stale fence tokens",
                 "read": "the provider offers a status read",
                 "comp": "the provider can reverse an effect"}


class QuestionError(InputError):
    """A malformed question: the message names the file and the field."""


# ----- data ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """A row or a column of the grid: a partial setting plus the claims made about it."""

    name: str
    meaning: str = ""
    set: Mapping[str, str] = field(default_factory=dict)
    instance: object = None            # a name, an inline dict, or None (inherit)
    properties: Optional[tuple] = None
    expect: str = ""                   # "HOLDS" or "VIOLATED": what the article claims
    article: str = ""                  # the article's words for the claim
    cells: Mapping[str, "Variant"] = field(default_factory=dict)
    not_modelled: str = ""             # why this cell is not judged
    show: Mapping[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Limits:
    max_states: int = 2_000_000
    timeout: float = 300.0
    bmc_depth: int = 30
    bmc_timeout: float = 300.0


@dataclass(frozen=True)
class Question:
    name: str
    title: str
    asks: str
    source: str
    preset: str
    set: Mapping[str, str]
    instance: object
    scenario: tuple
    properties: tuple
    rows: tuple
    columns: tuple
    limits: Limits
    notes: tuple = ()
    row_header: str = ""
    column_legend: Mapping[str, str] = field(default_factory=dict)


@dataclass(eq=False)
class Cell:
    """One configuration on one instance, and what the engines said about it."""

    row: str
    column: str
    config: Optional[Config]
    instance: Optional[Instance]
    properties: tuple
    verdicts: list = field(default_factory=list)
    engine: str = ""
    states: int = 0
    expect: str = ""
    article: str = ""
    not_modelled: str = ""
    note: str = ""
    changed: Mapping[str, str] = field(default_factory=dict)   # the row-cell's own settings
    reached: bool = True
    systems: dict = field(default_factory=dict)                # property -> System of its cx

    @property
    def stem(self) -> str:
        return f"{slug(self.row)}__{slug(self.column)}"

    @property
    def judged(self) -> bool:
        return not self.not_modelled

    @property
    def status(self) -> Optional[Status]:
        if not self.judged:
            return None
        statuses = {v.status for v in self.verdicts}
        for s in (Status.VIOLATED, Status.UNKNOWN):
            if s in statuses:
                return s
        return Status.HOLDS

    @property
    def violated(self) -> list:
        return [v for v in self.verdicts if v.status is Status.VIOLATED]

    @property
    def headline(self) -> Optional[Verdict]:
        """The first violated verdict in the question's property order (its cx is stored)."""
        return self.violated[0] if self.violated else None

    @property
    def agrees(self) -> Optional[bool]:
        if not self.expect or self.status not in (Status.HOLDS, Status.VIOLATED):
            return None
        return self.status.value == self.expect


@dataclass
class Answer:
    question: Question
    cells: dict                        # (row, column) -> Cell

    def cell(self, row: str, column: str) -> Cell:
        return self.cells[(row, column)]

    @property
    def status(self) -> Status:
        """UNKNOWN if any judged cell is unknown, else HOLDS (the question was answered)."""
        if any(c.status is Status.UNKNOWN for c in self.cells.values()):
            return Status.UNKNOWN
        return Status.HOLDS

    def violated_cells(self) -> list:
        q = self.question
        return [self.cells[(r.name, c.name)] for r in q.rows for c in q.columns
                if self.cells[(r.name, c.name)].status is Status.VIOLATED]


def slug(name: str) -> str:
    """A file-name form of a row or column name: `idem- comp+` -> `idem-no_comp-yes`."""
    s = re.sub(r"(\w)\+", r"\1-yes", name)
    s = re.sub(r"(\w)-(?=\s|$)", r"\1-no", s)
    s = re.sub(r"\s+", "_", s.strip())
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", s).strip("-") or "x"


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
    """
    path = Path(ref)
    if ref in builtin_names() and not path.exists():
        res = resources.files("toolcommit.spec").joinpath("questions", f"{ref}.json")
        return parse_question(res.read_text("utf-8"), f"spec/questions/{ref}.json", ref)
    if not path.is_file():
        raise UsageError(f"no question {ref!r}: not a built-in ({', '.join(builtin_names())}) "
                         "and not a JSON file")
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise QuestionError(f"cannot read: {e}", str(path)) from None
    stem = path.name[:-5] if path.name.endswith(".json") else path.name
    return parse_question(text, str(path), stem)


def parse_question(text: str, source: str = "<question>", default_name: str = "question") -> Question:
    """Parse and validate a question's JSON text (see the module docstring for fields)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise QuestionError(f"not valid JSON: {e.msg} (column {e.colno})", source, e.lineno) from None
    v = _Validator(source)
    try:
        return v.question(raw, default_name)
    except UsageError as e:  # a name check from the model (knob, action, variable)
        raise QuestionError(str(e), source) from None


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
                self.fail(f"{where}.{k}" if where else k,
                          f"unknown field; valid fields: {', '.join(allowed)}")
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
            if k in p.knobs:
                options = list(p.knobs[k].options)
            elif k in p.assumptions:
                options = list(p.assumptions[k]["options"])
            else:
                self.fail(f"{where}.{k}", "unknown knob or assumption; valid: "
                          + ", ".join(list(p.knobs) + list(p.assumptions)))
            if val not in options:
                self.fail(f"{where}.{k}", f"no option {val!r}; valid options: {', '.join(options)}")
        return dict(raw)

    def props(self, raw, where: str, scenario: bool) -> Optional[tuple]:
        if raw is None:
            return None
        if not isinstance(raw, list) or not raw:
            self.fail(where, f"must be a non-empty list of properties: {', '.join(PROPERTIES)}")
        for i, p in enumerate(raw):
            if p not in PROPERTIES:
                self.fail(f"{where}[{i}]", f"unknown property {p!r}; valid: {', '.join(PROPERTIES)}"
                          + (" (P5 compares personalities across instances and is not a cell "
                             "property)" if p == "P5" else ""))
            if scenario and p in GRAPH:
                self.fail(f"{where}[{i}]", f"{p} is judged only without a scenario: a scenario "
                          "blocks events, which makes deadlocks of its own; drop it or the scenario")
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
            try:
                proposal(name)
            except UsageError as e:
                self.fail(f"{where}.proposals[{i}]", str(e))
        for k in ("workers", "max_fence"):
            if not isinstance(d.get(k, 1), int) or isinstance(d.get(k, 1), bool) or d.get(k, 1) < 1:
                self.fail(f"{where}.{k}", "must be a whole number >= 1")
        faults = d.get("faults", {})
        if not isinstance(faults, dict):
            self.fail(f"{where}.faults", "must be an object of fault -> budget")
        for f, n in faults.items():
            if f not in protocol().faults:
                self.fail(f"{where}.faults.{f}", f"unknown fault; valid: {', '.join(protocol().faults)}")
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                self.fail(f"{where}.faults.{f}", "must be a whole number >= 0")
        self.settings(d.get("assumptions"), f"{where}.assumptions")
        return dict(d)

    def variant(self, raw, where: str, row: bool, scenario: bool, columns=()) -> Variant:
        allowed = VARIANT_FIELDS if row else tuple(f for f in VARIANT_FIELDS if f not in ("cells", "show"))
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
            cells[col] = self.variant({"name": col, **c} if isinstance(c, dict) else c,
                                      f"{where}.cells.{col}", False, scenario)
        show = d.get("show", {})
        if not isinstance(show, dict) or not all(isinstance(x, str) for x in show.values()):
            self.fail(f"{where}.show", "must be an object of column header -> text")
        return Variant(name, self.text(d.get("meaning"), f"{where}.meaning"),
                       self.settings(d.get("set"), f"{where}.set"),
                       self.inst(d.get("instance"), f"{where}.instance"),
                       self.props(d.get("properties"), f"{where}.properties", scenario),
                       expect, self.text(d.get("article"), f"{where}.article"), cells,
                       self.text(d.get("not_modelled"), f"{where}.not_modelled"), dict(show),
                       self.text(d.get("note"), f"{where}.note"))

    def columns(self, raw, scenario: bool):
        if isinstance(raw, dict) and set(raw) == {"assumptions"}:
            spec = raw["assumptions"]
            if not isinstance(spec, dict) or not spec:
                self.fail("columns.assumptions", "must be an object of assumption -> list of options")
            axes = []
            for a, opts in spec.items():
                if a not in protocol().assumptions:
                    self.fail(f"columns.assumptions.{a}", "unknown assumption; valid: "
                              + ", ".join(protocol().assumptions))
                valid = protocol().assumptions[a]["options"]
                if not isinstance(opts, list) or not opts or any(o not in valid for o in opts):
                    self.fail(f"columns.assumptions.{a}", f"must be a non-empty list of: {', '.join(valid)}")
                axes.append([(a, o) for o in opts])
            cols = []
            for combo in itertools.product(*axes):
                name = " ".join(_short(a, o) for a, o in combo)
                cols.append(Variant(name, ", ".join(f"{a}={o}" for a, o in combo), dict(combo)))
            legend = {ALIAS.get(a, a): ALIAS_MEANING.get(ALIAS.get(a, a), protocol().assumptions[a]["meaning"])
                      for a in spec}
            return tuple(cols), legend
        if not isinstance(raw, list) or not raw:
            self.fail("columns", 'required: a list of variants, or {"assumptions": {...}}')
        return tuple(self.variant(c, f"columns[{i}]", False, scenario) for i, c in enumerate(raw)), {}

    def rows(self, raw, scenario: bool, columns) -> tuple:
        if isinstance(raw, dict) and set(raw) <= {"knob", "options"}:
            knob = raw.get("knob")
            if knob not in protocol().knobs:
                self.fail("rows.knob", f"unknown knob {knob!r}; valid: {', '.join(protocol().knobs)}")
            options = raw.get("options", list(protocol().knobs[knob].options))
            valid = protocol().knobs[knob].options
            if not isinstance(options, list) or not options:
                self.fail("rows.options", f"must be a non-empty list of: {', '.join(valid)}")
            for i, o in enumerate(options):
                if o not in valid:
                    self.fail(f"rows.options[{i}]", f"knob {knob} has no option {o!r}; valid: {', '.join(valid)}")
            return tuple(Variant(o, valid[o], {knob: o}) for o in options)
        if not isinstance(raw, list) or not raw:
            self.fail("rows", 'required: a list of variants, or {"knob": K, "options": [...]}')
        return tuple(self.variant(r, f"rows[{i}]", True, scenario, columns) for i, r in enumerate(raw))

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
                self.fail(f"scenario[{i}].action", f"unknown action {p.action!r}; valid actions: "
                          + ", ".join(protocol().actions))
        props = self.props(d.get("properties"), "properties", bool(scenario))
        if props is None:
            props = tuple(p for p in PROPERTIES if not (scenario and p in GRAPH))
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
            if not isinstance(val, (int, float)) or isinstance(val, bool) or val < 0:
                self.fail(f"limits.{k}", "must be a number >= 0")
        notes = d.get("notes", [])
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            self.fail("notes", "must be a list of strings")
        q = Question(name, self.text(d.get("title"), "title") or name,
                     self.text(d.get("asks"), "asks"), self.source, pre,
                     self.settings(d.get("set"), "set"), self.inst(d.get("instance"), "instance"),
                     scenario, props, rows, columns, replace(Limits(), **lim), tuple(notes),
                     self.text(d.get("row_header"), "row_header"), legend)
        self.cells(q)
        return q

    def cells(self, q: Question) -> None:
        """Every cell must have an instance and consistent assumptions; scenario names are
        checked against each cell's model."""
        for r in q.rows:
            for c in q.columns:
                where = f"rows[{q.rows.index(r)}] x columns[{q.columns.index(c)}] ({r.name} / {c.name})"
                s = cell_settings(q, r, c)
                if s["instance"] is None:
                    self.fail("instance", f"{where}: no instance; give one at the top, in the row "
                              "or in the column")
                try:
                    cfg, inst = cell_model(q, r, c)
                    if s["not_modelled"]:
                        continue
                    if q.scenario:
                        restrict(build(cfg, inst), q.scenario)
                except ToolcommitError as e:
                    self.fail(where, str(e))


def _short(a: str, o: str) -> str:
    return ALIAS.get(a, a) + ("+" if o == "yes" else "-" if o == "no" else f"={o}")


def cell_settings(q: Question, r: Variant, c: Variant) -> dict:
    """The merged settings of cell (r, c): question, row, column, row.cells[column]."""
    layers = [r, c] + ([r.cells[c.name]] if c.name in r.cells else [])
    out = {"set": dict(q.set), "instance": q.instance, "properties": q.properties,
           "expect": "", "article": "", "not_modelled": "", "note": "", "changed": {}}
    for v in layers:
        out["set"].update(v.set)
        for k in ("instance", "properties"):
            if getattr(v, k) is not None:
                out[k] = getattr(v, k)
        for k in ("expect", "article", "not_modelled", "note"):
            if getattr(v, k):
                out[k] = getattr(v, k)
    if c.name in r.cells:
        out["changed"] = dict(r.cells[c.name].set)
    return out


def _instance(raw, qname: str) -> Instance:
    if isinstance(raw, str):
        return named_instance(raw)
    faults = {f: int(raw.get("faults", {}).get(f, 0)) for f in protocol().faults}
    return Instance(raw.get("name", qname), raw.get("meaning", f"the {qname} question's instance"),
                    tuple(proposal(p) for p in raw["proposals"]), raw.get("workers", 1),
                    raw.get("max_fence", 3), faults, dict(raw.get("assumptions", {})))


def cell_model(q: Question, r: Variant, c: Variant) -> tuple[Config, Instance]:
    """The configuration and instance of cell (r, c).

    An instance that fixes an assumption (a failure class such as provider_non_idempotent)
    must not contradict the cell's explicit setting of it.
    """
    s = cell_settings(q, r, c)
    inst = _instance(s["instance"], q.name)
    for a, val in inst.assumptions.items():
        if a in s["set"] and s["set"][a] != val:
            raise UsageError(f"instance {inst.name} fixes {a}={val}, but the cell sets "
                             f"{a}={s['set'][a]}; use another instance or drop the setting")
    cfg = preset(q.preset).with_knobs({**s["set"], **inst.assumptions})
    return cfg, inst


def cell_system(q: Question, row: str, column: str, wipe: bool = False) -> System:
    """The (scenario-restricted) system of a cell, as the engines saw it; for replays."""
    r = next(v for v in q.rows if v.name == row)
    c = next(v for v in q.columns if v.name == column)
    cfg, inst = cell_model(q, r, c)
    return restrict(build(cfg, inst, wipe=wipe), q.scenario)


# ----- running ------------------------------------------------------------------------------
def _bmc():
    try:
        from toolcommit.checker.engines.smt import bmc
    except ImportError:
        return None
    return bmc if hasattr(bmc, "check") else None


def _engine_run(system: System, props: list, limits: Limits, scenario: bool, graph: bool,
                progress: Optional[Callable]) -> tuple[list, str, int, bool, dict]:
    """Verdicts for `props` on `system`: explicit first, BMC for what it leaves open.

    Returns (verdicts, engine label, explicit state count, scenario reached, fired counts).
    """
    c = compile_system(system)
    ex = explore(c, limits.max_states, limits.timeout, graph=graph, progress=progress)
    if ex.complete:
        reached = not scenario or SCENARIO in ex.first_witness
        if not reached:
            why = ("vacuous: the scenario cannot be completed under this configuration "
                   f"(no reachable state completes it; {ex.state_count} states searched)")
            return [Verdict(p, Status.UNKNOWN, reason=why) for p in props], "explicit", ex.state_count, False, ex.fired
        verdicts = judge(c, ex, props)
        if scenario:
            verdicts = [replace(v, scope="for every interleaving that follows the scenario, "
                                + v.scope) if v.status is Status.HOLDS else v for v in verdicts]
        return verdicts, "explicit", ex.state_count, True, ex.fired
    found = {v.property: v for v in judge(c, ex, props) if v.status is Status.VIOLATED}
    bmc = _bmc()
    open_props = [p for p in props if p not in found and p in INVARIANTS]
    if bmc is None or not open_props:
        return ([found.get(p) or Verdict(p, Status.UNKNOWN, reason=ex.stop_reason +
                 "; the SMT engine is not available" if bmc is None else ex.stop_reason)
                 for p in props], "explicit", ex.state_count, True, ex.fired)
    reached = True
    probe = dict(system.invariants)
    if scenario:
        probe["scenario_unreached"] = not_(system.witnesses[SCENARIO])
    sys2 = replace(system, invariants=probe)
    asked = open_props + (["scenario_unreached"] if scenario else [])
    got = {v.property: v for v in bmc.check(sys2, asked, limits.bmc_depth, limits.bmc_timeout)}
    if scenario and got["scenario_unreached"].status is not Status.VIOLATED:
        reached = False
    out = []
    for p in props:
        if p in found:
            out.append(found[p])
        elif p in got:
            v = got[p]
            if not reached and v.status is not Status.VIOLATED:
                v = Verdict(p, Status.UNKNOWN, reason=f"the explicit search stopped ({ex.stop_reason}) "
                            f"and no run completing the scenario was found up to depth {limits.bmc_depth}")
            elif v.status is Status.HOLDS:
                v = replace(v, scope=f"up to depth {limits.bmc_depth} (bounded, SMT; the explicit "
                            f"search stopped: {ex.stop_reason})")
            out.append(v)
        else:
            out.append(Verdict(p, Status.UNKNOWN, reason=f"{ex.stop_reason}; the SMT engine judges invariants only"))
    return out, "explicit+smt", ex.state_count, reached, ex.fired


def run_cell(q: Question, r: Variant, c: Variant, progress: Optional[Callable] = None) -> Cell:
    """Judge cell (r, c) of `q`."""
    s = cell_settings(q, r, c)
    cfg, inst = cell_model(q, r, c)
    cell = Cell(r.name, c.name, cfg, inst, tuple(s["properties"]), expect=s["expect"],
                article=s["article"], not_modelled=s["not_modelled"], note=s["note"],
                changed=s["changed"])
    if cell.not_modelled:
        return cell
    props = cell.properties
    graph = [p for p in props if p in GRAPH]
    base = list(INVARIANTS) + graph if "P4" in props else [p for p in props if p != "P4"]
    system = restrict(build(cfg, inst), q.scenario)
    tick = (lambda info: progress(f"{r.name} / {c.name}", info)) if progress else None
    verdicts, engine, states, reached, _ = _engine_run(system, base, q.limits, bool(q.scenario),
                                                       bool(graph), tick)
    cell.engine, cell.states, cell.reached = engine, states, reached
    for v in verdicts:
        cell.systems[v.property] = system
    if "P4" in props:
        p4, p4_engine = _p4(q, cfg, inst, verdicts, tick, cell)
        verdicts.append(p4)
        if p4_engine != cell.engine and p4_engine:
            cell.engine = "explicit+smt"
    order = {p: i for i, p in enumerate(props)}
    cell.verdicts = sorted([v for v in verdicts if v.property in order], key=lambda v: order[v.property])
    return cell


def _p4(q: Question, cfg: Config, inst: Instance, base: list, tick, cell: Cell) -> tuple[Verdict, str]:
    """P4 on a cell: what holds without memory wipes still holds with them (at any step)."""
    held = [v.property for v in base if v.status is Status.HOLDS]
    if not held:
        return Verdict("P4", Status.UNKNOWN, reason="every other property already fails or is "
                       "unknown without memory wipes, so P4 has nothing to judge"), ""
    system = restrict(build(cfg, inst, wipe=True), q.scenario)
    verdicts, engine, _, reached, fired = _engine_run(system, held, q.limits, bool(q.scenario),
                                                      any(p in GRAPH for p in held), tick)
    for v in verdicts:
        if v.status is Status.VIOLATED:
            cx = replace(v.counterexample, property="P4", note=(
                f"with planner memory wiped, {v.property} breaks: "
                f"{protocol().properties[v.property]['meaning']}. {v.counterexample.note}").strip())
            cell.systems["P4"] = system
            return Verdict("P4", Status.VIOLATED, reason=f"through {v.property}", counterexample=cx,
                           extra={"through": v.property}), engine
    unknown = [v for v in verdicts if v.status is Status.UNKNOWN]
    if unknown:
        return Verdict("P4", Status.UNKNOWN, reason=f"{unknown[0].property}: {unknown[0].reason}"), engine
    if engine == "explicit" and not fired.get("wipe"):
        raise InternalError("P4 is vacuous: the wipe adversary never fired")
    scope = verdicts[0].scope if verdicts else "exhaustively"
    return Verdict("P4", Status.HOLDS, scope, reason="" if len(held) == len(base) else
                   "judged on the properties that hold without wipes: " + ", ".join(held)), engine


def answer(q: Question, progress: Optional[Callable] = None) -> Answer:
    """Run every cell of `q` and return the typed grid."""
    cells = {}
    for r in q.rows:
        for c in q.columns:
            cells[(r.name, c.name)] = run_cell(q, r, c, progress)
    return Answer(q, cells)


# ----- the answer in words --------------------------------------------------------------------
def footnotes(a: Answer) -> dict:
    """(row, column) -> footnote number for every VIOLATED cell, row-major from 1."""
    return {(c.row, c.column): i for i, c in enumerate(a.violated_cells(), start=1)}


def ordering(cx: Counterexample) -> str:
    """A counterexample's steps on one line (scenario markers and call ids left out)."""
    out = []
    for st in cx.steps[1:]:
        params = {k: v for k, v in st.params.items() if k != SCENARIO
                  and not (k == "call" and "proposal" in st.params)}
        out.append(f"{st.action}({', '.join(f'{k}={v}' for k, v in params.items())})")
    return " -> ".join(out)


def _assumption_columns(q: Question) -> bool:
    return bool(q.column_legend)


def describe(q: Question, cols: list) -> str:
    """Words for a set of column names: 'in every column', 'when provider_idempotent=no', ..."""
    names = [c.name for c in q.columns]
    chosen = [n for n in names if n in set(cols)]
    if len(chosen) == len(names):
        return "under every assumption swept" if _assumption_columns(q) else "in every column"
    if _assumption_columns(q):
        by = {c.name: c.set for c in q.columns}
        axes = list(q.columns[0].set)
        for size in (1, 2):
            for combo in itertools.combinations(axes, size):
                for values in itertools.product(*[sorted({by[n][a] for n in names}) for a in combo]):
                    match = [n for n in names if all(by[n][a] == v for a, v in zip(combo, values))]
                    if match == chosen:
                        return "when " + " and ".join(f"{a}={v}" for a, v in zip(combo, values))
    return "in " + ", ".join(f'"{n}"' for n in chosen)


def _props_text(cell: Cell) -> str:
    return ", ".join(v.property for v in cell.violated)


def explain(a: Answer) -> list[str]:
    """The answer in words: paragraphs citing counterexamples as [n] (see `footnotes`)."""
    if any(c.expect for c in a.cells.values()):
        return _explain_claims(a)
    return _explain_sweep(a)


def _explain_sweep(a: Answer) -> list[str]:
    q, notes = a.question, footnotes(a)
    paras, right, partial = [], [], []
    for r in q.rows:
        cells = [a.cell(r.name, c.name) for c in q.columns if a.cell(r.name, c.name).judged]
        if not cells:
            continue
        bad = [c for c in cells if c.status is Status.VIOLATED]
        unknown = [c for c in cells if c.status is Status.UNKNOWN]
        held = [c.column for c in cells if c.status is Status.HOLDS]
        if len(held) == len(cells):
            right.append(r.name)
            paras.append(f"{r.name} HOLDS {describe(q, held)}: "
                         f"{', '.join(cells[0].properties)} hold for every interleaving that "
                         f"follows the scenario." if q.scenario else
                         f"{r.name} HOLDS {describe(q, held)}: {', '.join(cells[0].properties)} hold.")
            continue
        if held:
            partial.append((r.name, held))
        groups: dict[tuple, list] = {}
        for p in dict.fromkeys(v.property for c in bad for v in c.violated):
            cols = tuple(c.column for c in bad if any(v.property == p for v in c.violated))
            groups.setdefault(cols, []).append(p)
        parts, cited = [], []
        for cols, props in groups.items():
            inside = [c for c in bad if c.column in cols]
            cite = next((c for c in inside if c.headline.property in props), inside[0])
            parts.append(f"{', '.join(props)} {'break' if len(props) > 1 else 'breaks'} "
                         f"{describe(q, list(cols))} [{notes[(cite.row, cite.column)]}]")
            if all(cite is not x for x in cited):
                cited.append(cite)
        text = f"{r.name} is VIOLATED {describe(q, [c.column for c in bad])}: " + "; ".join(parts) + "."
        for c in cited:
            text += (f" [{notes[(c.row, c.column)]}] {c.headline.property} in "
                     f"{c.headline.counterexample.length} steps: {ordering(c.headline.counterexample)}.")
        if unknown:
            text += f" UNKNOWN {describe(q, [c.column for c in unknown])}: {unknown[0].verdicts[-1].reason}."
        paras.append(text)
    if right:
        line = (f"Answer: {' and '.join(right)} is right under every assumption swept"
                if _assumption_columns(q) else f"Answer: {' and '.join(right)} holds in every column")
        line += "; " + ("".join(f"{n} is right only {describe(q, cols)}; " for n, cols in partial)
                        if partial else "") + "every other option has a counterexample above."
    elif partial:
        line = "Answer: no option holds everywhere; " + "; ".join(
            f"{n} holds only {describe(q, cols)}" for n, cols in partial) + "."
    else:
        line = "Answer: no option holds in any column."
    paras.append(line)
    if "P4" in q.properties or any("P4" in c.properties for c in a.cells.values()):
        p4 = []
        for name in right:
            vs = [v for col in q.columns for v in a.cell(name, col.name).verdicts if v.property == "P4"]
            if vs and all(v.status is Status.HOLDS for v in vs):
                p4.append(name)
        if p4:
            paras.append(f"P4 holds for {' and '.join(p4)} in every column: with all planner memory "
                         "wiped before any event, every property still holds, so the decision is "
                         "taken from the intent log alone and depends on nothing the model must "
                         "remember.")
    return paras


def _explain_claims(a: Answer) -> list[str]:
    q, notes = a.question, footnotes(a)
    paras, agree, total, disagree = [], 0, 0, []
    for r in q.rows:
        bits = []
        for col in q.columns:
            c = a.cell(r.name, col.name)
            if not c.judged:
                bits.append(f"{col.name}: not judged ({c.not_modelled})")
                continue
            knobs = ", ".join(f"{k}={v}" for k, v in c.changed.items())
            head = f"{col.name}" + (f" ({knobs})" if knobs else "")
            claim = c.article or c.expect
            if c.status is Status.VIOLATED:
                got = f"VIOLATED {_props_text(c)} [{notes[(c.row, c.column)]}]"
            elif c.status is Status.HOLDS:
                got = f"HOLDS ({', '.join(c.properties)})"
            else:
                got = f"UNKNOWN ({next(v.reason for v in c.verdicts if v.status is Status.UNKNOWN)})"
            verdict = ""
            if c.agrees is not None:
                total += 1
                agree += c.agrees
                verdict = " -- agrees with the article" if c.agrees else " -- DISAGREES with the article"
                if not c.agrees:
                    disagree.append(f"{r.name} / {col.name}")
            text = f"{head}: article: {claim}; engines: {got}{verdict}."
            if c.agrees is False and c.status is Status.VIOLATED:
                text += f" The ordering: {ordering(c.headline.counterexample)}."
            elif c.agrees is False and c.status is Status.HOLDS:
                text += (f" No interleaving of instance {c.instance.name} (bounds: "
                         f"{', '.join(f'{k}={v}' for k, v in c.instance.bounds().items() if v)}) breaks "
                         f"any of {', '.join(c.properties)}.")
            i1 = next((v for v in c.verdicts if v.property == "I1"), None)
            if c.status is Status.VIOLATED and i1 is not None and i1.status is Status.HOLDS:
                text += " I1 itself holds in this cell: the harm is not a second effect."
            if c.note:
                text += f" {c.note}"
            bits.append(text)
        paras.append(f"{r.name}" + (f" ({r.meaning})" if r.meaning else "") + ": " + " ".join(bits))
    summary = f"The engines agree with the article on {agree} of {total} judged claims"
    summary += (". They disagree on: " + "; ".join(disagree) + ".") if disagree else "."
    return paras + [summary]
