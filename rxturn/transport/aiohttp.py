"""The production transport: aiohttp, and the one place rxturn imports it.

One :class:`aiohttp.ClientSession` per transport, created lazily on the running loop the first
time a request is sent (so constructing a client needs no loop) and closed by :meth:`aclose`.
aiohttp's protocol turns TCP_NODELAY on for every connection, so small request bodies and SSE
frames are never held back by Nagle's algorithm.

Timeouts (reference §4.4): ``connect_timeout`` bounds the socket connect; ``read_timeout`` is an
**idle** bound — the longest silence between two reads (including the wait for the response
headers) — not a deadline on the whole response, because a healthy stream may run for minutes.
Whole-turn deadlines belong to the stream handler.

Safety: redirects are never followed (a 3xx comes back as a status, so a key is never sent to
another host); cookies are not kept between requests; every body read is capped (streams by the
decoders' line limits, whole bodies by ``read(limit)``), and that includes decompressed bodies.

Every aiohttp / asyncio / OS exception is mapped in :class:`map_aiohttp_errors`, the way httpx
maps httpcore's, so callers only ever see :mod:`rxturn.errors`::

    aiohttp.ConnectionTimeoutError   → ConnectError  "timed out connecting to … after Ns"
    aiohttp.ClientConnectorError     → ConnectError  "cannot connect to …: reason"
    socket read timeout              → ReadError     "read timed out after Ns …"
    aiohttp.ServerDisconnectedError  → ReadError     "server disconnected …"
    aiohttp.ClientPayloadError       → ReadError     "response body incomplete …"
    aiohttp.ClientResponseError      → ReadError     "invalid HTTP response …"
    aiohttp.InvalidURL / non-http    → ConfigError   "invalid URL …"
    other aiohttp / OSError          → ReadError     "connection error …"
"""

from __future__ import annotations

import asyncio
import ssl as _ssl
from collections.abc import Mapping
from types import TracebackType

import aiohttp

from .._validate import positive
from ..errors import ConfigError, ConnectError, ReadError, RxturnError, StreamProtocolError
from ._base import display_url as _safe_url

__all__ = ["AiohttpTransport", "map_aiohttp_errors"]


class map_aiohttp_errors:
    """Context manager turning aiohttp, asyncio-timeout and OS errors into rxturn errors.

    ``asyncio.CancelledError`` and rxturn's own errors pass through untouched. The original
    exception is kept as ``__cause__``.
    """

    __slots__ = ("_connect_timeout", "_read_timeout", "_url")

    def __init__(
        self, url: str, *, connect_timeout: float | None = None, read_timeout: float | None = None
    ) -> None:
        self._url = url
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, RxturnError):
            return
        mapped = self.map(exc)
        if mapped is not None:
            raise mapped from exc

    def map(self, exc: Exception) -> RxturnError | None:
        """The rxturn error for ``exc``, or ``None`` when it is not a transport failure."""
        where = _safe_url(self._url)
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            after = f" after {self._connect_timeout:g}s" if self._connect_timeout else ""
            return ConnectError(f"timed out connecting to {where}{after}")
        if isinstance(exc, aiohttp.ClientConnectorError):
            reason = exc.os_error.strerror or str(exc.os_error)
            return ConnectError(f"cannot connect to {where}: {reason}")
        if isinstance(exc, TimeoutError):  # aiohttp.SocketTimeoutError and plain timeouts
            after = f" after {self._read_timeout:g}s" if self._read_timeout else ""
            return ReadError(f"read timed out{after} (no data from {where})")
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            return ReadError(f"server disconnected ({where})")
        if isinstance(exc, aiohttp.ClientPayloadError):
            # aiohttp's text ("… TransferEncodingError: 400 …") reads like an HTTP status; the
            # original stays available as __cause__.
            return ReadError(
                f"response body incomplete ({where}): the connection closed before the body ended"
            )
        if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
            return ConfigError(f"invalid URL {where!r}: expected an absolute http(s) URL")
        if isinstance(exc, aiohttp.ClientResponseError):
            return ReadError(f"invalid HTTP response from {where}: {_first_line(exc)}")
        if isinstance(exc, aiohttp.ClientError | OSError):
            return ReadError(f"connection error ({where}): {_first_line(exc)}")
        return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


class _Chunks:
    """``aiter_bytes`` as a plain async iterator (no generator left for GC to finalize)."""

    __slots__ = ("_content", "_errors")

    def __init__(self, content: aiohttp.StreamReader, errors: map_aiohttp_errors) -> None:
        self._content = content
        self._errors = errors

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        with self._errors:
            chunk = await self._content.readany()  # == iter_any(): whatever has arrived
        if not chunk:
            raise StopAsyncIteration
        return chunk


class _AiohttpResponse:
    """:class:`~rxturn.transport.HttpResponse` over an :class:`aiohttp.ClientResponse`."""

    __slots__ = ("_closed", "_errors", "_response", "_where")

    def __init__(
        self, response: aiohttp.ClientResponse, errors: map_aiohttp_errors, url: str
    ) -> None:
        self._response = response
        self._errors = errors
        self._where = _safe_url(url)
        self._closed = False

    def __repr__(self) -> str:
        return f"<AiohttpResponse {self._response.status} {self._where}>"

    @property
    def status(self) -> int:
        return self._response.status

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    def aiter_bytes(self) -> _Chunks:
        return _Chunks(self._response.content, self._errors)

    async def read(self, limit: int) -> bytes:
        declared = self._response.content_length
        if declared is not None and declared > limit:
            raise StreamProtocolError(
                f"response body of {declared} bytes exceeds the {limit}-byte limit",
                where=self._where,
            )
        buffer = bytearray()
        content = self._response.content
        while True:
            with self._errors:
                chunk = await content.readany()
            if not chunk:
                return bytes(buffer)
            buffer += chunk
            if len(buffer) > limit:
                raise StreamProtocolError(
                    f"response body exceeds the {limit}-byte limit", where=self._where
                )

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._response.content.at_eof():
            self._response.release()  # fully read: the connection goes back to the pool
        else:
            self._response.close()  # unread body: drop the connection; the server sees it


class AiohttpTransport:
    """An :class:`~rxturn.transport.AsyncTransport` over one pooled aiohttp session.

    Args:
        connect_timeout: seconds to open a TCP (+TLS) connection.
        read_timeout: longest silence tolerated while waiting for headers or body data
            (an idle timeout, not a total deadline); ``None`` disables it.
        limit: most simultaneous connections in the pool.
        limit_per_host: most simultaneous connections to one host (0 = no per-host limit).
        keepalive_timeout: seconds an idle pooled connection is kept.
        ssl: ``True`` (verify with the system store), ``False`` (no verification — only for
            local servers), or an :class:`ssl.SSLContext` (custom CA).
        trust_env: honour ``HTTP(S)_PROXY`` / ``NO_PROXY`` and ``.netrc`` (off by default:
            no environment magic unless asked).

    Raises:
        ConfigError: a timeout or limit is not a positive number.

    Examples:
        >>> transport = AiohttpTransport(connect_timeout=5, read_timeout=60)
        >>> # client = AnthropicClient(transport=transport); ...; await transport.aclose()
    """

    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        read_timeout: float | None = 120.0,
        limit: int = 100,
        limit_per_host: int = 0,
        keepalive_timeout: float = 15.0,
        ssl: _ssl.SSLContext | bool = True,
        trust_env: bool = False,
    ) -> None:
        _positive("connect_timeout", connect_timeout)
        if read_timeout is not None:
            _positive("read_timeout", read_timeout)
        _positive("keepalive_timeout", keepalive_timeout)
        if not positive(limit, integer=True):  # callers may be untyped
            raise ConfigError(f"AiohttpTransport: limit must be an integer >= 1, got {limit!r}")
        if not positive(limit_per_host, integer=True, allow_zero=True):
            raise ConfigError(
                f"AiohttpTransport: limit_per_host must be an integer >= 0, got {limit_per_host!r}"
            )
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = None if read_timeout is None else float(read_timeout)
        self.limit = limit
        self.limit_per_host = limit_per_host
        self._keepalive_timeout = float(keepalive_timeout)
        self._ssl = ssl
        self._trust_env = trust_env
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return (
            f"AiohttpTransport(connect_timeout={self.connect_timeout:g}, "
            f"read_timeout={self.read_timeout!r}, limit={self.limit}, "
            f"limit_per_host={self.limit_per_host})"
        )

    async def __aenter__(self) -> AiohttpTransport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        """True when no session is open (never opened, or closed by :meth:`aclose`)."""
        return self._session is None or self._session.closed

    def _session_for(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        session = self._session
        if session is not None and not session.closed:
            if self._loop is loop:
                return session
            raise ConfigError(
                "AiohttpTransport: its connection pool belongs to another event loop; use a "
                "client inside the loop that first used it, or `await client.aclose()` there "
                "before using it in a new loop"
            )
        connector = aiohttp.TCPConnector(
            limit=self.limit,
            limit_per_host=self.limit_per_host,
            keepalive_timeout=self._keepalive_timeout,
            ssl=self._ssl,
        )
        session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=self.connect_timeout, sock_read=self.read_timeout
            ),
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=True,
            trust_env=self._trust_env,
            raise_for_status=False,
        )
        self._session, self._loop = session, loop
        return session

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        stream: bool,
    ) -> _AiohttpResponse:
        """Send one request; return when the headers are in (see the module docstring).

        ``stream`` is only a hint here: aiohttp reads every body lazily, so both kinds of
        response are read through the same capped paths.
        """
        session = self._session_for(asyncio.get_running_loop())
        errors = map_aiohttp_errors(
            url, connect_timeout=self.connect_timeout, read_timeout=self.read_timeout
        )
        with errors:
            response = await session.request(
                method, url, headers=dict(headers), data=body, allow_redirects=False
            )
        return _AiohttpResponse(response, errors, url)

    async def aclose(self) -> None:
        """Close the session and its pooled connections (idempotent; a later send reopens)."""
        session, self._session, self._loop = self._session, None, None
        if session is not None and not session.closed:
            await session.close()


def _positive(name: str, value: object) -> None:
    if not positive(value):
        raise ConfigError(f"AiohttpTransport: {name} must be a positive number, got {value!r}")
