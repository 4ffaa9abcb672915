"""Compiling C on first use: the one home for finding the machine's C compiler, the cache
directory, and building a shared library atomically (the native engine and the log
checker's native lane both use it; neither adds a Python dependency).

A library lives in the cache directory under a name keyed by the hash of its source, the
compiler and the flags, written as a temporary file and renamed into place, so two
processes can race and a reader sees all or nothing. The C source is kept beside it.
The directory stays bounded: each build drops the least recently used libraries beyond
`KEEP` (loading one marks it used), never one used in the last `MIN_AGE` seconds.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

KEEP = 256          # libraries kept in the cache (each with its C source beside it)
MIN_AGE = 3600.0    # seconds: a library used this recently is never dropped
_OURS = (".engine-", ".lane-", "engine-", "lane-")


def cache_dir() -> Path:
    """Where compiled libraries live: $XDG_CACHE_HOME/toolcommit/native (~/.cache by
    default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "toolcommit" / "native"


def compiler() -> Optional[list[str]]:
    """The C compiler command: $CC when set, else the first of cc, gcc, clang on PATH."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        return shlex.split(cc)
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    return None


def compile_atomic(folder: Path, target: Path, source: str, cc: list[str],
                   flags: Sequence[str], prefix: str = ".engine-") -> str:
    """Compile `source` into `target` atomically; '' on success, else why not."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, src = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".c")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".so")
        os.close(fd)
    except OSError as e:
        return f"cannot write the cache directory {folder}: {e.strerror or e}"
    try:
        done = subprocess.run([*cc, *flags, "-o", tmp, src], capture_output=True, text=True,
                              timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        unlink(src, tmp)
        return f"C compiler {cc[0]} did not run: {e}"
    except BaseException:         # interrupted: leave nothing behind
        unlink(src, tmp)
        raise
    if done.returncode != 0:
        unlink(src, tmp)
        first = (done.stderr.strip().splitlines() or ["no message"])[0][:200]
        return f"C compiler {cc[0]} failed (exit {done.returncode}): {first}"
    os.replace(tmp, target)                       # atomic: a reader sees all or nothing
    os.replace(src, target.with_suffix(".c"))     # kept beside it, for reading
    prune(folder)
    return ""


def touch(target: Path) -> None:
    """Mark a cached library used (`prune` drops the least recently used first)."""
    try:
        os.utime(target)
    except OSError:
        pass


def prune(folder: Path, keep: int = KEEP, min_age: float = MIN_AGE) -> int:
    """Drop the least recently used libraries of `folder` beyond `keep`, with their C
    sources, and temporary files of builds that died; never anything used in the last
    `min_age` seconds, nor a file this module did not name. Returns how many files went."""
    now = time.time()
    try:
        entries = [(e.stat().st_mtime, e) for e in os.scandir(folder)
                   if e.is_file() and e.name.startswith(_OURS)]
    except OSError:
        return 0
    libs = sorted(((t, e) for t, e in entries if not e.name.startswith(".")
                   and not e.name.endswith(".c")), key=lambda x: x[0], reverse=True)
    doomed = [e.path for t, e in libs[keep:] if now - t > min_age]
    doomed += [p[:-len(Path(p).suffix)] + ".c" for p in doomed]
    doomed += [e.path for t, e in entries if e.name.startswith(".") and now - t > min_age]
    gone = 0
    for path in doomed:
        try:
            os.unlink(path)
            gone += 1
        except OSError:
            pass
    return gone


def unlink(*paths: str) -> None:
    for p in paths:
        try:
            os.unlink(p)
        except OSError:
            pass
