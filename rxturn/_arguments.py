"""Type checks for constructor arguments, written once.

Python enforces no annotation, so a public constructor given a wrong type would otherwise fail
later, deep inside, with an ``AttributeError`` or a ``TypeError`` about something the caller
never wrote. Each constructor calls these on its arguments instead, and a wrong type is a
:class:`~rxturn.errors.ConfigError` that names the argument (``where``) and says what it
expected and what it got. Numbers and their ranges are :mod:`rxturn._validate`'s.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar, cast

from .errors import ConfigError

__all__ = [
    "check_bool",
    "check_callable",
    "check_instance",
    "check_items",
    "counted",
    "described",
    "shown",
    "type_named",
]

_T = TypeVar("_T")

#: the most of a value's repr a message quotes by default: a caller's million-character string
#: quoted whole made a megabyte "one-line" message
SHOWN_MAX = 200


def shown(value: object, limit: int | None = SHOWN_MAX) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters (``None``: whole),
    never an error of its own.

    An error message quotes what it was given, and ``repr`` can fail: an int of more digits
    than the interpreter prints (``sys.get_int_max_str_digits()``, 4300 by default) raises
    ``ValueError``, and so does a container holding one; a caller's object may have a
    ``__repr__`` that raises. The message is then about the value's type. An int past 64 bits
    is told by its size (a line of hundreds of digits says nothing).

    Examples:
        >>> shown(3), shown("x" * 80, 10)[-5:], shown(10**400), shown([10**5000])
        ('3', 'xx...', 'an integer of about 401 digits', 'a list whose repr() fails')
    """
    text = _plain(value)
    if text is None:
        if type(value) is int:
            digits = math.floor(value.bit_length() * math.log10(2)) + 1
            return f"an integer of about {digits} digits"
        return f"a {type(value).__name__} whose repr() fails"
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."


def _plain(value: object) -> str | None:
    """``repr(value)``, or ``None`` for an int past 64 bits or a repr that fails."""
    if type(value) is int and value.bit_length() > 64:
        return None
    try:
        return repr(value)
    except Exception:
        return None


def described(value: object) -> str:
    """``value`` for an error message: its type, and a short repr (:func:`shown`).

    Examples:
        >>> described(3), described("x" * 80)[:22], described(-(10**5000))
        ('int 3', "str 'xxxxxxxxxxxxxxxxx", 'an integer of about 5001 digits')
    """
    text = shown(value, 60)
    return text if _plain(value) is None else f"{type(value).__name__} {text}"


def type_named(value: object) -> str:
    """``value``'s type name with its indefinite article, for an error message.

    Examples:
        >>> type_named(3), type_named("x"), type_named(object()), type_named(None)
        ('an int', 'a str', 'an object', 'a NoneType')
    """
    name = type(value).__name__
    vowel = name[:1].lower() in "aeio" or (name[:2].lower() == "un" and name[:3] != "uni")
    return f"{'an' if vowel else 'a'} {name}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun`` in agreement, for a message: ``1 row``, ``0 rows``, ``3 rows``
    (``plural``: the plural when it is not ``noun`` + ``s``).

    Examples:
        >>> counted(1, "row"), counted(0, "row"), counted(2, "byte"), counted(2, "kind")
        ('1 row', '0 rows', '2 bytes', '2 kinds')
    """
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


#: (class of a value, what it was checked against) pairs already accepted, bounded
_ACCEPTED: set[tuple[type, object]] = set()
_ACCEPTED_MAX = 1024


def check_instance(
    value: object,
    expected: type[_T] | tuple[type, ...],
    where: str,
    what: str,
    *,
    optional: bool = False,
) -> None:
    """``value`` is an instance of ``expected`` (or ``None`` when ``optional``); a class given
    where an instance belongs is named as such."""
    if optional and value is None:
        return
    key = (type(value), expected)
    if key in _ACCEPTED:  # a runtime Protocol's isinstance walks the class: once per class
        return
    if isinstance(value, expected) and not isinstance(value, type):
        if len(_ACCEPTED) < _ACCEPTED_MAX:
            _ACCEPTED.add(key)
        return
    got = f"the class {value.__name__} (pass an instance)" if isinstance(value, type) else None
    raise ConfigError(
        f"{where} must be {what}{' or None' if optional else ''}, got {got or described(value)}"
    )


def check_bool(value: object, where: str, *, optional: bool = False) -> None:
    """``value`` is ``True`` or ``False`` (or ``None`` when ``optional``)."""
    if isinstance(value, bool) or (optional and value is None):
        return
    raise ConfigError(
        f"{where} must be True or False{' or None' if optional else ''}, got {described(value)}"
    )


def check_callable(
    value: object, where: str, what: str, *, optional: bool = False, awaited: bool = False
) -> None:
    """``value`` is callable (or ``None`` when ``optional``), and a plain function unless
    ``awaited``: every callback but a tool is called synchronously, so an ``async def`` one
    would only make a coroutine that nobody awaits (Python's "never awaited" warning, and the
    callback silently never runs)."""
    if callable(value):
        if awaited or not _is_async(value):
            return
        raise ConfigError(
            f"{where} is called synchronously, never awaited: the async callable "
            f"{getattr(value, '__qualname__', type(value).__name__)} would never run (its "
            "coroutine is dropped); pass a plain def"
        )
    if optional and value is None:
        return
    raise ConfigError(
        f"{where} must be {what}{' or None' if optional else ''}, got {described(value)}"
    )


def _is_async(value: object) -> bool:
    """An ``async def`` function or async generator (a bound method or ``functools.partial``
    of one included), or an object whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(value) or inspect.isasyncgenfunction(value):
        return True
    call = getattr(type(value), "__call__", None)  # noqa: B004 - a callable object's method
    return inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)


def check_items(
    value: object, where: str, what: str, check: Callable[[object, str], None] | None = None
) -> tuple[object, ...]:
    """``value`` as a tuple of items: an iterable (never a string, bytes or a mapping, which
    iterate as something else) whose items each pass ``check(item, f"{where}[i]")``."""
    got: object = value
    kind = type(got)
    if kind is tuple:  # the usual case skips the ABC checks and the copy
        items = cast("tuple[object, ...]", value)
    elif kind is not list and (
        isinstance(got, str | bytes | Mapping) or not isinstance(got, Iterable)
    ):
        raise ConfigError(f"{where} must be an iterable of {what}, got {described(value)}")
    else:
        items = tuple(cast("Iterable[object]", value))
    if check is not None:
        for index, item in enumerate(items):
            check(item, f"{where}[{index}]")
    return items
