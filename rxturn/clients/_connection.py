"""A client's connection settings, checked once at construction: headers, base URL, timeouts,
and the API key held so that it never shows itself."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

from .._arguments import shown
from .._validate import seconds_problem
from ..errors import ConfigError, redact

if TYPE_CHECKING:
    from ..transport import AsyncTransport

__all__ = ["HttpSettings", "Secret", "check_base_url", "check_headers", "check_timeout"]

_BAD_HEADER_CHARS = re.compile(r"[\r\n\x00]")
#: A header name: an RFC 9110 token.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


class HttpSettings(TypedDict, total=False):
    """The connection settings every client constructor takes as keywords (for ``**kwargs``
    of the ``from_env`` constructors)."""

    extra_headers: Mapping[str, str] | None
    transport: AsyncTransport | None
    connect_timeout: float
    read_timeout: float | None


class Secret:
    """An API key that never shows itself: ``repr``/``str`` are ``'***'``."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("an API key is not picklable")


def check_headers(headers: Mapping[str, str], where: str) -> None:
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{where}: header names and values must be strings ({shown(name)})")
        if _BAD_HEADER_CHARS.search(name) or _BAD_HEADER_CHARS.search(value):
            raise ConfigError(
                f"{where}: header {shown(name)} contains a line break or NUL character"
            )
        if not _HEADER_NAME.fullmatch(name):
            # sent as it was, the server refused the whole request ('Invalid header token')
            raise ConfigError(
                f"{where}: {shown(name)} is not an HTTP header name (letters, digits and "
                "!#$%&'*+-.^_`|~ only, no spaces or colons)"
            )


def check_base_url(base_url: str) -> str:
    """``base_url`` stripped of surrounding space and trailing slashes, or a ConfigError.

    An absolute http(s) URL without credentials, a query string or a fragment: the clients join
    their paths to it (a path after a query would land inside the query), and userinfo and
    query strings are where keys hide, so no error echoes them (:func:`_shown`).
    """
    if not isinstance(base_url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"base_url must be a string, got {type(base_url).__name__}")
    url = base_url.strip()
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise ConfigError(
            f"base_url {shown(_shown(url), 100)} holds a space or a control character "
            "(percent-encode it)"
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ConfigError(f"base_url {shown(_shown(url), 100)} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"base_url must be an absolute http(s) URL such as 'https://api.example.com', "
            f"got {shown(_shown(url), 100)}"
        )
    if parts.username or parts.password:
        raise ConfigError("base_url must not contain credentials; pass api_key instead")
    if "?" in url or "#" in url:
        raise ConfigError(
            f"base_url must not have a query string or fragment, got {shown(_shown(url), 100)} "
            "followed "
            "by one; the client adds the path, and an API key goes in api_key or extra_headers"
        )
    return url.rstrip("/")


def _shown(url: str) -> str:
    """``url`` for an error message: no query string, no fragment, no userinfo, no key."""
    url = url.split("#", 1)[0].split("?", 1)[0]
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host, slash, path = rest.partition("/")
    return redact(f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}")


def check_timeout(name: str, value: float | None, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    # the transport's rule, checked here too so that the mistake shows where it is made
    # (an infinite timeout was accepted here and refused by the transport at the first request)
    problem = seconds_problem(value)
    if problem is not None:
        raise ConfigError(f"{name} {problem}")
