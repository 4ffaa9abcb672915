"""One report from the shards' parts (`toolcommit.checker.logs.shards`): the report the single
process gives on the same logs, byte for byte in every renderer.

Findings merge by `Findings.merge` (the cap keeps the least keys, whoever found them; the
writer findings come from shard 0 alone); line counts add up over the shards (the fixup
shard re-read lines the shards counted); keys and intents add up over shards and fixup,
which hold disjoint ones; writers are numbered alike in every shard; a focus key's story
comes from the shard that judged the key.
"""

from __future__ import annotations

from itertools import islice
from typing import Optional, Sequence

from toolcommit.checker.logs.report import Report, verdict_of
from toolcommit.checker.logs.shards import Part
from toolcommit.model.errors import UsageError


def merge(parts: Sequence[Part], fixup: Optional[Part], focus: Sequence[str], index=None) -> Report:
    """The report of `parts` (shard order) and the `fixup` part; refuses a focus key no
    shard has (the single process's `UsageError`, word for word). With the line `index`
    (`logs.index.Index`), what writers did (findings, warnings, their number) is the
    index's, and it names the writers."""
    check_focus(focus, parts)
    if index is None:
        found, rest, warnings, writers = (
            parts[0].found,
            parts[1:],
            parts[0].warnings,
            len(parts[0].writers),
        )
    else:
        found, rest = index.store.found, parts
        warnings, writers = index.warnings, len(index.store.wnames)
    for p in [*rest, *([fixup] if fixup is not None else [])]:
        found.merge(p.found)
    findings = found.freeze()
    counts = dict(parts[0].counts)
    for p in parts[1:]:
        for t, n in p.counts.items():
            counts[t] += n
    judged = [*parts, *([fixup] if fixup is not None else [])]
    stats = dict(
        counts,
        keys=sum(p.keys for p in judged),
        intents=sum(p.intents for p in judged),
        writers=writers,
        findings=len(findings),
    )
    stories = {}
    for p in judged:  # the fixup's last: it judged the keys it took over
        stories.update(p.history)
    history = {k: tuple(found.citation(s) for s in stories[k]) for k in dict.fromkeys(focus)}
    return Report(
        verdict_of(found.totals()),
        tuple(findings),
        tuple(warnings),
        stats,
        found.dropped,
        history,
        found.totals(),
    )


def check_focus(focus: Sequence[str], parts: Sequence[Part]) -> None:
    """Refuse a --key the log does not name, listing the first keys it does (by the line
    that named them first): `toolcommit.checker.logs.validate`'s message."""
    has = {k for p in parts for k in p.focus}
    missing = [k for k in dict.fromkeys(focus) if k not in has]
    if not missing:
        return
    total = sum(p.all_keys for p in parts)
    some = [k for _, k in sorted(f for p in parts for f in p.first_keys)][:5]
    raise UsageError(focus_message(missing, some, total))


def focus_message(missing: Sequence[str], some: Sequence[str], total: int) -> str:
    """The message refusing focus keys `missing`; `some` are the log's first keys."""
    has = (
        (
            f"keys it has: {', '.join(islice(some, 5))}"
            + (f" and {total - 5} more" if total > 5 else "")
        )
        if total
        else "it names no key"
    )
    names = ", ".join(repr(k) for k in missing)
    return (
        f"--key {names}: not in the log ({has}); a key is named by the "
        "'key' field of proposals, transitions and effects"
    )
