"""The checks every constructor makes on the numbers it is given, written once.

Users build policies, clients, transports and engines from Python, where nothing enforces the
annotations (msgspec Structs built in Python are not type-checked either), so each of them
checks its numbers at construction and raises :class:`~rxturn.errors.ConfigError` with a
message naming the argument. The *checks* live here; each caller keeps its own message, which
names where the value came from.

``bool`` is never a number here, although Python treats ``True`` as ``1``: a flag passed where a
count belongs is a mistake worth reporting.
"""

from __future__ import annotations

import math
from typing import TypeGuard

__all__ = [
    "is_int",
    "is_number",
    "positive",
    "seconds_problem",
]


def is_number(value: object) -> TypeGuard[int | float]:
    """An ``int`` or a ``float`` (NaN and infinities included), never a ``bool``."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_int(value: object) -> TypeGuard[int]:
    """An ``int``, never a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def positive(
    value: object, *, integer: bool = False, allow_zero: bool = False, finite: bool = False
) -> bool:
    """Whether ``value`` is a number ``> 0`` (``>= 0`` with ``allow_zero``).

    NaN never passes. Infinity passes unless ``finite``; ``integer`` asks for an ``int``.

    Examples:
        >>> positive(0.5), positive(0), positive(0, allow_zero=True), positive(float("nan"))
        (True, False, True, False)
        >>> positive(True), positive(2.0, integer=True), positive(float("inf"), finite=True)
        (False, False, False)
    """
    if not is_number(value) or (integer and not isinstance(value, int)):
        return False
    if finite and not math.isfinite(value):
        return False
    return value >= 0 if allow_zero else value > 0


def seconds_problem(value: object, *, allow_zero: bool = False) -> str | None:
    """Why ``value`` is not a usable finite number of seconds, or ``None`` if it is.

    The phrase completes a sentence that starts with the argument's name, e.g.
    ``f"TimeoutPolicy.total {problem}"``.

    Examples:
        >>> seconds_problem(1.5) is None
        True
        >>> seconds_problem(0)
        'must be > 0 seconds, got 0'
        >>> seconds_problem(float("inf"))
        'must be finite, got inf'
    """
    if not is_number(value):
        return f"must be a number of seconds, got {value!r}"
    if math.isnan(value):
        return "must be a number of seconds, got nan"
    if math.isinf(value):
        return f"must be finite, got {value!r}"
    if not positive(value, allow_zero=allow_zero):
        return f"must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}"
    return None
