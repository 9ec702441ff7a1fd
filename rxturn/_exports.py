"""Lazy package exports (PEP 562): a public name's module is imported when the name is first used.

A package lists its public names twice, both plain: an ``if TYPE_CHECKING:`` block of
``from .x import A as A`` imports, which type checkers read, and a dict ``name -> module`` that
:func:`lazy_exports` turns into the package's ``__getattr__`` and ``__dir__``.
tests/test_public_api.py checks that the two lists, ``__all__`` and the modules agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

__all__ = ["lazy_exports"]


def lazy_exports(
    namespace: dict[str, object], homes: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is
    ``namespace``.

    ``homes`` maps each public name to its module, relative to the package (``".messages"``).
    The first access imports that module and caches the value in the package, so later accesses
    are plain attribute lookups. ``__dir__`` lists the lazy names too (for completion).
    """
    package = str(namespace["__name__"])

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
