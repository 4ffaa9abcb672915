"""A JSON Schema (draft 2020-12) judge for the keywords spec/'s schemas use, so a reader's
rules are its schema's without a dependency (the library cannot require `jsonschema`;
tests/design/test_design_reader.py compares this judge with it on generated documents).

Keywords: ``type``, ``const``, ``enum``, ``required``, ``properties``,
``additionalProperties``, ``items``, ``minItems``, ``anyOf``, ``$ref`` (to ``#/$defs/...``),
``pattern`` and ``minimum``; annotations (``description``, ``title``...) are ignored. A
keyword outside this list is refused when the schema is read (`SchemaUnsupported`), so a
schema cannot gain a rule this judge would silently skip.

>>> first_violation({"a": 1}, {"type": "object", "properties": {"a": {"type": "string"}}})
('a', '1 is not a string')
>>> first_violation([], {"type": "array", "minItems": 1}) is None
False
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Optional

RULES = frozenset(
    {
        "type",
        "const",
        "enum",
        "required",
        "properties",
        "additionalProperties",
        "items",
        "minItems",
        "anyOf",
        "$ref",
        "pattern",
        "minimum",
    }
)
NOTES = frozenset({"$schema", "$id", "$defs", "title", "description", "default", "examples"})
_TYPES = {
    "object": "an object",
    "array": "a list",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


class SchemaUnsupported(ValueError):
    """The schema uses a keyword this judge does not know."""


def supported(schema: Any, where: str = "") -> None:
    """Refuse a schema with a keyword outside `RULES` and `NOTES` (SchemaUnsupported)."""
    if isinstance(schema, list):
        for i, s in enumerate(schema):
            supported(s, f"{where}[{i}]")
        return
    if not isinstance(schema, Mapping):
        return
    for k, v in schema.items():
        if k not in RULES and k not in NOTES:
            raise SchemaUnsupported(f"schema keyword {k!r} at {where or '/'} is not judged")
        if k in ("properties", "$defs"):
            for name, sub in v.items():
                supported(sub, f"{where}/{k}/{name}")
        elif k in ("items", "additionalProperties", "anyOf"):
            supported(v, f"{where}/{k}")


def _short(v: Any, most: int = 40) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= most else text[: most - 3] + "..."


def _is(v: Any, kind: str) -> bool:
    if kind == "integer":
        return (
            isinstance(v, int)
            and not isinstance(v, bool)
            or (isinstance(v, float) and v.is_integer())
        )
    if kind == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    py = {"object": Mapping, "array": list, "string": str, "boolean": bool, "null": type(None)}
    return isinstance(v, py[kind])


def _same(a: Any, b: Any) -> bool:
    """JSON's equality: true is not 1, 1 is 1.0, lists and objects item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, Mapping)) or isinstance(b, (list, Mapping)):
        return False
    both_numbers = _is(a, "number") and _is(b, "number")
    return (type(a) is type(b) or both_numbers) and a == b


def _join(where: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else str(key)


def first_violation(
    doc: Any, schema: Mapping, root: Optional[Mapping] = None, where: str = ""
) -> Optional[tuple[str, str]]:
    """(where, what) of the first rule of `schema` that `doc` breaks, or None: `where` is the
    field's path (``assumes.environment``, ``instances[2]``), `what` says what was found and
    what is valid."""
    root = schema if root is None else root
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        found = first_violation(doc, root["$defs"][name], root, where)
        if found:
            return found
    kind = schema.get("type")
    if kind is not None and not _is(doc, kind):
        return where, f"{_short(doc)} is not {_TYPES[kind]}"
    if "const" in schema and not _same(doc, schema["const"]):
        return where, f"{_short(doc)} is not {_short(schema['const'])}"
    if "enum" in schema and not any(_same(doc, e) for e in schema["enum"]):
        return where, f"{_short(doc)} is not one of {', '.join(map(str, schema['enum']))}"
    if "anyOf" in schema:
        if all(first_violation(doc, s, root, where) for s in schema["anyOf"]):
            kinds = " or ".join(
                _TYPES.get(s.get("type"), "the form shown") for s in schema["anyOf"]
            )
            return where, f"{_short(doc)} is not {kinds}"
    if "pattern" in schema and isinstance(doc, str) and not re.search(schema["pattern"], doc):
        form = schema.get("description") or f"of the form {schema['pattern']}"
        return where, f"{_short(doc)} is not {form}"
    if "minimum" in schema and _is(doc, "number") and doc < schema["minimum"]:
        return where, f"{_short(doc)} is below {schema['minimum']}"
    if isinstance(doc, list):
        return _array(doc, schema, root, where)
    if isinstance(doc, Mapping):
        return _object(doc, schema, root, where)
    return None


def _array(doc: list, schema: Mapping, root: Mapping, where: str):
    if len(doc) < schema.get("minItems", 0):
        return where, f"has {len(doc)} items; at least {schema['minItems']} needed"
    if "items" in schema:
        for i, item in enumerate(doc):
            found = first_violation(item, schema["items"], root, _join(where, i))
            if found:
                return found
    return None


def _object(doc: Mapping, schema: Mapping, root: Mapping, where: str):
    for name in schema.get("required", ()):
        if name not in doc:
            return _join(where, name), "missing (required)"
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for name, value in doc.items():
        sub = props.get(name, extra)
        if sub is False:
            return _join(where, name), f"not a field here; fields: {', '.join(props)}"
        if isinstance(sub, Mapping):
            found = first_violation(value, sub, root, _join(where, name))
            if found:
                return found
    return None
