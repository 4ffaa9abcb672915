"""`toolcommit export`: write what toolcommit knows in another tool's format.

`--format` names what is written and from what. A format of the model (`promela`: the
instance's `System` as a Promela program for Spin) takes the model options (--preset, --set,
--instance, --bounds, --env); a format that converts a file takes it as SOURCE, and says so
in `FORMATS` (`Format.source`): `log`, the library's intent log (`toolcommit export DB`:
its SQLite file, only read, as the JSON Lines log contract for ``toolcommit validate``;
or `--dsn CONNINFO [--schema S]` for a log on PostgreSQL, read as of one moment), is what
a SOURCE or --dsn without --format selects. The text goes to stdout, or atomically to
`-o FILE` (a temporary file beside it, then a rename), never over the SOURCE.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

from toolcommit.checker.cli.check import add_model_options, bounds_from, config_from
from toolcommit.checker.cli.pglog import add_dsn_options, one_source
from toolcommit.checker.output import write_atomic
from toolcommit.checker.verify.suite import resolve_instances
from toolcommit.model.errors import UsageError
from toolcommit.model.semantics import build


@dataclass(frozen=True)
class Format:
    """One export format: its help line, what SOURCE it reads ("" for none: the model
    options say what), and `write(args) -> text`."""

    help: str
    source: str
    write: Callable[..., str]


def _promela(args) -> str:
    from toolcommit.checker.render.promela import promela

    if args.instance and len(args.instance) > 1:
        raise UsageError("--format promela writes one instance; give --instance once")
    inst = resolve_instances(args.instance or ["default"], bounds_from(args), args.env)[0]
    system = build(config_from(args), inst)
    if args.property and args.property not in system.invariants:
        raise UsageError(
            f"--property {args.property}: not an invariant of the model; valid: "
            f"{', '.join(system.invariants)}"
        )
    return promela(system, args.property or "")


def _log(args) -> str:
    from toolcommit.checker.cli.export_log import log_text, pg_log_text

    return pg_log_text(args.dsn, args.schema) if args.dsn else log_text(args.source)


FORMATS = {
    "log": Format(
        "the library's intent log (SOURCE: its SQLite file, e.g. toolcommit "
        "gateway's --db; or --dsn for PostgreSQL) as the JSON Lines log contract, for "
        "toolcommit validate",
        "the intent log's SQLite file (toolcommit gateway --db, or IntentLog.sqlite's "
        "path), or --dsn CONNINFO",
        _log,
    ),
    "promela": Format(
        "the instance's model as a Promela program for Spin (no symmetry "
        "reduction; --property P adds a monitor asserting invariant P)",
        "",
        _promela,
    ),
}


def add_parser(sub):
    p = sub.add_parser(
        "export",
        help="write a model in another tool's format (Promela), or the intent log DB for validate",
        description="Write what toolcommit knows in another tool's format: "
        + "; ".join(f"{n}: {f.help}" for n, f in FORMATS.items())
        + ".",
    )
    p.add_argument(
        "source",
        nargs="?",
        metavar="SOURCE",
        help="the file a format converts: the intent log's SQLite file (DB) for "
        "--format log, the default when SOURCE is given",
    )
    p.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default=None,
        help="what to write (default: log with a SOURCE; give promela for the model)",
    )
    add_model_options(p)
    p.add_argument("--property", metavar="P", help="promela: the invariant to assert")
    add_dsn_options(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write here (atomically), not stdout")
    return p


SOURCE_DEFAULT = "log"  # the format a SOURCE without --format selects


def run(args) -> int:
    read = args.source or args.dsn  # what a format that converts a log reads
    if args.format is None and not read:
        raise UsageError(
            "export: give a DB (the intent log's SQLite file), --dsn CONNINFO (its "
            f"PostgreSQL database) or --format {'/'.join(sorted(FORMATS))}"
        )
    args.format = args.format or SOURCE_DEFAULT
    fmt = FORMATS[args.format]
    if read and not fmt.source:
        raise UsageError(
            f"--format {args.format} writes the model given by --preset, --set, "
            f"--instance and --bounds, and reads no SOURCE ({read!r})"
        )
    if fmt.source:
        one_source("export", args.source, args.dsn, args.schema)
    elif args.schema is not None:
        raise UsageError("--schema is for --dsn (a PostgreSQL log)")
    text = fmt.write(args)
    if args.output:
        write_atomic(args.output, text, inputs=[args.source] if args.source else ())
    else:
        sys.stdout.write(text)
    return 0
