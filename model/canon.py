"""The checker's own canonicalizer: which tool calls are one user intent.

The log checker never trusts an implementation's semantic key to say which calls are the
same intent; it re-derives identity from `(tool, args, scope)` with this canonicalizer.
Two implementation keys whose calls canonicalize to one digest are the article's
"canonicalization too literal" bug.

Version 1 (fixed forever; a test pins its digests)
--------------------------------------------------
A canonical form is the compact JSON array ``[tool, scope, args]`` after these rules:

1. Strings (the tool, the scope, every argument name and every string value) are put in
   Unicode NFC, stripped of leading and trailing whitespace, and every inner run of
   whitespace becomes one space (``"  20  USD "`` -> ``"20 USD"``). Case is kept.
2. Objects are sorted by their normalized names as escaped JSON text, by code point (the
   order of the serialized bytes). Two names that normalize to one name are an error: the
   call is ambiguous.
3. Numbers: a float with an integral value within +-2**53 becomes that integer (``20.0`` ->
   ``20``, ``-0.0`` -> ``0``); an integer beyond +-2**53 becomes a float, because JSON
   decoders disagree about such integers; other floats keep Python's shortest round-trip
   form (``repr``). NaN and infinities are an error, and so is an integer beyond the
   float range (about +-1.8e308), which no float holds. Booleans stay booleans (``true`` is
   not ``1``). Numbers inside strings are strings: ``"20.00"`` is not ``20``.
4. Arrays keep their order. ``null`` stays ``null``.
5. Values nested deeper than `MAX_DEPTH` are an error (hostile input).
6. The form is serialized with no spaces, names sorted, non-ASCII kept as UTF-8; its
   digest is SHA-256 over ``b"toolcommit/canon/v1\\n" + form``.

Adding a version
----------------
Write ``_form_v2`` beside ``_form_v1`` (never edit v1), register it in `VERSIONS` and use a
new digest prefix (``toolcommit/canon/v2``); pin its digests in a test. Digests of different
versions never compare equal, so a log checked under v2 cannot merge with v1 identities.

Examples
--------
>>> a = canonical_intent("refund", {"amount": 20}, "user:42")
>>> b = canonical_intent(" refund", {"amount": 20.0}, "user:42")
>>> a.digest == b.digest, a.form
(True, '["refund","user:42",{"amount":20}]')
>>> canonical_intent("refund", {"amount": "20.00"}, "user:42").digest == a.digest
False
>>> canonical_intent("refund", {"a": float("nan")}, "s")
Traceback (most recent call last):
...
toolcommit.model.canon.CanonError: args.a: NaN or infinity has no canonical form
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from json.encoder import encode_basestring  # the C string escaper when available
from typing import Callable, NamedTuple

try:  # optional: a C fast path for calls whose v1 form is their plain sorted JSON
    from orjson import OPT_SORT_KEYS as _SORT
    from orjson import dumps as _dumps
except ImportError:  # pragma: no cover - depends on the machine
    _dumps, _SORT = None, 0


def memory_limited() -> bool:
    """True when this process runs under an address-space or data limit (``ulimit -v`` /
    ``-d``). Only such a limit makes an allocation fail rather than the kernel's OOM killer
    end the process, and orjson (3.x) crashes with SIGSEGV when one fails, where the
    standard library raises MemoryError: under a limit, orjson is not used."""
    try:
        import resource

        return any(
            resource.getrlimit(r)[0] != resource.RLIM_INFINITY
            for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA)
        )
    except (ImportError, AttributeError, OSError, ValueError):  # pragma: no cover - not Unix
        return False


if memory_limited():  # then the full canonicalizer runs, as without orjson: same digests
    _dumps = None

MAX_DEPTH = 64
_EXACT = 2**53


class CanonError(ValueError):
    """The call has no canonical form (NaN, ambiguous names, nesting too deep, bad type)."""


class CanonicalIntent(NamedTuple):
    """A canonical intent: `digest` (hex SHA-256), `form` (the canonical JSON), `version`."""

    digest: str
    form: str
    version: int


def _text(s: str) -> str:
    """Rule 1: NFC, strip, collapse inner whitespace runs to one space."""
    if not s.isascii() and not unicodedata.is_normalized("NFC", s):
        s = unicodedata.normalize("NFC", s)
    return " ".join(s.split())


def _number(v) -> str:
    """Rule 3, as text."""
    if type(v) is int:
        if -_EXACT <= v <= _EXACT:
            return str(v)
        try:
            v = float(v)
        except OverflowError:
            raise _Fail(
                "an integer beyond the float range (about 1.8e308) has no canonical form"
            ) from None
    if not math.isfinite(v):
        raise _Fail("NaN or infinity has no canonical form")
    if v.is_integer() and -_EXACT <= v <= _EXACT:
        return str(int(v))
    return repr(v)


class _Fail(Exception):
    """Internal: carries the failing path outwards (built only on failure, for speed)."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what, self.path = what, []


_ENC: dict[str, str] = {}  # bounded memo: raw string -> its normalized, escaped JSON text
_ENC_MAX = 1 << 16


def _enc(s: str) -> str:
    """Rule 1 then JSON escaping, memoized (names and enum-like values repeat a lot)."""
    text = _ENC.get(s)
    if text is None:
        text = encode_basestring(_text(s))
        if len(s) <= 64:
            if len(_ENC) >= _ENC_MAX:
                _ENC.clear()
            _ENC[s] = text
    return text


def _scalar(v, t) -> str | None:
    """Rules 1 and 3 for one scalar of type `t`, or None if `v` is a container."""
    if t is str:
        return _enc(v)
    if t is int:
        return str(v) if -_EXACT <= v <= _EXACT else _number(v)
    if t is float:
        return _number(v)
    if t is bool:
        return "true" if v else "false"
    if v is None:
        return "null"
    return None


def _form_v1(v, depth: int) -> str:
    t = type(v)
    if t is dict:
        if depth >= MAX_DEPTH:
            raise _Fail(f"nested deeper than {MAX_DEPTH} levels")
        items = []
        for name, value in v.items():
            if type(name) is not str:
                raise _Fail("object names must be strings")
            norm = _ENC.get(name) or _enc(name)
            vt = type(value)
            # scalars inline (the common case), containers by recursion
            if vt is str:
                text = _ENC.get(value) or _enc(value)
            elif vt is int and -_EXACT <= value <= _EXACT:
                text = str(value)
            else:
                try:
                    text = _scalar(value, vt)
                    if text is None:
                        text = _form_v1(value, depth + 1)
                except _Fail as e:
                    e.path.append("." + name)
                    raise
            items.append((norm, text))
        items.sort()
        for i in range(1, len(items)):
            if items[i][0] == items[i - 1][0]:
                raise _Fail(f"two names normalize to {items[i][0]}")
        return "{" + ",".join([n + ":" + x for n, x in items]) + "}"
    if t is list or t is tuple:
        if depth >= MAX_DEPTH:
            raise _Fail(f"nested deeper than {MAX_DEPTH} levels")
        out = []
        for i, x in enumerate(v):
            try:
                text = _scalar(x, type(x))
                out.append(_form_v1(x, depth + 1) if text is None else text)
            except _Fail as e:
                e.path.append(f"[{i}]")
                raise
        return "[" + ",".join(out) + "]"
    text = _scalar(v, t)
    if text is None:
        raise _Fail(f"a {t.__name__} is not a JSON value")
    return text


def _intent_form_v1(tool: str, args, scope: str) -> str:
    if type(tool) is not str or type(scope) is not str:
        raise CanonError("tool and scope must be strings")
    try:
        form = _form_v1(args, 0)
    except _Fail as e:
        raise CanonError("args" + "".join(reversed(e.path)) + ": " + e.what) from None
    return (
        "["
        + (_ENC.get(tool) or _enc(tool))
        + ","
        + (_ENC.get(scope) or _enc(scope))
        + ","
        + form
        + "]"
    )


VERSIONS: dict[int, tuple[bytes, Callable[[str, object, str], str]]] = {
    1: (b"toolcommit/canon/v1\n", _intent_form_v1),
}


def canonical_intent(tool: str, args, scope: str, version: int = 1) -> CanonicalIntent:
    """The canonical intent of one tool call under canonicalizer `version`.

    Parameters
    ----------
    tool, scope : str
        The tool name and the user-intent scope.
    args : JSON value
        The decoded arguments (dicts, lists, str, int, float, bool, None).
    version : int
        The canonicalizer version; only 1 exists.

    Returns
    -------
    CanonicalIntent
        Equal digests mean one intent. Pure: no I/O, no state.

    Raises
    ------
    CanonError
        The call has no canonical form; the message names the argument path.
    """
    try:
        prefix, form_of = VERSIONS[version]
    except KeyError:
        raise CanonError(
            f"unknown canonicalizer version {version!r}; known: {', '.join(map(str, VERSIONS))}"
        ) from None
    form = form_of(tool, args, scope)
    return CanonicalIntent(hashlib.sha256(prefix + form.encode("utf-8")).hexdigest(), form, version)


def intent_scope(principal: str | None, scope: str) -> str:
    """The scope a key is derived from: `scope` itself, or `[principal, scope]` as compact
    JSON when the call names its principal (two principals are never one intent).

    >>> intent_scope(None, "user:1:request:1")
    'user:1:request:1'
    >>> intent_scope("user:2", "request:9")
    '["user:2","request:9"]'
    >>> a = canonical_intent("refund", {"amount": 10}, intent_scope("user:1", "r"))
    >>> a.digest == canonical_intent("refund", {"amount": 10}, intent_scope("user:2", "r")).digest
    False
    """
    if principal is None:
        return scope
    return json.dumps([principal, scope], separators=(",", ":"), ensure_ascii=False)


def _plain(v, depth: int, spaced: bool) -> bool:
    """True if container `v` holds only strings, booleans, null, integers within +-2**53
    and such containers, at most `MAX_DEPTH` deep, with no object name containing a space
    when `spaced` (a name with a space may sort differently once quoted)."""
    if depth >= MAX_DEPTH:
        return False
    for name, x in v.items() if type(v) is dict else enumerate(v):
        if spaced and type(name) is str and " " in name:
            return False
        t = type(x)
        if t is str or t is bool or x is None:
            continue
        if t is int:
            if -_EXACT <= x <= _EXACT:
                continue
            return False
        if (t is dict or t is list) and _plain(x, depth + 1, spaced):
            continue
        return False
    return True


_PREFIX_V1 = b"toolcommit/canon/v1\n"
_sha256 = hashlib.sha256


def sorted_dump(tool, args, scope) -> bytes | None:
    """orjson's compact, key-sorted serialization of ``[tool, scope, args]``, or None (no
    orjson, or a value it cannot write). Exact: equal bytes mean equal calls, so it is a
    sound memo key; `fast_form_v1` decides whether it is also the v1 form."""
    if _dumps is None:
        return None
    try:
        return _dumps([tool, scope, args], option=_SORT)
    except (TypeError, ValueError):  # e.g. an integer beyond 64 bits, a non-str name
        return None


def fast_form_v1(tool, args, scope, dump: bytes | None = None) -> bytes | None:
    """The v1 form of a call as UTF-8 bytes when orjson's sorted serialization already is it,
    else None (then the full canonicalizer decides, and may refuse the call).

    It is when: the serialization is ASCII without a backslash (so no escapes, no control
    characters, no quote inside a string), has no '!' and no space next to a quote or to
    another space (so rule 1 changes nothing, and sorting raw names equals sorting their
    quoted text, as v1 does), no object name contains a space, and every number is an
    integer within +-2**53 (rule 3 changes nothing; a float always takes the full path).
    A test checks it against the full canonicalizer on generated calls.

    >>> fast_form_v1("refund", {"b": 1, "a": "x y"}, "u1") if _dumps else b'["refund","u1",{"a":"x y","b":1}]'
    b'["refund","u1",{"a":"x y","b":1}]'
    >>> fast_form_v1("refund", {"amount": 20.0}, "u1") is None
    True
    """
    if type(tool) is not str or type(scope) is not str or type(args) is not dict:
        return None
    b = dump if dump is not None else sorted_dump(tool, args, scope)
    if b is None or not b.isascii() or b"\\" in b or b"!" in b:
        return None
    spaced = b" " in b
    if spaced and (b'" ' in b or b' "' in b or b"  " in b):
        return None
    if not _plain(args, 0, spaced):
        return None
    return b


def flat_digest_v1(tool, args, scope, dump: bytes) -> bytes | None:
    """`digest_of_form` of `fast_form_v1` in one call, for its commonest case, else None
    (then `fast_form_v1` and the full canonicalizer decide): `dump` is `sorted_dump`'s,
    has no space at all, and `args` is a flat object of strings, booleans, null and
    integers within +-2**53 (a test checks it against `fast_form_v1`)."""
    if (
        type(tool) is not str
        or type(scope) is not str
        or type(args) is not dict
        or not dump.isascii()
        or b"\\" in dump
        or b"!" in dump
        or b" " in dump
    ):
        return None
    for x in args.values():
        t = type(x)
        if t is str or x is None or t is bool or (t is int and -_EXACT <= x <= _EXACT):
            continue
        return None
    return _sha256(_PREFIX_V1 + dump).digest()[:16]


def digest_of_form(form: bytes) -> bytes:
    """The 16-byte v1 identity of a canonical form (UTF-8 bytes)."""
    return _sha256(_PREFIX_V1 + form).digest()[:16]


def intent_digest(tool: str, args, scope: str) -> bytes:
    """The first 16 bytes of the v1 digest: the compact identity the log checker keeps
    per distinct intent (equal to ``bytes.fromhex(canonical_intent(...).digest)[:16]``).

    Takes `fast_form_v1` when it applies (one C serialization and one regular-expression
    scan), else the full canonicalizer; both give the same bytes."""
    form = fast_form_v1(tool, args, scope, sorted_dump(tool, args, scope))
    if form is None:
        form = _intent_form_v1(tool, args, scope).encode("utf-8")
    return _sha256(_PREFIX_V1 + form).digest()[:16]
