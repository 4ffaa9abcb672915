"""The import graph of the house: no module imports itself through others (no circle), and
the layers run one way, as the architecture reads (docs/architecture.md):

    cli -> render -> torture -> design -> verify/logs -> engines -> support (C builds,
    files, cores, signals) -> gateway -> runtime -> model -> spec

A module imports its own part or a lower layer, never a higher one nor a neighbour on its own
layer; no module is placed on another part's layer than its folder's (no whitelist). The
renderers format results: they import no engine run, design search or model builder.
Imports inside functions count: a lazy import is an import; an `if TYPE_CHECKING:` import is
not (it never runs)."""

import ast
from functools import lru_cache
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "model": "toolcommit.model",
    "checker": "toolcommit.checker",
    "spec": "toolcommit.spec",
    "runtime": "toolcommit.runtime",
    "gateway": "toolcommit.gateway",
}

# part -> layer; a part is a package of checker/ (or a module of its own), or a folder
LAYERS = {
    "spec": 0,  # the protocol as data
    "model": 1,  # the formal model: pure values
    "runtime": 2,  # the library teams import: spec and model only
    "gateway": 3,  # the MCP front on the library: runtime, model and spec only
    "checker.interrupts": 4,
    "checker.cbuild": 5,
    "checker.output": 5,
    "checker.machine": 5,  # support: C, files, cores
    "checker.engines": 6,  # the model checkers
    "checker.verify": 7,  # the suites and the manifest of expected results
    "checker.logs": 7,  # the log checker
    "checker.design": 8,  # design search and questions
    "checker.torture": 9,  # the harness drives the library
    "checker.render": 10,  # formats results
    "checker.cli": 11,  # the command line
    "checker.entry": 12,  # the installed command: imports the command line, nothing first
    "checker": 12,  # the package itself
}
# what a renderer never imports: the engines' runs, the design search, the model builder
NOT_RENDERING = (
    "toolcommit.model.semantics",
    "toolcommit.checker.design.synthesis",
    "toolcommit.checker.design.run",
    "toolcommit.checker.engines.portfolio",
    "toolcommit.checker.engines.explicit",
    "toolcommit.checker.engines.smt",
    "toolcommit.checker.engines.simulate",
)


@lru_cache(maxsize=None)
def modules() -> dict[str, Path]:
    out = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([package, *parts])] = path
    return out


def imports(name: str, path: Path, known: dict) -> set[str]:
    """The modules of the house `name` imports, anywhere in its file."""

    def owner(target: str) -> str:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target

    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and getattr(block.test, "id", None) == "TYPE_CHECKING"
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue  # `if TYPE_CHECKING:` imports are for the type checker, never run
        if isinstance(node, ast.Import):
            found |= {owner(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = name.split(".")
                pkg = pkg[: len(pkg) - node.level + (path.name == "__init__.py")]
                base = ".".join(pkg + ([node.module] if node.module else []))
            for a in node.names:  # `from package import module` imports the module
                sub = f"{base}.{a.name}"
                found.add(sub if sub in known else owner(base))
    return found - {"", name}


@lru_cache(maxsize=None)
def graph() -> nx.DiGraph:
    known = modules()
    g = nx.DiGraph()
    g.add_nodes_from(known)
    for name, path in known.items():
        g.add_edges_from((name, m) for m in imports(name, path, known))
    return g


def part(module: str) -> str:
    """The part of a module: its package under checker/ (or the module itself), or its
    folder."""
    bits = module.split(".")[1:]
    if bits[0] == "checker" and len(bits) > 1:
        return ".".join(bits[:2])
    return bits[0]


def test_the_graph_sees_the_houses_modules_and_their_lazy_imports():
    g = graph()
    assert g.has_edge("toolcommit.checker.cli.check", "toolcommit.checker.verify.suite")
    assert g.has_edge(
        "toolcommit.checker.engines.trace", "toolcommit.model.semantics"
    )  # in a function
    assert g.has_edge("toolcommit.runtime.design", "toolcommit.model.design_file")  # in a function


def test_no_module_imports_itself_through_others():
    circles = [sorted(c) for c in nx.strongly_connected_components(graph()) if len(c) > 1]
    assert circles == []


@pytest.mark.parametrize("module", sorted(modules()))
def test_every_module_imports_its_own_part_or_a_lower_layer(module):
    assert part(module) in LAYERS, f"{module}: its part {part(module)} has no layer in LAYERS"
    mine = part(module)
    upward = [
        m for m in graph().successors(module) if part(m) != mine and LAYERS[part(m)] >= LAYERS[mine]
    ]
    assert upward == [], f"{module} ({mine}, layer {LAYERS[mine]}) imports " + ", ".join(
        f"{m} ({part(m)}, layer {LAYERS[part(m)]})" for m in upward
    )


@pytest.mark.parametrize(
    "module", sorted(m for m in modules() if m.startswith("toolcommit.checker.render"))
)
def test_a_renderer_imports_no_engine_run_design_search_or_model_builder(module):
    found = [m for m in graph().successors(module) if m.startswith(NOT_RENDERING)]
    assert found == [], f"{module} computes what it should be given: imports {found}"
