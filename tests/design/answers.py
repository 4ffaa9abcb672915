"""Helpers shared by the `toolcommit ask` tests."""

from pathlib import Path

from toolcommit.checker.cli.ask import answer_links
from toolcommit.checker.render.answers import counterexample_files, render_answer_markdown

REPO = Path(__file__).resolve().parents[2]


def assert_stored_answer(name, a):
    """The stored markdown answer `name` and its counterexample folder are exactly `a`'s."""
    folder = REPO / "counterexamples" / "questions" / name
    target = REPO / "spec" / "questions" / f"{name}.answer.md"
    links = answer_links(folder, target, {c.stem for c in a.violated_cells()})
    assert target.read_text("utf-8") == render_answer_markdown(a, links), name
    files = counterexample_files(a)
    stored = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert stored == set(files), name
    for rel, text in files.items():
        assert (folder / rel).read_text("utf-8") == text, (name, rel)
