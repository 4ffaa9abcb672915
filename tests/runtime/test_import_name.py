"""The intent-log library lives in checker/runtime as `toolcommit.checker.runtime` (its folder
shows its name) and is imported by users as `toolcommit.runtime`: the same objects, one copy."""
import importlib


def test_the_public_name_gives_the_librarys_own_objects():
    public = importlib.import_module("toolcommit.runtime")
    home = importlib.import_module("toolcommit.checker.runtime")
    assert public.IntentLog is home.IntentLog
    assert public.IntentLog.__module__ == "toolcommit.checker.runtime.log"
    assert all(getattr(public, n) is getattr(home, n) for n in home.__all__)


def test_the_public_submodules_give_the_librarys_wrappers():
    shims = importlib.import_module("toolcommit.checker.runtime.shims")
    frameworks = importlib.import_module("toolcommit.checker.runtime.frameworks")
    assert importlib.import_module("toolcommit.runtime.shims").effectful is shims.effectful
    public = importlib.import_module("toolcommit.runtime.frameworks")
    assert public.pydantic_ai_tool is frameworks.pydantic_ai_tool
    wire = importlib.import_module("toolcommit.checker.runtime.wire")
    assert importlib.import_module("toolcommit.runtime.wire").instrument is wire.instrument
