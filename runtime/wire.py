"""The key on the wire: the running effect's idempotency key, stamped on the requests it sends.

`instrument(log)` at start-up wraps every HTTP client library that is importable (httpx, sync
and async; urllib3, and so requests; aiohttp; the standard library's http.client, and so
urllib.request and stripe-python's ``UrllibClient``), the way OpenTelemetry's
instrumentations do, and a thread pool's ``submit``; `uninstrument()` takes them back. Both are idempotent, and a second `instrument` for another
provider adds its hosts. Nothing else changes for a request that is not a write (GET, HEAD,
OPTIONS, TRACE: a provider applies nothing for them, and Stripe asks for no key on a GET).

While an effect runs (`current_ticket()` has purpose ``apply`` or ``replay``), every write
it sends carries the ticket's idempotency key in the header the provider's profile names
(`Ticket.key_header`, from ``wire`` in spec/environments.json: Stripe's ``Idempotency-Key``).
A key already there (stripe-python mints a random one per call) is replaced, so the provider
sees one key per intent, the log's, on the first send and on every replay. A design that
sends no key (``email``, ``ideal``) gets no header, and a profile that names no header
(``fenced-store``) gets none either: pass its key by hand.

Refused before it is sent (`UnkeyedWrite`; nothing reaches the provider): a write to a host
of an instrumented provider whose design sends a key (the profile's ``hosts``, or
``hosts=``), when no effect runs (it would carry no intent's key), when a status read runs
(purpose ``status``: a read must not write), or when the running effect's design sends no
key to it. `unguarded()` lets a write that is not a tool's intent (set-up, an admin script)
through unchanged.

The wire's word beats the tool's: each keyed write an effect sends is noted, and marked
answered when a response (any status) comes back (`toolcommit.runtime.caller`). An effect
whose last keyed write got no answer is in doubt whatever it returns (a tool that caught its
timeout and returned ``{"error": ...}``): the guard takes it as a timeout (UNKNOWN, resolved
as the design says: a replay under the same key, a status read), never as the answer.

The ticket is a context variable: a request from a thread the effect starts carries it when
the thread runs in the effect's context: ``asyncio.to_thread``, ``contextvars.copy_context``,
and, while instrumented, a ``ThreadPoolExecutor`` task submitted while the effect runs
(``loop.run_in_executor`` included). A bare ``threading.Thread`` starts in an empty context:
its write is outside any effect, refused at a guarded host (the profile's ``hosts``:
``api.stripe.com`` for Stripe, without ``hosts=``).

Limits: a client library not listed above (pycurl) is not seen, so neither stamped nor
refused. An effect is one write: a second write in it carries the same key (Stripe refuses
it, 400). A redirect httpx follows keeps the stamped header but is not checked again.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from types import ModuleType
from typing import Any, Callable, Iterable, Iterator, Optional, Union
from urllib.parse import urlsplit

from toolcommit.runtime import design as D
from toolcommit.runtime.caller import Write, sent_write
from toolcommit.runtime.log import IntentLog, IntentLogError
from toolcommit.runtime.shims import current_ticket

SAFE = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_PORTS = {"http": 80, "https": 443}
_EFFECT = ("apply", "replay")
_LOCK = threading.Lock()
_HOSTS: dict[tuple[str, Optional[int]], tuple[str, str]] = {}  # (host, port) -> (design, header)
_PATCHES: list[tuple[str, Any, str, Any]] = []  # (library, owner, name, original)
_OPEN: contextvars.ContextVar[bool] = contextvars.ContextVar("toolcommit_unguarded", default=False)


class UnkeyedWrite(IntentLogError):
    """A write refused before it was sent: it would reach a provider whose design needs the
    intent's idempotency key without one (the message says what to do)."""


# ----- the decision: what one request gets ----------------------------------------------------
def _host_key(entry: str) -> tuple[str, Optional[int]]:
    parts = urlsplit(entry if "://" in entry else f"//{entry}")
    if not parts.hostname:
        raise D.DesignError(
            f"instrument: host {entry!r} names no host (write api.stripe.com, "
            "127.0.0.1:8123 or https://api.stripe.com)"
        )
    try:
        return parts.hostname.lower(), parts.port
    except ValueError:
        raise D.DesignError(f"instrument: host {entry!r} has no valid port") from None


def _guard_of(url: str) -> Optional[tuple[str, str]]:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    try:
        port = parts.port or _PORTS.get(parts.scheme)
    except ValueError:
        port = None
    return _HOSTS.get((host, port)) or _HOSTS.get((host, None))


def _refusal(method: str, url: str, guard: tuple[str, str], why: str, fix: str) -> UnkeyedWrite:
    return UnkeyedWrite(
        f"{method} {url} was refused before it was sent: {why}, and this host is "
        f"instrumented for design {guard[0]}, which sends each intent's "
        f"{guard[1]}. {fix}"
    )


def stamp(method: str, url: str) -> Optional[tuple[str, str]]:
    """The ``(header, key)`` to set on a request about to be sent to `url` (absolute), None
    to send it as it is; `UnkeyedWrite` where it must not be sent (module docstring)."""
    method = method.upper()
    if method in SAFE or _OPEN.get() or not _PATCHES:
        return None
    t, guard = current_ticket(), _guard_of(url)
    if t is not None and t.purpose in _EFFECT:
        if t.key_header and t.idempotency_key:
            return t.key_header, t.idempotency_key
        if guard is None:
            return None
        raise _refusal(
            method,
            url,
            guard,
            "the running effect's design sends no key",
            "Open its log with the design of this provider (provider=).",
        )
    if guard is None:
        return None
    if t is None:
        raise _refusal(
            method,
            url,
            guard,
            "no effect runs, so it carries no intent's key "
            "(a retry after a lost answer would apply it twice)",
            "Send it from a function wrapped by @effectful (or guard/aguard), which "
            "stamps the key; a write that is no tool's intent goes inside "
            "`with toolcommit.runtime.unguarded():`.",
        )
    raise _refusal(
        method,
        url,
        guard,
        f"a status read ({t.tool}, intent {t.key}) must not write",
        "Read with a GET (for Stripe, the list of the charge's refunds).",
    )


def _sending(method: str, url: str) -> tuple[Optional[tuple[str, str]], Optional[Write]]:
    """`stamp`'s ``(header, key)`` for a request about to be sent, and, when it is keyed,
    its note in the running effect (`caller.sent_write`): mark it answered once a response
    came back; an effect whose last keyed write got none is in doubt."""
    got = stamp(method, url)
    return got, None if got is None else sent_write(f"{method.upper()} {url}")


def _answered(w: Optional[Write]) -> None:
    if w is not None:
        w.answered = True


# ----- the client libraries -------------------------------------------------------------------
def _patch(library: str, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
    original = getattr(owner, name)
    wrapped: Any = functools.wraps(original)(make(original))
    wrapped.__toolcommit_wire__ = original
    setattr(owner, name, wrapped)
    _PATCHES.append((library, owner, name, original))


def _httpx(httpx: ModuleType) -> None:
    def on(request: Any) -> Optional[Write]:
        got, w = _sending(request.method, str(request.url))
        if got is not None:
            request.headers[got[0]] = got[1]  # httpx.Headers: replaces any case of it
        return w

    def sync(send: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(self: Any, request: Any, *a: Any, **kw: Any) -> Any:
            w = on(request)
            response = send(self, request, *a, **kw)
            _answered(w)
            return response

        return wrapped

    def asynchronous(send: Callable[..., Any]) -> Callable[..., Any]:
        async def wrapped(self: Any, request: Any, *a: Any, **kw: Any) -> Any:
            w = on(request)
            response = await send(self, request, *a, **kw)
            _answered(w)
            return response

        return wrapped

    _patch("httpx", httpx.Client, "send", sync)
    _patch("httpx", httpx.AsyncClient, "send", asynchronous)


def _urllib3(urllib3: ModuleType) -> None:
    from urllib3._collections import HTTPHeaderDict
    from urllib3.connectionpool import HTTPConnectionPool

    def make(urlopen: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(
            self: Any,
            method: str,
            url: str,
            body: Any = None,
            headers: Any = None,
            *a: Any,
            **kw: Any,
        ) -> Any:
            # through a proxy the URL is absolute and names the destination
            where = url if "://" in url else f"{self.scheme}://{self.host}:{self.port}{url}"
            got, w = _sending(method, where)
            if got is not None:
                headers = HTTPHeaderDict(self.headers if headers is None else headers)
                headers[got[0]] = got[1]
            response = urlopen(self, method, url, body, headers, *a, **kw)
            _answered(w)
            return response

        return wrapped

    _patch("urllib3", HTTPConnectionPool, "urlopen", make)


def _aiohttp(aiohttp: ModuleType) -> None:
    from multidict import CIMultiDict

    def make(request: Callable[..., Any]) -> Callable[..., Any]:
        async def wrapped(
            self: Any, method: str, str_or_url: Any, *a: Any, headers: Any = None, **kw: Any
        ) -> Any:
            got, w = _sending(method, str(self._build_url(str_or_url)))
            if got is not None:
                headers = CIMultiDict(headers or {})
                headers[got[0]] = got[1]
            response = await request(self, method, str_or_url, *a, headers=headers, **kw)
            _answered(w)
            return response

        return wrapped

    _patch("aiohttp", aiohttp.ClientSession, "_request", make)


def _http_client(client: ModuleType) -> None:
    """The standard library's client, and through it urllib.request (stripe-python's
    ``UrllibClient``, its fallback without requests). urllib3 sends through its own
    ``request`` (stamped above), not this one."""

    def request(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(
            self: Any, method: str, url: str, body: Any = None, headers: Any = None, **kw: Any
        ) -> Any:
            host, port = getattr(self, "_tunnel_host", None), getattr(self, "_tunnel_port", None)
            host, port = (host, port) if host else (self.host, self.port)
            scheme = "https" if isinstance(self, client.HTTPSConnection) else "http"
            host = f"[{host}]" if ":" in host else host
            got, w = _sending(method, url if "://" in url else f"{scheme}://{host}:{port}{url}")
            headers = {} if headers is None else headers
            if got is not None:
                headers = {k: v for k, v in headers.items() if k.lower() != got[0].lower()}
                headers[got[0]] = got[1]
            self.__toolcommit_write__ = w
            return original(self, method, url, body, headers, **kw)

        return wrapped

    def getresponse(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(self: Any, *a: Any, **kw: Any) -> Any:
            response = original(self, *a, **kw)
            _answered(getattr(self, "__toolcommit_write__", None))
            self.__toolcommit_write__ = None
            return response

        return wrapped

    _patch("http.client", client.HTTPConnection, "request", request)
    _patch("http.client", client.HTTPConnection, "getresponse", getresponse)


def _threads(futures: ModuleType) -> None:
    """A thread pool's task submitted while an effect runs (``loop.run_in_executor``
    included) runs in a copy of the submitter's context: it carries the effect's ticket."""

    def make(submit: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(self: Any, fn: Callable[..., Any], /, *a: Any, **kw: Any) -> Any:
            if current_ticket() is not None:
                fn = functools.partial(contextvars.copy_context().run, fn)
            return submit(self, fn, *a, **kw)

        return wrapped

    _patch("concurrent.futures", futures.ThreadPoolExecutor, "submit", make)


_LIBRARIES = {
    "httpx": _httpx,
    "urllib3": _urllib3,
    "aiohttp": _aiohttp,
    "http.client": _http_client,
    "concurrent.futures": _threads,
}


def _installed() -> tuple[str, ...]:
    return tuple(dict.fromkeys(lib for lib, _, _, _ in _PATCHES))


# ----- the API --------------------------------------------------------------------------------
def instrument(
    provider: Union[IntentLog, D.Design, str, None] = None, hosts: Optional[Iterable[str]] = None
) -> tuple[str, ...]:
    """Wrap the importable HTTP client libraries (once) and guard `provider`'s hosts.

    Parameters
    ----------
    provider : IntentLog, Design or str, optional
        The log (or its design, or a ``provider=`` name) whose provider's hosts are guarded:
        a write to one without the intent's key is refused. None: stamp only.
    hosts : iterable of str, optional
        The provider's hosts (``api.stripe.com``, ``127.0.0.1:8123``, or a base URL such as
        ``stripe.api_base``; without a port, any port); default the profile's ``hosts``.

    Returns
    -------
    The libraries instrumented: a subset of ``("httpx", "urllib3", "aiohttp",
    "http.client", "concurrent.futures")``.

    Raises
    ------
    DesignError
        `hosts` for a design that sends no key header (nothing to stamp there), or a host
        already guarded for another design.
    """
    import importlib

    with _LOCK:
        entries = _entries(provider, hosts)
        for where, guard in entries.items():
            if _HOSTS.get(where, guard) != guard:
                raise D.DesignError(
                    f"instrument: host {where[0]} is guarded for design "
                    f"{_HOSTS[where][0]} already; uninstrument() first"
                )
        if not _PATCHES:
            for name, install in _LIBRARIES.items():
                try:
                    install(importlib.import_module(name))
                except ImportError:
                    continue
        _HOSTS.update(entries)
        return _installed()


def _entries(
    provider: Union[IntentLog, D.Design, str, None], hosts: Optional[Iterable[str]]
) -> dict[tuple[str, Optional[int]], tuple[str, str]]:
    if provider is None:
        if hosts:
            raise D.DesignError("instrument: hosts= needs the provider whose hosts they are")
        return {}
    d = D.load(provider.design if isinstance(provider, IntentLog) else provider)
    if d.key_header is None or d.wire is None:  # (a key header comes with a wire)
        if hosts:
            raise D.DesignError(
                f"instrument: design {d.source} sends no idempotency key in a "
                "header (its profile names none), so there is nothing to stamp "
                "on its hosts: drop hosts="
            )
        return {}
    return {
        _host_key(h): (d.source, d.key_header) for h in (d.wire.hosts if hosts is None else hosts)
    }


def uninstrument() -> None:
    """Take every wrapper back and forget the guarded hosts (a no-op when not instrumented)."""
    with _LOCK:
        while _PATCHES:
            _, owner, name, original = _PATCHES.pop()
            if getattr(getattr(owner, name), "__toolcommit_wire__", None) is original:
                setattr(owner, name, original)  # else wrapped again since: ours passes through
        _HOSTS.clear()


def instrumented() -> tuple[str, ...]:
    """The libraries instrumented now (empty when not)."""
    with _LOCK:
        return _installed()


@contextlib.contextmanager
def unguarded() -> Iterator[None]:
    """Writes inside are sent as they are: no key stamped, none refused (for a write that is
    no tool's intent, such as set-up)."""
    token = _OPEN.set(True)
    try:
        yield
    finally:
        _OPEN.reset(token)


__all__ = [
    "instrument",
    "uninstrument",
    "instrumented",
    "unguarded",
    "stamp",
    "UnkeyedWrite",
    "SAFE",
]
