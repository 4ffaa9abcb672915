"""What makes two calls of a tool one request: the tool's declared schema and its identity
fields.

An `Identity` is built from what the tool declares (a function's signature, a Pydantic
model, a JSON Schema such as an MCP tool's ``inputSchema``) and, optionally, the `fields`
that make two requests the same (``("charge", "amount")``: the charge and amount, not the
free-text reason; default: every argument, normalized, an undeclared one too where the
schema allows one: never merged away). Names in `fields` that the schema does not declare
are refused when the tool is wrapped.

- `Identity.normalize` coerces each declared argument to its declared type where the
  coercion is exact (``"2000"`` -> ``2000`` for an integer, ``"20.5"`` -> ``20.5`` for a
  number; never lossy: ``"2000.5"`` for an integer, or ``1`` for a boolean, is refused with
  `IdentityError`) and fills each omitted optional argument with its declared default
  (omitted == default). Arguments it does not declare pass unchanged.
- `Identity.identity_args` keeps the identity fields of normalized arguments: with the
  principal and the scope (`toolcommit.model.canon.intent_scope`), the canonical intent.
- `Identity.rule` is the JSON rule the intent log stores per tool (and each proposal line
  carries as ``identity``): a log refuses a tool whose rule changed while it has records in
  doubt, which the new rule would merge or split.

Examples
--------
>>> def refund(charge: str, amount: int, reason: str = "") -> None: ...
>>> ident = Identity.of(refund, ("charge", "amount"))
>>> n = ident.normalize({"charge": "ch_1", "amount": "2000"})
>>> n, ident.identity_args(n)
({'charge': 'ch_1', 'amount': 2000, 'reason': ''}, {'charge': 'ch_1', 'amount': 2000})
>>> ident.normalize({"charge": "ch_1", "amount": "2000.5"})
Traceback (most recent call last):
...
toolcommit.runtime.identity.IdentityError: refund: argument amount is declared integer, and '2000.5' is not one exactly: pass a whole number
>>> Identity.of(refund, ("charge", "amt"))
Traceback (most recent call last):
...
toolcommit.runtime.identity.IdentityError: refund: identity= names amt, which the tool does not declare (its arguments: amount, charge, reason)
"""

from __future__ import annotations

import copy
import inspect
import json
import typing
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

from toolcommit.runtime.log import IntentLogError

__all__ = ["Identity", "IdentityError", "Fields"]

#: the identity fields a wrapper takes: argument names, or None (every argument)
Fields = Optional[Sequence[str]]
_NO = object()  # no default: the argument is required
_JSON = ("integer", "number", "string", "boolean", "array", "object")
_PY: dict[Any, str] = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


class IdentityError(IntentLogError, ValueError):
    """A call or a wrap the tool's schema refuses: an argument with no exact coercion to its
    declared type, a required one missing, identity fields the tool does not declare."""


@dataclass(frozen=True)
class Arg:
    """One declared argument: its JSON type (None: any), whether null is allowed, its
    default (`_NO`: required)."""

    type: Optional[str]
    nullable: bool = False
    default: Any = field(default=_NO, compare=False)

    @property
    def required(self) -> bool:
        return self.default is _NO


@dataclass(frozen=True)
class Identity:
    """A tool's identity: its declared arguments and the `fields` that make two requests
    one intent (see the module docstring). Build it with `of`, `from_signature`,
    `from_model` or `from_schema`."""

    tool: str
    args: Mapping[str, Arg]
    fields: tuple[str, ...]
    every: bool = False  # no fields named: every argument of a call, declared or not

    @classmethod
    def make(cls, tool: str, args: Mapping[str, Arg], fields: Fields = None) -> "Identity":
        """Check `fields` against `args` (None: every argument of a call)."""
        if isinstance(fields, str):
            fields = (fields,)
        names = tuple(sorted(args)) if fields is None else tuple(fields)
        unknown = [n for n in names if n not in args]
        if unknown:
            raise IdentityError(
                f"{tool}: identity= names {', '.join(unknown)}, which the tool does not "
                f"declare (its arguments: {', '.join(sorted(args)) or 'none'})"
            )
        if len(set(names)) != len(names):
            raise IdentityError(f"{tool}: identity= names an argument twice: {names}")
        return cls(tool, dict(args), names, fields is None)

    @classmethod
    def of(cls, source: Any, fields: Fields = None, tool: Optional[str] = None) -> "Identity":
        """From a function, a Pydantic model class or a JSON Schema (a dict)."""
        if isinstance(source, Mapping):
            return cls.from_schema(source, fields, tool or "tool")
        if isinstance(source, type) and hasattr(source, "model_json_schema"):
            return cls.from_model(source, fields, tool)
        return cls.from_signature(source, fields, tool)

    @classmethod
    def from_signature(
        cls,
        fn: Callable[..., Any],
        fields: Fields = None,
        tool: Optional[str] = None,
        skip: Iterable[str] = (),
    ) -> "Identity":
        """From `fn`'s parameters (annotations and defaults), without those in `skip` (a
        framework's context, the call keywords); ``*args`` and ``**kwargs`` are not
        declared arguments."""
        name = str(tool or getattr(fn, "__name__", "tool"))
        try:
            hints = typing.get_type_hints(fn)
        except Exception:  # an annotation that does not resolve: taken as any
            hints = {}
        drop, args = frozenset(skip), {}
        for p in inspect.signature(fn).parameters.values():
            if p.name in drop or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            t, nullable = _py_type(hints.get(p.name, p.annotation))
            default = _NO if p.default is p.empty else p.default
            args[p.name] = Arg(t, nullable or default is None, default)
        return cls.make(name, args, fields)

    @classmethod
    def from_model(
        cls, model: Any, fields: Fields = None, tool: Optional[str] = None
    ) -> "Identity":
        """From a Pydantic model class (its JSON Schema)."""
        return cls.from_schema(model.model_json_schema(), fields, tool or model.__name__)

    @classmethod
    def from_schema(
        cls, schema: Mapping[str, Any], fields: Fields = None, tool: str = "tool"
    ) -> "Identity":
        """From a JSON Schema of an object (``properties``, ``required``, ``default``)."""
        props = schema.get("properties") or {}
        if not isinstance(props, Mapping):
            raise IdentityError(f"{tool}: the schema's properties is not an object")
        required = set(schema.get("required") or ())
        args = {}
        for name, sub in props.items():
            t, nullable = _json_type(sub if isinstance(sub, Mapping) else {})
            if isinstance(sub, Mapping) and "default" in sub:
                default = sub["default"]
            else:
                default = _NO if name in required else _ABSENT
            args[name] = Arg(t, nullable or default is None, default)
        return cls.make(tool, args, fields)

    # ----- the call -----------------------------------------------------------------------
    def normalize(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """`args` coerced to the declared types where exact, omitted optional arguments
        filled with their defaults; undeclared arguments unchanged.

        Raises
        ------
        IdentityError
            An argument with no exact coercion, or a required one missing.
        """
        out = dict(args)
        for name, arg in self.args.items():
            if name in out:
                out[name] = _coerce(self.tool, name, arg, out[name])
            elif arg.default is _ABSENT:
                continue
            elif arg.required:
                raise IdentityError(f"{self.tool}: argument {name} is required and missing")
            else:
                out[name] = copy.deepcopy(arg.default)
        return out

    def identity_args(self, normalized: Mapping[str, Any]) -> dict[str, Any]:
        """The identity fields of `normalized` (those it has); every argument where no
        fields were named (an undeclared one too: never merged away)."""
        if self.every:
            return dict(normalized)
        return {k: normalized[k] for k in self.fields if k in normalized}

    @property
    def names(self) -> Optional[list[str]]:
        """The identity fields as a proposal line carries them; None: every argument."""
        return None if self.every else list(self.fields)

    def rule(self) -> dict[str, Any]:
        """The JSON rule the log stores for the tool: the identity fields and each declared
        argument's type, nullability and default (what decides which calls are one)."""
        return {
            "identity": self.names,
            "args": {
                n: {
                    "type": a.type,
                    **({"nullable": True} if a.nullable else {}),
                    **({} if a.default in (_NO, _ABSENT) else {"default": _jsonable(a.default)}),
                }
                for n, a in sorted(self.args.items())
            },
        }


_ABSENT = object()  # optional with no default: an omitted argument stays omitted


def _jsonable(v: Any) -> Any:
    try:
        json.dumps(v, allow_nan=False)
        return v
    except (TypeError, ValueError):
        return repr(v)


def _py_type(ann: Any) -> tuple[Optional[str], bool]:
    """(JSON type, nullable) of a Python annotation; (None, False) for anything else."""
    if ann is inspect.Parameter.empty or ann is Any:
        return None, False
    if ann in _PY:
        return _PY[ann], False
    origin = typing.get_origin(ann)
    if origin is Union or type(ann).__name__ == "UnionType":
        members = [a for a in typing.get_args(ann) if a is not type(None)]
        nullable = len(members) < len(typing.get_args(ann))
        if len(members) == 1:
            return _py_type(members[0])[0], nullable
        return None, nullable
    if origin in _PY:
        return _PY[origin], False
    return None, False


def _json_type(sub: Mapping[str, Any]) -> tuple[Optional[str], bool]:
    """(JSON type, nullable) of a property's schema (``type``, a list of types, or
    ``anyOf``/``oneOf`` of one type and null)."""
    t = sub.get("type")
    if isinstance(t, str):
        return (t if t in _JSON else None), t == "null"
    if isinstance(t, list):
        kinds = [k for k in t if k != "null"]
        return (kinds[0] if len(kinds) == 1 and kinds[0] in _JSON else None), "null" in t
    for key in ("anyOf", "oneOf"):
        alts = sub.get(key)
        if isinstance(alts, list):
            got = [_json_type(a) for a in alts if isinstance(a, Mapping)]
            one = {k for k, _ in got if k is not None}
            nullable = any(a.get("type") == "null" for a in alts if isinstance(a, Mapping))
            return (one.pop() if len(one) == 1 else None), nullable
    return None, False


def _coerce(tool: str, name: str, arg: Arg, v: Any) -> Any:
    """`v` as `arg`'s type, where exact; `IdentityError` where not."""
    if v is None or arg.type is None:
        return v
    got = _EXACT[arg.type](v)
    if got is _NO:
        raise IdentityError(
            f"{tool}: argument {name} is declared {arg.type}, and {v!r} is not one "
            f"exactly: {_HINT[arg.type]}"
        )
    return got


def _integer(v: Any) -> Any:
    if isinstance(v, bool):
        return _NO
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if v.is_integer() else _NO
    d = _decimal(v)
    return _NO if d is None or d != d.to_integral_value() else int(d)


def _number(v: Any) -> Any:
    if isinstance(v, bool):
        return _NO
    if isinstance(v, (int, float)):
        return v
    d = _decimal(v)
    if d is None:
        return _NO
    if d == d.to_integral_value() and abs(d) <= 2**53:
        return int(d)
    f = float(d)
    return f if Decimal(repr(f)) == d else _NO


def _decimal(v: Any) -> Optional[Decimal]:
    """A finite decimal from a string of one number (no spaces inside), else None."""
    if not isinstance(v, str) or not v.strip() or any(c in v.strip() for c in " _"):
        return None
    try:
        d = Decimal(v.strip())
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def _string(v: Any) -> Any:
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return _NO


def _boolean(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    return {"true": True, "false": False}.get(v, _NO) if isinstance(v, str) else _NO


def _array(v: Any) -> Any:
    return list(v) if isinstance(v, (list, tuple)) else _NO


def _object(v: Any) -> Any:
    return v if isinstance(v, Mapping) else _NO


_EXACT: dict[str, Callable[[Any], Any]] = {
    "integer": _integer,
    "number": _number,
    "string": _string,
    "boolean": _boolean,
    "array": _array,
    "object": _object,
}
_HINT = {
    "integer": "pass a whole number",
    "number": "pass a number",
    "string": "pass a string",
    "boolean": "pass true or false",
    "array": "pass a list",
    "object": "pass an object",
}
