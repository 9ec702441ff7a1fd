"""One JSON value as one line, for every reader of JSON lines.

JSON lets U+2028, U+2029 and U+0085 stand raw inside a string, and ``msgspec`` writes them so;
but line splitters other than ``"\\n"`` take them for line breaks (Python's ``str.splitlines``,
JavaScript before ES2019, many JSON-lines readers), and one object then reads as several lines,
none of them JSON. :func:`as_line` writes them as ``\\u`` escapes: the same JSON value. Used by
every command that prints JSON lines (``chat --json``, ``replay --json``) and by the batch
output file.
"""

from __future__ import annotations

__all__ = ["as_line"]

#: the three characters in UTF-8 (self-synchronising: these bytes are those characters and
#: nothing else in valid UTF-8), and their escapes
_RAW_LINE_BREAKS = (
    (b"\xe2\x80\xa8", b"\\u2028"),
    (b"\xe2\x80\xa9", b"\\u2029"),
    (b"\xc2\x85", b"\\u0085"),
)


def as_line(encoded: bytes) -> bytes:
    """``encoded`` JSON (UTF-8, no newline in it, as ``msgspec.json.encode`` writes it) as one
    line: the raw line breaks above escaped (they occur only inside strings), then ``"\\n"``.

    Examples:
        >>> as_line(b'{"text":"a\\xe2\\x80\\xa8b"}')
        b'{"text":"a\\\\u2028b"}\\n'
        >>> as_line(b'[1]')
        b'[1]\\n'
    """
    for raw, escape in _RAW_LINE_BREAKS:
        if raw in encoded:
            encoded = encoded.replace(raw, escape)
    return encoded + b"\n"
