"""The C programs compile clean under -Wall -Wextra -Werror: the log checker's lane
(lane.c), the native engine (native_bfs.c with the model code generated for an instance)
and the shared engine (native_vm.c), each with the flags it is built with in production
but -w."""

import subprocess
import sysconfig
from pathlib import Path

import pytest

from toolcommit.checker.cbuild import compiler
from toolcommit.checker.engines.explicit import native
from toolcommit.checker.engines.explicit.codegen import compile_system
from toolcommit.checker.engines.explicit.native_c import c_source
from toolcommit.checker.logs import lane
from toolcommit.model.environment import configure
from toolcommit.model.instance import instance
from toolcommit.model.knobs import preset
from toolcommit.model.semantics import build

STRICT = ["-Wall", "-Wextra", "-Werror"]
pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")


def strict(flags) -> list[str]:
    return [f for f in flags if f != "-w"] + STRICT


def compiles(source: Path, flags, tmp_path) -> None:
    done = subprocess.run(
        [*compiler(), *strict(flags), "-o", str(tmp_path / "out.so"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[:2000]


def test_the_lane_compiles_without_a_warning(tmp_path):
    include = sysconfig.get_paths()["include"]
    compiles(lane.SOURCE, [*lane.FLAGS, "-I" + include], tmp_path)


@pytest.mark.parametrize(
    "label,env,name",
    [
        ("naive", "ideal", "default"),  # two workers: the symmetry memo
        ("recommended", "ideal", "zombie"),  # one worker: no memo; fences
        ("recommended", "stripe", "give_up_retry"),  # the clock, saved errors, 409s
    ],
)
def test_the_native_engine_compiles_without_a_warning(tmp_path, label, env, name):
    from toolcommit.model.environment import instance_in

    config = configure(preset(label), env)
    source = tmp_path / "engine.c"
    source.write_text(c_source(compile_system(build(config, instance_in(instance(name), env)))))
    compiles(source, native.FLAGS, tmp_path)


@pytest.mark.parametrize("words,symmetry", [(2, True), (2, False), (3, True), (4, False)])
def test_the_shared_native_engine_compiles_without_a_warning(tmp_path, words, symmetry):
    from toolcommit.checker.engines.explicit import native_vm

    source = tmp_path / "engine.c"
    source.write_text(native_vm.vm_source(words, symmetry))
    compiles(source, native_vm.FLAGS, tmp_path)


@pytest.mark.parametrize("words,symmetry", [(2, False), (2, True), (3, True)])
def test_the_shared_engine_compiles_without_a_warning(tmp_path, words, symmetry):
    """The engine `ask` and `design` share (native_vm.c), in each shape it is built in:
    states of two words or more, with the symmetry memo and without."""
    from toolcommit.checker.engines.explicit import native_vm

    source = tmp_path / "vm.c"
    source.write_text(native_vm.vm_source(words, symmetry))
    compiles(source, native_vm.FLAGS, tmp_path)
