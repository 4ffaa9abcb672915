"""What a profile changed in an answer, in words (`Answer.changes`, see
`toolcommit.checker.design.changes`): one line per cell that differs from `ideal`, naming the
settings that make the difference and the documents they rest on. Reads the answer only.
"""

from __future__ import annotations

from toolcommit.checker.design.changes import Cause, Change
from toolcommit.checker.design.explain import footnotes
from toolcommit.checker.design.grid import Answer
from toolcommit.checker.engines.verdict import Status


def change_lines(a: Answer, markdown: bool) -> list[str]:
    """The section's paragraphs (empty when the answer was not compared with ideal)."""
    if a.changes is None:
        return []
    env, notes = a.question.env, footnotes(a)
    judged = sum(1 for c in a.cells.values() if c.judged)
    if not a.changes:  # nothing to name: the section is left out
        return []
    out = [
        f"{len(a.changes)} of the {judged} judged cells differ from the same question "
        f"under ideal. Each cause below was found by replay: with that one setting put back "
        f"(or, for a cell that now holds, added), the deciding counterexample no longer "
        f"runs to its violation."
    ]
    for ch in a.changes:
        out.append(_line(ch, env, notes.get((ch.row, ch.column)), markdown))
    cited = {c.label(): c for ch in a.changes for c in ch.causes}
    if cited:
        out.append(f"The behaviours of {env} these rest on:")
        out += [f"- {_cause(c, markdown)}" for c in cited.values()]
    return out


def _line(ch: Change, env: str, n, markdown: bool) -> str:
    name = f"**{ch.row} / {ch.column}**" if markdown else f"{ch.row} / {ch.column}"
    head = (
        f"{name}: {_status(ch.ideal_status, ch.ideal)} under ideal, "
        f"{_status(ch.here_status, ch.here, n)} under {env}"
    )
    if not ch.causes:
        return f"- {head}; not traced: the search in one of the two did not finish."
    tick = "`" if markdown else ""
    causes = " and ".join(f"{tick}{c.label()}{tick}" for c in ch.causes)
    if ch.joint:
        return (
            f"- {head}, because of these together: {causes} (no one of them alone is "
            f"needed by the counterexample)."
        )
    which = (
        "its counterexample" if ch.here_status is Status.VIOLATED else "the ideal counterexample"
    )
    need = "needs" if len(ch.causes) == 1 else "needs each of"
    return (
        f"- {head}, because of {causes}; {which} {need} {'it' if len(ch.causes) == 1 else 'them'}."
    )


def _status(status: Status, verdict, n=None) -> str:
    if status is not Status.VIOLATED:
        return status.value
    ref = f" [{n}]" if n else ""
    return f"VIOLATED {verdict.property} in {verdict.counterexample.length} steps{ref}"


def _cause(c: Cause, markdown: bool) -> str:
    docs = []
    for b in c.behaviours:
        if b.url is None:
            docs.append(f"{b.what} (no document: {b.rests_on})")
        elif markdown and b.url.startswith("http"):
            docs.append(f"{b.what} ([{b.url}]({b.url}))")
        else:
            docs.append(f"{b.what} ({b.url})")
    return f"`{c.label()}`: " + "; ".join(docs) if markdown else f"{c.label()}: " + "; ".join(docs)
