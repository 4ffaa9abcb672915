"""The prose spec names every action, knob, property and assumption of the JSON spec, and
the modules' docstring examples run."""

import doctest
import importlib
from pathlib import Path

import pytest

from toolcommit.spec import protocol

ROOT = Path(__file__).resolve().parents[2]
PROSE = (ROOT / "spec" / "PROTOCOL.md").read_text("utf-8")


@pytest.mark.parametrize(
    "name",
    sorted(
        set(protocol().actions)
        | set(protocol().knobs)
        | set(protocol().properties)
        | set(protocol().assumptions)
    ),
)
def test_protocol_md_names_every_spec_name(name):
    assert f"`{name}`" in PROSE or name in PROSE


MODULES = [
    "toolcommit.spec",
    "toolcommit.model.expr",
    "toolcommit.model.knobs",
    "toolcommit.model.instance",
    "toolcommit.model.environment",
    "toolcommit.model.values",
    "toolcommit.model.properties",
]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0 and result.attempted > 0


def test_protocol_md_knob_table_is_the_generated_one():
    from toolcommit.checker.render.spec import render_knobs

    assert render_knobs() in PROSE, "regenerate with: toolcommit spec --format knobs"
