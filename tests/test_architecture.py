"""The package's shape: one direction of use, no import cycle, the engine imported only by the
entry points, leaf values that import nothing else of gepa_lab."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gepa_lab"
# The command line, the DSPy teleprompter, the study report.
ENTRY_POINTS = {"gepa_lab", "gepa_lab.cli", "gepa_lab.dspy", "gepa_lab.report"}
ENGINE = "gepa_lab.search.engine"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "conf" not in p.parts and "bundled" not in p.parts}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(module: str) -> set[str]:
    """gepa_lab modules `module` imports at run time (anywhere in the file; TYPE_CHECKING blocks,
    which never execute, excluded)."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("gepa_lab"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gepa_lab"):
            for alias in node.names:  # `from gepa_lab.x import y` may name the submodule x.y
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in MODULES else node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in MODULES and m != module}


GRAPH = {m: imports_of(m) for m in MODULES}


def test_the_graph_sees_the_package():
    assert {"gepa_lab.core.contracts", "gepa_lab.search.engine", "gepa_lab.runs.record", "gepa_lab.cli"} <= set(MODULES)
    assert ENGINE in GRAPH["gepa_lab"] and ENGINE in GRAPH["gepa_lab.cli"]


def test_only_the_entry_points_import_the_engine():
    importers = {m for m, deps in GRAPH.items() if ENGINE in deps}
    assert importers <= ENTRY_POINTS, importers - ENTRY_POINTS


def _cycle() -> list[str] | None:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for dep in sorted(GRAPH[module]):
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state and (found := visit(module)):
            return found
    return None


def test_no_import_cycle():
    assert _cycle() is None, " -> ".join(_cycle() or [])


def test_nothing_below_the_entry_points_imports_the_package_root():
    # `gepa_lab/__init__.py` re-exports the library surface; importing it from inside would
    # make every module depend on every other.
    offenders = {m for m, deps in GRAPH.items() if "gepa_lab" in deps and m not in ("gepa_lab",)}
    assert offenders == set()


# Every module of gepa_lab, by layer, and what it may import besides itself (docs/architecture.md).
LAYERS: dict[str, tuple[str, ...]] = {
    "gepa_lab.core": (),
    "gepa_lab.runs": ("gepa_lab.core",),
    "gepa_lab.tracking": ("gepa_lab.core", "gepa_lab.runs"),
    "gepa_lab.lm": ("gepa_lab.core",),
    "gepa_lab.data": ("gepa_lab.core",),
    "gepa_lab.summary": ("gepa_lab.core",),
    "gepa_lab.search": ("gepa_lab.core", "gepa_lab.runs", "gepa_lab.tracking"),
    "gepa_lab.comparison": (),
    "gepa_lab.study": ("gepa_lab.core", "gepa_lab.runs", "gepa_lab.search", "gepa_lab.comparison"),
    "gepa_lab.revisions": ("gepa_lab.core", "gepa_lab.runs", "gepa_lab.search", "gepa_lab.tracking"),
    "gepa_lab.config": ("gepa_lab.core", "gepa_lab.data", "gepa_lab.lm", "gepa_lab.tracking",
                        "gepa_lab.search.policies"),
}
ANYTHING = {*ENTRY_POINTS, "gepa_lab.__main__", "gepa_lab.note"}  # note: a command-line tool over report


def _layer_of(module: str) -> str | None:
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), None)


def test_every_module_has_a_layer():
    assert {m for m in MODULES if m not in ANYTHING and _layer_of(m) is None} == set()


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_what_is_below_it(layer):
    allowed = (layer, *LAYERS[layer])
    for module, deps in GRAPH.items():
        if _layer_of(module) == layer:
            bad = {d for d in deps if not any(d == a or d.startswith(a + ".") for a in allowed)}
            assert not bad, f"{module} imports {sorted(bad)}"


def imported(path: Path) -> list[str]:
    """Every module name a file imports (`import x.y`, `from x.y import z`: x.y), anywhere in it."""
    return [name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module or ""] if isinstance(node, ast.ImportFrom) else [])]


def test_evaluators_use_only_the_public_names():
    """Plugins import `gepa_lab` (the library surface) and `gepa_lab.lm` (the LM toolkit), nothing deeper."""
    evaluators = PACKAGE.parent / "evaluators"
    bad = [f"{path.relative_to(evaluators)}: {n}" for path in evaluators.rglob("*.py") for n in imported(path)
           if n.startswith("gepa_lab") and n not in ("gepa_lab", "gepa_lab.lm")]
    assert bad == []


def test_the_library_imports_no_plugin():
    """`evaluators/` plugs into the library, never the reverse: plugins are built by `_target_`."""
    assert [f"{m}: {n}" for m, path in MODULES.items() for n in imported(path) if n.split(".")[0] == "evaluators"] == []


def test_every_package_ships_in_the_wheel():
    """pyproject lists packages explicitly (conf/ and datasets/ are mapped into gepa_lab): a new
    package left out of the list would be missing from a non-editable install."""
    import tomllib

    root = PACKAGE.parent
    listed = set(tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(root).parts) for top in ("gepa_lab", "evaluators")
               for p in (root / top).rglob("__init__.py") if "conf" not in p.parts}
    assert on_disk - listed == set()
