"""``assert_no_secret``: prove that a secret is unreachable from an object graph.

An error object is more than its message: ``args``, attributes (recursively), ``__cause__`` /
``__context__`` chains, ``__notes__``, third-party exceptions chained behind it (aiohttp's
``ClientResponseError`` keeps the request headers), fields copied from a provider. The walk below
visits all of that, and containers, ``__dict__`` and ``__slots__`` of any object (exported spans
included), and fails naming the path where the secret sits — without printing the secret.

What it does not follow, on purpose: tracebacks and frames (their locals reach everything alive,
the client holding its key included), modules, classes, functions and code objects.
"""

from __future__ import annotations

import base64
import types
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, cast
from urllib.parse import quote, unquote, unquote_to_bytes

from .._arguments import described, shown, type_named
from .._validate import is_int
from ..errors import ConfigError

__all__ = ["assert_no_secret", "find_secret"]

_SKIP = (
    types.ModuleType,
    type,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
    types.TracebackType,
)
_ATOMS = (int, float, complex, bool, type(None), type(Ellipsis))
_EXCEPTION_LINKS = ("__cause__", "__context__")
#: base64 characters a form must have to be looked for (fewer would match unrelated text)
_MIN_BASE64 = 8
_URLSAFE = str.maketrans("+/", "-_")


def find_secret(
    obj: object,
    secret: str,
    *,
    name: str = "obj",
    max_depth: int = 64,
    max_objects: int = 200_000,
) -> list[str]:
    """The paths (``obj.__cause__.request_info.headers['Authorization']``) where ``secret``
    shows up in ``obj``'s graph: in a string or bytes value, in the ``str`` / ``repr`` of an
    exception or of an object that is not a plain container. It is found as is,
    percent-encoded (any characters of it, in either case of hex digits), and in base64,
    standard or URL-safe, anywhere inside a longer base64 text (an HTTP Basic
    ``Authorization`` value encodes ``user:key``, which puts the key at any of the three
    byte alignments). Base64 that was cut into lines is not looked through.

    Every object is visited once, so an object reachable along several routes is reported along
    the first one walked (``args`` before attributes). The walk stops ``max_depth`` links deep and
    after ``max_objects`` objects, so it always ends, cycles included.

    Raises:
        ConfigError: ``secret`` is not a non-empty str (a ``ValueError``), ``name`` not a str,
            ``max_depth`` not a whole number ``>= 0`` or ``max_objects`` one ``>= 1``.
    """
    return _walk(obj, secret, name, max_depth, max_objects, "find_secret").found


def _walk(
    obj: object, secret: str, name: str, max_depth: int, max_objects: int, where: str
) -> _Walker:
    if not isinstance(secret, str) or not secret:  # pyright: ignore[reportUnnecessaryIsInstance]
        what = "''" if secret == "" else type(secret).__name__  # never the value: it is the secret
        raise ConfigError(f"{where}: the secret must be a non-empty string, got {what}")
    if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"{where}: name must be a str, got {described(name)}")
    for bound, value, least in (("max_depth", max_depth, 0), ("max_objects", max_objects, 1)):
        if not is_int(value) or value < least:
            raise ConfigError(
                f"{where}: {bound} must be a whole number >= {least}, got {shown(value, 100)}"
            )
    walker = _Walker(secret, max_depth, max_objects)
    walker.walk(obj, name, 0)
    return walker


def assert_no_secret(
    obj: object, secret: str, *, name: str = "obj", max_depth: int = 64, max_objects: int = 200_000
) -> None:
    """Fail (``AssertionError``) if ``secret`` is reachable from ``obj``; the message names each
    path where it is (at most ten) and never contains the secret itself. A walk cut short (the
    graph deeper than ``max_depth`` links, or more than ``max_objects`` objects) proves nothing
    and fails too, saying where it stopped: raise the bound, or assert on a smaller part.

    Raises:
        AssertionError: the secret is reachable, or the walk was cut short.
        ConfigError: an argument :func:`find_secret` refuses.

    Examples:
        >>> assert_no_secret(ValueError("fine"), "sk-secret-1234")
        >>> try:
        ...     assert_no_secret({"headers": {"x-api-key": "sk-secret-1234"}}, "sk-secret-1234")
        ... except AssertionError as exc:
        ...     print(exc)
        the secret is reachable from obj at: obj['headers']['x-api-key']
    """
    walker = _walk(obj, secret, name, max_depth, max_objects, "assert_no_secret")
    found = walker.found
    if found:
        more = f" (and {len(found) - 10} more)" if len(found) > 10 else ""
        raise AssertionError(
            f"the secret is reachable from {name} at: {', '.join(found[:10])}{more}"
        )
    if walker.cut is not None:
        raise AssertionError(
            f"cannot tell whether the secret is reachable from {name}: the {walker.cut}"
        )


def _forms(secret: str) -> set[str]:
    """The texts that show ``secret``: itself, percent-encoded, and the base64 characters that
    encode only its bytes, at each byte alignment, standard and URL-safe.

    Base64 turns each 3 bytes into 4 characters, so inside a longer text the secret's bytes
    start at offset 0, 1 or 2 of a group. For each, the groups holding the secret's bytes and
    nothing else encode the same way whatever surrounds them: the group shared with what
    comes before, and the one shared with what follows, are left out.

    Examples:
        >>> import base64
        >>> basic = base64.b64encode(b"user:sk-secret-0123456789").decode()
        >>> any(form in basic for form in _forms("sk-secret-0123456789"))
        True
    """
    forms = {secret, quote(secret, safe="")}
    data = secret.encode("utf-8", "surrogatepass")
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + data).decode("ascii")
        core = encoded[4 if shift else 0 : 4 * ((shift + len(data)) // 3)]
        if len(core) >= _MIN_BASE64:
            forms.add(core)
            forms.add(core.translate(_URLSAFE))
    return forms


class _Walker:
    __slots__ = (
        "budget",
        "byte_forms",
        "cut",
        "forms",
        "found",
        "keep",
        "max_depth",
        "max_objects",
        "seen",
    )

    def __init__(self, secret: str, max_depth: int, max_objects: int) -> None:
        self.forms = _forms(secret)
        self.byte_forms = [form.encode("utf-8", "surrogatepass") for form in self.forms]
        self.found: list[str] = []
        self.seen: set[int] = set()
        self.keep: list[object] = []  # keeps visited objects alive so that ids stay unique
        self.max_depth = max_depth
        self.max_objects = max_objects
        self.budget = max_objects
        #: where the walk first left something unvisited (``None``: it saw everything)
        self.cut: str | None = None

    def holds(self, text: str) -> bool:
        if any(form in text for form in self.forms):
            return True
        if "%" not in text:
            return False
        decoded = unquote(text, errors="surrogateescape")  # any escape, either case
        return any(form in decoded for form in self.forms)

    def holds_bytes(self, data: bytes) -> bool:
        if any(form in data for form in self.byte_forms):
            return True
        if b"%" not in data:
            return False
        decoded = unquote_to_bytes(data)  # any escape, either case
        return any(form in decoded for form in self.byte_forms)

    def label(self, key: object) -> str:
        """A mapping key for a path: its repr, the secret masked, cut short."""
        try:
            text = repr(key)
        except Exception:
            text = f"<{type(key).__name__}>"
        for form in self.forms:
            text = text.replace(form, "<SECRET>")
        if self.holds(text):  # in a form no replacement masks (percent escapes of its own)
            text = f"<{type_named(key)} holding the secret>"
        return text if len(text) <= 60 else text[:60] + "…"

    def walk(self, obj: Any, path: str, depth: int) -> None:
        if depth > self.max_depth:
            if self.cut is None and not isinstance(obj, (*_ATOMS, *_SKIP)):
                self.cut = f"walk stopped {self.max_depth} links deep at {_short(path)}"
            return
        if isinstance(obj, str):
            if self.holds(obj):
                self.found.append(path)
            return
        if isinstance(obj, bytes | bytearray | memoryview):
            data = bytes(cast("bytes | bytearray | memoryview[int]", obj))
            if self.holds_bytes(data):
                self.found.append(path)
            return
        if isinstance(obj, (*_ATOMS, *_SKIP)):
            return
        if id(obj) in self.seen:
            return
        if self.budget <= 0:
            if self.cut is None:
                self.cut = f"walk stopped after {self.max_objects} objects, at {_short(path)}"
            return
        self.seen.add(id(obj))
        self.keep.append(obj)
        self.budget -= 1
        if isinstance(obj, BaseException):
            self._exception(obj, path, depth)
        elif isinstance(obj, Mapping):
            mapping = cast("Mapping[Any, Any]", obj)
            for key, value in _items(mapping):
                label = self.label(key)
                self.walk(key, f"{path}.<key {label}>", depth + 1)
                self.walk(value, f"{path}[{label}]", depth + 1)
        elif isinstance(obj, list | tuple | set | frozenset):
            items = cast("list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any]", obj)
            for index, value in enumerate(items):
                self.walk(value, f"{path}[{index}]", depth + 1)
        elif isinstance(obj, Sequence | AbstractSet):
            # other containers (a deque, the SDK's BoundedList of span events): their items
            # may sit where no attribute leads (a deque has no __dict__), so walk them
            for index, value in enumerate(_elements(cast("Iterable[Any]", obj))):
                self.walk(value, f"{path}[{index}]", depth + 1)
        else:
            self._text(obj, path, "repr", repr)
        self._fields(obj, path, depth)

    def _exception(self, exc: BaseException, path: str, depth: int) -> None:
        self._text(exc, path, "str", str)
        self._text(exc, path, "repr", repr)
        for index, arg in enumerate(exc.args):
            self.walk(arg, f"{path}.args[{index}]", depth + 1)
        notes: Any = getattr(exc, "__notes__", None)
        if notes is not None:
            self.walk(notes, f"{path}.__notes__", depth + 1)
        for link in _EXCEPTION_LINKS:
            self.walk(getattr(exc, link), f"{path}.{link}", depth + 1)
        if isinstance(exc, BaseExceptionGroup):
            group = cast("BaseExceptionGroup[BaseException]", exc)
            for index, inner in enumerate(group.exceptions):
                self.walk(inner, f"{path}.exceptions[{index}]", depth + 1)

    def _text(self, obj: object, path: str, how: str, render: Any) -> None:
        try:
            text = render(obj)
        except Exception:  # a broken repr hides nothing from the attribute walk
            return
        if isinstance(text, str) and self.holds(text):
            self.found.append(f"{how}({path})")

    def _fields(self, obj: Any, path: str, depth: int) -> None:
        for attr, value in _attributes(obj):
            self.walk(value, f"{path}.{attr}", depth + 1)


def _short(path: str) -> str:
    return path if len(path) <= 200 else path[:200] + "…"


def _elements(container: Iterable[Any]) -> list[Any]:
    try:
        return list(container)
    except Exception:  # a container that cannot list itself: nothing more to see
        return []


def _items(mapping: Mapping[Any, Any]) -> Iterator[tuple[Any, Any]]:
    try:
        yield from list(mapping.items())
    except Exception:  # a mapping that cannot list itself: nothing more to see
        return


def _attributes(obj: object) -> Iterator[tuple[str, Any]]:
    """``__dict__`` entries, then every ``__slots__`` name along the MRO that is set."""
    names: dict[str, None] = {}
    try:
        own: Any = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        own = None
    if isinstance(own, dict):
        for key in cast("dict[Any, Any]", own):
            if isinstance(key, str):
                names[key] = None
    for klass in type(obj).__mro__:
        slots: Any = klass.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if not isinstance(slot, str) or slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):  # stored name-mangled
                slot = f"_{klass.__name__.lstrip('_')}{slot}"
            names[slot] = None
        fields: Any = klass.__dict__.get("__struct_fields__", ())  # msgspec Structs
        if isinstance(fields, tuple):
            for field in cast("tuple[object, ...]", fields):
                if isinstance(field, str):
                    names[field] = None
    for attr in names:
        try:
            value = object.__getattribute__(obj, attr)
        except Exception:  # an unset slot, a property that raises
            continue
        yield attr, value
