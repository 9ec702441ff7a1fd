"""Case-insensitive header lookup over any ``Mapping[str, str]``, as text.

Response headers reach rxturn as a case-insensitive multidict (aiohttp) or, in tests and custom
transports, as a plain ``dict``. Both the ``Retry-After`` reader
(:mod:`rxturn.resilience.backoff`) and the clients read them through :func:`header`.

Header bytes that are not UTF-8 reach Python as lone surrogates (aiohttp decodes header values
with ``surrogateescape``): text that no UTF-8 encoder takes, so a ``Location`` or
``Content-Type`` quoted in an error would break whatever writes that error out (a JSON line, a
log file). :func:`header` hands such a value on with each undecodable byte as U+FFFD.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["header"]


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` (given in lower case), whatever its case in ``headers``;
    bytes of it that were not UTF-8 are U+FFFD.

    Examples:
        >>> header({"Retry-After": "5"}, "retry-after")
        '5'
        >>> header({}, "retry-after") is None
        True
        >>> header({"location": "http://h/\\udcff"}, "location")
        'http://h/\\ufffd'
    """
    value = headers.get(name)
    if value is None:
        for key, item in headers.items():
            if key.lower() == name:
                value = item
                break
        else:
            return None
    return value if value.isascii() else _as_text(value)


def _as_text(value: str) -> str:
    try:
        raw = value.encode("utf-8", "surrogateescape")  # the bytes the server sent
    except UnicodeEncodeError:  # a surrogate no decoder made (a hand-built mapping)
        raw = value.encode("utf-8", "surrogatepass")
    return raw.decode("utf-8", "replace")
