"""Design questions as data: `Question`, its grid's `Variant` rows and columns, the search
`Limits`, the properties a question may ask about, and the names of columns.

A question (`spec/questions/<name>.json`, or any JSON file of the same shape) names a base
configuration (preset, knob changes, instance), an optional *scenario* (events that must
happen in this order, everything else interleaving freely; see
`toolcommit.model.scenario`), the properties to judge, and a grid: *rows* (usually the
options of a knob) by *columns* (usually environment assumptions). A cell's settings are
the question's, then the row's, the column's and the row's `cells[column]`, later ones
winning (`toolcommit.checker.design.grid`). `toolcommit.checker.design.schema` reads and
validates the JSON into these types. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

from toolcommit.model.errors import UsageError
from toolcommit.model.knobs import preset
from toolcommit.model.properties import of_kind
from toolcommit.model.values import ENV_FAULTS
from toolcommit.spec import protocol

INVARIANTS = of_kind("invariant", "monitor")  # state predicates, in spec order
GRAPH = of_kind("graph")
ADVERSARIES = of_kind("adversary")  # P4: re-judged with the adversary added
PROPERTIES = INVARIANTS + ADVERSARIES + GRAPH


@dataclass(frozen=True)
class Variant:
    """A row or a column of the grid: a partial setting plus the claims made about it."""

    name: str
    meaning: str = ""
    set: Mapping[str, str] = field(default_factory=dict)
    instance: object = None  # a name, an inline dict, or None (inherit)
    properties: Optional[tuple] = None
    expect: str = ""  # "HOLDS" or "VIOLATED": what the article claims
    article: str = ""  # the article's words for the claim
    cells: Mapping[str, "Variant"] = field(default_factory=dict)
    not_modelled: str = ""  # why this cell is not judged
    show: Mapping[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class Limits:
    """Search limits for every run of a cell (0 = no limit), and which of them the user set.

    When the explicit search stops at its limit, bounded SMT judges the invariants it left
    open (the *SMT fallback*). By default it does. Once the user sets a state or time limit
    (in the question's `limits` or on the command line), the fallback runs only if they also
    set `bmc_depth`: a limit the user sets is never silently run past; the cell is UNKNOWN
    with the reason instead. An SMT run lasts at most `bmc_timeout` seconds, or the user's
    `timeout` if they set that and not `bmc_timeout`.
    """

    max_states: int = 2_000_000
    timeout: float = 300.0
    bmc_depth: int = 30
    bmc_timeout: float = 300.0
    given: frozenset = frozenset()  # the limits the user set

    def override(self, **values) -> "Limits":
        """A copy with `values` set, remembered as set by the user."""
        return replace(self, **values, given=self.given | frozenset(values))

    @property
    def smt_fallback(self) -> bool:
        """Whether bounded SMT may judge what a stopped explicit search left open."""
        return "bmc_depth" in self.given or not ({"max_states", "timeout"} & self.given)

    @property
    def smt_timeout(self) -> float:
        """Seconds for one SMT run (0 = no limit)."""
        if "timeout" in self.given and "bmc_timeout" not in self.given:
            return self.timeout
        return self.bmc_timeout


@dataclass(frozen=True)
class Question:
    """A validated question: the base settings, the scenario and the grid's variants."""

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
    env: str = "ideal"  # the environment profile every cell starts from (`--env`)
    env_set: Mapping[str, Mapping[str, str]] = field(default_factory=dict)  # per profile,
    #                          settings over `set` when asked in it (`env_set`)


def alias(assumption: str) -> str:
    """The assumption's short name in column names (`spec/protocol.json`: `alias`)."""
    return protocol().assumptions[assumption].get("alias", assumption)


def alias_meaning(assumption: str) -> str:
    """The legend's words for the alias (`alias_meaning`, else the assumption's meaning)."""
    spec = protocol().assumptions[assumption]
    return spec.get("alias_meaning", spec["meaning"])


# Short names of the real systems' fault budgets in column names (`exp+`: keys expire).
FAULT_ALIAS = {
    "key_expiries": "exp",
    "stale_reads": "stale",
    "errors_before": "errb",
    "errors_after": "erra",
    "seal_losses": "seal",
    "deadlines": "dl",
    "failovers": "fo",
}


def column_name(assumption: str, option) -> str:
    """`idem+`, `comp-`, `alias=option` for an option other than yes or no; for a fault
    budget `exp+` (budget 1), `exp-` (0) or `exp=2`."""
    if assumption in FAULT_ALIAS:
        n = int(option)
        return FAULT_ALIAS[assumption] + ("+" if n == 1 else "-" if n == 0 else f"={n}")
    return alias(assumption) + ("+" if option == "yes" else "-" if option == "no" else f"={option}")


def column_meaning(name: str) -> str:
    """The legend's words for an assumption or a fault budget in a column name."""
    if name in FAULT_ALIAS:
        return f"the {protocol().faults[name]} fault may happen once"
    return alias_meaning(name)


def with_settings(q: Question, settings: Mapping[str, str]) -> Question:
    """`q` with `settings` (`ask --set`) over its own in every cell, asked in its
    environment: knobs, assumptions and timing checked by name, environment fault budgets
    as whole numbers. UsageError for a name the question's grid varies (a row, a column or
    a cell sets it: the --set would be overridden there)."""
    budgets = {k: v for k, v in settings.items() if k in ENV_FAULTS}
    for k, v in budgets.items():
        if not v.isdigit():
            raise UsageError(f"--set {k}={v}: a fault budget is a whole number, e.g. {k}=2")
    preset(q.preset).with_knobs({k: v for k, v in settings.items() if k not in budgets})
    for v in (*q.rows, *q.columns, *(c for r in q.rows for c in r.cells.values())):
        both = sorted(set(v.set) & set(settings))
        if both:
            raise UsageError(
                f"--set {', '.join(both)}: question {q.name} varies it across its grid "
                f"(in {v.name!r}); drop the --set, or copy the question file and change "
                "it there"
            )
    own = {k: int(v) if k in budgets else v for k, v in settings.items()}
    env_set = {**q.env_set, q.env: {**q.env_set.get(q.env, {}), **own}}
    return replace(q, env_set=env_set)
