"""Events as typed objects: one class per event type of `spec/log.schema.json`, built from
the field table of `toolcommit.checker.logs.events`, and the typed decoder that checks a
line's fields while it decodes it.

With msgspec installed, each class is a tagged-union `msgspec.Struct` and `decode` turns one
line into its event in one C call, refusing (with ``None``) any line the common case does
not cover: a field that is missing, mistyped, out of range or not a valid name, a field the
schema does not know, a nested ``args`` value, an integer beyond 64 bits, an effect with
neither key. Such a line takes the thorough path of the reader (orjson or the standard
library, then `events.problem`), which names its defect or accepts it, so a line is
accepted, and an error is worded, exactly as without msgspec. Without msgspec the classes
are plain ``__slots__`` classes with the same attributes and `decode` is None.

The core reads events by attribute: the schema's names, except ``from``, which is
``from_``; a field the line left out (or wrote as null) is None; ``type`` is a class
attribute.

Examples
--------
>>> ev = from_dict({"type": "transition", "writer": "w1", "seq": 2, "key": "k1",
...                 "from": "PROPOSED", "to": "RECORDED"})
>>> ev.type, ev.writer, ev.from_, ev.to, ev.fence
('transition', 'w1', 'PROPOSED', 'RECORDED', None)
>>> decode is None or decode(b'{"type":"crash","writer":"w","seq":1}').seq == 1
True
>>> decode is None or decode(b'{"type":"crash","writer":"w","seq":1,"x":1}') is None
True
"""

from __future__ import annotations

from typing import Annotated, Callable, Literal, Optional, Union

from toolcommit.checker.logs.events import (
    COMMON,
    COMMON_OPTIONAL,
    DECISIONS,
    INT_MAX,
    KINDS,
    NON_EMPTY,
    ONE_OF,
    OPTIONAL,
    REQUIRED,
    STATES,
    TYPES,
)

try:  # optional: typed decoding in C
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - depends on the machine
    _msgspec = None

#: the attribute of a field whose name is a Python keyword
ATTR = {"from": "from_"}


def attr(field: str) -> str:
    return ATTR.get(field, field)


def _fields(t: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The required and the optional (field, kind) of type `t`, in the schema's order."""
    return [*COMMON.items(), *REQUIRED[t].items()], [*COMMON_OPTIONAL.items(), *OPTIONAL[t].items()]


# ----- the plain classes (no msgspec) ---------------------------------------------------------
def _plain(t: str):
    req, opt = _fields(t)
    names = tuple(attr(f) for f, _ in req + opt if f != "type")
    required = tuple(attr(f) for f, _ in req if f != "type")

    def __init__(self, **kw):
        for n in names:
            setattr(self, n, kw.pop(n, None))
        if kw:
            raise TypeError(f"unknown field(s) of a {t} event: {', '.join(kw)}")
        for n in required:
            if getattr(self, n) is None:
                raise TypeError(f"a {t} event needs {n}")

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"

    def __eq__(self, other):
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in names
        )

    return type(
        t.capitalize(),
        (),
        {
            "__slots__": names,
            "type": t,
            "__init__": __init__,
            "__repr__": __repr__,
            "__eq__": __eq__,
            "__hash__": None,
            "__module__": __name__,
        },
    )


# ----- the msgspec structs -----------------------------------------------------------------
def _annotation(field: str, kind: str):
    m = _msgspec
    if kind == "int":
        return Annotated[int, m.Meta(ge=0, le=INT_MAX)]
    if kind == "obj":  # flat: a nested value takes the thorough path (nesting bound)
        i64 = Annotated[int, m.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
        return dict[str, Union[str, i64, float, bool, None]]
    if kind == "names":
        return list[str]
    if kind == "state":
        return Literal[STATES]  # type: ignore[valid-type]
    if kind == "decision":
        return Literal[DECISIONS]  # type: ignore[valid-type]
    if kind == "kind":
        return Literal[KINDS]  # type: ignore[valid-type]
    return Annotated[str, m.Meta(min_length=1)] if field in NON_EMPTY else str


def _one_of(t: str) -> dict:
    """A ``__post_init__`` refusing an event of type `t` whose `ONE_OF` fields are all
    None (msgspec turns its ValueError into a ValidationError), so the C decoder alone
    refuses every line the thorough path must word; {} when `t` has no such rule."""
    names = tuple(attr(f) for f in ONE_OF.get(t, ()))
    if not names:
        return {}
    a, *rest = names
    if rest:
        (b,) = rest  # the schema's one rule has two fields (a test pins it)

        def __post_init__(self):
            if getattr(self, a) is None and getattr(self, b) is None:
                raise ValueError(f"needs {a} or {b}")
    else:  # pragma: no cover - the schema has no one-field rule

        def __post_init__(self):
            if getattr(self, a) is None:
                raise ValueError(f"needs {a}")

    return {"__post_init__": __post_init__}


def _struct(t: str, base):
    req, opt = _fields(t)
    spec = [(attr(f), _annotation(f, k)) for f, k in req if f != "type"]
    spec += [(attr(f), Optional[_annotation(f, k)], None) for f, k in opt]
    cls = _msgspec.defstruct(
        t.capitalize(),
        spec,
        bases=(base,),
        tag=t,
        rename={a: f for f, a in ATTR.items()},
        module=__name__,
        namespace=_one_of(t),
    )
    cls.type = t
    return cls


if _msgspec is not None:

    class _Event(_msgspec.Struct, tag_field="type", forbid_unknown_fields=True, gc=False):
        """The base of every event struct: tagged by ``type``, no unknown field."""

    CLASSES = {t: _struct(t, _Event) for t in TYPES}
    #: the C decoder alone, for the reader's batches: it raises `INVALID` on every line
    #: `decode` refuses (an event of a type in `EITHER` with all of those attributes None
    #: included: `_one_of`)
    decode_raw = _msgspec.json.Decoder(Union[tuple(CLASSES.values())]).decode  # type: ignore
    INVALID: tuple = (_msgspec.ValidationError, _msgspec.DecodeError)
    EITHER = {CLASSES[t]: tuple(attr(f) for f in fs) for t, fs in ONE_OF.items()}

    def _decode(line: bytes):
        """The event of `line`, or None when the thorough path must decide (see above)."""
        try:
            ev = decode_raw(line)
        except INVALID:
            return None
        either = EITHER.get(type(ev))
        if either is not None and all(getattr(ev, a) is None for a in either):
            return None
        return ev

    decode: Optional[Callable[[bytes], object]] = _decode
else:  # pragma: no cover - depends on the machine
    CLASSES = {t: _plain(t) for t in TYPES}
    decode = decode_raw = None
    INVALID = ()
    EITHER = {}

Event = Union[tuple(CLASSES.values())]  # type: ignore
DECODER = "msgspec" if decode is not None else None


def from_dict(ev: dict):
    """The event object of a decoded line that `events.problem` accepted (extra fields are
    dropped: nobody reads them)."""
    cls = CLASSES[ev["type"]]
    req, opt = _fields(ev["type"])
    kw = {attr(f): ev[f] for f, _ in req if f != "type"}
    for f, _ in opt:
        v = ev.get(f)
        if v is not None:
            kw[attr(f)] = v
    return cls(**kw)


def to_dict(ev) -> dict:
    """The inverse of `from_dict`, for tests and messages: the schema's names, nulls left out."""
    req, opt = _fields(ev.type)
    out = {"type": ev.type}
    for f, _ in req + opt:
        if f != "type":
            v = getattr(ev, attr(f))
            if v is not None:
                out[f] = v
    return out
