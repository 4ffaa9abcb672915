"""`toolcommit status DB` (or `--dsn CONNINFO [--schema S]`): the records of an intent log
an on-call engineer must know about: each one in doubt (a request sent, its outcome not
known yet) or given up, with its age, its holder, and what the design waits for before it
settles (`toolcommit.runtime.status`). The log is only read.

Exit 0 when nothing is in doubt (given-up records are listed: the user was told), 3 when
something is, 2 for bad input.
"""

from __future__ import annotations

import json
import os
import sys

from toolcommit.checker.cli.export_log import WHAT, read_log
from toolcommit.checker.cli.pglog import add_dsn_options, one_source, reading
from toolcommit.checker.cli.terminal import width
from toolcommit.checker.render.fit import wrap_line
from toolcommit.model.errors import UsageError

IN_DOUBT_EXIT = 3


def add_parser(sub):
    p = sub.add_parser(
        "status",
        help="what an intent log holds in doubt or gave up, and what each waits for",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("db", metavar="DB", nargs="?", help=f"{WHAT}; or give --dsn")
    add_dsn_options(p)
    p.add_argument(
        "--provider",
        metavar="NAME|FILE",
        help="the design the log follows (default: the one the log was created "
        "under, where it names a shipped design)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    return p


# ----- reading ------------------------------------------------------------------------------
def _rows(tx, now_sql: str):
    from toolcommit.runtime.log import _COLS
    from toolcommit.runtime.records import record_of
    from toolcommit.runtime.status import LISTED

    marks = ", ".join("?" * len(LISTED))
    records = [
        record_of(r)
        for r in tx.all(
            f"SELECT {_COLS} FROM tc_records WHERE state IN ({marks}) ORDER BY key", LISTED
        )
    ]
    now = float(tx.one(f"SELECT {now_sql}")[0])
    return records, now, _stored_design(tx)


def _stored_design(tx):
    """(name, digest) of the design the log was created under, where the log stores one."""
    try:
        return tx.one("SELECT name, digest FROM tc_design WHERE id = 1")
    except Exception:  # a log written before logs stored their design: no table
        return None


def _sqlite(db: str):
    from toolcommit.runtime.store import SqliteStore

    def read(store):
        with store.read() as tx:
            return _rows(tx, SqliteStore.now_sql)

    return read_log(db, "tc_records", read)


def _postgres(dsn: str, schema):
    from toolcommit.runtime.store import PostgresStore

    with reading(dsn, schema, "tc_records") as tx:
        return _rows(tx, PostgresStore.now_sql)


def _design(args, stored):
    """The design to read the log under: --provider, else the one the log stores; a
    --provider other than the stored one is refused (the sentences would be another's)."""
    from toolcommit.runtime.design import SHIPPED, load

    name, digest = stored or (None, None)
    name = args.provider or name
    if name is None or (args.provider is None and name not in SHIPPED and not os.path.exists(name)):
        raise UsageError(
            "status: give --provider NAME|FILE, the design the log follows "
            f"({', '.join(SHIPPED)}, or a design file)"
            + (f"; the log names {name!r}, which is not here" if name else "")
        )
    design = load(name)
    if digest is not None and design.digest != digest:
        raise UsageError(
            f"--provider {name}: the log was created under design {stored[0]} "
            f"(digest {digest}), not this one (digest {design.digest}); give "
            "that design, or leave --provider out"
        )
    return design


# ----- the report ---------------------------------------------------------------------------
def _age(seconds) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return (
        f"{s // 3600}h{s % 3600 // 60:02d}m"
        if s >= 3600
        else f"{s // 60}m{s % 60:02d}s"
        if s >= 60
        else f"{s}s"
    )


def _text(where: str, design, found, in_doubt: int) -> str:
    w = width()
    head = (
        f"{where}: {in_doubt} record(s) in doubt, {len(found) - in_doubt} given up "
        f"(design {design.source}, {design.guarantee or 'its guarantee'})"
    )
    lines = wrap_line(head, w, 2)
    for e in found:
        lines.append("")
        lines += wrap_line(
            f"{e.kind}: {e.key} ({e.tool}, scope {e.scope}) {e.state}, "
            f"age {_age(e.age)}, holder {e.holder or 'none'}",
            w,
            2,
        )
        lines += wrap_line(f"  waits for: {e.waits_for}", w, 4)
    return "\n".join(lines) + "\n"


def run(args) -> int:
    from toolcommit.runtime.status import IN_DOUBT, entries

    one_source("status", args.db, args.dsn, args.schema)
    records, now, stored = _postgres(args.dsn, args.schema) if args.dsn else _sqlite(args.db)
    design = _design(args, stored)
    found = entries(design, records, now)
    in_doubt = sum(1 for e in found if e.kind == IN_DOUBT)
    where = args.db or f"schema {args.schema or 'public'}"
    if args.format == "json":
        sys.stdout.write(
            json.dumps(
                {
                    "log": where,
                    "design": design.source,
                    "in_doubt": in_doubt,
                    "given_up": len(found) - in_doubt,
                    "records": [e.as_json() for e in found],
                },
                indent=2,
            )
            + "\n"
        )
    else:
        sys.stdout.write(_text(where, design, found, in_doubt))
    return IN_DOUBT_EXIT if in_doubt else 0
