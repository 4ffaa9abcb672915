"""Where each test runs, by measurement: `tests/tiers.txt` places tests in the ``slow`` or
the ``deep`` tier by node-id prefix.

The README's test command runs the default tier (no ``slow``, no ``deep`` mark: under
3 minutes on 2 cores), CI adds ``slow`` (`.ci/run`), and ``deep`` runs before a release
(``-m deep``). A test is marked in its code where its nature says so (a long search, a
real crash); `tests/tiers.txt` is the one home of placement by measured time: each line
``TIER PREFIX`` marks every test whose node id starts with PREFIX, the longest matching
prefix deciding. Marks only add: a line never takes a test out of the tier its code gives.

A line that matches no test is an error when the whole suite is collected (a renamed test
would otherwise silently leave its tier). The hook is imported by tests/conftest.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

FILE = Path(__file__).with_name("tiers.txt")
TIERS = ("slow", "deep")


def read(path: Path = FILE) -> dict[str, str]:
    """prefix -> tier from the lines of `path` (a line starting with ``#``, and the rest of a
    line after two spaces and ``#``, are comments: a node id may hold ``#``); `UsageError`
    at a bad line, naming it."""
    out: dict[str, str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = "" if raw.lstrip().startswith("#") else raw.split("  #", 1)[0].strip()
        if not line:
            continue
        tier, _, prefix = line.partition(" ")
        prefix = prefix.strip()
        if tier not in TIERS or not prefix.startswith("tests/") or prefix in out:
            raise pytest.UsageError(
                f"{path}:{n}: write 'slow PREFIX' or 'deep PREFIX' (a node id under tests/, "
                f"once each); got {raw.strip()!r}"
            )
        out[prefix] = tier
    for slow in (p for p, t in out.items() if t == "slow"):
        under = next((d for d, t in out.items() if t == "deep" and slow.startswith(d)), None)
        if under is not None:  # the longer line would take the test out of deep
            raise pytest.UsageError(f"{path}: 'slow {slow}' is under 'deep {under}': drop it")
    return out


def line_of(nodeid: str, tiers: dict[str, str]) -> str | None:
    """The longest prefix of `nodeid` in `tiers` (None: no line names it)."""
    return max((p for p in tiers if nodeid.startswith(p)), key=len, default=None)


def by_file(tiers: dict[str, str]) -> dict[str, dict[str, str]]:
    """`tiers` grouped by the file part of each prefix (a prefix without ``::`` under "":
    it may name a folder), so a test is matched against its own file's lines only."""
    out: dict[str, dict[str, str]] = {}
    for p, t in tiers.items():
        out.setdefault(p.split("::", 1)[0] if "::" in p else "", {})[p] = t
    return out


@pytest.hookimpl(tryfirst=True)  # before -m deselects by mark
def pytest_collection_modifyitems(session, config, items):
    tiers = read()
    files, used = by_file(tiers), set()
    for item in items:
        mine = {**files.get("", {}), **files.get(item.nodeid.split("::", 1)[0], {})}
        best = line_of(item.nodeid, mine)
        if best is not None:
            used.add(best)
            item.add_marker(tiers[best])
    whole = not config.args or [Path(a).resolve() for a in config.args] == [FILE.parent]
    stale = sorted(set(tiers) - used)
    if whole and stale and not config.getoption("keyword"):
        raise pytest.UsageError(
            f"{FILE}: {len(stale)} line(s) match no test, the first: {stale[0]!r}; a test "
            "was renamed or removed: correct or drop the line"
        )
