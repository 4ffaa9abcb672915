"""Where the intent log lives: one SQL schema, two engines (SQLite, PostgreSQL), and every
SQL statement the library runs.

The package's face: `Store` and `Tx` (`base`), the engines (`SqliteStore`, `PostgresStore`),
the statements by table (`records` and its leases, `lines`, `writers`, `design`, `asks`),
and `LogReader` (`reader`): the public, read-only view of a log (its records, its lines,
the design it stores) that `toolcommit status`, `export` and `recover` read it through.

The log needs three things of its store, and both engines give them:

1. a uniqueness constraint that decides a race in one step (``tc_records.key`` is the
   primary key; ``tc_records.slot`` is unique where set),
2. a compare-and-set (``UPDATE ... WHERE key = ? AND state = ? AND owner = ? ...``, whose
   row count says who won), and
3. one transaction per decision, holding the record change and the log lines it writes, so
   a crash (even SIGKILL) leaves both or neither.

Tables
------
``tc_records``  one row per semantic key: the record state, fence, lease (owner,
                owner_inc, lease_until on the store's clock), the accepting call, the
                provider's saved result, and when its request was first and last sent
                (``first_sent``, ``sent_at``: the replay window and the delay bound), and
                whether a request of it may be on its way from its holder now
                (``in_flight``: a dispatch or a replay whose end is not written; a takeover
                of such a record counts as its last send, and of no other).
``tc_events``   the log contract (spec/log.schema.json), one JSON line per row, in insert
                order (``id``); ``(writer, seq)`` is unique.
``tc_writers``  one row per writer name: its incarnation, whether a process claims it
                (``running``), its last seq, and where that process runs (``host``,
                ``pid``, and on PostgreSQL its server process, ``backend``): what tells
                `status` a killed process from a live one before its leases run out.
``tc_account``  at most one row (``id = 1``): the provider account the log's tools act on,
                recorded by the first tool naming one (`IntentLog.bind_account`).
``tc_design``   one row (``id = 1``): the name, digest and document of the design the log was
                created under (`Design.digest`, `Design.doc`: what `status` and `recover`
                read it from); `IntentLog` refuses to open the log under another.
                With none stored and no open record (else when told: ``adopt_design``), the first
                design that opens the log is stored (`IntentLog.design_adopted` says so).
``tc_tools``    one row per tool called with a declared identity: its rule
                (`toolcommit.runtime.identity.Identity.rule`, JSON), which decides which
                calls are one intent; `IntentLog.declare` refuses a changed rule while the
                tool has records in doubt.

SQL is written once with ``?`` placeholders; the PostgreSQL store turns them into
``%s``, so no statement may contain a literal ``%`` or ``?``.

One statement per decision
--------------------------
A decision whose expected case is known before it runs (a fresh proposal accepted, an
ack at the ticket's generation) can be written without a conversation: `Store.once` sends
its writes as one statement, each gated on the one before (``{gate}`` in a `Write`: the
writer's incarnation current for the first, the first having written for the rest), all
or nothing. PostgreSQL runs it as one data-modifying ``WITH``, committed alone: one round
trip where a transaction takes one per statement plus ``BEGIN`` and ``COMMIT``. When the
case does not hold nothing is written, and the log decides in a transaction as usual, so
the decision itself lives once, in the log. SQLite, in process, has no round trips to save
(and no data-modifying ``WITH``): it always decides in a transaction.

Limitations
-----------
SQLite is for processes on one machine (one file, WAL, ``BEGIN IMMEDIATE`` serializes
writers); leases run on each writer's clock (``tc_now()``), and a writer whose clock is off
the file system's (the time stamped on the file) is refused when it opens the file.
PostgreSQL is for orchestrators on several machines; leases then run on the database
server's clock, never on a worker's, and a lost connection is opened again at the next use
(`PostgresStore`).
"""

from __future__ import annotations

from toolcommit.runtime.store.base import GATE, Cursor, Store, StoreError, Tx, Write, gated
from toolcommit.runtime.store.lines import page_lines, read_lines
from toolcommit.runtime.store.postgres import PostgresStore, pg_schema, pg_snapshot
from toolcommit.runtime.store.reader import LogReader, ReadError
from toolcommit.runtime.store.records import expire_leases
from toolcommit.runtime.store.schema import (
    COLS,
    GAVE_UP,
    LATER_COLUMNS,
    OPEN_SQL,
    OPEN_STATES,
)
from toolcommit.runtime.store.sqlite import SqliteStore, file_skew

__all__ = [
    "COLS",
    "GATE",
    "GAVE_UP",
    "LATER_COLUMNS",
    "OPEN_SQL",
    "OPEN_STATES",
    "Cursor",
    "LogReader",
    "ReadError",
    "PostgresStore",
    "SqliteStore",
    "Store",
    "StoreError",
    "Tx",
    "Write",
    "expire_leases",
    "file_skew",
    "gated",
    "page_lines",
    "pg_schema",
    "pg_snapshot",
    "read_lines",
]
