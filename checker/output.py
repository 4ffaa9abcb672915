"""Writing files safely: never leave partial output behind as if it were complete."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from toolcommit.model.errors import InputError


def write_atomic(path, text: str) -> None:
    """Write `text` to `path` via a temporary file in the same folder, then rename."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as e:
        raise InputError(f"cannot write here: {e.strerror}; choose another folder", str(path)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_tree(target: Path, files: dict) -> Path:
    """Replace folder `target` with `files` (relative path -> text), atomically: written
    to a temporary sibling, then renamed into place ."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        for rel, text in sorted(files.items()):
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
        old = None
        if target.exists():
            old = target.parent / f".{target.name}.old"
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
        os.replace(tmp, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target
