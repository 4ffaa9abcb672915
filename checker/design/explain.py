"""A question's answer in words: findings as paragraphs that cite counterexamples as [n].

`footnotes` numbers the VIOLATED cells, `ordering` puts a counterexample on one line,
`describe` names a set of columns ("when provider_idempotent=no"), `recommendation` is the
one sentence an answer opens with (the option to choose, as an instruction, and where it
holds), and `explain` writes the answer: per row for a sweep (which option holds where),
per claim when the question records what an article claims (`expect`). The paragraphs
cite counterexamples by number; their steps are the renderers' (`ordering`). Pure: it
reads an `Answer` and returns text as data for `toolcommit.checker.render.answers`.
"""

from __future__ import annotations

import itertools

from toolcommit.checker.engines.trace import Counterexample
from toolcommit.checker.engines.verdict import Status
from toolcommit.model.properties import headline, of_kind, outcomes, prop
from toolcommit.model.scenario import SCENARIO

from .advice import act
from .grid import Answer, Cell
from .question import Question, Variant


def footnotes(a: Answer) -> dict:
    """(row, column) -> footnote number for every VIOLATED cell, row-major from 1."""
    return {(c.row, c.column): i for i, c in enumerate(a.violated_cells(), start=1)}


def ordering_steps(cx: Counterexample) -> list[str]:
    """A counterexample's steps as `action(param=value, ...)` (scenario markers and call ids
    left out)."""
    out = []
    for st in cx.steps[1:]:
        params = {
            k: v
            for k, v in st.params.items()
            if k != SCENARIO and not (k == "call" and "proposal" in st.params)
        }
        out.append(f"{st.action}({', '.join(f'{k}={v}' for k, v in params.items())})")
    return out


def ordering(cx: Counterexample) -> str:
    """A counterexample's steps on one line (see `ordering_steps`)."""
    return " -> ".join(ordering_steps(cx))


def _assumption_columns(q: Question) -> bool:
    return bool(q.column_legend)


def describe(q: Question, cols: list) -> str:
    """Words for a set of column names: 'in every column', 'when provider_idempotent=no', ..."""
    names = [c.name for c in q.columns]
    chosen = [n for n in names if n in set(cols)]
    if len(names) == 1 and chosen:
        return f'in the one column, "{names[0]}"'
    if len(chosen) == len(names):
        return "under every assumption swept" if _assumption_columns(q) else "in every column"
    if _assumption_columns(q):
        words = _conjunction(q, names, chosen)
        if words:
            return "when " + words
        rest = [n for n in names if n not in set(chosen)]
        words = _conjunction(q, names, rest)
        if words:
            return "unless " + words
    return "in " + ", ".join(f'"{n}"' for n in chosen)


def _conjunction(q: Question, names: list, chosen: list) -> str:
    """'A=a and B=b', the fewest assumption values that pick exactly `chosen`; '' if none."""
    by = {c.name: c.set for c in q.columns}
    axes = list(q.columns[0].set)
    for size in range(1, len(axes) + 1):
        for combo in itertools.combinations(axes, size):
            for values in itertools.product(
                *[sorted({by[n][a] for n in names}, key=str) for a in combo]
            ):
                match = [n for n in names if all(by[n][a] == v for a, v in zip(combo, values))]
                if match == chosen:
                    return " and ".join(f"{a}={v}" for a, v in zip(combo, values))
    return ""


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
            paras.append(
                f"{r.name} HOLDS {describe(q, held)}: "
                f"{', '.join(cells[0].properties)} hold for every interleaving that "
                f"follows the scenario."
                if q.scenario
                else f"{r.name} HOLDS {describe(q, held)}: {', '.join(cells[0].properties)} hold."
            )
            continue
        if held:
            partial.append((r.name, held))
        groups: dict[tuple, list] = {}
        for p in dict.fromkeys(v.property for c in bad for v in c.violated):
            cols = tuple(c.column for c in bad if any(v.property == p for v in c.violated))
            groups.setdefault(cols, []).append(p)
        parts = []
        for cols, props in groups.items():
            inside = [c for c in bad if c.column in cols]
            cite = next((c for c in inside if c.headline.property in props), inside[0])
            where = "" if len(groups) == 1 else f" {describe(q, list(cols))}"  # said once
            n = notes[(cite.row, cite.column)]
            # a cell's stored trace is of its headline property: never cite it for another
            ref = (
                f"[{n}]"
                if cite.headline.property in props
                else f"(in cell [{n}], whose trace shows {cite.headline.property})"
            )
            parts.append(
                f"{', '.join(props)} {'break' if len(props) > 1 else 'breaks'}{where} {ref}"
            )
        text = ""
        if bad:
            text = (
                f"{r.name} is VIOLATED {describe(q, [c.column for c in bad])}: "
                + "; ".join(parts)
                + "."
            )
        if unknown:
            text += (
                " UNKNOWN " if text else f"{r.name} is UNKNOWN "
            ) + f"{describe(q, [c.column for c in unknown])}: {_unknown_reason(unknown[0])}."
        paras.append(text)
    paras.append(_sweep_answer(a, right, partial))
    for adv in of_kind("adversary"):
        if adv not in q.properties and not any(adv in c.properties for c in a.cells.values()):
            continue
        kept = []
        for name in right:
            vs = [
                v for col in q.columns for v in a.cell(name, col.name).verdicts if v.property == adv
            ]
            if vs and all(v.status is Status.HOLDS for v in vs):
                kept.append(name)
        if kept:
            paras.append(
                f"{adv} holds for {' and '.join(kept)} in every column: "
                f"{prop(adv).adversary['under']} before any event, every property still "
                "holds, so the decision is taken from the intent log alone and depends "
                "on nothing the model must remember."
            )
    return paras


def _unknown_reason(cell: Cell) -> str:
    """Why a cell is UNKNOWN: its first UNKNOWN verdict, named."""
    v = next(v for v in cell.verdicts if v.status is Status.UNKNOWN)
    return f"{v.property}: {v.reason}"


def _sweep_answer(a: Answer, right: list, partial: list) -> str:
    """The sweep's one-line answer: which options hold everywhere, where the others hold,
    and whether UNKNOWN cells leave it open."""
    q = a.question
    judged = [r.name for r in q.rows if any(a.cell(r.name, c.name).judged for c in q.columns)]
    no_cx = [
        n
        for n in judged
        if n not in right
        and not any(a.cell(n, c.name).status is Status.VIOLATED for c in q.columns)
    ]
    if right:
        every = describe(q, [c.name for c in q.columns])
        line = (
            f"Answer: {' and '.join(right)} is right {every}"
            if _assumption_columns(q)
            else f"Answer: {' and '.join(right)} holds {every}"
        )
        line += (
            "; "
            + (
                "".join(f"{n} is right only {describe(q, cols)}; " for n, cols in partial)
                if partial
                else ""
            )
            + "every other option has a counterexample above"
        )
        line += f", except {' and '.join(no_cx)}." if no_cx else "."
    elif _outcome_right(a):
        kept, broken = _outcome_right(a)
        line = (
            f"Answer: on the outcome ({', '.join(p for p in outcomes() if p in q.properties)}), "
            f"{' and '.join(kept)} {'holds' if len(kept) == 1 else 'hold'} "
            f"{describe(q, [c.name for c in q.columns])}; no option keeps every property "
            f"judged: what breaks there is the mechanism ({', '.join(broken)}), not the effect."
        )
    elif partial:
        line = (
            "Answer: no option holds everywhere; "
            + "; ".join(f"{n} holds only {describe(q, cols)}" for n, cols in partial)
            + "."
        )
    elif no_cx:
        line = "Answer: no option is shown to hold in any column."
    else:
        where = "in any column" if len(q.columns) > 1 else describe(q, [q.columns[0].name])
        line = f"Answer: no option holds {where}."
    if a.status is Status.UNKNOWN:
        line += " UNKNOWN cells leave the answer open where they are (each says why above)."
    return line


def _outcome_right(a: Answer):
    """(rows whose every judged cell keeps the outcome properties, the mechanism properties
    some of them break), or None: the answer by what the world sees when no option keeps
    the mechanism too (no provider fences, say)."""
    q = a.question
    kept, broken = [], []
    for r in q.rows:
        cells = [a.cell(r.name, c.name) for c in q.columns if a.cell(r.name, c.name).judged]
        if not cells or any(c.status is Status.UNKNOWN for c in cells):
            continue
        bad = [v.property for c in cells for v in c.violated]
        if not any(p in outcomes() for p in bad):
            kept.append(r.name)
            broken += [p for p in bad if p not in broken]
    return (kept, broken) if kept and broken else None


def _explain_claims(a: Answer) -> list[str]:
    q, notes = a.question, footnotes(a)
    paras, agree, total, disagree = [], 0, 0, []
    for r in q.rows:
        bits = []
        for col in q.columns:
            c = a.cell(r.name, col.name)
            if not c.judged:
                bits.append(f"{col.name}: not judged ({c.not_modelled or c.outside})")
                continue
            knobs = ", ".join(f"{k}={v}" for k, v in c.changed.items())
            head = f"{col.name}" + (f" ({knobs})" if knobs else "")
            claim = c.article or c.expect
            if c.status is Status.VIOLATED:
                got = f"VIOLATED {_props_text(c)} [{notes[(c.row, c.column)]}]"
            elif c.status is Status.HOLDS:
                got = f"HOLDS ({', '.join(c.properties)})"
            else:
                got = (
                    f"UNKNOWN ({next(v.reason for v in c.verdicts if v.status is Status.UNKNOWN)})"
                )
            verdict = ""
            if c.agrees is not None:
                total += 1
                agree += c.agrees
                verdict = (
                    " -- agrees with the article" if c.agrees else " -- DISAGREES with the article"
                )
                if not c.agrees:
                    disagree.append(f"{r.name} / {col.name}")
            text = f"{head}: article: {claim}; engines: {got}{verdict}."
            if c.agrees is False and c.status is Status.HOLDS:
                text += (
                    f" No interleaving of instance {c.instance.name} (bounds: "
                    f"{', '.join(f'{k}={v}' for k, v in c.instance.bounds().items() if v)}) breaks "
                    f"any of {', '.join(c.properties)}."
                )
            top = headline().name
            i1 = next((v for v in c.verdicts if v.property == top), None)
            if c.status is Status.VIOLATED and i1 is not None and i1.status is Status.HOLDS:
                text += f" {top} itself holds in this cell: the harm is not a second effect."
            if c.note:
                text += f" {c.note}"
            bits.append(text)
        paras.append(f"{r.name}" + (f" ({r.meaning})" if r.meaning else "") + ": " + " ".join(bits))
    summary = f"The engines agree with the article on {agree} of {total} judged claims"
    summary += (". They disagree on: " + "; ".join(disagree) + ".") if disagree else "."
    return paras + [summary]


# ----- the one sentence ---------------------------------------------------------------------
def _do(r: Variant) -> str:
    """A row as an instruction: the `act` words of the knobs it sets, with the settings;
    else its name, with its meaning."""
    words = " and ".join(x for x in (act(k, v) for k, v in r.set.items()) if x)
    if words:
        return f"{words} ({', '.join(f'{k}={v}' for k, v in r.set.items())})"
    return f"{r.name} ({r.meaning})" if r.meaning else r.name


def _judged(a: Answer, r: Variant) -> list[Cell]:
    return [a.cell(r.name, c.name) for c in a.question.columns if a.cell(r.name, c.name).judged]


def recommendation(a: Answer) -> str:
    """The sentence an answer opens with: what to choose in the question's environment, and
    where it holds (or that nothing does), from the same verdicts as `explain`."""
    q = a.question
    head = f"Recommendation for {q.env}: "
    tail = " (UNKNOWN cells leave it open)." if a.status is Status.UNKNOWN else "."
    if any(c.expect for c in a.cells.values()):
        return head + _claims_choice(a) + tail
    every = describe(q, [c.name for c in q.columns])
    rows = [r for r in q.rows if _judged(a, r)]
    right = [r for r in rows if all(c.status is Status.HOLDS for c in _judged(a, r))]
    if right:
        return (
            head
            + " or ".join(_do(r) for r in right)
            + f": {'it holds' if len(right) == 1 else 'each holds'} {every}"
            + tail
        )
    kept = _outcome_right(a)
    if kept:
        best = min((r for r in rows if r.name in kept[0]), key=lambda r: len(_broken(a, r)))
        outs = ", ".join(p for p in outcomes() if p in q.properties)
        return (
            head + f"{_do(best)}: it keeps the outcome ({outs}) {every}; what breaks is the "
            f"mechanism ({', '.join(_broken(a, best))}), not the effect" + tail
        )
    held = [(r, [c.column for c in _judged(a, r) if c.status is Status.HOLDS]) for r in rows]
    held = [(r, cols) for r, cols in held if cols]
    if held:
        r, cols = max(held, key=lambda x: len(x[1]))
        return (
            head + f"{_do(r)}, which holds only {describe(q, cols)}; no option holds in "
            "the other cells (their counterexamples below show why)" + tail
        )
    return (
        head
        + ("none of the options holds; each cell's counterexample below shows why" + _see(q))
        + tail
    )


def _broken(a: Answer, r: Variant) -> list[str]:
    return list(dict.fromkeys(v.property for c in _judged(a, r) for v in c.violated))


def _claims_choice(a: Answer) -> str:
    """For a question of an article's claims: the design that holds throughout (a column
    when the rows are situations, each with its instance; else a row judged in more than one
    cell), and how many claims the engines confirm."""
    q = a.question
    claims = [c for c in a.cells.values() if c.judged and c.agrees is not None]
    agree = (
        f"the engines agree with the article on {sum(c.agrees for c in claims)} of "
        f"{len(claims)} judged claims"
    )
    if all(r.instance is not None for r in q.rows):

        def holding(col):
            cells = [a.cell(r.name, col.name) for r in q.rows if a.cell(r.name, col.name).judged]
            return sum(c.status is Status.HOLDS for c in cells), len(cells)

        col = max(q.columns, key=lambda c: holding(c)[0])
        k, n = holding(col)
        name = f'"{col.name}"' + (f" ({col.meaning})" if col.meaning else "")
        if n and k == n:
            return f"build what {name} describes: it holds in every row; {agree}"
        if k:
            return f"no column holds in every row: {name} holds in {k} of {n}; {agree}{_see(q)}"
        return f"no column holds in any row; {agree}{_see(q)}"
    rows = [
        r
        for r in q.rows
        if len(_judged(a, r)) > 1 and all(c.status is Status.HOLDS for c in _judged(a, r))
    ]
    if rows:
        return (
            " or ".join(_do(r) for r in rows)
            + f": {'it holds' if len(rows) == 1 else 'each holds'} in every situation judged; {agree}"
        )
    return f"no design in the table holds in every situation judged; {agree}{_see(q)}"


def _see(q: Question) -> str:
    """Where to look when nothing in the question holds in its environment."""
    return (
        "" if q.env == "ideal" else f" (`toolcommit design --env {q.env}` searches for what does)"
    )
