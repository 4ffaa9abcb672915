"""The `toolcommit` command line: a thin shell over the pure core.

Each subcommand lives in `cli/<name>.py` with `add_parser(subparsers)` and `run(args) -> int`.
Exit codes: 0 holds / conforms, 1 violated, 3 unknown / inconclusive, 2 bad usage or input,
or output that cannot be written, 4 an internal error (a bug), 5 out of memory or a lost
cluster worker (nothing was judged); each error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from toolcommit.checker.cli import flags
from toolcommit.checker.cli.terminal import close_all
from toolcommit.checker.output import guarded_stdout, visible
from toolcommit.model.errors import InternalError, ResourceError, ToolcommitError

COMMANDS = (
    "spec",
    "check",
    "prove",
    "validate",
    "ask",
    "design",
    "torture",
    "export",
    "recover",
    "status",
    "gateway",
    "provider",
)


def say(line: str) -> None:
    """One line on stderr, `visible`: a file name, key or value quoted in an error cannot
    clear the screen, write the clipboard or reorder the line."""
    print(visible(line), file=sys.stderr)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 2 with one line naming the command and where help is
        say(f"{self.prog}: error: {message} (see: {self.prog} --help)")
        raise SystemExit(2)


def parser(commands=COMMANDS) -> argparse.ArgumentParser:
    """The command line, with the subcommands `commands` (each module is imported only
    when its subcommand is built: `validate` needs neither z3 nor networkx)."""
    p = _Parser(
        prog="toolcommit",
        description="Prove that agent tool calls change the "
        "outside world at most once: model checking and log conformance.",
    )
    p.add_argument("--version", action="version", version=f"toolcommit {_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in commands:
        try:
            module = importlib.import_module(f"toolcommit.checker.cli.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"toolcommit.checker.cli.{name}":
                raise
            continue
        sp = module.add_parser(sub)
        sp.set_defaults(run=module.run, parser=sp)
    return p


def _version() -> str:
    """The installed distribution's version (pyproject.toml), or where it is not installed
    (run from a checkout) 'unknown'."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolcommit")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        # a Ctrl-C while the subcommand's modules are still importing is an interrupt too
        named = argv[0] if argv and argv[0] in COMMANDS else None  # only that one is needed
        args, extra = parser((named,) if named else COMMANDS).parse_known_args(argv)
        if extra:  # reported by the subcommand, whose usage is the one that helps
            args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
        flags.resolve(args)  # old spellings of renamed flags: a note, or exit 2 on a clash
        with guarded_stdout():  # a failed write to stdout is an OutputError: exit 2, one line
            try:
                code = args.run(args)
            finally:
                close_all()  # no progress line is left before the error or the report
        _build_notes()
        return code
    except InternalError as e:
        say(f"toolcommit: internal error (a bug in toolcommit, please report): {e}")
        return 4
    except (ResourceError, MemoryError) as e:
        return _out_of(e)
    except ToolcommitError as e:
        say(f"toolcommit: {e}")
        return 2
    except KeyboardInterrupt:
        print("toolcommit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


EXIT_RESOURCE = 5


def _build_notes() -> None:
    """Say on stderr why compiled code was not taken from its cache (`cbuild.NOTES`)."""
    from toolcommit.checker import cbuild

    while cbuild.NOTES:  # said once: a later command in this process has its own
        say(f"toolcommit: note: {cbuild.NOTES.pop(0)}")


def _out_of(e: BaseException) -> int:
    """One line for a run the machine could not finish (exit 5: nothing was judged)."""
    if isinstance(e, MemoryError):
        why = f": {e}" if str(e) else ""
        e = (
            f"out of memory{why}; nothing was judged: give the command more memory, or "
            "bound it (check: --max-states or smaller --bounds; validate: --engine dask spreads "
            "the intents over more machines)"
        )
    say(f"toolcommit: {e}")
    return EXIT_RESOURCE
