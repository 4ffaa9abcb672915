"""A provider file given to the library (`IntentLog(provider=FILE)`): the design it names.

A provider file (`spec/provider.schema.json`) says what the provider promises, not what to
build; the design proven for it (`toolcommit design --env FILE -o DESIGN`) says that. The
file names that design (`"design": "DESIGN"`, relative to the file), and the design embeds
the provider file it was proven for: `design_path` follows the one to the other and refuses
a design proven for other promises (the file edited since, or another provider's).
"""

from __future__ import annotations

import json
import os
from typing import Any

from toolcommit.model.errors import ToolcommitError
from toolcommit.model.provider_file import KIND, from_mapping
from toolcommit.model.provider_file import read as read_provider


def is_provider_file(path: str) -> bool:
    """Whether `path` is a readable JSON file whose kind is a provider file's."""
    try:
        with open(path, encoding="utf-8") as f:
            doc: Any = json.load(f)
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(doc, dict) and doc.get("kind") == KIND


def design_path(path: str) -> str:
    """The design file the provider file at `path` names, once checked to be proven for the
    file as it is; `ToolcommitError` (what to run) otherwise."""
    doc = read_provider(path)
    redo = f"run `toolcommit design --env {path} -o DESIGN.json` and name it in the file"
    if doc.design is None:
        raise ToolcommitError(
            f'{path}: provider {doc.name} names no design ("design": "DESIGN.json"); {redo}'
        )
    try:
        with open(doc.design, encoding="utf-8") as f:
            design: Any = json.load(f)
    except (OSError, ValueError, RecursionError) as e:
        raise ToolcommitError(f"{path}: cannot read its design {doc.design} ({e}); {redo}")
    embedded = design.get("provider_file") if isinstance(design, dict) else None
    if not isinstance(embedded, dict) or from_mapping(embedded, doc.design).digest != doc.digest:
        raise ToolcommitError(
            f"{path}: its design {doc.design} was not proven for the file as it is now (the "
            f"file changed since, or the design is another provider's); {redo}"
        )
    return doc.design


def follow(provider: str) -> str:
    """`provider` itself, or the design a provider file at that path names."""
    return (
        design_path(provider)
        if os.path.isfile(provider) and is_provider_file(provider)
        else provider
    )
