"""The log's lines (``tc_events``): the contract of `spec/log.schema.json`, one JSON text a
row in insert order, ``(writer, seq)`` unique. Appended in the transaction of the decision
that wrote them; read back in the order written."""

from __future__ import annotations

from typing import Iterator, Sequence

from toolcommit.runtime.store.base import Store, Tx


def append(tx: Tx, writer: tuple[str, int], seq: int, lines: Sequence[tuple[int, str]]) -> bool:
    """Store `lines` ((seq, JSON text) each) of `writer` = (name, incarnation) and set its
    last seq to `seq`; False (nothing written) when that incarnation is no longer the name's
    current one (another process opened the name)."""
    if (
        tx.run(
            "UPDATE tc_writers SET seq = ? WHERE writer = ? AND incarnation = ?",
            (seq, *writer),
        )
        != 1
    ):
        return False
    for i in range(0, len(lines), 300):  # a statement per 300 lines (SQLite's 999
        part = lines[i : i + 300]  # parameters): one round trip per decision
        tx.run(
            "INSERT INTO tc_events (writer, seq, line) VALUES "
            + ", ".join(["(?, ?, ?)"] * len(part)),
            [x for n, text in part for x in (writer[0], n, text)],
        )
    return True


def read_lines(store: Store, batch: int = 5000) -> Iterator[str]:
    """Every line stored in `store` (JSON text) in the order written: the exported log,
    read in one `Store.snapshot` (the log as of one moment, while others may be writing
    it)."""
    with store.snapshot() as tx:
        yield from page_lines(tx, batch)


def page_lines(tx: Tx, batch: int = 5000) -> Iterator[str]:
    """Every line in `tx`'s view of the log, in the order written, `batch` rows a query."""
    last = -1
    while True:
        rows = tx.all(
            "SELECT id, line FROM tc_events WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
        )
        if not rows:
            return
        for _id, text in rows:
            yield text
        last = rows[-1][0]
