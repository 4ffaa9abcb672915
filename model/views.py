"""A view and the paths into it: what a rule reads of one tool call.

A *view* is the plain dict built for each tool call (a log adapter's `Call.view`, the
gateway's call view): its ``tool``, ``call_id``, ``args``, and what its source carried. A
path names one value in a view: dot-separated, and a name that itself contains dots (an
OpenTelemetry attribute such as ``gen_ai.conversation.id``) is matched whole, longest name
first, so ``attributes.gen_ai.conversation.id`` works as written. A scope rule
(`scope_rule`) is such a path or ``MODULE:FUNCTION``; the log checker and the gateway read
``--scope`` here, one home.

Examples
--------
>>> view = {"attributes": {"gen_ai.conversation.id": "c-42"}, "args": {"order": "o-7"}}
>>> resolve(view, "attributes.gen_ai.conversation.id"), resolve(view, "args.order")
('c-42', 'o-7')
>>> resolve(view, "args.missing") is MISSING
True
>>> scope_rule("args.order")(view, "default")
'o-7'
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Callable, Optional

from toolcommit.model.errors import UsageError

MISSING = object()


def resolve(view, path: str):
    """The value at `path` in `view` (dicts and lists), or `MISSING`."""
    if path == "":
        return view
    if isinstance(view, dict):
        if path in view:
            return view[path]
        parts = path.split(".")
        for n in range(len(parts) - 1, 0, -1):  # longest dotted name first
            head = ".".join(parts[:n])
            if head in view:
                got = resolve(view[head], ".".join(parts[n:]))
                if got is not MISSING:
                    return got
        return MISSING
    if isinstance(view, list):
        head, _, rest = path.partition(".")
        if head.isdigit() and int(head) < len(view):
            return resolve(view[int(head)], rest)
    return MISSING


def as_text(value) -> str:
    """A scope or key value as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def load_function(spec: str) -> Callable[[dict], object]:
    """The function `spec` (``MODULE:FUNCTION``) names: imported as Python would, and
    else from the working directory (``mymod.py`` there), as ``python -m`` would find it."""
    module, _, name = spec.partition(":")
    if not all(part.isidentifier() for part in module.split(".")) or not name.isidentifier():
        raise UsageError(
            f"--scope {spec}: give MODULE:FUNCTION (both Python names, such as "
            "mymod:scope_of), or an attribute path such as "
            "attributes.gen_ai.conversation.id"
        )
    try:
        mod = _import(module)
        fn = getattr(mod, name)
    except Exception as e:  # noqa: BLE001 - the user's module may raise anything on import
        raise UsageError(
            f"--scope {spec}: cannot load {name} from module {module} "
            f"({type(e).__name__}: {e}); give MODULE:FUNCTION importable from "
            "here or from the working directory, or an attribute path such as "
            "attributes.gen_ai.conversation.id"
        ) from None
    if not callable(fn):
        raise UsageError(f"--scope {spec}: {name} is not a function")
    return fn


def _import(module: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        top = module.split(".")[0]
        here = os.getcwd()
        if (
            e.name != top
            or here in sys.path
            or not (
                os.path.exists(os.path.join(here, top + ".py"))
                or os.path.isdir(os.path.join(here, top))
            )
        ):
            raise
    sys.path.insert(0, here)
    try:
        return importlib.import_module(module)
    finally:
        sys.path.remove(here)


def scope_rule(rule: Optional[str], fell_back: Optional[list] = None) -> Callable[[dict, str], str]:
    """A function (view, default) -> scope text for the ``--scope`` `rule` (a path, or
    ``MODULE:FUNCTION``; None: the default); raises `UsageError` when the rule's path names
    nothing in a view (the message names the call). A function rule that returns None keeps
    the source's default scope, and the call's id goes to `fell_back` (to say so)."""
    if rule is None:
        return lambda view, default: default
    if ":" in rule:
        fn = load_function(rule)

        def by_function(view, default):
            try:
                got = fn(view)
            except Exception as e:
                raise UsageError(
                    f"--scope {rule}: the function raised {e!r} on the "
                    f"call {view.get('call_id')} of tool {view.get('tool')}; "
                    "it is called with the call's view (a dict)"
                ) from None
            if got is None:
                if fell_back is not None:
                    fell_back.append(view.get("call_id"))
                return default
            return as_text(got)

        return by_function
    path = rule

    def by_path(view, default):
        got = resolve(view, path)
        if got is MISSING or got is None:
            raise UsageError(
                f"--scope {path}: the call {view.get('call_id')} of tool "
                f"{view.get('tool')} has no such value; paths start at "
                f"one of: {', '.join(sorted(view))}"
            )
        return as_text(got)

    return by_path
