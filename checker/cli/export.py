"""`toolcommit export`: write what toolcommit knows in another tool's format.

`toolcommit export DB` writes the library's intent log (the SQLite file of
`toolcommit.runtime`, or of `toolcommit gateway --db`) as the JSON Lines log contract, for
``toolcommit validate``; a positional DB selects it (``--format log``, the default when a
DB is given). The text goes to stdout, or atomically to ``-o FILE`` (a temporary file
beside it, then a rename); the DB is only read.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

from toolcommit.model.errors import UsageError

from toolcommit.checker.output import write_atomic


@dataclass(frozen=True)
class Format:
    """One export format: its help line, what SOURCE it reads ("" for none: the model
    options say what), and `write(args) -> text`."""

    help: str
    source: str
    write: Callable[..., str]


def _log(args) -> str:
    from toolcommit.checker.cli.export_log import log_text
    return log_text(args.source)


FORMATS = {
    "log": Format("the library's intent log (SOURCE: its SQLite file) as the JSON Lines log "
                  "contract, for toolcommit validate", "the intent log's SQLite file "
                  "(toolcommit gateway --db, or IntentLog.sqlite's path)", _log),
}
SOURCE_DEFAULT = "log"       # the format a SOURCE without --format selects


def add_parser(sub):
    p = sub.add_parser("export", help="write the intent log (DB) for validate",
                       description="Write what toolcommit knows in another tool's format: "
                       + "; ".join(f"{n}: {f.help}" for n, f in FORMATS.items()) + ".")
    p.add_argument("source", nargs="?", metavar="DB",
                   help="the file a format converts (the intent log's SQLite file: --format "
                   "log, the default when given)")
    p.add_argument("--format", choices=sorted(FORMATS), default=None, help="what to write")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (atomically), not stdout")
    return p


def run(args) -> int:
    name = args.format or (SOURCE_DEFAULT if args.source else None)
    if name is None:
        raise UsageError("export: give a DB (the intent log's SQLite file) or --format "
                         f"{'/'.join(sorted(FORMATS))}")
    fmt = FORMATS[name]
    if args.source and not fmt.source:
        raise UsageError(f"--format {name} writes the model given by --preset, --set, "
                         f"--instance and --bounds, and reads no SOURCE ({args.source!r})")
    if fmt.source and not args.source:
        raise UsageError(f"--format {name} needs SOURCE: {fmt.source}")
    text = fmt.write(args)
    if args.output:
        write_atomic(args.output, text, inputs=[args.source] if args.source else ())
    else:
        sys.stdout.write(text)
    return 0
