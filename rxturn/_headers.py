"""Case-insensitive header lookup over any ``Mapping[str, str]``.

Response headers reach rxturn as a case-insensitive multidict (aiohttp) or, in tests and custom
transports, as a plain ``dict``. Both the ``Retry-After`` reader
(:mod:`rxturn.resilience.backoff`) and the clients read them through :func:`header`.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["header"]


def header(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` (given in lower case), whatever its case in ``headers``.

    Examples:
        >>> header({"Retry-After": "5"}, "retry-after")
        '5'
        >>> header({}, "retry-after") is None
        True
    """
    value = headers.get(name)
    if value is not None:
        return value
    for key, item in headers.items():
        if key.lower() == name:
            return item
    return None
