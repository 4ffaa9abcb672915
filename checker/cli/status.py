"""`toolcommit status DB` (or `--dsn CONNINFO [--schema S]`): every record of an intent
log not settled, whoever holds it (its owner, whether that process is alive, its lease),
when the design lets it be settled and the one command that settles it; and every record
given up (`toolcommit.runtime.status`). The design is read from the log itself (any design:
a shipped one, a design file, custom timing). The log is only read.

Exit 0 when nothing is in doubt (calls in progress and given-up records are listed: the
user was told), 3 when something is (a request sent, its outcome not known, no call driving
it: a dead pod's included, from the moment it died), 2 for bad input.
"""

from __future__ import annotations

import json
import shlex
import sys

from toolcommit.checker.cli.export_log import WHAT
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
        help="the design the log follows (default: the one the log stores; give it only "
        "for a log written before logs kept their design)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text")
    return p


# ----- reading ------------------------------------------------------------------------------
def _read(args):
    """One moment of the log (`toolcommit.runtime.status.Snapshot`), where it is, and the
    conninfo a printed command may show (None for a file)."""
    from toolcommit.runtime.status import snapshot
    from toolcommit.runtime.store.reader import public_dsn

    with reading(args.db, args.dsn, args.schema, "records") as log:
        snap = snapshot(log)
        if args.dsn is None:
            return snap, args.db, None
        return snap, f"database {log.database()}, {log.where}", public_dsn(args.dsn)


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


def _timing(design) -> str:
    def t(x):
        return "unbounded" if x is None else f"{x:g} s"

    return f"delay bound {t(design.delay_bound)}, replay window {t(design.replay_window)}"


def _text(where: str, design, found, counts) -> str:
    w = width()
    head = (
        f"{where}: {counts['in doubt']} record(s) in doubt, {counts['not sent']} not sent, "
        f"{counts['in progress']} in progress, {counts['given up']} given up (design "
        f"{design.name}, {design.guarantee or 'its guarantee'}; {_timing(design)})"
    )
    lines = wrap_line(head, w, 2)
    for e in found:
        owner = (
            ""
            if e.owner is None or e.kind == "given up"
            else f", owner {e.owner} "
            + (f"alive (lease {e.lease_left:.0f} s left)" if e.owner_alive else "gone")
        )
        when = (
            ""
            if e.settles_in is None
            else ", settles now"
            if e.settles_in <= 0
            else f", settles in {_age(e.settles_in)}"
        )
        lines.append("")
        lines += wrap_line(
            f"{e.kind}: {e.key} ({e.tool}, scope {e.scope}) {e.state}, age {_age(e.age)}"
            f"{owner}{when}",
            w,
            2,
        )
        lines += wrap_line(f"  waits for: {e.waits_for}", w, 4)
        lines += wrap_line(f"  next step: {e.next_step}", w, 4)
    return "\n".join(lines) + "\n"


def _recover_command(args, shown_dsn) -> str:
    if args.db:
        return f"toolcommit recover {shlex.quote(args.db)}"
    return f"toolcommit recover --dsn {shlex.quote(shown_dsn)}" + (
        f" --schema {args.schema}" if args.schema else ""
    )


def run(args) -> int:
    from toolcommit.runtime.design import DesignError
    from toolcommit.runtime.status import KINDS, design_of, entries

    one_source("status", args.db, args.dsn, args.schema)
    snap, where, shown_dsn = _read(args)
    try:
        design = design_of(snap, args.provider)
    except DesignError as e:
        raise UsageError(str(e)) from None
    found = entries(snap, design, _recover_command(args, shown_dsn))
    counts = {k: sum(e.kind == k for e in found) for k in KINDS}
    if args.format == "json":
        sys.stdout.write(
            json.dumps(
                {
                    "log": where,
                    "design": design.name,
                    "digest": design.digest,
                    "delay_bound_s": design.delay_bound,
                    "replay_window_s": design.replay_window,
                    "in_doubt": counts["in doubt"],
                    "not_sent": counts["not sent"],
                    "in_progress": counts["in progress"],
                    "given_up": counts["given up"],
                    "exit": _exit(counts),
                    "records": [e.as_json() for e in found],
                },
                indent=2,
            )
            + "\n"
        )
    else:
        sys.stdout.write(_text(where, design, found, counts))
    return _exit(counts)


def _exit(counts) -> int:
    return IN_DOUBT_EXIT if counts["in doubt"] or counts["not sent"] else 0
