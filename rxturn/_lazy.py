"""Package exports spelled once, resolved lazily.

A package ``__init__`` imports its public names in an ``if TYPE_CHECKING:`` block, in the explicit
re-export form ``from .x import A as A`` that type checkers read as the public surface. At run
time :class:`LazyExports` reads that same block (once, when the first public name is used) and
resolves each name from its module on first access; ``__all__`` is built from it on first use
(``from package import *``, ``dir(package)``). So every public name is written once, and importing
the package imports none of the modules behind it.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["LazyExports"]


class LazyExports:
    """The lazy exports of one package; its ``__getattr__`` is :meth:`resolve`, its ``__dir__``
    :meth:`names`.

    Args:
        namespace: the package's ``globals()`` (resolved names are cached in it).
        eager: public names the package binds itself at import (e.g. ``__version__``).
    """

    __slots__ = ("_eager", "_namespace", "_table")

    def __init__(self, namespace: dict[str, Any], *, eager: Iterable[str] = ()) -> None:
        self._namespace = namespace
        self._eager = tuple(eager)
        self._table: dict[str, str] | None = None

    def table(self) -> dict[str, str]:
        """Public name -> defining module, read from the package's ``if TYPE_CHECKING`` block."""
        if self._table is None:
            package: str = self._namespace["__name__"]
            source = Path(self._namespace["__file__"]).read_text(encoding="utf-8")
            table: dict[str, str] = {}
            for node in ast.parse(source).body:
                if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)):
                    continue
                if node.test.id != "TYPE_CHECKING":
                    continue
                for stmt in node.body:
                    if isinstance(stmt, ast.ImportFrom):
                        relative = "." * stmt.level + (stmt.module or "")
                        module = importlib.util.resolve_name(relative, package)
                        table.update((alias.name, module) for alias in stmt.names)
            self._table = table
        return self._table

    def resolve(self, name: str) -> Any:
        """The package's ``__getattr__``: a public name from its module, or ``__all__``."""
        if name == "__all__":
            names = sorted([*self.table(), *self._eager])
            self._namespace["__all__"] = names
            return names
        module = self.table().get(name)
        if module is None:
            raise AttributeError(
                f"module {self._namespace['__name__']!r} has no attribute {name!r}"
            )
        value = getattr(importlib.import_module(module), name)
        self._namespace[name] = value
        return value

    def names(self) -> list[str]:
        """The package's ``__dir__``: its ``__all__``."""
        names: list[str] = self.resolve("__all__")
        return names


class _CallableModule(types.ModuleType):
    """A module that is also its namesake function (see :func:`callable_module`)."""

    __function__: Callable[..., object]

    def __call__(self, *args: object, **kwargs: object) -> object:
        return self.__function__(*args, **kwargs)


def callable_module(name: str, function: Callable[..., object]) -> None:
    """Make the module ``name`` callable as ``function``.

    ``rxturn.fold`` and ``rxturn.replay`` are modules and, in the package's table, functions of
    the same name. Once such a module has been imported (by rxturn itself or by ``from
    rxturn.fold import …``), the import system binds the *module* on the package, and ``from
    rxturn import fold`` finds it instead of the function. Calling the module calls the
    function, so the public name works either way, and the module keeps its attributes.
    """
    module = sys.modules[name]
    module.__class__ = _CallableModule
    module.__function__ = function  # pyright: ignore[reportAttributeAccessIssue]
