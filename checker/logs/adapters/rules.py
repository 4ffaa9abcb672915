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

from dataclasses import dataclass
from typing import Callable, Optional

from toolcommit.model.views import MISSING, as_text, resolve, scope_rule


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

    def scope_of(self, fell_back: Optional[list] = None) -> Callable[[dict, str], str]:
        """A function (view, default) -> scope text; raises `UsageError` when the rule's
        path names nothing in a view (the message names the call). A function rule that
        returns None keeps the source's default scope, and the call's id goes to
        `fell_back` (to say so)."""
        return scope_rule(self.scope, fell_back)

    def is_effectful(self, tool: str) -> bool:
        return self.effectful is None or tool in self.effectful

    def idempotency_key_of(self, view: dict) -> Optional[str]:
        """The idempotency key the call sent: at the rule's path, else its call id."""
        if self.idempotency_key is None:
            return view.get("call_id")
        got = resolve(view, self.idempotency_key)
        return None if got is MISSING or got is None else as_text(got)
