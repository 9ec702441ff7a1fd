"""Every import points down the pipeline (docs/design.md): no layer imports one above it."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import pytest

import rxturn

PACKAGE = Path(rxturn.__file__).parent

#: What each layer must never import (its modules, resolved from relative imports too).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "rxturn.wire": ("rxturn.operators", "rxturn.engine", "rxturn.clients", "rxturn.resilience"),
    "rxturn.fold": ("rxturn.operators", "rxturn.engine", "rxturn.clients"),
    "rxturn.resilience": ("rxturn.operators", "rxturn.engine", "rxturn.clients"),
    "rxturn.operators": ("rxturn.engine", "rxturn.clients"),
    "rxturn.clients": ("rxturn.operators", "rxturn.engine"),
    "rxturn.transport": ("rxturn.operators", "rxturn.engine", "rxturn.clients"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_no_layer_imports_one_above_it(layer: str) -> None:
    offences = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if not _within(module, layer):
            continue
        for imported in sorted(_imports(path)):
            if any(_within(imported, above) for above in FORBIDDEN[layer]):
                offences.append(f"{module} imports {imported}")
    assert offences == []


def test_the_resolver_sees_relative_imports() -> None:
    # the check itself: the handler's ladder (engine) does import the operators, relatively
    imported = _imports(PACKAGE / "engine" / "handler" / "_ladder.py")
    assert any(_within(module, "rxturn.operators") for module in imported)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _dependencies(path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The rxturn modules ``path`` imports, at run time or for type checking alike: ``from .x
    import y`` depends on ``x.y`` when that is a module, else on ``x`` (its ``__init__``)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if _within(alias.name, "rxturn"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            if _within(module, "rxturn"):
                for alias in node.names:
                    submodule = f"{module}.{alias.name}"
                    found.add(submodule if submodule in modules else module)
    found.discard(name)
    return found


def _cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _dependencies(path, modules) for name, path in modules.items()}


def test_no_import_cycles_not_even_type_only_ones() -> None:
    graph = _import_graph()
    cycles = _cycles(graph)
    detail = [" <-> ".join(cycle) for cycle in cycles]
    assert detail == [], "split data from transitions so imports point one way"


def test_the_cycle_check_sees_type_only_and_package_imports() -> None:
    # the check itself, on a graph it must flag: a type-only back edge, a cycle through an
    # __init__
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    graph = _import_graph()
    # a TYPE_CHECKING-only import is an edge (the cost module names genai-prices' types that way,
    # and the plan names the client's)
    assert "rxturn.clients._base" in graph["rxturn.engine.handler._plan"]
    # ``from .. import _constants`` is the submodule, not the package
    assert "rxturn._constants" in graph["rxturn.resilience.policies"]
    assert "rxturn" not in graph["rxturn.resilience.policies"]
