"""What one user intent is, which calls change the world, and which key reached the provider.

A *view* is the plain dict an adapter builds for each tool call (see `Call.view`): the
call's ``tool``, ``call_id``, ``args`` and ``result``, plus what its source carried
(``attributes`` and ``resource`` of an OpenTelemetry span, ``metadata`` and ``tags`` of a
LangGraph event). Rules read views; they never see files.

A path names one value in a view: dot-separated, and a name that itself contains dots (an
OpenTelemetry attribute such as ``gen_ai.conversation.id``) is matched whole, longest name
first, so ``attributes.gen_ai.conversation.id`` works as written.

Examples
--------
>>> view = {"attributes": {"gen_ai.conversation.id": "c-42"}, "args": {"order": "o-7"}}
>>> resolve(view, "attributes.gen_ai.conversation.id"), resolve(view, "args.order")
('c-42', 'o-7')
>>> resolve(view, "args.missing") is MISSING
True
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import dataclass
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
        for n in range(len(parts) - 1, 0, -1):      # longest dotted name first
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


def _function(spec: str) -> Callable[[dict], object]:
    """The function `spec` (``MODULE:FUNCTION``) names, importable from the working
    directory too (the ``toolcommit`` script does not put it on the import path)."""
    module, _, name = spec.partition(":")
    here = os.getcwd()
    added = here not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        fn = getattr(importlib.import_module(module), name)
    except Exception as e:  # noqa: BLE001 - any failure to load the user's module is usage
        raise UsageError(f"--scope {spec}: cannot load {name} from module {module} ({e}); "
                         "give MODULE:FUNCTION importable from here, or an attribute "
                         "path such as attributes.gen_ai.conversation.id") from None
    finally:
        if added:
            sys.path.remove(here)
    if not callable(fn):
        raise UsageError(f"--scope {spec}: {name} is not a function")
    return fn


@dataclass(frozen=True)
class Rules:
    """The user's rules for one adaptation.

    Parameters
    ----------
    scope : str or None
        An attribute path into the view, or ``module:function`` (called with the view,
        returning the scope); None takes the source's default.
    effectful : frozenset of str or None
        Tools whose calls change the world; None means every tool.
    idempotency_key : str or None
        A path to the idempotency key the call sent to its provider; None means the call
        id (what a chat-style tool sends, if it sends one).
    """

    scope: Optional[str] = None
    effectful: Optional[frozenset] = None
    idempotency_key: Optional[str] = None

    def scope_of(self) -> Callable[[dict, str], str]:
        """A function (view, default) -> scope text; raises `UsageError` when the rule's
        path names nothing in a view (the message names the call)."""
        if self.scope is None:
            return lambda view, default: default
        if ":" in self.scope:
            fn = _function(self.scope)

            def by_function(view, default):
                try:
                    got = fn(view)
                except Exception as e:
                    raise UsageError(f"--scope {self.scope}: the function raised {e!r} on the "
                                     f"call {view.get('call_id')} of tool {view.get('tool')}; "
                                     "it is called with the call's view (a dict)") from None
                return default if got is None else as_text(got)
            return by_function
        path = self.scope

        def by_path(view, default):
            got = resolve(view, path)
            if got is MISSING or got is None:
                raise UsageError(f"--scope {path}: the call {view.get('call_id')} of tool "
                                 f"{view.get('tool')} has no such value; paths start at "
                                 f"one of: {', '.join(sorted(view))}")
            return as_text(got)
        return by_path

    def is_effectful(self, tool: str) -> bool:
        return self.effectful is None or tool in self.effectful

    def idempotency_key_of(self, view: dict) -> Optional[str]:
        """The idempotency key the call sent: at the rule's path, else its call id."""
        if self.idempotency_key is None:
            return view.get("call_id")
        got = resolve(view, self.idempotency_key)
        return None if got is MISSING or got is None else as_text(got)
