"""An `IntentLog` read back: its records, how many are in doubt, and its lines (the export
`toolcommit validate` checks), each read in one transaction of the store; the lines as of
one moment (`Store.snapshot`). A process that only reads a log opens a
`toolcommit.runtime.store.LogReader` instead."""

from __future__ import annotations

import json
from typing import IO, Iterable, Iterator, Optional

from toolcommit.runtime import lines as L
from toolcommit.runtime.logcore import LogCore
from toolcommit.runtime.records import Record
from toolcommit.runtime.store import records as SR
from toolcommit.runtime.store.lines import read_lines


class Export(LogCore):
    """Reading the log back (a base of `IntentLog`)."""

    def records(self, states: Optional[Iterable[str]] = None) -> list[Record]:
        """All records (in `states` if given), by key."""
        with self._lock, self.store.read() as tx:
            rows = SR.all_records(tx)
        return rows if states is None else [r for r in rows if r.state in set(states)]

    def doubt_counts(self) -> dict[str, int]:
        """{tool: records UNKNOWN or RECONCILING} in this log's store (every writer's); 0
        for a tool registered with this log (`tools`) that has none."""
        if self._stop.is_set():
            return {}
        with self._lock, self.store.read() as tx:
            got = SR.doubt_counts(tx)
        return {**dict.fromkeys(sorted(self.tools or ()), 0), **got}

    def unsettled(self) -> int:
        """How many records are not in a terminal state."""
        with self._lock, self.store.read() as tx:
            return SR.count_open(tx)

    def lines(self, batch: int = 5000) -> Iterator[str]:
        """Every stored line (JSON text), in the order they were written, as of one moment
        (`Store.snapshot`: this process's calls and lease renewals go on meanwhile)."""
        yield from read_lines(self.store, batch)

    def events(self) -> list[L.Line]:
        """Every stored line, decoded."""
        return [json.loads(t) for t in self.lines()]

    def export(self, out: IO[str]) -> int:
        """Write the whole log as JSON Lines to `out` (for ``toolcommit validate``)."""
        return L.write_jsonl(self.lines(), out)
