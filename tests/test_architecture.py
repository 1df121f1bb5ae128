"""The package's shape, as docs/architecture.md writes it: the layer table and the order inside
`gepa_lab.search` are read from that page, and every module's imports (gepa_lab's and the
plugins' in `evaluators/`) must keep to them; no import cycle; the engine imported only by the
entry points. The checks are functions of an import graph, so a test can inject imports that
break each rule and see them caught."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
ENGINE = "gepa_lab.search.engine"
EVERYTHING = "everything of gepa_lab"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files() -> dict[str, Path]:
    return {_module_name(p): p for top in ("gepa_lab", "evaluators") for p in (ROOT / top).rglob("*.py")
            if "conf" not in p.parts and "bundled" not in p.parts}


MODULES = module_files()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(source: str, module: str) -> set[str]:
    """The modules of gepa_lab and evaluators `source` imports at run time (anywhere in the file;
    TYPE_CHECKING blocks, which never execute, excluded)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:  # `from gepa_lab.x import y` may name the submodule x.y
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return {m for m in found if m in MODULES and m != module}


def import_graph(injected: dict[str, str] | None = None) -> dict[str, set[str]]:
    """Every module's imports; `injected`: extra source lines per module (a broken copy of the tree)."""
    injected = injected or {}
    return {m: imports_of(p.read_text(encoding="utf-8") + "\n" + injected.get(m, ""), m) for m, p in MODULES.items()}


GRAPH = import_graph()


# -- the tables of docs/architecture.md ------------------------------------------------------------
def _rows(title: str) -> list[list[str]]:
    """The rows of the first table after the line starting with `title`."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1:]:
        if rows and not line.startswith("|"):
            break
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows[1:]  # the header row


def _names(cell: str) -> list[str]:
    """The backquoted names of a cell, outside its parenthesised notes."""
    return re.findall(r"`([\w.]+)`", re.sub(r"\([^)]*\)", "", cell))


# package -> modules it may import besides its own (None: anything of gepa_lab)
LAYERS: dict[str, tuple[str, ...] | None] = {
    name: None if row[-1] == EVERYTHING else tuple(_names(row[-1]))
    for row in _rows("## Layers") for name in _names(row[0])}
ENTRY_POINTS = {name for name, allowed in LAYERS.items() if allowed is None}
SEARCH_ORDER = {f"gepa_lab.search.{name}": int(row[0]) for row in _rows("Inside `gepa_lab.search`")
                for name in _names(row[1])}


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> str | None:
    """The layer row naming the module, the most specific one first (`gepa_lab` is the package root
    module alone)."""
    if module in LAYERS:
        return module
    found = [layer for layer in LAYERS if layer != "gepa_lab" and _under(module, layer)]
    return max(found, key=len) if found else None


def _permits(layer: str, dep: str) -> bool:
    allowed = LAYERS[layer]
    if dep == layer or (layer != "gepa_lab" and dep.startswith(layer + ".")):
        return True  # its own layer
    if allowed is None:
        return dep.startswith("gepa_lab")
    if layer == "evaluators":  # exactly the library surface, nothing deeper
        return dep in allowed
    return any(_under(dep, a) for a in allowed)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, deps in sorted(graph.items()):
        layer = layer_of(module)
        if layer is None:
            bad.append(f"{module} has no row in the layer table")
            continue
        bad += [f"{module} ({layer}) imports {dep}" for dep in sorted(deps)
                if not _permits(layer, dep)]
    return bad


def search_order_violations(graph: dict[str, set[str]]) -> list[str]:
    def level(module: str) -> int | None:
        return next((n for m, n in SEARCH_ORDER.items() if _under(module, m)), None)

    bad = []
    for module, deps in sorted(graph.items()):
        if _under(module, "gepa_lab.search") and module != "gepa_lab.search":
            own = level(module)
            if own is None:
                bad.append(f"{module} has no row in the order inside gepa_lab.search")
                continue
            bad += [f"{module} (row {own}) imports {dep} (row {level(dep)})" for dep in sorted(deps)
                    if _under(dep, "gepa_lab.search") and (level(dep) or 0) > own]
    return bad


def engine_importers(graph: dict[str, set[str]]) -> set[str]:
    return {m for m, deps in graph.items() if ENGINE in deps} - ENTRY_POINTS


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import cycle among gepa_lab's modules (the plugins' own imports are theirs to arrange)."""
    graph = {m: {d for d in deps if d.startswith("gepa_lab")} for m, deps in graph.items() if m.startswith("gepa_lab")}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)):
            return found
    return None


# -- the rules, on the tree as it is --------------------------------------------------------------
def test_the_tables_and_the_graph_see_the_package():
    assert {"gepa_lab.core", "gepa_lab.search", "gepa_lab.config", "evaluators"} <= set(LAYERS)
    assert {"gepa_lab", "gepa_lab.cli", "gepa_lab.dspy", "gepa_lab.report"} <= ENTRY_POINTS
    assert LAYERS["gepa_lab.core"] == () and LAYERS["evaluators"] == ("gepa_lab", "gepa_lab.lm")
    assert SEARCH_ORDER["gepa_lab.search.policies"] < SEARCH_ORDER["gepa_lab.search.ledger"] < SEARCH_ORDER[ENGINE]
    assert {"gepa_lab.core.contracts", ENGINE, "gepa_lab.runs.record", "evaluators.skillcraft"} <= set(GRAPH)
    assert ENGINE in GRAPH["gepa_lab"] and ENGINE in GRAPH["gepa_lab.cli"]


def test_every_module_keeps_to_its_layer():
    assert layer_violations(GRAPH) == []


def test_search_modules_import_only_earlier_rows():
    assert search_order_violations(GRAPH) == []


def test_only_the_entry_points_import_the_engine():
    assert engine_importers(GRAPH) == set()


def test_no_import_cycle():
    assert cycle(GRAPH) is None, " -> ".join(cycle(GRAPH) or [])


def test_nothing_below_the_entry_points_imports_the_package_root():
    # `gepa_lab/__init__.py` re-exports the library surface; importing it from inside would
    # make every module depend on every other.
    assert {m for m, deps in GRAPH.items() if "gepa_lab" in deps and m.startswith("gepa_lab.")} == set()


# -- the rules catch what breaks them --------------------------------------------------------------
@pytest.mark.parametrize("module, line, caught", [
    ("gepa_lab.search.policies.parent", "from gepa_lab.search.ledger import Ledger", search_order_violations),
    (ENGINE, "import evaluators.skillcraft", layer_violations),
    ("gepa_lab.core.contracts", "from evaluators.skillcraft.evaluator import SkillCraftEvaluator", layer_violations),
    ("gepa_lab.runs.record", "from gepa_lab.search import engine", engine_importers),
    ("evaluators.skillcraft.grading", "from gepa_lab.lm.client import LMCaller", layer_violations),
    ("gepa_lab.search.state", "import gepa_lab.search.proposal", cycle),
])
def test_an_injected_import_that_breaks_a_rule_is_caught(module, line, caught):
    assert not caught(GRAPH)
    found = caught(import_graph({module: line}))
    assert found and module in str(found)


def test_the_library_imports_no_plugin():
    """`evaluators/` plugs into the library, never the reverse: plugins are built by `_target_`."""
    assert [f"{m}: {d}" for m, deps in GRAPH.items() if _under(m, "gepa_lab")
            for d in deps if _under(d, "evaluators")] == []


def test_every_package_ships_in_the_wheel():
    """pyproject lists packages explicitly (conf/ and datasets/ are mapped into gepa_lab): a new
    package left out of the list would be missing from a non-editable install."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for top in ("gepa_lab", "evaluators")
               for p in (ROOT / top).rglob("__init__.py") if "conf" not in p.parts}
    assert on_disk - listed == set()
