"""Every relative link of the README and of the pages under docs/ resolves: the file or
folder exists, and a #fragment names a heading of the Markdown page it points to (GitHub's
anchors)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The text without its fenced blocks and inline code (links there are code)."""
    return re.sub(r"`[^`\n]*`(?!\])", "", FENCE.sub("", text))


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a Markdown text's headings: lower case, punctuation dropped,
    spaces made '-', a repeated one suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for title in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", text), re.M):
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links():
    out = []
    for page in PAGES:
        name = page.relative_to(ROOT).as_posix()
        for target in LINK.findall(prose(page.read_text("utf-8"))):
            if not re.match(r"[a-z][a-z0-9+.-]*:", target):
                out.append(pytest.param(page, target, id=f"{name} -> {target}"))
    return out


def test_the_pages_have_links_to_check():
    assert len(links()) > 50


@pytest.mark.parametrize("page,target", links())
def test_a_relative_link_resolves(page, target):
    path, _, fragment = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    assert dest.exists(), f"{target}: no such file or folder"
    assert ROOT in dest.parents or dest == ROOT, f"{target}: outside the repository"
    if fragment:
        assert dest.suffix == ".md", f"{target}: a fragment of a page that is not Markdown"
        assert fragment in anchors(dest.read_text("utf-8")), (
            f"{target}: no heading of {dest.name} has the anchor #{fragment}"
        )


def test_anchors_are_githubs():
    text = "# A: `b`, c\n## Large logs: `--jobs`, `--engine dask`\n## A: b, c\n"
    assert anchors(text) == {"a-b-c", "large-logs---jobs---engine-dask", "a-b-c-1"}
