"""The public surface is typed: no ``Any`` in the signature of any public name.

"Public" is every name in the ``__all__`` of a public module (no ``_`` in its dotted path),
and the public methods and properties of the classes among them. The CLI is an application,
not an API, and is left out.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator

import rxturn

_ANY = re.compile(r"\bAny\b")


def _public_modules() -> Iterator[str]:
    yield "rxturn"
    for info in pkgutil.walk_packages(rxturn.__path__, "rxturn."):
        parts = info.name.split(".")[1:]
        if parts[0] != "cli" and not any(part.startswith("_") for part in parts):
            yield info.name


def _callables(obj: object) -> Iterator[tuple[str, Callable[..., object]]]:
    if inspect.isclass(obj):
        for name, member in vars(obj).items():
            if name.startswith("_") and name not in ("__init__", "__call__"):
                continue
            if isinstance(member, property) and member.fget is not None:
                yield name, member.fget
            elif inspect.isfunction(member) or isinstance(member, classmethod | staticmethod):
                yield name, getattr(obj, name)
    elif callable(obj):
        yield "", obj


def _signatures_with_any() -> list[str]:
    found: set[str] = set()
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for attr in getattr(module, "__all__", ()):
            obj = getattr(module, attr)
            if not getattr(obj, "__module__", "").startswith("rxturn"):
                continue
            for name, function in _callables(obj):
                try:
                    text = str(inspect.signature(function))
                except (TypeError, ValueError):
                    continue
                if _ANY.search(text):
                    found.add(f"{obj.__module__}.{attr}{'.' + name if name else ''}{text}")
    return sorted(found)


def test_no_public_signature_mentions_any() -> None:
    assert _signatures_with_any() == []


def test_the_check_sees_an_any() -> None:
    # the probe itself: a signature with Any is reported
    def probe(x: object) -> None: ...

    probe.__annotations__["x"] = "Any"
    assert _ANY.search(str(inspect.signature(probe)))
