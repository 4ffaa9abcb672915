"""Log conformance, the pure core: events in, typed findings and a verdict out. No I/O.

The stages, in the order a line meets them::

    read       bytes -> decoded lines (files, stdin, gzip; bounded)    logs/read.py
    events     typed decoding (msgspec structs), else hand field       logs/typed.py,
               checks against spec/log.schema.json                      logs/events.py
    writers    each writer's own order by seq: lost and repeated lines  logs/writers.py
    chains     each key's transitions as one chain: LEGAL, P2, RACE,    logs/chains.py
               P4, FENCE
    intents    proposals and effects by canonical intent: CANON, I1,    logs/intents.py
               P1, P3, ORPHAN_EFFECT (memory: logs/store.py)
    findings   the capped collector and the finding types               logs/findings.py
    report     the verdict                                              logs/report.py

`Conformance` drives them: `feed` one event at a time, in any cross-writer order, then
`finish`. Sharded by key, the same stages run in several processes (logs/shards.py,
logs/pool.py) or on a Dask cluster (logs/cluster.py), and logs/merge.py makes the one
report. The log format is the public contract of `spec/log.schema.json`; the core
consumes events already decoded and checked (by the reader, or `check` below) as dicts:

- every event: ``type`` (``proposal | transition | effect | crash | restart``), ``writer``
  (str: the process that wrote it), ``seq`` (int >= 0, increasing per writer; a gap means
  lost lines), optional ``ts`` (str, RFC 3339; read by nobody here).
- ``proposal``: ``call_id``, ``tool``, ``args`` (a JSON object), ``scope``, ``key`` (the
  implementation's semantic key), ``decision`` (``accepted | duplicate | conflict``),
  optional ``epoch`` (int).
- ``transition``: ``key``, ``from``, ``to`` (record states of `spec/protocol.json`; a key's
  first transition starts at ``PROPOSED``), optional ``fence``, ``epoch`` (int),
  ``call_id``, ``reason`` (str).
- ``effect``: what the provider applied: ``key`` and/or ``idempotency_key``, ``tool``,
  ``args``, ``scope``, ``kind`` (``apply | compensate``), optional ``fence`` (int),
  ``effect_id`` (str; two records with one id are one effect), ``epoch`` (int).

Timestamps are never read.

Examples
--------
>>> evs = [
...   {"type": "proposal", "writer": "w1", "seq": 1, "call_id": "t1", "tool": "refund",
...    "args": {"amount": 20}, "scope": "u42", "key": "k1", "decision": "accepted"},
...   {"type": "transition", "writer": "w1", "seq": 2, "key": "k1", "from": "PROPOSED", "to": "RECORDED"},
...   {"type": "transition", "writer": "w1", "seq": 3, "key": "k1", "from": "RECORDED", "to": "DISPATCHED", "fence": 1},
...   {"type": "transition", "writer": "w1", "seq": 4, "key": "k1", "from": "DISPATCHED", "to": "ACKED", "fence": 1},
...   {"type": "effect", "writer": "bank", "seq": 1, "key": "k1", "tool": "refund",
...    "args": {"amount": 20.0}, "scope": "u42", "kind": "apply", "fence": 1}]
>>> check(evs).verdict
<LogVerdict.CONFORMS: 'CONFORMS'>
>>> evs.append({"type": "effect", "writer": "bank", "seq": 2, "key": "k1", "tool": "refund",
...   "args": {"amount": 20}, "scope": "u42", "kind": "apply"})
>>> r = check(evs)
>>> r.verdict, sorted({f.property for f in r.findings})
(<LogVerdict.VIOLATES: 'VIOLATES'>, ['I1', 'P1'])
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from toolcommit.checker.logs import asks, chains, intents, lane
from toolcommit.checker.logs.findings import LINE_BITS, describe
from toolcommit.checker.logs.intents import EventError
from toolcommit.checker.logs.report import LogVerdict, Report, verdict_of, with_findings
from toolcommit.checker.logs.stages import STAGE
from toolcommit.checker.logs.store import (
    Store,
)
from toolcommit.checker.logs.writers import note_crash, note_seq, report_gaps

__all__ = ["Conformance", "EventError", "LogVerdict", "Report", "check"]


class Conformance(Store):
    """Incremental conformance checker: `feed` events in any cross-writer order, then
    `finish` once for the `Report`.

    Parameters
    ----------
    files : sequence of str
        Display names; an event's location is ``(file index, line)``.
    focus : iterable of str, optional
        Keys whose full history (every event naming them, plus crashes and restarts) is
        kept for `Report.history` (the Mermaid renderer draws it).
    pack : bool
        Pack closed keys and their intents into bytes (the default; a test checks that the
        report does not depend on it).
    complete_effects : bool
        The log's effect lines are the provider's whole ledger (as the fault harness exports
        it), so an intent without one took no effect: a repeated dispatch with no effect
        record is then no possible I1. Off by default: a log alone cannot promise that.
    """

    def __init__(
        self,
        files: Sequence[str] = ("<events>",),
        focus: Iterable[str] = (),
        pack: bool = True,
        complete_effects: bool = False,
        native: bool = True,
    ):
        super().__init__(files, focus, pack, complete_effects)
        self._finished = False
        # the native lane (logs/lane.py) for `feed_batch`, unless focus histories are kept
        self.lane = lane.load()[0] if native and not self.focus else None
        # where the writer stage records SEQ_GAP and SEQ_DUP: one shard only, when sharded
        # (every shard follows every writer's order, see `skip`)
        self.seq_found = self.found

    def feed(self, ev, file_index: int = 0, line: int = 0) -> None:
        """Consume one well-formed event, a `toolcommit.checker.logs.typed` object (see the
        module docstring for its fields).

        The per-line path: the writer's next seq is inlined here (a call per line costs
        more than the rest of the work); the line then goes to its stage
        (`writers.note_seq`, `chains.transition`, ...). The native lane (logs/lane.c)
        mirrors this path and each stage's common case: change both.

        Raises
        ------
        EventError
            The event's call has no canonical form.
        """
        wname = ev.writer
        w = self.writers.get(wname)
        if w is None:
            w = self.writer(wname)
        loc = w.base | (file_index << LINE_BITS) | line
        seq = ev.seq
        if seq == w.nxt:  # the common case: the writer's next line
            w.nxt = seq + 1
            w.hi_loc = loc
        elif not note_seq(w, seq, self.seq_found, loc):
            return
        t = ev.type
        self.counts[t] += 1
        if self.focus:
            self._remember(ev, loc)
        STAGE[t](self, ev, w, loc)

    def feed_batch(self, numbers: Sequence[int], events: list, file_index: int = 0) -> None:
        """`feed` each of `events` as line `numbers[i]`, by the native lane when it is
        loaded and the lines are consecutive (the reader's common batch), else one by one.

        Raises
        ------
        EventError
            With ``line`` set to the line whose event has no canonical form.
        """
        if self.lane_feed(numbers, events, file_index):
            return
        feed = self.feed
        n = 0
        try:
            for n, ev in zip(numbers, events):
                feed(ev, file_index, n)
        except EventError as e:
            e.line = n
            raise

    def lane_feed(
        self,
        numbers: Sequence[int],
        events: list,
        file_index: int = 0,
        route: Optional[tuple] = None,
    ) -> bool:
        """Feed the batch by the native lane, if it is loaded and the lines are consecutive
        (the reader's common batch); False, having done nothing, otherwise. `route`: a
        shard's routing (`toolcommit.checker.logs.shards.Shard`), else every line is fed.

        Raises
        ------
        EventError
            With ``line`` set to the line whose event has no canonical form.
        """
        if (
            self.lane is None
            or type(numbers) is not range
            or numbers.step != 1
            or type(events) is not list
        ):
            return False
        try:
            self.lane.feed(self, events, file_index, numbers.start, self.feed, route)
        except EventError as e:
            e.line = self.lane.failed_line()
            raise
        return True

    def skip(self, ev, file_index: int = 0, line: int = 0) -> None:
        """A line another shard checks (`toolcommit.checker.logs.shards`): only what every
        shard needs of it, its writer's order (a seq used twice makes every shard ignore
        the later copy, and locations name writers by the order they appear) and a crash
        (P4 reads every writer's crashes); focus histories get crashes and restarts."""
        wname = ev.writer
        w = self.writers.get(wname)
        if w is None:
            w = self.writer(wname)
        loc = w.base | (file_index << LINE_BITS) | line
        seq = ev.seq
        if seq == w.nxt:
            w.nxt = seq + 1
            w.hi_loc = loc
        elif not note_seq(w, seq, self.seq_found, loc):
            return
        t = ev.type
        if t == "crash":
            note_crash(w, seq, loc)
        if self.focus and (t == "crash" or t == "restart"):
            self._remember(ev, loc)

    def cut_off(self, file_index: int, line: int) -> None:
        """The reader found `line`, the last of a file, cut off: one event was lost."""
        name = self.files[file_index] if file_index < len(self.files) else "?"
        self.found.add(
            "CUT_OFF",
            name,
            "possible",
            f"the last line of {name} is cut off (no newline, not valid JSON): its "
            "writer died mid-write, so an event was lost and the log cannot prove "
            "conformance (or a violation hidden in it)",
            [("note", "", f"line {line} cut off", self.found.loc(-1, file_index, line))],
        )

    def _remember(self, ev, loc: int) -> None:
        t = ev.type
        if t in ("crash", "restart"):
            for hist in self.focus.values():
                hist.append((t, ev.writer, t, loc))
            return
        for name in {ev.key, getattr(ev, "idempotency_key", None)}:
            if name in self.focus:
                self.focus[name].append(describe(ev, loc))

    def finish(self, warnings: Sequence[str] = ()) -> Report:
        """Resolve open keys, run the end-of-log checks and return the `Report`."""
        self.close()
        return self.report(warnings)

    def close(self) -> None:
        """The end-of-log checks: gaps in writers' seq numbers, open keys, intents."""
        if self._finished:
            raise RuntimeError("finish() called twice")
        self._finished = True
        report_gaps(self.writers.values(), self.seq_found)
        chains.finish_open(self)
        intents.finish(self)

    def report(self, warnings: Sequence[str] = ()) -> Report:
        """The `Report` of what `close` left."""
        findings = self.found.freeze()
        totals = self.found.totals()
        stats = dict(
            self.counts,
            keys=len(self.keys),
            intents=len(self.intents),
            writers=len(self.writers),
            findings=len(findings),
        )
        history = {k: tuple(self.found.citation(s) for s in v) for k, v in self.focus.items()}
        return Report(
            verdict_of(totals),
            tuple(findings),
            tuple(warnings),
            stats,
            self.found.dropped,
            history,
            totals,
        )


def check(
    events: Iterable[dict], name: str = "<events>", focus: Iterable[str] = (), pack: bool = True
) -> Report:
    """Check a list of event dicts (line numbers are 1, 2, ... in one pseudo-file `name`).

    Each event is validated first (`toolcommit.checker.logs.events.problem`); a bad one
    raises `toolcommit.model.errors.InputError` naming its line. The requests are then
    compared across scopes (`toolcommit.checker.logs.asks`), as `validate` does.
    """
    from toolcommit.checker.logs.events import problem
    from toolcommit.checker.logs.typed import from_dict
    from toolcommit.model.errors import InputError

    c = Conformance([name], focus, pack)
    typed = []
    for i, ev in enumerate(events, 1):
        why = problem(ev)
        if why:
            raise InputError(why, name, i)
        typed.append((from_dict(ev), 0, i))
        try:
            c.feed(typed[-1][0], 0, i)
        except EventError as e:
            raise InputError(str(e), name, i) from None
    report = c.finish()
    found = asks.judge([name], asks.listed(typed))
    focus = set(c.focus)
    if focus:
        found = [f for f in found if focus & set(asks.keys_of(f))]
    return with_findings(report, found)
