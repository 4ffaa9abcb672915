"""One flag per meaning: the old spellings of renamed options, kept for one release.

`alias(p, old, new)` makes `old` another spelling of the option `new` already added to the
parser `p` (same kind, type and choices; hidden from --help). After parsing, `resolve(args)`
moves an old spelling's value to the new option and says so on stderr in one line; an old
and a new spelling given together with different values are a `UsageError` (exit 2).
The table of renames is `docs/flags.md`.
"""

from __future__ import annotations

import argparse
import sys

from toolcommit.model.errors import UsageError

_GIVEN = "_flags_given"  # the namespace attribute: the dests given on the command line


def _marked(action: argparse.Action) -> None:
    """Make `action` record, when it is used, that its dest was given (once)."""
    base = type(action)
    if getattr(base, "_flags_marked", False):
        return

    class Marked(base):
        def __call__(self, parser, namespace, values, option_string=None):
            given = getattr(namespace, _GIVEN, None)
            if given is None:
                given = set()
                setattr(namespace, _GIVEN, given)
            given.add(self.dest)
            super().__call__(parser, namespace, values, option_string)

    Marked._flags_marked = True
    action.__class__ = Marked


def _action(p: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return next(a for a in p._actions if flag in a.option_strings)


def alias(p: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept `old` as the old spelling of option `new` (already added to `p`)."""
    act = _action(p, new)
    dest = f"{act.dest}__was_{old.lstrip('-').replace('-', '_')}"
    kind = (
        "store_true"
        if isinstance(act, argparse._StoreTrueAction)
        else "append"
        if isinstance(act, argparse._AppendAction)
        else None
    )
    kw = (
        {}
        if kind == "store_true"
        else {"type": act.type, "choices": act.choices, "metavar": act.metavar}
    )
    old_act = p.add_argument(
        old,
        dest=dest,
        action=kind or "store",
        default=argparse.SUPPRESS,
        help=argparse.SUPPRESS,
        **kw,
    )
    _marked(act)
    _marked(old_act)
    p.set_defaults(**{"_flags_renames": _renames(p) + ((old, new, act.dest, dest),)})


def _renames(p) -> tuple:
    return p.get_default("_flags_renames") or ()


def resolve(args: argparse.Namespace, err=None) -> argparse.Namespace:
    """Move the values of old spellings to their new options, one note each on `err`
    (stderr); `UsageError` if an old and a new spelling disagree."""
    err = err or sys.stderr
    given = getattr(args, _GIVEN, set())
    for old, new, dest, old_dest in getattr(args, "_flags_renames", ()) or ():
        if not hasattr(args, old_dest):
            continue
        value = getattr(args, old_dest)
        delattr(args, old_dest)
        if dest in given and getattr(args, dest) != value:
            raise UsageError(
                f"{old} {_shown(value)} and {new} {_shown(getattr(args, dest))} "
                f"disagree ({old} is the old spelling of {new}); give {new} once"
            )
        print(
            f"toolcommit: note: {old} is now spelled {new}; the old spelling goes in a "
            "later release",
            file=err,
        )
        setattr(args, dest, value)
        given.add(dest)
    return args


def _shown(value) -> str:
    if value is True:
        return "(on)"
    if isinstance(value, list):
        return " ".join(map(str, value))
    return str(value)
