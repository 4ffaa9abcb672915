"""An `IntentLog`'s rules about who and what a call is: its principal (`check_principal`),
the arguments that make two calls one intent (`fields`, `declare`: the identity rule each
tool stores), and the provider account its tools act on (`bind_account`)."""

from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

from toolcommit.runtime import lines as L
from toolcommit.runtime import reask as R
from toolcommit.runtime.exceptions import IntentLogError
from toolcommit.runtime.logcore import LogCore
from toolcommit.runtime.store import design as SD
from toolcommit.runtime.store import records as SR
from toolcommit.runtime.store.base import Tx

_LOGGER = logging.getLogger("toolcommit.runtime")


class Rules(LogCore):
    """Principals, identity rules and the account (a base of `IntentLog`)."""

    same: R.SameRule
    account: Optional[str]
    _rules: dict[str, str]

    def bind_account(self, account: str) -> None:
        """Record `account`, the provider account this log's effects act on, if the log
        names none yet; `IntentLogError` if it names another (a tool acting on another
        account would settle this log's records where they were never sent)."""
        if not account or not isinstance(account, str):
            raise IntentLogError(f"account={account!r}: name the provider account (a string)")
        if self.account == account:
            return

        def fn(tx: Tx) -> tuple[str, list[L.Line], None]:
            return SD.bind_account(tx, account), [], None

        stored = self._decide(fn)
        if stored != account:
            raise IntentLogError(
                f"this intent log acts on provider account {stored}, and a tool names "
                f"account {account}: point the tool at {stored}, or give it a log of its own"
            )
        self.account = stored

    def check_principal(self, principal: Any, what: str) -> None:
        """Refuse a `principal` that is not a non-empty string, or none where the design
        holds a re-ask (`holds`): a hold shared by two principals answers one with the
        other's outcome."""
        if principal is None and not self.holds:
            return
        if principal is None:
            raise IntentLogError(
                f"{what}: design {self.design.name} holds a re-ask while in doubt "
                "(reask=hold), so every call names who asked: pass principal= (the user, "
                "tenant or authenticated client; a function of the arguments on a wrapper)"
            )
        if not isinstance(principal, str) or not principal:
            raise IntentLogError(
                f"{what}: principal= must be a non-empty string naming who asked, got {principal!r}"
            )

    def fields(self, tool: str, identity: Optional[Sequence[str]] = None) -> Optional[list[str]]:
        """The identity fields of a call of `tool`: `identity`, else the log's ``same=``
        rule for `tool`, else None (every argument)."""
        got = R.rule_for(self.same, tool) if identity is None else identity
        if got is None:
            return None
        if isinstance(got, str) or not all(isinstance(n, str) for n in got):
            raise IntentLogError(f"{tool}: identity fields must be argument names, got {got!r}")
        return list(got)

    def declare(self, tool: str, rule: dict[str, Any]) -> None:
        """Store `tool`'s identity rule (`toolcommit.runtime.identity.Identity.rule`), or
        check it against the stored one. A changed rule would merge or split intents: it is
        refused while a record of the tool is open or settled untold (a re-ask would meet
        it), else stored in place of the old one, with a warning. So is a first rule while
        the tool has such records written without one (by an earlier release, whose keys
        and hold named no principal)."""
        text = L.dumps(rule)
        if self._rules.get(tool) == text:
            return

        def fn(tx: Tx) -> tuple[None, list[L.Line], None]:
            had = SD.rule(tx, tool)
            if had is None:
                self._refuse_live(tx, tool, "was written before the log stored its rule")
                SD.keep_rule(tx, tool, text)
            elif had != text:
                self._retool(tx, tool, had, text)
            return None, [], None

        self._decide(fn)
        with self._lock:
            self._rules[tool] = text

    def _refuse_live(self, tx: Tx, tool: str, what: str) -> None:
        """`IntentLogError` if a record of `tool` may still be met by a re-ask (open, or
        settled without its caller hearing it): a new rule would merge or split it."""
        live = SR.live_of_tool(tx, tool)
        if live:
            raise IntentLogError(
                f"{tool}: {live} of its records may still be met by a re-ask (in doubt, or "
                f"settled without its caller hearing it), and its identity {what}: the "
                "rule would merge or split those intents. Let them settle under the rule "
                "they were written with (toolcommit status; recover), or use a new log"
            )

    def _retool(self, tx: Tx, tool: str, old: str, new: str) -> None:
        self._refuse_live(tx, tool, f"rule changed ({old} -> {new})")
        SD.change_rule(tx, tool, new)
        _LOGGER.warning("%s: identity rule changed from %s to %s", tool, old, new)
