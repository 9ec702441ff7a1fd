"""Old import paths of modules that moved when the package was grouped by layer.

``import rxturn.handler`` (and the rest below) keeps working: a finder on ``sys.meta_path``
answers those names with the module at its new home, the same module object, so
``rxturn.handler.StreamHandler is rxturn.engine.handler.StreamHandler``. New code imports the
new paths (or the names from :mod:`rxturn`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["MOVED"]

MOVED: dict[str, str] = {
    "rxturn._outcome": "rxturn.engine._outcome",
    "rxturn._partial_json": "rxturn.wire._partial_json",
    "rxturn._scheduling": "rxturn.operators._scheduling",
    "rxturn.operators._batches": "rxturn._batching",
    "rxturn.audit": "rxturn.engine.audit",
    "rxturn.backoff": "rxturn.resilience.backoff",
    "rxturn.cancel": "rxturn.resilience.cancel",
    "rxturn.context": "rxturn.engine.context",
    "rxturn.demo": "rxturn.cli._demo_story",
    "rxturn.fallback": "rxturn.resilience.fallback",
    "rxturn.handler": "rxturn.engine.handler",
    "rxturn.limiter": "rxturn.resilience.limiter",
    "rxturn.observers": "rxturn.engine.observers",
    "rxturn.policies": "rxturn.resilience.policies",
    "rxturn.tokens": "rxturn.engine.tokens",
    "rxturn.tools": "rxturn.engine.tools",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target
        self.own_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the alias's spec on the module; give it back its own, or
        # its relative imports would resolve against the old package.
        module.__spec__ = self.own_spec


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
