"""What `validate` of a plain intent log imports: the log checker, its reader and its
renderer, never a trace adapter, the design refinement, the runtime library or an engine
(the command pays for what it uses, when it uses it)."""

import subprocess
import sys
from pathlib import Path

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"

# what a plain log's check may load: the package roots, the log checker, its CLI and renderer
ALLOWED = {
    "toolcommit",
    "toolcommit.spec",
    "toolcommit.model",
    "toolcommit.model.canon",
    "toolcommit.model.errors",
    "toolcommit.checker",
    "toolcommit.checker.cbuild",
    "toolcommit.checker.interrupts",
    "toolcommit.checker.machine",
    "toolcommit.checker.output",
    "toolcommit.checker.cli",
    "toolcommit.checker.cli.flags",
    "toolcommit.checker.cli.terminal",
    "toolcommit.checker.cli.validate",
    "toolcommit.checker.cli.validate_design",
    "toolcommit.checker.cli.validate_from",
    "toolcommit.checker.logs",
    "toolcommit.checker.logs.adapters",  # the package: its docstring, nothing else
    "toolcommit.checker.logs.adapters.capability",  # the sources' names, for --from's choices
    "toolcommit.checker.render",
    "toolcommit.checker.render.findings",
    "toolcommit.checker.render.fit",
}
# the log checker's own modules a plain log's check needs none of
NOT_LOGS = ("claim", "refine", "refinement", "cluster")


def _loaded(argv: list[str]) -> set[str]:
    code = (
        "import sys\n"
        "from toolcommit.checker.cli import main\n"
        f"code = main({argv!r})\n"
        "print(code)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('toolcommit'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    code, names = out.stdout.strip().splitlines()[-2:]
    assert code in ("0", "1", "3"), out.stdout + out.stderr  # a verdict, not an error
    return set(names.split())


def _unwanted(loaded: set[str]) -> list[str]:
    return sorted(
        m
        for m in loaded
        if m not in ALLOWED
        and not (
            m.startswith("toolcommit.checker.logs.")
            and not m.startswith("toolcommit.checker.logs.adapters.")
            and m.rpartition(".")[2] not in NOT_LOGS
        )
    )


def test_validate_of_a_plain_log_loads_no_adapter_refinement_runtime_or_engine(tmp_path):
    loaded = _loaded(["validate", "--jobs", "1", str(LOGS / "i1-ok.jsonl")])
    assert "toolcommit.checker.logs.conformance" in loaded  # the check ran in this process
    assert _unwanted(loaded) == []
    assert not any(m.startswith("toolcommit.runtime") for m in loaded)


def test_validate_with_a_design_loads_the_refinement_it_uses(tmp_path):
    loaded = _loaded(["validate", "--jobs", "1", "--design", "stripe", str(LOGS / "i1-ok.jsonl")])
    assert {"toolcommit.checker.logs.refinement", "toolcommit.runtime.design"} <= loaded
    assert not any(m.startswith("toolcommit.checker.logs.adapters.") for m in loaded - ALLOWED)
