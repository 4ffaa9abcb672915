"""The import graph of the house: no module imports itself through others (no circle), and
the layers run one way (cli -> render -> torture/gateway -> design -> verify/logs ->
engines -> support (C builds, files, cores, signals) -> runtime -> model -> spec): a module imports its own part or a lower layer, never a higher
one nor a neighbour on its own layer. Imports inside functions count: a lazy import is an
import; an `if TYPE_CHECKING:` import is not (it never runs)."""

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

# part -> layer; a part is a package of checker/ (or a module of its own), model, spec
LAYERS = {
    "spec": 0,
    "model": 1,
    "runtime": 2,  # the library teams import: spec and model only
    "gateway": 2.5,  # the MCP gateway: on the runtime, the model and the spec only
    "checker.interrupts": 3,
    "checker.cbuild": 4,
    "checker.output": 4,
    "checker.machine": 4,  # support: C, files, cores
    "checker.engines": 5,
    "checker.verify": 6,
    "checker.logs": 6,
    "checker.design": 7,
    "checker.torture": 8,  # the harness drives the library
    "checker.render": 9,
    "checker.cli": 10,  # the command line
    "checker.entry": 11,  # the installed command: imports the command line, nothing first
    "checker": 11,  # the package itself
}
# modules that stand on another part's layer than their folder's: the manifest writer runs
# the suites and reads the shipped designs (design/file.py) to write spec/expected.json
PLACED = {"toolcommit.checker.verify.manifest": "checker.design"}


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
    folder (or where `PLACED` puts it)."""
    if module in PLACED:
        return PLACED[module]
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
