"""The scan's strict checks of one input line, beyond what decoding it tells.

* :data:`MAX_LINE_BYTES`: a row is one request, and no provider takes a request body of more
  than a few tens of megabytes; reading lines with this limit keeps the memory of the scan
  bounded whatever the input holds.
* :func:`duplicate_key`: JSON decoders keep the last of two equal keys in one object without a
  word (``{"prompt": "a", "prompt": "b"}`` asks ``b``); a batch refuses such a line instead.
  The check is cheap when there is nothing to find: it compares the keys the decoded object
  holds with the places in the line where a key can end, and only when those differ looks
  closer.
* :func:`json_problem`: why a line is not JSON, in words a person can act on (a byte order mark,
  bytes that are not UTF-8, a raw control character such as NUL, a lone UTF-16 surrogate
  escape: JSON can spell ``"\\ud800"``, which is no character, and the decoder's own words for
  it are ``Input data was truncated``).
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from .._media import describe_bound

__all__ = ["BOM", "MAX_LINE_BYTES", "duplicate_key", "json_problem", "too_long"]

#: The longest input line a batch reads (32 MiB).
MAX_LINE_BYTES = 32 << 20
BOM = b"\xef\xbb\xbf"

# Where a key can end: a closing quote, optional whitespace, a colon. Every key of the line
# matches, and so can an escaped quote followed by a colon inside a string: the count is never
# below the number of keys.
_KEY_END = re.compile(rb'"[ \t\r\n]*:')
# a control character JSON allows nowhere raw (tab, CR and LF are whitespace between tokens)
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def too_long(raw: bytes, limit: int) -> str | None:
    """What is wrong with ``raw``, read with ``readline(limit + 1)``, if it was cut short."""
    if len(raw) <= limit or raw.endswith(b"\n"):
        return None
    return f"longer than {describe_bound(limit)} (a row is one request)"


def _keys(value: Any) -> int:
    """Keys of every object in a decoded JSON value (one loop over the nested objects and
    lists, no call per value: a flat row is one pass over its values)."""
    count = 0
    todo: list[Any] = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            mapping = cast("dict[str, Any]", item)
            count += len(mapping)
            todo.extend(mapping.values())
        elif isinstance(item, list):
            todo.extend(cast("list[Any]", item))
    return count


_NOT_GIVEN: Any = object()


class _Duplicate(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Duplicate(key)
        seen[key] = value
    return seen


def duplicate_key(raw: bytes, decoded: object = _NOT_GIVEN) -> str | None:
    """A key that one object of the JSON line ``raw`` (decoded as ``decoded``) holds twice."""
    try:
        if decoded is _NOT_GIVEN:
            decoded = json.loads(raw)
        if len(_KEY_END.findall(raw)) <= _keys(decoded):
            return None  # no more places where a key ends than keys kept: none was dropped
        json.loads(raw, object_pairs_hook=_no_twice)
    except _Duplicate as exc:
        return exc.key
    except (ValueError, RecursionError):  # nested too deeply to look: the decoder's call
        return None
    return None


def json_problem(raw: bytes, detail: str) -> str:
    """Why ``raw`` is not JSON: ``detail`` (the decoder's words) unless something plainer fits."""
    if raw.startswith(BOM):
        return "starts with a UTF-8 byte order mark (BOM); save the file as UTF-8 without a BOM"
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):  # what Windows PowerShell's > writes
        return "starts with a UTF-16 byte order mark: the file is UTF-16 text; save it as UTF-8"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
    control = _CONTROL.search(raw.rstrip(b"\r\n"))
    if control is not None:
        where = f"byte 0x{raw[control.start()]:02x} at column {control.start() + 1}"
        return f"a raw control character ({where}); JSON writes it escaped, as \\u00XX"
    lone = _lone_surrogate(raw)
    if lone is not None:
        pair = f"\\u{lone:04x} without its pair"
        return f"a string holds a lone UTF-16 surrogate ({pair}), which is not text"
    return f"not valid JSON ({detail})"


def _lone_surrogate(raw: bytes) -> int | None:
    """The first lone surrogate of ``raw``'s strings, if the line is JSON but for that (the
    standard library's reader keeps them; encoding the text back to UTF-8 finds them)."""
    try:
        decoded = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    try:
        json.dumps(decoded, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return ord(exc.object[exc.start])
    return None
