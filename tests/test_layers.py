"""Every import points down the pipeline (docs/design.md): no layer imports one above it."""

from __future__ import annotations

import ast
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
    imported = _imports(PACKAGE / "engine" / "_ladder.py")
    assert any(_within(module, "rxturn.operators") for module in imported)
