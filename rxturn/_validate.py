"""The checks every constructor makes on the numbers it is given, written once.

Users build policies, clients, transports and engines from Python, where nothing enforces the
annotations (msgspec Structs built in Python are not type-checked either), so each of them
checks its numbers at construction and raises :class:`~rxturn.errors.ConfigError` with a
message naming the argument. The *checks* live here; each caller keeps its own message, which
names where the value came from.

``bool`` is never a number here, although Python treats ``True`` as ``1``: a flag passed where a
count belongs is a mistake worth reporting.

Python's ints have no bound, and ``float()``, ``math.isfinite`` and ``math.isnan`` raise
``OverflowError`` on one past the largest float (``10**400``). The checks here never do: such an
int is positive but not :func:`finite`, :func:`seconds_problem` names it, and :func:`as_float`
makes it an infinity where an infinity is a valid setting (no bound).
"""

from __future__ import annotations

import math
import re
from typing import TypeGuard, cast

import msgspec

from ._arguments import shown

__all__ = [
    "CONTROL_IN_NAME",
    "HOST_RULE",
    "MAX_SECONDS",
    "MAX_TOKENS",
    "NON_FINITE",
    "NOT_UTF8",
    "PARTICIPANT_NAME",
    "as_float",
    "finite",
    "has_control",
    "holds_non_finite",
    "is_host",
    "is_int",
    "is_number",
    "is_utf8",
    "json_problem",
    "max_tokens_problem",
    "mend_text",
    "object_schema_problem",
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
    if finite and not _finite(value):
        return False
    return value >= 0 if allow_zero else value > 0


def finite(value: object) -> TypeGuard[int | float]:
    """A number that is a finite float or an int that becomes one.

    ``math.isfinite`` (like ``isnan``, ``isinf`` and ``float``) raises ``OverflowError`` on an
    int past the largest float, and ints have no bound (neither have JSON's): such an int is
    not finite here.

    Examples:
        >>> finite(1.5), finite(float("inf")), finite(10**400), finite(True)
        (True, False, False, False)
    """
    return is_number(value) and _finite(value)


def as_float(value: float) -> float:
    """``float(value)``, an int past the largest float becoming the infinity of its sign.

    Examples:
        >>> as_float(3), as_float(10**400), as_float(-(10**400))
        (3.0, inf, -inf)
    """
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past the largest float
        return False


#: The largest ``max_tokens`` a request sends: what a signed 32-bit integer holds, beyond any
#: model's reply and any provider's field; a larger number is a typo (a provider would refuse
#: every request of it, after it was sent).
MAX_TOKENS = 2**31 - 1


def max_tokens_problem(value: object) -> str | None:
    """Why ``value`` is not a usable ``max_tokens`` (a reply's token cap), or ``None`` if it is.

    The phrase completes a sentence that starts with the argument's name.

    Examples:
        >>> max_tokens_problem(1024) is None
        True
        >>> max_tokens_problem(0), max_tokens_problem(2**31)
        ('must be a positive integer', 'must be at most 2147483647 (2**31 - 1)')
    """
    if not positive(value, integer=True):
        return "must be a positive integer"
    if cast("int", value) > MAX_TOKENS:
        return f"must be at most {MAX_TOKENS} (2**31 - 1)"
    return None


#: The longest wait :func:`seconds_problem` accepts. Every such value ends up as a timer on a
#: reactivex scheduler, and reactivex's virtual-time schedulers (``TestScheduler``) hold the due
#: instant as a ``datetime``, which ends in the year 9999: a wait of 10**12 s overflows there.
#: A wait of more than 31 years is no wait anyway; a timeout is disabled with ``None``.
MAX_SECONDS = 1e9


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
        >>> seconds_problem(1e12)
        'must be at most 1e+09 seconds (about 31 years), got 1000000000000.0'
    """
    if not is_number(value):
        return f"must be a number of seconds, got {shown(value)}"
    if isinstance(value, int) and not _finite(value):  # (no repr: it may be too long for one)
        return "must be finite, got an integer too large for a float"
    if math.isnan(value):
        return "must be a number of seconds, got nan"
    if math.isinf(value):
        return f"must be finite, got {value!r}"
    if not positive(value, allow_zero=allow_zero):
        return f"must be {'>= 0' if allow_zero else '> 0'} seconds, got {shown(value)}"
    if value > MAX_SECONDS:
        return f"must be at most {MAX_SECONDS:.0e} seconds (about 31 years), got {shown(value)}"
    return None


def json_problem(value: object) -> str | None:
    """Why ``value`` (a schema, say) cannot be sent as JSON, or ``None`` if it can.

    A dict that holds itself, or one nested past the interpreter's recursion limit, is not JSON
    either: its ``RecursionError`` is the answer here, not a crash later in a turn.

    Examples:
        >>> json_problem({"type": "object"}) is None
        True
        >>> loop = {}
        >>> loop["self"] = loop
        >>> json_problem(loop)
        'it holds itself (or nests deeper than JSON can be sent)'
        >>> json_problem({"x": object()})
        'Encoding objects of type object is unsupported'
        >>> json_problem({"minimum": float("nan")})
        'a number is NaN or infinite, which JSON has no spelling for'
        >>> json_problem({"description": "\\ud800"})[:30]
        'a string holds a lone surrogat'
    """
    try:
        text = msgspec.json.encode(value)
    except RecursionError:
        return "it holds itself (or nests deeper than JSON can be sent)"
    except UnicodeEncodeError:  # (a ValueError: before the clause below)
        return NOT_UTF8
    except (TypeError, ValueError, msgspec.EncodeError, OverflowError) as exc:
        return str(exc)  # (ValueError: an int past the 4300 digits Python will write)
    if b"null" in text and holds_non_finite(value):  # msgspec writes NaN as null
        return NON_FINITE
    return None


def object_schema_problem(schema: object) -> str | None:
    """Why ``schema`` is not a JSON Schema of an object (what the providers take for a tool's
    input and a structured reply), or ``None`` if it is: a dict whose ``type``, if given, is
    ``"object"``.

    Examples:
        >>> object_schema_problem({"type": "object", "properties": {}}) is None
        True
        >>> object_schema_problem({"type": "string"})
        "must be a JSON Schema object schema (a dict with type 'object'), got type 'string'"
    """
    if not isinstance(schema, dict):
        return "must be a JSON Schema object schema (a dict with type 'object')"
    kind = cast("dict[str, object]", schema).get("type", "object")
    if kind != "object":
        return (
            "must be a JSON Schema object schema (a dict with type 'object'), got type "
            f"{shown(kind, 100)}"
        )
    return None


def has_control(text: str) -> bool:
    r"""Whether ``text`` holds a control character (C0, DEL or C1): never part of a name (a
    model's), which error lines and notices show as it is (an escape sequence reaching the
    terminal, a newline splitting the line).

    Examples:
        >>> has_control("claude-sonnet-4-5"), has_control("m\nx"), has_control("m\x9b")
        (False, True, True)
    """
    return any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text)


#: Why an OpenAI message's ``name`` is refused (after where it was given) rather than dropped:
#: the model reads it, and a Message has no place for it.
PARTICIPANT_NAME = (
    "'name' (OpenAI's name of the participant, which the model reads) has no place in a "
    "Message: put it in the text, or leave it out"
)


#: Why a model name with a control character is refused (after the name of where it was given).
CONTROL_IN_NAME = (
    "holds a control character (a newline, an escape): no model name has one, and error lines "
    "would show it raw"
)

#: Why a value holding NaN or an infinity is not JSON (msgspec would write ``null``).
NON_FINITE = "a number is NaN or infinite, which JSON has no spelling for"

#: Why a str holding a lone surrogate is not JSON text (see :func:`is_utf8`).
NOT_UTF8 = "a string holds a lone surrogate (text that is not valid UTF-8), which JSON cannot carry"


def holds_non_finite(value: object) -> bool:
    """Whether ``value`` holds a float that is NaN or infinite, at any depth (``False`` for a
    value msgspec cannot turn into builtins: its encoding fails on its own).

    Examples:
        >>> holds_non_finite({"a": [1.0, {"b": float("-inf")}]}), holds_non_finite({"a": None})
        (True, False)
    """
    try:
        builtins = msgspec.to_builtins(value)
    except (TypeError, msgspec.EncodeError, OverflowError, RecursionError):
        return False
    stack = [builtins]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(cast("dict[object, object]", item).values())
        elif isinstance(item, list):
            stack.extend(cast("list[object]", item))
    return False


#: What :func:`is_host` accepts, for the error lines of the callers that check it.
HOST_RULE = "an address such as 127.0.0.1 or ::1 (an IPv6 address without brackets)"


def is_host(value: object) -> bool:
    """Whether ``value`` can be a server's bind address that prints as a URL: a non-empty
    ``str`` without spaces, control characters or brackets (an empty one binds every interface
    and prints ``http://:PORT``; a control character reached the error line raw; ``[::1]`` is
    the URL's spelling of ``::1``, which no resolver takes). Whether it resolves to an address
    of this machine only binding tells."""
    return (
        isinstance(value, str)
        and bool(value)
        and not any(c.isspace() or ord(c) < 32 or 127 <= ord(c) < 160 or c in "[]" for c in value)
    )


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be sent: bytes that are not UTF-8 reach Python as lone surrogates
    (in arguments, and on stdin under ``surrogateescape``), which no JSON body can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")


def mend_text(value: object) -> object:
    """``value`` (JSON-shaped builtins) with every lone surrogate in its strings replaced by
    U+FFFD, for records that must be written although what they hold could not be sent."""
    if isinstance(value, str):
        return value if is_utf8(value) else _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        items = cast("dict[object, object]", value).items()
        return {mend_text(key): mend_text(item) for key, item in items}
    if isinstance(value, list | tuple):
        return [mend_text(item) for item in cast("list[object]", value)]
    return value
