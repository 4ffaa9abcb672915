"""`toolcommit recover DB` (or `--dsn CONNINFO [--schema S]`): settle the records of dead
writers in an intent log, SQLite or PostgreSQL, through its design's reconcile
(`toolcommit.runtime.recover_settle`).

Every open record whose holder is gone (its lease expired, or its writer name was opened
again since: a dead incarnation, the sweeper's own earlier runs included) is taken over and
settled as the design says: given up visibly where the provider has no status read
(email), else replayed or read through the tools ``--tools`` registers (a module whose
``@effectful`` tools are imported; each must act on the provider account the log names; a
log it opens at import is the sweeper's guest, never the live pod's writer name:
`toolcommit.runtime.guest`). The design is the one the log stores (``--provider`` only for
a log written before logs kept it); a log that stores no design and holds open records is
refused unless ``--adopt-design`` names it. A takeover counts as a send only where a
request may have been on its way, so running again never postpones a record's delay
bound. A live lease (a writer that may still be sending) is waited out for at most
``--wait`` seconds, as is a status read the design defers (a request may still land). Exit 0: no record of the log is open. Exit 3: some are, and each is named
(who holds it, in what state, for how long, what would settle it): run again, or give
``--wait``. ``--watch`` keeps settling, each record as soon as the design allows it, until
SIGINT or SIGTERM (then exit 0). Concurrent sweepers are safe: each takes a record by
compare-and-set, and each runs under a writer name of its own.
"""

from __future__ import annotations

import importlib
import os
import signal
import socket
import sys
import textwrap
import threading
import time

from toolcommit.checker.cli.pglog import add_dsn_options, one_source, reading
from toolcommit.checker.cli.terminal import width
from toolcommit.model.errors import UsageError


def add_parser(sub):
    p = sub.add_parser(
        "recover",
        help="settle the records of dead writers in an intent log",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument(
        "db",
        metavar="DB",
        nargs="?",
        help="the SQLite intent log (IntentLog.sqlite's file); or give --dsn",
    )
    add_dsn_options(p)
    p.add_argument(
        "--provider",
        metavar="NAME|FILE",
        help="the design the log follows (default: the one the log stores, any design: "
        "a shipped one, a design file, custom timing): ideal, stripe, email, "
        "fenced-store, or a design file (`toolcommit design -o FILE`); the one the log "
        "was created under (another is refused)",
    )
    p.add_argument(
        "--adopt-design",
        default=None,
        metavar="NAME|FILE",
        help="a log that stores no design (written before logs stored theirs, or its "
        "design row gone) and holds open records is refused: name its design here, the "
        "same as --provider, to say it was written under it",
    )
    p.add_argument(
        "--writer",
        default=None,
        help="the name this sweeper writes under (default: toolcommit-recover@"
        "HOST:PID, one per run, so concurrent sweepers never supersede each "
        "other)",
    )
    p.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE (its @effectful tools) to replay and read; repeatable. "
        "Only then is the working directory put first on sys.path",
    )
    p.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="wait at most this long for live leases and deferred status reads "
        "(default 0: name them and exit 3)",
    )
    p.add_argument(
        "--watch", action="store_true", help="keep settling until SIGINT or SIGTERM, then exit 0"
    )
    return p


def _open(args):
    from toolcommit.runtime.design import load

    one_source("recover", args.db, args.dsn, args.schema)
    if args.wait < 0:
        raise UsageError(f"--wait {args.wait}: give seconds, 0 or more")
    # before the store: a bad provider changes nothing; none given: the log's own
    design = None if args.provider is None else load(args.provider)
    adopt = None if args.adopt_design is None else load(args.adopt_design)
    if design is not None and adopt is not None and adopt.digest != design.digest:
        raise UsageError(
            f"--adopt-design {args.adopt_design} names another design than --provider "
            f"{args.provider}: give the design the log was written under to both"
        )
    design = design or adopt
    writer = _writer(args)
    return _postgres(args, design, writer) if args.dsn else _sqlite(args, design, writer)


def _writer(args) -> str:
    return args.writer or f"toolcommit-recover@{socket.gethostname()}:{os.getpid()}"


def _postgres(args, design, writer):
    """The log in `args.schema` of the database, refused unless it holds one already (a
    sweeper never creates a log)."""
    from toolcommit.runtime import IntentLog, StoreError

    with reading(None, args.dsn, args.schema, "writers") as log:
        design = design or _stored(log, log.where)
        where = log.where.removeprefix("schema ")  # the name `reading` accepted
    try:
        return IntentLog.postgres(args.dsn, writer, schema=where, provider=design, **_options(args))
    except StoreError as e:
        raise UsageError(f"--dsn: {e}") from None


def _sqlite(args, design, writer):
    from toolcommit.runtime import IntentLog, StoreError

    if not os.path.exists(args.db):
        raise UsageError(f"{args.db}: no such file; give the intent log's SQLite file")
    if not os.path.isfile(args.db):  # a FIFO would block the opening for ever
        raise UsageError(f"{args.db}: not a regular file; give the intent log's SQLite file")
    if design is None:  # the log's own, read before it is opened for writing
        with reading(args.db, None, None, "writers") as log:
            design = _stored(log, args.db)
    try:  # a sweeper never creates a log
        return IntentLog.sqlite(args.db, writer, create=False, provider=design, **_options(args))
    except StoreError as e:
        raise UsageError(str(e)) from None


def _stored(log, where: str):
    """The design the log stores (`toolcommit.runtime.status.stored_design`); refused in
    one line where it keeps none this release can read."""
    from toolcommit.runtime.design import DesignError
    from toolcommit.runtime.status import stored_design

    try:
        design, named = stored_design(log)
    except DesignError as e:
        raise UsageError(f"{where}: {e}") from None
    if design is None:
        raise UsageError(
            f"{where}: the log does not keep its design"
            + (f" (it names {named[0]}, digest {named[1]})" if named else "")
            + ": give it with --provider NAME|FILE"
            + ("" if named else " --adopt-design NAME|FILE")
        )
    return design


def _options(args) -> dict:
    return {"settler": args.watch, "adopt_design": args.adopt_design is not None}


def _import_tools(names, writer: str):
    """Import the modules `names`; a log one opens is a guest under a name of its own
    (`toolcommit.runtime.guest`: never the live pod's); the guests, to close at the end."""
    from toolcommit.runtime.guest import guests

    if names and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    with guests(writer) as opened:
        for name in names:
            try:
                importlib.import_module(name)
            except ImportError as e:
                opened.close()
                raise UsageError(
                    f"--tools {name}: cannot import it ({e}); run from the directory "
                    "that holds it, or install it"
                ) from None
    return opened


def _watch(log, name: str) -> dict[str, str]:
    """The library's settler (`IntentLog.settle_with`) on every registered tool (every
    tool where the design reads no status), printing each record it settles, until SIGINT
    or SIGTERM."""
    from toolcommit.runtime.registry import registered
    from toolcommit.runtime.shims import settle_pass
    from toolcommit.runtime.store import OPEN_STATES

    if log.design.status_read and not registered(log):
        raise UsageError(
            f"--watch: design {log.design.name} settles a record in doubt by a "
            "replay or a status read, through its tool: give --tools MODULE (the "
            "module of its @effectful tools)"
        )
    done: dict[str, str] = {}

    def show(line: dict) -> None:
        if line.get("type") == "transition" and line.get("to") not in OPEN_STATES:
            done[line["key"]] = line["to"]
            print(f"recover {name}: {line['key']} {line['to']}", flush=True)

    log.sinks.append(show)
    log.tools = registered(log) if log.design.status_read else None
    stop = threading.Event()
    old = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        log.settle_with(settle_pass)
        while not stop.wait(1.0):
            pass
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return done


def _stuck(log, rec) -> bool:
    """Whether `rec` is this sweeper's and needs a tool it does not have."""
    from toolcommit.runtime.shims import needs_tool

    return (rec.owner, rec.owner_inc) == (log.writer, log.incarnation) and needs_tool(log, rec)


def _holders(log) -> list[str]:
    """One line per holder of an open record: what it holds, for how long, what settles it."""
    from toolcommit.runtime.store import OPEN_STATES

    groups: dict[tuple, list] = {}
    for r in log.records(OPEN_STATES):
        groups.setdefault((r.owner, r.owner_inc), []).append(r)
    out = []
    for (owner, inc), recs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        states = ", ".join(
            f"{sum(r.state == s for r in recs)} {s}"
            for s in OPEN_STATES
            if any(r.state == s for r in recs)
        )
        head = f"  {owner}#{inc} holds {len(recs)} record(s) ({states})"
        if (owner, inc) != (log.writer, log.incarnation):
            lease = max(log.lease_left(r.key) for r in recs)
            out.append(
                f"{head} under a live lease, {lease:.1f} s left: it may still be "
                f"sending; run again then, or give --wait {int(lease) + 1}"
                if lease > 0
                else f"{head}, its lease ran out as this run ended: run again"
            )
            continue
        tools = sorted({r.tool for r in recs if _stuck(log, r)})
        wait = max((log.read_wait(r.key) for r in recs if r.state == "RECONCILING"), default=0)
        why = [f"tool {', '.join(tools)} is not registered (--tools MODULE)"] if tools else []
        if wait > 0:
            why.append(
                f"the design defers its status read {wait:.1f} s more (--wait {int(wait) + 1})"
            )
        out.append(f"{head}: " + ("; ".join(why) or "the provider did not answer; run again"))
    return out


def run(args) -> int:
    from toolcommit.runtime.registry import next_registration

    since = next_registration()
    guests = _import_tools(args.tools, _writer(args))
    try:
        return _run(args, since)
    finally:
        guests.close()


def _run(args, since) -> int:
    from toolcommit.runtime import IntentLogError
    from toolcommit.runtime.registry import serve_modules
    from toolcommit.runtime.settle import sweep
    from toolcommit.runtime.store import OPEN_STATES

    log = _open(args)
    name = args.db or f"schema {args.schema or 'public'}"
    try:
        notes = serve_modules(log, args.tools, since) if args.tools else []
    except IntentLogError as e:
        log.close()
        raise UsageError(str(e)) from None
    for note in [log.design_adopted, *notes]:
        if note:
            print(f"recover {name}: {note}", file=sys.stderr)
    try:
        if args.watch:
            done = _watch(log, name)
        else:
            done = sweep(log, time.monotonic() + args.wait)
        left = log.records(OPEN_STATES)
        lines = _holders(log) if left else []
    finally:
        log.close()
    by_state: dict[str, int] = {}
    for state in done.values():
        by_state[state] = by_state.get(state, 0) + 1
    parts = ", ".join(f"{n} {s}" for s, n in sorted(by_state.items())) or "nothing to take over"
    print(
        f"recover {name}: {len(done)} record(s) of dead writers taken over: {parts}"
        + (
            f"; {len(left)} record(s) of the log left open:"
            if left
            else "; no record of the log is open"
        )
    )
    for line in lines:
        print(
            textwrap.fill(
                line,
                width(),
                subsequent_indent="    ",
                break_on_hyphens=False,
                break_long_words=False,
            )
        )
    return 0 if args.watch or not left else 3
