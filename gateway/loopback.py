"""What a loopback listener admits: the Host and Origin checks against DNS rebinding, one
home for every server toolcommit starts (the MCP gateway, the fault harness's provider and
proxy).

A web page the user has open can send requests to 127.0.0.1, and, by rebinding its own
name to 127.0.0.1, read the answers. It cannot choose the ``Host`` header (its own name),
and a browser's cross-site request carries its ``Origin``: a request is admitted when its
Host names this machine's loopback (or one the operator allowed) and its Origin, if it has
one, is a loopback origin (or one the operator allowed).

>>> refused("127.0.0.1:8000", "")
>>> refused("evil.example:8000", "")[0], refused("localhost", "https://evil.example")[0]
(421, 403)
>>> refused("localhost:1", "http://localhost:3000"), refused("[::1]:9", "")
(None, None)
"""

from __future__ import annotations

from typing import Optional
from urllib.parse import urlsplit

LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def host_name(value: str) -> str:
    """The name in a Host header (its port dropped; an IPv6 literal keeps its brackets)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def origin_allowed(origin: str, allowed: frozenset = frozenset()) -> bool:
    """Whether `origin` is a loopback origin, or in `allowed` ("*": any)."""
    if "*" in allowed or origin.rstrip("/") in allowed:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_NAMES


def refused(
    host: str, origin: str, hosts: frozenset = frozenset(), origins: frozenset = frozenset()
) -> Optional[tuple[int, str]]:
    """(421, why) for a Host neither loopback nor in `hosts`; (403, why) for an Origin
    neither loopback nor in `origins`; None for a request both admit (no Origin: not a
    browser's cross-site request)."""
    if host_name(host) not in LOOPBACK_NAMES | hosts:
        return 421, f"Host {host!r} is not this server's (DNS rebinding protection)"
    if origin and not origin_allowed(origin, origins):
        return 403, f"Origin {origin!r} is not allowed (DNS rebinding protection)"
    return None
