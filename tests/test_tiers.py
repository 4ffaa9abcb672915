"""tests/tiers.txt, read by tests/tiers.py: every line well formed, the longest prefix
decides, a bad line is refused at its line, and no slow line sits under a deep one."""

from __future__ import annotations

import pytest

from tests import tiers


def test_the_shipped_file_reads_and_places_tests_in_both_tiers():
    got = tiers.read()
    assert {"slow", "deep"} == set(got.values())
    assert all(p.startswith("tests/") for p in got)


def test_the_longest_prefix_decides():
    lines = {"tests/a.py": "deep", "tests/a.py::t[x": "slow", "tests/b.py::u": "slow"}
    assert tiers.line_of("tests/a.py::t[x-1]", lines) == "tests/a.py::t[x"
    assert tiers.line_of("tests/a.py::v", lines) == "tests/a.py"
    assert tiers.line_of("tests/c.py::w", lines) is None


@pytest.mark.parametrize(
    "text, says",
    [
        ("fast tests/a.py::t\n", ":1: write 'slow PREFIX'"),
        ("# c\nslow elsewhere/a.py::t\n", ":2: write 'slow PREFIX'"),
        ("slow tests/a.py::t\nslow tests/a.py::t  # twice\n", ":2:"),
        ("deep tests/a.py\nslow tests/a.py::t\n", "is under 'deep tests/a.py'"),
    ],
)
def test_a_bad_line_is_refused_naming_it(tmp_path, text, says):
    path = tmp_path / "tiers.txt"
    path.write_text(text)
    with pytest.raises(pytest.UsageError) as e:
        tiers.read(path)
    assert says in str(e.value)


def test_a_node_id_holding_a_hash_is_not_cut_as_a_comment(tmp_path):
    path = tmp_path / "tiers.txt"
    path.write_text("slow tests/a.py::t[README.md#3: x]  # 1.0 s\n")
    assert tiers.read(path) == {"tests/a.py::t[README.md#3: x]": "slow"}
