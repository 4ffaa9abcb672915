"""Every docstring example in model/, checker/ runtime/ and spec/ runs and passes.

Modules are imported by their installed names (`toolcommit.model.canon`), so the examples
exercise the same objects the tool uses (`python -m pytest --doctest-modules model checker`
runs them too, under the folders' names: a test below runs it).
"""

import doctest
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolcommit.checker
import toolcommit.gateway
import toolcommit.model
import toolcommit.runtime
import toolcommit.spec


def modules() -> list[str]:
    out = []
    for pkg in (
        toolcommit.model,
        toolcommit.checker,
        toolcommit.runtime,
        toolcommit.gateway,
        toolcommit.spec,
    ):
        out.append(pkg.__name__)
        out += [
            m.name
            for m in pkgutil.walk_packages(
                pkg.__path__, pkg.__name__ + ".", onerror=lambda _name: None
            )
            if not m.name.endswith("__main__")
        ]
    return out


def test_the_doctested_modules_include_the_core_ones():
    assert {
        "toolcommit.model.canon",
        "toolcommit.model.properties",
        "toolcommit.checker.engines.smt.bmc",
        "toolcommit.model.scenario",
        "toolcommit.runtime.log",
        "toolcommit.runtime",
    } <= set(modules())


@pytest.mark.parametrize("name", modules())
def test_docstring_examples_pass(name):
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as e:  # a module of an optional extra that is not installed
        if e.name and e.name.split(".")[0] == "toolcommit":
            raise
        pytest.skip(f"{name} needs {e.name} (an optional extra)")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


@pytest.mark.slow
def test_the_plain_doctest_run_over_the_folders_passes():
    """`python -m pytest --doctest-modules model checker`, as anyone would first run it: the
    files imported by their folders' names (model.canon), which the runtime no longer refuses."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--doctest-modules",
            "model",
            "checker",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
