"""Every docstring example in model/, checker/ and spec/ runs and passes.

Modules are imported by their installed names (`toolcommit.model.canon`), so the examples
exercise the same objects the tool uses; `--doctest-modules` over the folders would import
a second copy under the folder names.
"""
import doctest
import importlib
import pkgutil

import pytest

import toolcommit.checker
import toolcommit.model
import toolcommit.runtime
import toolcommit.spec

# checker/runtime/ is installed as toolcommit.runtime; walking toolcommit.checker would
# import a second copy of it under toolcommit.checker.runtime
_SECOND_COPY = "toolcommit.checker.runtime"


def modules() -> list[str]:
    out = []
    for pkg in (toolcommit.model, toolcommit.checker, toolcommit.runtime, toolcommit.spec):
        out.append(pkg.__name__)
        out += [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".",
                                                      onerror=lambda _name: None)
                if not m.name.endswith("__main__")
                and not (m.name + ".").startswith(_SECOND_COPY + ".")]
    return out


def test_the_doctested_modules_include_the_core_ones():
    assert {"toolcommit.model.canon", "toolcommit.model.properties",
            "toolcommit.checker.engines.smt.bmc", "toolcommit.model.scenario"} <= set(modules())


@pytest.mark.parametrize("name", modules())
def test_docstring_examples_pass(name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:   # a module of an optional extra that is not installed
        if e.name and e.name.split(".")[0] == "toolcommit":
            raise
        pytest.skip(f"{name} needs {e.name} (an optional extra)")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
