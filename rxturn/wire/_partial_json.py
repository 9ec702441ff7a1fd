"""Parse a prefix of a JSON document the way the official SDKs do (jiter ``partial_mode=True``).

Why this exists: a tool block still open when a reply stops at ``max_tokens`` is a truncated reply,
not a broken one. rxturn keeps the call with the input parsed as far as it goes, exactly as the
official SDK does (docs/behaviour.md §6), and the anthropic SDK does that with
``jiter.from_json(buf, partial_mode=True)``. jiter is a compiled test-only dependency here, so this
module re-implements its partial mode in pure Python. It runs once per still-open tool lane when a
message is built, never per event, so clarity beats speed.

Theory of operation (mirrors jiter's ``PythonParser`` over its byte ``Parser``):

- The input is UTF-8 encoded first, because jiter counts bytes: "are four bytes left for a
  ``\\uXXXX`` escape?" has a different answer for ``"\\u00é`` in bytes than in characters.
- Every failure is one of two kinds. *Soft* failures are what an unfinished document produces:
  end of input while reading a value, string, array or object, and a character that is neither
  ``,`` nor the closing bracket after an array item or object member. *Hard* failures are
  everything else (bad escape, bad number, a key that is not a string, ``:`` missing, a trailing
  comma, a control character in a string, nesting deeper than 200).
- An array or object that meets a soft failure while reading its items stops there and returns
  what it has: complete items only, so an unfinished string, number, literal or key is dropped.
  Its parent then carries on from the same position (which, for a soft failure, is the end of
  input or a character the parent will also stop at).
- A soft failure outside any container (``"abc``, ``tru``, ``1.``, empty input) is raised.
- After the top-level value, anything may follow: partial mode never checks for trailing data.
- Numbers follow the JSON grammar; ``NaN``, ``Infinity`` and ``-Infinity`` are accepted (jiter's
  default ``allow_inf_nan=True``). Integers become ``int`` (any size up to 4300 characters),
  anything with a fraction or exponent becomes ``float`` (correctly rounded, as jiter's).
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["parse_partial"]

# jiter's DEFAULT_RECURSION_LIMIT: the top-level value is depth 0; a value deeper than this fails.
_MAX_DEPTH: Final = 200
# jiter rejects integers longer than this many bytes (NumberOutOfRange), as CPython's int() does.
_MAX_NUMBER_LEN: Final = 4300

_WHITESPACE: Final = frozenset(b" \t\r\n")
_DIGITS: Final = re.compile(rb"[0-9]*")
# A run of string bytes that need no attention: not a quote, backslash or control character.
_PLAIN: Final = re.compile(rb'[^"\\\x00-\x1f]*')


def _run_end(pattern: re.Pattern[bytes], data: bytes, pos: int) -> int:
    """Where the run of ``pattern`` that starts at ``pos`` ends (both patterns match an empty
    run, so there always is one)."""
    match = pattern.match(data, pos)
    return pos if match is None else match.end()


_SIMPLE_ESCAPES: Final = {
    ord('"'): '"',
    ord("\\"): "\\",
    ord("/"): "/",
    ord("b"): "\b",
    ord("f"): "\f",
    ord("n"): "\n",
    ord("r"): "\r",
    ord("t"): "\t",
}
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")
_OPEN_ARRAY, _CLOSE_ARRAY = ord("["), ord("]")
_OPEN_OBJECT, _CLOSE_OBJECT = ord("{"), ord("}")
_COMMA, _COLON, _MINUS = ord(","), ord(":"), ord("-")


class _Soft(ValueError):
    """The document ends (or stops making sense) where a longer document would continue."""


class _Hard(ValueError):
    """The document is malformed: no continuation could make it valid."""


def parse_partial(text: str) -> Any:
    """Parse ``text`` as jiter ``from_json(text.encode(), partial_mode=True)`` would.

    Args:
        text: a complete JSON document, or a prefix of one.

    Returns:
        The parsed value, with unfinished containers closed and unfinished strings, numbers,
        literals and keys (with or without a colon) dropped.

    Raises:
        ValueError: the text is malformed, or is an unfinished scalar with no enclosing
            container (including empty or whitespace-only text); the message says what and at
            which character offset.

    Examples:
        >>> parse_partial('{"city": "Par')
        {}
        >>> parse_partial('{"n": 1, "tags": ["a", "b')
        {'n': 1, 'tags': ['a']}
    """
    data = text.encode("utf-8", "surrogatepass")
    parser = _Parser(data)
    try:
        return parser.value(parser.peek(), 0)
    except ValueError as exc:  # _Soft and _Hard alike, plus UnicodeDecodeError
        raise ValueError(f"{exc} at offset {parser.pos}") from None
    except RecursionError:  # the caller's stack was deep already: same verdict as _MAX_DEPTH
        raise ValueError(f"recursion limit exceeded at offset {parser.pos}") from None


class _Parser:
    __slots__ = ("data", "end", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.end = len(data)
        self.pos = 0

    # -- whitespace and dispatch -------------------------------------------------------------

    def skip_ws(self) -> int | None:
        """Advance over whitespace; the next byte, or ``None`` at the end of input."""
        data, pos, end = self.data, self.pos, self.end
        while pos < end and data[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos
        return data[pos] if pos < end else None

    def peek(self) -> int:
        byte = self.skip_ws()
        if byte is None:
            raise _Soft("EOF while parsing a value")
        return byte

    def value(self, first: int, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _Hard("recursion limit exceeded")
        if first == _QUOTE:
            return self.string()
        if first == _OPEN_ARRAY:
            return self.array(depth)
        if first == _OPEN_OBJECT:
            return self.object(depth)
        if first == ord("t"):
            self.ident(b"true")
            return True
        if first == ord("f"):
            self.ident(b"false")
            return False
        if first == ord("n"):
            self.ident(b"null")
            return None
        if first == ord("N"):
            self.ident(b"NaN")
            return float("nan")
        if first == _MINUS or first == ord("I") or 0x30 <= first <= 0x39:
            return self.number()
        raise _Hard("expected value")

    # -- containers --------------------------------------------------------------------------

    def array(self, depth: int) -> list[Any]:
        items: list[Any] = []
        self.pos += 1  # '['
        try:
            byte = self.skip_ws()
            if byte is None:
                raise _Soft("EOF while parsing a list")
            while byte != _CLOSE_ARRAY:
                items.append(self.value(byte, depth + 1))
                byte = self.next_item(_CLOSE_ARRAY, "a list", "expected `,` or `]`")
            self.pos += 1
            return items
        except _Soft:
            return items

    def object(self, depth: int) -> dict[str, Any]:
        members: dict[str, Any] = {}
        self.pos += 1  # '{'
        try:
            byte = self.skip_ws()
            if byte is None:
                raise _Soft("EOF while parsing an object")
            while byte != _CLOSE_OBJECT:
                if byte != _QUOTE:
                    raise _Hard("key must be a string")
                key = self.key()
                members[key] = self.value(self.peek(), depth + 1)
                byte = self.next_item(_CLOSE_OBJECT, "an object", "expected `,` or `}`")
            self.pos += 1
            return members
        except _Soft:
            return members

    def next_item(self, close: int, container: str, expected: str) -> int:
        """After a container's item: the first byte of the next item, or ``close`` (not
        consumed) when the container ends there."""
        byte = self.skip_ws()
        if byte is None:
            raise _Soft(f"EOF while parsing {container}")
        if byte == close:
            return byte
        if byte != _COMMA:
            raise _Soft(expected)
        self.pos += 1
        byte = self.skip_ws()
        if byte is None:
            raise _Soft("EOF while parsing a value")
        if byte == close:
            raise _Hard("trailing comma")
        return byte

    def key(self) -> str:
        key = self.string()
        byte = self.skip_ws()
        if byte is None:
            raise _Soft("EOF while parsing an object")
        if byte != _COLON:
            raise _Hard("expected `:`")
        self.pos += 1
        return key

    # -- scalars -----------------------------------------------------------------------------

    def ident(self, word: bytes) -> None:
        """Consume ``word`` (whose first byte is already known to match)."""
        data, pos = self.data, self.pos
        if data[pos : pos + len(word)] == word:
            self.pos = pos + len(word)
            return
        for expected in word[1:]:
            pos += 1
            if pos >= self.end:
                break
            if data[pos] != expected:
                self.pos = pos
                raise _Hard("expected ident")
        self.pos = self.end
        raise _Soft("EOF while parsing a value")

    def string(self) -> str:
        data, end = self.data, self.end
        pos = self.pos + 1  # opening quote
        pieces: list[str] = []
        while True:
            stop = _run_end(_PLAIN, data, pos)
            pieces.append(data[pos:stop].decode("utf-8"))
            pos = stop
            if pos >= end:
                self.pos = end
                raise _Soft("EOF while parsing a string")
            byte = data[pos]
            if byte == _QUOTE:
                self.pos = pos + 1
                return "".join(pieces)
            if byte != _BACKSLASH:
                self.pos = pos
                raise _Hard("control character found while parsing a string")
            pos += 1
            if pos >= end:
                self.pos = end
                raise _Soft("EOF while parsing a string")
            escape = data[pos]
            simple = _SIMPLE_ESCAPES.get(escape)
            if simple is not None:
                pieces.append(simple)
                pos += 1
            elif escape == ord("u"):
                char, pos = self.unicode_escape(pos)
                pieces.append(char)
            else:
                self.pos = pos
                raise _Hard("invalid escape")

    def unicode_escape(self, u_pos: int) -> tuple[str, int]:
        """Decode ``\\uXXXX`` (and a following low surrogate) whose ``u`` is at ``u_pos``."""
        data, end = self.data, self.end
        first = self.hex4(u_pos)
        last = u_pos + 4  # index of the last hex digit
        if 0xDC00 <= first <= 0xDFFF:
            self.pos = last
            raise _Hard("lone leading surrogate in hex escape")
        if not 0xD800 <= first <= 0xDBFF:
            return chr(first), last + 1
        following = data[last + 1 : last + 3]
        if len(following) == 2:
            if following == b"\\u":
                second = self.hex4(last + 2)
                if not 0xDC00 <= second <= 0xDFFF:
                    self.pos = last + 6
                    raise _Hard("lone leading surrogate in hex escape")
                code = ((first - 0xD800) << 10 | (second - 0xDC00)) + 0x10000
                return chr(code), last + 7
            self.pos = last + 1
            raise _Hard("unexpected end of hex escape")
        if last + 1 >= end or data[last + 1] == _BACKSLASH:
            self.pos = end
            raise _Soft("EOF while parsing a string")
        self.pos = last + 1
        raise _Hard("unexpected end of hex escape")

    def hex4(self, u_pos: int) -> int:
        digits = self.data[u_pos + 1 : u_pos + 5]
        if len(digits) < 4:
            self.pos = self.end
            raise _Soft("EOF while parsing a string")
        for offset, byte in enumerate(digits):
            if byte not in _HEX:
                self.pos = u_pos + 1 + offset
                raise _Hard("invalid escape")
        return int(digits, 16)

    def number(self) -> int | float:
        data, end = self.data, self.end
        start = pos = self.pos
        if data[pos] == _MINUS:
            pos += 1
            if pos >= end:
                self.pos = pos
                raise _Soft("EOF while parsing a value")
        byte = data[pos]
        if byte == ord("I"):
            self.pos = pos
            self.ident(b"Infinity")
            return float("-inf") if pos > start else float("inf")
        if byte == ord("0"):
            pos += 1
            if pos < end and 0x30 <= data[pos] <= 0x39:
                self.pos = pos
                raise _Hard("invalid number")
        elif 0x31 <= byte <= 0x39:
            pos = _run_end(_DIGITS, data, pos + 1)
        else:
            self.pos = pos
            raise _Hard("invalid number")
        is_float = False
        if pos < end and data[pos] == ord("."):
            is_float = True
            pos = self.digits_after(pos + 1)
        if pos < end and data[pos] in b"eE":
            is_float = True
            pos += 1
            if pos < end and data[pos] in b"+-":
                pos += 1
            pos = self.digits_after(pos)
        if not is_float and pos - start > _MAX_NUMBER_LEN:
            self.pos = start + _MAX_NUMBER_LEN + 1
            raise _Hard("number out of range")
        self.pos = pos
        literal = data[start:pos]
        return float(literal) if is_float else int(literal)

    def digits_after(self, pos: int) -> int:
        """At least one digit must start at ``pos``; the position after the run of digits."""
        if pos >= self.end:
            self.pos = pos
            raise _Soft("EOF while parsing a value")
        if not 0x30 <= self.data[pos] <= 0x39:
            self.pos = pos
            raise _Hard("invalid number")
        return _run_end(_DIGITS, self.data, pos)
