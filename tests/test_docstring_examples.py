"""The ``Examples:`` of rxturn's docstrings run as written, so a reader can paste them.

Each module whose source holds a ``>>>`` example is imported and its examples run with the
standard library's ``doctest``, in this process (``# doctest: +SKIP`` marks the few that would
need a network, a provider or a Ray cluster).
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "rxturn"


def _modules_with_examples() -> list[str]:
    names: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_examples_are_found() -> None:
    modules = _modules_with_examples()
    assert "rxturn.engine.fanout._router" in modules
    assert len(modules) >= 20


def _params() -> list[object]:
    # rxturn.ray's example imports Ray itself: the Ray tests' side of the suite, marked slow
    return [
        pytest.param(name, marks=pytest.mark.slow) if name.startswith("rxturn.ray") else name
        for name in _modules_with_examples()
    ]


@pytest.mark.parametrize("name", _params())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"
