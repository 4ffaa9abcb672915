"""The intent-log library has one import name."""
import importlib

import pytest


def test_the_runtime_imports_as_toolcommit_runtime():
    assert importlib.import_module("toolcommit.runtime").IntentLog.__module__ == "toolcommit.runtime.log"


def test_its_second_path_is_refused_with_the_name_to_use():
    with pytest.raises(ImportError, match="import toolcommit.runtime, not toolcommit.checker.runtime"):
        importlib.import_module("toolcommit.checker.runtime")
