"""The transport seam: the little HTTP that provider clients need, and nothing else.

Clients build a request (method, URL, headers, JSON bytes) and read either a stream of byte
chunks (SSE / NDJSON, fed to a sans-IO decoder) or a capped body. Everything below that — the
connection pool, TLS, timeouts, and turning library exceptions into :mod:`rxturn.errors` — is a
transport's job. :class:`~rxturn.transport.aiohttp.AiohttpTransport` is the production one; any
object with this shape works (a recorder, a proxy, an in-process test double), as in httpx.

Contract every transport keeps:

* ``send`` returns once the status line and headers are in; the body has not been read.
* Redirects are **not** followed: a 3xx is returned like any other status, so an API key is never
  sent to a host the caller did not name.
* Failures raise :class:`~rxturn.errors.TransportError` subclasses
  (:class:`~rxturn.errors.ConnectError` before a response, :class:`~rxturn.errors.ReadError`
  while reading one), never a library's own exception; ``asyncio.CancelledError`` passes through.
* ``headers`` lookups are case-insensitive.
* ``aclose()`` on a response is idempotent and frees the connection (closing it when the body was
  not fully read, so the server sees the disconnect).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlsplit

from .._redact import is_credential_header
from ..errors import StreamProtocolError

__all__ = ["AsyncTransport", "CappedBody", "HttpResponse", "display_url", "request_secrets"]


def display_url(url: str) -> str:
    """``scheme://host:port/path`` for messages and logs: no userinfo, no query string (some
    providers take keys there).

    Examples:
        >>> display_url("https://user:pw@example.com:8443/v1/models?key=secret")
        'https://example.com:8443/v1/models'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def request_secrets(url: str, headers: Mapping[str, str]) -> tuple[str, ...]:
    """The values a request carries that must never appear in an error: credential headers
    (whole, and each word of them, so ``Bearer KEY`` gives ``KEY``) and query-string values.

    Examples:
        >>> request_secrets("http://h/p?key=abcdefgh123", {"authorization": "Bearer sk-12345678"})
        ('Bearer sk-12345678', 'sk-12345678', 'abcdefgh123')
    """
    found: list[str] = []
    for name, value in headers.items():
        if is_credential_header(name):
            found.append(value)
            found += [word for word in value.split() if word != value]
    try:
        query = urlsplit(url).query
    except ValueError:
        query = ""
    found += [value for _, value in parse_qsl(query)]
    return tuple(secret for secret in dict.fromkeys(found) if len(secret) >= 8)


class CappedBody:
    """A response body read whole by :meth:`HttpResponse.read`, refused once it grows past
    ``limit`` bytes (every transport reads it this way)."""

    __slots__ = ("_buffer", "_limit", "_where")

    def __init__(self, limit: int, where: str) -> None:
        self._buffer = bytearray()
        self._limit = limit
        self._where = where

    def add(self, chunk: bytes) -> None:
        """Append ``chunk``.

        Raises:
            StreamProtocolError: the body is now larger than the limit.
        """
        self._buffer += chunk
        if len(self._buffer) > self._limit:
            raise StreamProtocolError(
                f"response body exceeds the {self._limit}-byte limit", where=self._where
            )

    def value(self) -> bytes:
        return bytes(self._buffer)


@runtime_checkable
class HttpResponse(Protocol):
    """A response whose status and headers have arrived and whose body is still on the wire."""

    @property
    def status(self) -> int:
        """The HTTP status code."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Response headers, looked up case-insensitively."""
        ...

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body as chunks, as they arrive (sizes are whatever the network delivered)."""
        ...

    async def read(self, limit: int) -> bytes:
        """The whole body, at most ``limit`` bytes.

        Raises:
            StreamProtocolError: the body (declared or actual) is larger than ``limit``.
            ReadError: the connection broke while reading.
        """
        ...

    async def aclose(self) -> None:
        """Release the response (idempotent)."""
        ...


@runtime_checkable
class AsyncTransport(Protocol):
    """Sends one HTTP request and hands back the response as soon as its headers are in."""

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        stream: bool,
    ) -> HttpResponse:
        """Send a request.

        Args:
            method: ``"POST"`` for every provider call.
            url: the absolute URL.
            headers: request headers (may hold secrets: never log or echo them).
            body: the encoded request body.
            stream: whether the caller will read the body incrementally (``aiter_bytes``).

        Raises:
            ConnectError: no connection could be made.
            ReadError: the connection broke before the response headers arrived.
            ConfigError: the URL is not a valid http(s) URL.
        """
        ...

    async def aclose(self) -> None:
        """Close pooled connections (idempotent)."""
        ...
