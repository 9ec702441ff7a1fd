"""Values an error message cannot quote as they are, shared by the tests that feed them to
public entry points.

An int of more digits than Python prints (4300 by default) makes ``repr`` raise ValueError, and
so does a list holding one; a caller's object may have a ``__repr__`` that raises; a string of a
million characters quoted whole makes a megabyte "one-line" message. Each is to be refused by a
one-line error of its own type, never by the error raised while that message was written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

__all__ = [
    "UNQUOTABLE",
    "UNQUOTABLE_IDS",
    "UnprintableRepr",
    "assert_refused_in_one_line",
    "one_line_refusals",
]


class UnprintableRepr:
    """An object whose ``repr`` raises, as a caller's broken class may."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


UNQUOTABLE: list[object] = [
    10**5000,
    -(10**5000),
    [10**5000],
    UnprintableRepr(),
    "x" * 10**6,
]
UNQUOTABLE_IDS = ["giant", "-giant", "list", "broken-repr", "huge-text"]

#: the longest message these tests take for one line about one value
MESSAGE_MAX = 400


def assert_refused_in_one_line(
    call: Callable[[Any], object],
    bad: object,
    error: type[Exception],
    *,
    takes: tuple[type, ...] = (),
) -> None:
    """``call(bad)`` raises ``error`` with a one-line message under :data:`MESSAGE_MAX`
    characters. ``takes``: the types of ``bad`` the parameter may accept (a long string is
    still a name, a huge int still a count), so it may also pass. A failure shows the message's
    start only."""
    message: str | None = None
    try:
        call(bad)
    except error as caught:
        message = str(caught)  # (checked outside: the traceback would print it whole)
    if message is None:
        assert type(bad) in takes, f"the {type(bad).__name__} was accepted"
        return
    one_line, size = "\n" not in message, len(message)
    assert one_line and size < MESSAGE_MAX, f"{size} characters: {message[:MESSAGE_MAX]!r}"


#: a case of :func:`one_line_refusals`: its id, the call given the value, the types it takes
Case = tuple[str, Callable[[Any], object], tuple[type, ...]]


def one_line_refusals(cases: Sequence[Case], error: type[Exception]) -> Callable[..., None]:
    """A test of every case against every :data:`UNQUOTABLE` value (assign it to a ``test_``
    name): each is refused by :func:`assert_refused_in_one_line`. Before, such a value raised
    ValueError ("Exceeds the limit (4300 digits) for integer string conversion") or the
    object's own error while the message was written, or made a message of a million
    characters."""

    @pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
    @pytest.mark.parametrize(("call", "takes"), [c[1:] for c in cases], ids=[c[0] for c in cases])
    def test(call: Callable[[Any], object], takes: tuple[type, ...], bad: object) -> None:
        assert_refused_in_one_line(call, bad, error, takes=takes)

    return test
