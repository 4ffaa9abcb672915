"""The TypeScript package (ts/) from Python's tests: its folder, whether it is installed and
built, and running a Node script against it. Where ts/node_modules is missing (run
`cd ts && npm ci`) the tests skip and say so; under CI (env CI set) they fail instead."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

TS = Path(__file__).resolve().parents[2] / "ts"
DIST = TS / "dist" / "esm" / "index.js"


def _missing(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the TypeScript tests: {why}", pytrace=False)
    pytest.skip(why)


def node() -> str:
    """The `node` binary; skips (fails under CI) where there is none."""
    found = shutil.which("node")
    if found is None:
        _missing("node is not installed")
    assert found is not None
    return found


def built() -> Path:
    """ts/dist/esm/index.js, built from ts/src if any source is newer (`npm run build`)."""
    node()
    if not (TS / "node_modules" / "better-sqlite3").is_dir():
        _missing("the TypeScript package is not installed: cd ts && npm ci")
    newest = max(p.stat().st_mtime for p in (TS / "src").glob("*.ts"))
    with open(TS / "node_modules" / ".tc-build.lock", "w") as lock:  # one build at a time
        fcntl.flock(lock, fcntl.LOCK_EX)  # (pytest-xdist's workers)
        if not DIST.exists() or DIST.stat().st_mtime < newest:
            subprocess.run([node(), "scripts/build.mjs"], cwd=TS, check=True, capture_output=True)
    return DIST


def run_node(script: str, *args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """Run the ES module `script` (text) with `args`; its completed process (text)."""
    built()
    return subprocess.run(
        [node(), "--input-type=module", "-e", script, "--", *args],
        cwd=TS,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )
