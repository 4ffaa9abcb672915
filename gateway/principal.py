"""Whose call it is: the principal of each effectful call, from an authenticated source only.

Every intent belongs to a principal (who asked); two principals' equal calls are two
intents, and neither is ever answered with the other's outcome. The gateway takes the
principal from, in this order:

- the token the HTTP request presented (``--client-tokens FILE``): the name the operator
  gave that token (an HTTP session belongs to the token that opened it);
- the operator's ``--principal NAME``: every call of this gateway is NAME's (the one
  client of a stdio gateway, kept across its reconnects and restarts);
- otherwise the session: each HTTP session or stdio connection is its own principal
  (``session:ID``), merged with no other.

What a client says about itself (``clientInfo.name``, a ``_meta`` field) never names a
principal unless the operator says so with ``--trust-client-claim PATH``: the claim then
divides an authenticated principal (``NAME:CLAIM``), or, with no token and no
``--principal``, *is* the principal (``claimed:CLAIM``): any client may then claim any name
and be answered with that name's recorded outcomes (unsafe; for a trusted client only).

Every token, whichever way it comes in, is at least `MIN_TOKEN` visible ASCII characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from toolcommit.model.errors import UsageError
from toolcommit.model.views import MISSING, resolve

MIN_TOKEN = 16
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}")
RESERVED = frozenset({"session", "claimed", "anonymous"})  # the prefixes of the other principals
_TOKEN = re.compile(r"[\x21-\x7e]+")  # what an Authorization header carries as is


def check_token(token: str, where: str) -> str:
    """`token` if it is one (at least `MIN_TOKEN` visible ASCII characters); else
    `UsageError` naming `where`."""
    if len(token) < MIN_TOKEN or not _TOKEN.fullmatch(token):
        raise UsageError(
            f"{where}: a token is {MIN_TOKEN} or more visible ASCII characters (no spaces); "
            "write a long random one, such as the output of 'openssl rand -hex 32'"
        )
    return token


def check_name(name: str, where: str) -> str:
    """`name` if it can name a principal; else `UsageError` naming `where`."""
    if not NAME.fullmatch(name) or name in RESERVED:
        raise UsageError(
            f"{where}: a principal's name is 1 to 100 of A-Z a-z 0-9 . _ @ + - (not "
            f"{' or '.join(sorted(RESERVED))}), such as alice or billing-service; got {name!r}"
        )
    return name


def parse_client_tokens(text: str, path: str) -> dict[str, str]:
    """token -> principal name from the lines of a ``--client-tokens`` file: ``NAME TOKEN``
    per line (a name may have several tokens, for a rotation); blank lines and lines
    starting with ``#`` are skipped. `UsageError` at the first bad line (``PATH:LINE``)."""
    tokens: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise UsageError(
                f"--client-tokens {path}:{n}: write NAME TOKEN on each line (two fields), "
                f"got {len(parts)}"
            )
        name = check_name(parts[0], f"--client-tokens {path}:{n}")
        token = check_token(parts[1], f"--client-tokens {path}:{n}")
        if token in tokens:
            raise UsageError(
                f"--client-tokens {path}:{n}: this token is also {tokens[token]!r}'s; "
                "give each client a token of its own"
            )
        tokens[token] = name
    if not tokens:
        raise UsageError(f"--client-tokens {path}: no NAME TOKEN line; name one client at least")
    return tokens


@dataclass(frozen=True)
class Principals:
    """The operator's principal rule (see the module docstring).

    Parameters
    ----------
    fixed : str or None
        ``--principal NAME``: every call's principal, unless a token names one.
    claim : str or None
        ``--trust-client-claim PATH``: a path into the call's view (``client.name``,
        ``meta.user``) whose value the operator trusts as (part of) the principal.
    """

    fixed: Optional[str] = None
    claim: Optional[str] = None

    def of(self, view: dict, client: Optional[str] = None) -> str:
        """The principal of the call `view` (its ``session`` is the session's id) in a
        session opened by the token of `client` (its name; None: no client token).

        Raises
        ------
        UsageError
            The operator trusts a claim the call does not make (nothing is sent).
        """
        base = client or self.fixed
        if self.claim is None:
            return base or f"session:{view['session']}"
        claimed = resolve(view, self.claim)
        if claimed is MISSING or not isinstance(claimed, str) or not claimed:
            raise UsageError(
                f"the gateway takes the principal from {self.claim} (--trust-client-claim), "
                "and this call gives it no non-empty string there"
            )
        return f"{base}:{claimed}" if base else f"claimed:{claimed}"


__all__ = ["MIN_TOKEN", "Principals", "check_name", "check_token", "parse_client_tokens"]
