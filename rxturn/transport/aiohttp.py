"""The production transport: aiohttp, and the one place rxturn imports it.

One :class:`aiohttp.ClientSession` per transport, created lazily on the running loop the first
time a request is sent (so constructing a client needs no loop) and closed by :meth:`aclose`.
A pool belongs to the loop it was opened on, and each loop that sends through the transport
gets its own (two threads, each with its loop, can share a client). A pool lives no longer than
its loop: a loop that shuts down (``asyncio.run``, ``asyncio.Runner``, ``uvloop.run``) closes
it, and so does the transport's garbage collection while its loop runs (:func:`_pool_keeper`);
a pool whose loop closed without that shutdown is let go when a new pool opens. So a client made
at module level serves one ``asyncio.run`` after another, and nothing reports an unclosed
session at exit.
aiohttp's protocol turns TCP_NODELAY on for every connection, so small request bodies and SSE
frames are never held back by Nagle's algorithm.

Timeouts (docs/behaviour.md §2.10): ``connect_timeout`` bounds the socket connect; ``read_timeout``
is an **idle** bound — the longest silence between two reads (including the wait for the response
headers) — not a deadline on the whole response, because a healthy stream may run for minutes.
Whole-turn deadlines belong to the stream handler. aiohttp keeps that bound by cancelling its
timer and arming a new one for every chunk that arrives; the connections of this transport keep
it on one timer per response instead (:class:`_IdleTimedProtocol`): a chunk only records when it
came, and the timer, when it fires, re-arms for what is left of the silence since the last one.
The bound is the same, to the chunk; a stream of many small chunks pays no timer per chunk,
and leaves no cancelled timer per chunk on the event loop's heap.

The environment, as the SDKs' HTTP client reads it (``trust_env=True``, the default): the
proxies in ``HTTPS_PROXY`` / ``HTTP_PROXY`` / ``ALL_PROXY`` (either case) with ``NO_PROXY``
exemptions, read once when the connection pool opens, and the CA bundle in ``SSL_CERT_FILE`` /
``SSL_CERT_DIR``, which replaces the system store as it does for OpenSSL. ``trust_env=False``
ignores all of them (the system store comes from OpenSSL's compiled-in paths). ``.netrc`` is
never read: a credential is sent only when the caller puts it in a header.

Safety: redirects are never followed (a 3xx comes back as a status, so a key is never sent to
another host); cookies are not kept between requests; every body read is capped (streams by the
decoders' line limits, whole bodies by ``read(limit)``), and that includes decompressed bodies.

The loop is never held (``docs/reliability.md``): aiohttp's own decompression is off
(``auto_decompress=False``); rxturn asks for ``gzip, deflate`` and inflates the body itself
(:mod:`._inflate`), at most :data:`SLICE_BYTES` per step, with a cap on the decompressed bytes and
on the expansion ratio. Reads take at most :data:`SLICE_BYTES` from aiohttp's buffer, and a body
read yields to the event loop whenever :data:`YIELD_INTERVAL` has passed since it last did:
data that is already buffered never lets a read return without suspending, so without that a fast
server (or a small compressed body) would keep the consumer — decoder, fold, observers — running
with every timer, cancel and other turn on the loop frozen.

Every aiohttp / asyncio / OS exception is mapped in :class:`map_aiohttp_errors`, the way httpx
maps httpcore's, so callers only ever see :mod:`rxturn.errors`::

    aiohttp.ConnectionTimeoutError   → ConnectError  "timed out connecting to … after Ns"
    certificate verify failed        → ConnectError  "… TLS certificate verify failed (…); check …"
    TLS handshake, peer without TLS  → ConnectError  "… does not speak TLS; check the URL's scheme"
    other TLS handshake failure      → ConnectError  "… TLS handshake failed: reason"
    host name that does not resolve  → ConnectError  "… the host name '…' does not resolve …"
    aiohttp.ClientProxyConnectionError → ConnectError "cannot connect to … through the proxy …"
    aiohttp.ClientConnectorError     → ConnectError  "cannot connect to …: reason"
    socket read timeout              → ReadError     "read timed out after Ns …"
    aiohttp.ServerDisconnectedError  → ReadError     "server disconnected …"
    aiohttp.ClientPayloadError       → ReadError     "response body incomplete …"
    aiohttp.ClientResponseError      → ReadError     "invalid HTTP response …: <reason>"
    aiohttp.InvalidURL / non-http    → ConfigError   "invalid URL …"
    other aiohttp / OSError          → ReadError     "connection error …"

Every one is retryable but a certificate that does not verify, a handshake with a peer that
does not speak TLS, and a plain-HTTP request answered in TLS: those are the same on every
attempt (``retryable=False`` on the error), and the message says what to check. A host name
that does not resolve stays retryable, as the SDKs retry it: a resolver that is down says the
same as a name that does not exist.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import io
import os
import re
import ssl as _ssl
import threading
import time
import urllib.request
from collections.abc import AsyncGenerator, Mapping
from types import TracebackType
from urllib.parse import urlsplit

import aiohttp
from aiohttp.client_proto import ResponseHandler

from .._arguments import shown
from .._redact import one_line
from .._validate import as_float, positive, seconds_problem
from ..errors import (
    ConfigError,
    ConnectError,
    ReadError,
    RxturnError,
    StreamProtocolError,
    redact,
)
from ._base import CappedBody, request_secrets
from ._base import display_url as _safe_url
from ._inflate import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_EXPANSION_RATIO,
    Inflater,
    inflater_for,
)

__all__ = [
    "LARGE_BODY_BYTES",
    "SLICE_BYTES",
    "YIELD_INTERVAL",
    "AiohttpTransport",
    "map_aiohttp_errors",
    "request_secrets",
]

#: Most body bytes one read hands on (raw from aiohttp's buffer, or decompressed in one step).
SLICE_BYTES = 64 * 1024
#: Request bodies larger than this (aiohttp's own bound for raw bytes, 1 MiB) are handed to
#: aiohttp as a stream, which it writes in chunks, yielding to the loop between them.
LARGE_BODY_BYTES = 1024 * 1024
#: Most seconds a body read runs without yielding to the event loop (it then ``sleep(0)``s).
YIELD_INTERVAL = 0.005


class map_aiohttp_errors:
    """Turns aiohttp, asyncio-timeout and OS errors into rxturn errors: the one boundary where
    transport failures become rxturn errors.

    ``asyncio.CancelledError`` and rxturn's own errors pass through untouched. Messages never
    carry a secret: ``secrets`` (the request's credential header values, see
    :func:`request_secrets`) and key-looking tokens are removed from anything the server or
    aiohttp put into them, and the URL is shown without its query string. The original exception
    is kept as ``__cause__`` — except an :class:`aiohttp.ClientResponseError`, whose
    ``request_info`` holds the request headers, key included: it is dropped (:meth:`translate`
    raises with no chain at all; as a context manager, Python still records it as
    ``__context__``, so the transport itself uses :meth:`translate`).
    """

    __slots__ = ("_connect_timeout", "_headers", "_read_timeout", "_secrets", "_url")

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        secrets: tuple[str, ...] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._url = url
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._secrets: tuple[str, ...] | None = secrets
        # ``headers``: the request's, whose credentials (:func:`request_secrets`) are worked
        # out only when an error needs them; a request that succeeds never pays for it
        self._headers = headers
        if headers is not None and not secrets:
            self._secrets = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The values no message may carry (``secrets``, or those of ``headers``)."""
        secrets = self._secrets
        if secrets is None:
            secrets = self._secrets = request_secrets(self._url, self._headers or {})
        return secrets

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
        mapped = self.translate(exc)
        if mapped is not None:
            raise mapped from mapped.__cause__

    def translate(self, exc: Exception) -> RxturnError | None:
        """:meth:`map`, with the original as ``__cause__`` when it holds no request data.

        Raise the result *outside* the ``except`` block that caught ``exc`` (Python would
        otherwise chain ``exc`` as ``__context__``)."""
        if isinstance(exc, RxturnError):
            return None
        mapped = self.map(exc)
        if mapped is not None and not isinstance(exc, aiohttp.ClientResponseError):
            mapped.__cause__ = exc
        return mapped

    def map(self, exc: Exception) -> RxturnError | None:
        """The rxturn error for ``exc``, or ``None`` when it is not a transport failure."""
        mapped = self._map(exc)
        if mapped is not None and self.secrets:
            mapped.message = _without_cut_secrets(
                redact(mapped.message, self.secrets), self.secrets
            )
            mapped.args = (mapped.message,)
        return mapped

    def _map(self, exc: Exception) -> RxturnError | None:
        where = _safe_url(self._url)
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            after = f" after {self._connect_timeout:g}s" if self._connect_timeout else ""
            return ConnectError(f"timed out connecting to {where}{after}")
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            return ConnectError(_certificate_problem(where, exc), retryable=False)
        if isinstance(exc, aiohttp.ClientSSLError):  # (the certificate's is the one above)
            handshake = exc.os_error
            reason = _SSL_SOURCE.sub("", _first_line(handshake))
            if _no_tls_there(handshake):  # the same answer on every attempt
                return ConnectError(
                    f"cannot connect to {where}: the TLS handshake failed ({reason}), the "
                    "server there does not speak TLS; check the URL's scheme (http:// for a "
                    "plain-HTTP server) and its port",
                    retryable=False,
                )
            return ConnectError(f"cannot connect to {where}: TLS handshake failed: {reason}")
        if isinstance(exc, aiohttp.ClientConnectorDNSError):
            # retried, as the SDKs retry every connection error: a resolver that is down or
            # slow says the same as a name that does not exist, and both clear up
            reason = _os_reason(exc.os_error)
            return ConnectError(
                f"cannot connect to {where}: the host name {exc.host!r} does not resolve "
                f"({reason}); check the host name"
            )
        if isinstance(exc, aiohttp.ClientProxyConnectionError):
            # the connection that failed is the proxy's (the environment's *_PROXY): said, or
            # the line names an endpoint that may well be up and a reason that is not its own
            reason = _os_reason(exc.os_error)
            host = f"[{exc.host}]" if ":" in exc.host else exc.host
            return ConnectError(
                f"cannot connect to {where} through the proxy {host}:{exc.port} "
                f"(from the environment: HTTP_PROXY, HTTPS_PROXY or ALL_PROXY): {reason}"
            )
        if isinstance(exc, aiohttp.ClientConnectorError):
            return ConnectError(f"cannot connect to {where}: {_os_reason(exc.os_error)}")
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
            # not str(exc): it quotes the full URL, query string included. The parser's
            # message spans lines ("Bad status line:", then what it expected and the bytes it
            # got, then a line pointing at them): all of it but the pointer, on one line
            lines = str(exc.message).splitlines()
            detail = " ".join(line for line in lines if line.strip(" ^~"))
            detail = redact(one_line(detail))[:300] or type(exc).__name__
            if _TLS_RECORD.search(detail):  # a TLS alert or handshake where HTTP was expected
                return ReadError(
                    f"invalid HTTP response from {where}: {detail}: the server answered in "
                    "TLS; check the URL's scheme (https:// for a TLS port)",
                    retryable=False,
                )
            return ReadError(f"invalid HTTP response from {where}: {detail}")
        if isinstance(exc, aiohttp.ClientError | OSError):
            return ReadError(f"connection error ({where}): {_first_line(exc)}")
        return None


#: How the parser quotes the start of a TLS record (a handshake or an alert, TLS 1.0-1.3):
#: the reply of a TLS port to a plain-HTTP request.
_TLS_RECORD = re.compile(r"b'\\x1[56]\\x03\\x0[0-4]")

#: OpenSSL's reasons for a handshake with a peer that does not speak TLS (a plain-HTTP server
#: answers the ClientHello with "HTTP/1.1 400 …", read as a record of a version that does not
#: exist) or no TLS version the client accepts: the same on every attempt. Any other reason —
#: an EOF in mid-handshake above all, a server restarting — stays retryable.
_NO_TLS_REASONS = frozenset(
    {
        "WRONG_VERSION_NUMBER",
        "HTTP_REQUEST",
        "HTTPS_PROXY_REQUEST",
        "UNKNOWN_PROTOCOL",
        "PACKET_LENGTH_TOO_LONG",
        "RECORD_LAYER_FAILURE",
        "UNSUPPORTED_PROTOCOL",
        "TLSV1_ALERT_PROTOCOL_VERSION",
        "NO_PROTOCOLS_AVAILABLE",
    }
)

#: Where in CPython's ssl module an error was raised (``(_ssl.c:1006)``): noise in a message.
_SSL_SOURCE = re.compile(r"\s*\(_ssl\.c:\d+\)")

#: OpenSSL's verification codes (``X509_V_ERR_*``) that name what to check.
_NAME_MISMATCH = frozenset({62, 63, 64})  # host name, e-mail, IP address
_OUT_OF_DATES = frozenset({9, 10})  # not yet valid, expired


def _os_reason(error: OSError) -> str:
    """What an OS error says, never nothing: a TLS handshake the server closes in the middle
    raises a ``ConnectionResetError()`` with no text at all."""
    said = error.strerror or str(error)
    if said:
        return said
    if isinstance(error, ConnectionError):
        return "the server closed the connection"
    return type(error).__name__


def _no_tls_there(error: OSError) -> bool:
    """Whether a failed handshake says the peer does not speak (a usable) TLS."""
    return isinstance(error, _ssl.SSLError) and getattr(error, "reason", None) in _NO_TLS_REASONS


def _certificate_problem(where: str, exc: aiohttp.ClientConnectorCertificateError) -> str:
    """The one line for a certificate that does not verify: what failed and what to check."""
    error = exc.certificate_error
    code = getattr(error, "verify_code", None)
    said = getattr(error, "verify_message", None) or _SSL_SOURCE.sub("", _first_line(error))
    if code in _NAME_MISMATCH:
        check = "check the host name in the URL: the certificate does not name it"
    elif code in _OUT_OF_DATES:
        check = "check the server's certificate dates and this machine's clock"
    else:
        check = (
            "check the CA bundle: SSL_CERT_FILE / SSL_CERT_DIR, or the ssl context given to "
            "the transport, must hold the CA that signed the server's certificate"
        )
    return (
        f"cannot connect to {where}: TLS certificate verify failed ({redact(said)[:200]}); {check}"
    )


def _without_cut_secrets(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` without the start of a secret that a quote was cut in: aiohttp quotes the first
    100 bytes of an over-long header line and then ``...``, and a secret cut there is only a
    prefix, which no redaction of whole secrets finds."""
    for secret in secrets:
        for size in range(len(secret) - 1, 3, -1):
            cut = secret[:size] + "..."
            if cut in text:
                text = text.replace(cut, "[redacted]...")
                break
    return text


def _first_line(exc: BaseException | str) -> str:
    text = str(exc).strip() or type(exc).__name__
    return redact(text.splitlines()[0])[:300]  # (redacted whole: a cut base64 run stays data)


class _AiohttpResponse:
    """:class:`~rxturn.transport.HttpResponse` over an :class:`aiohttp.ClientResponse`; its
    body is read through the response itself (its own async iterator: no object of its own).

    The body is read in bounded slices, decompressed here, and paced: each :meth:`next_slice`
    returns at most :data:`SLICE_BYTES`; it yields to the event loop first when
    :data:`YIELD_INTERVAL` has passed since the body last did (the consumer's work on the
    previous slice counts, since it runs between two calls). A read that fails is mapped by
    :class:`map_aiohttp_errors`, built for the request only then.
    """

    __slots__ = (
        "_closed",
        "_connect_timeout",
        "_content",
        "_eof",
        "_error",
        "_headers",
        "_inflater",
        "_read_timeout",
        "_response",
        "_since",
        "_url",
        "headers",
        "status",
    )

    def __init__(
        self,
        response: aiohttp.ClientResponse,
        url: str,
        headers: Mapping[str, str],
        *,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        max_expansion_ratio: float = DEFAULT_MAX_EXPANSION_RATIO,
    ) -> None:
        self._response = response
        self._url = url  # shown without its secrets (``display_url``) only when needed
        self._headers = headers  # the request's: its secrets worked out only for an error
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._closed = False
        # the response's own, read once (plain attributes: a turn reads each once or twice)
        self.status: int = response.status
        self.headers: Mapping[str, str] = response.headers
        inflater: Inflater | None = None
        error: RxturnError | None = None
        encoding = response.headers.get("content-encoding")
        if encoding is not None:
            # the header repeated is one list (RFC 9110 §5.3): "gzip" twice is gzip stacked
            encoding = ", ".join(response.headers.getall("content-encoding"))
            try:
                inflater = inflater_for(
                    encoding,
                    max_bytes=max_decompressed_bytes,
                    max_ratio=max_expansion_ratio,
                    where=_safe_url(url),
                )
            except RxturnError as exc:  # raised when the body is read: the status still counts
                error = exc
        self._content = response.content
        self._inflater = inflater
        self._error = error  # the body cannot be decoded (an unsupported Content-Encoding)
        self._eof = False
        self._since = time.monotonic()

    def __repr__(self) -> str:
        return f"<AiohttpResponse {self._response.status} {_safe_url(self._url)}>"

    def aiter_bytes(self) -> _AiohttpResponse:
        return self

    def __aiter__(self) -> _AiohttpResponse:
        return self

    def _errors(self) -> map_aiohttp_errors:
        return map_aiohttp_errors(
            self._url,
            connect_timeout=self._connect_timeout,
            read_timeout=self._read_timeout,
            headers=self._headers,
        )

    async def __anext__(self) -> bytes:
        """The next slice of the (decompressed) body (one coroutine per slice)."""
        if self._error is not None:
            raise self._error
        now = time.monotonic()
        if now - self._since >= YIELD_INTERVAL:
            await asyncio.sleep(0)  # let timers, cancels and other tasks run
            self._since = time.monotonic()
        inflater = self._inflater
        while True:
            if inflater is not None and inflater.pending:
                out = inflater.step(SLICE_BYTES)
                if out:
                    return out
                continue
            if self._eof:
                raise StopAsyncIteration
            error: RxturnError | None = None
            try:
                raw = await self._content.read(SLICE_BYTES)
            except Exception as exc:
                error = self._errors().translate(exc)
                if error is None:
                    raise
                raw = b""
            if error is not None:
                try:
                    raise error  # outside the except block: no third-party __context__
                finally:
                    error = None  # this frame is in its traceback: holding it makes a cycle
            if not raw:
                self._eof = True
                if inflater is not None:
                    inflater.finish()  # only checks: nothing is left to step out
                raise StopAsyncIteration
            if inflater is None:
                return raw
            inflater.feed(raw)

    async def next_slice(self) -> bytes:
        """The next slice of the body; ``b""`` at its end."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            return b""

    async def read(self, limit: int) -> bytes:
        declared = self._response.content_length
        if declared is not None and declared > limit:
            raise StreamProtocolError(
                f"response body of {declared} bytes exceeds the {limit}-byte limit",
                where=_safe_url(self._url),
            )
        buffer = CappedBody(limit, _safe_url(self._url))
        while True:
            chunk = await self.next_slice()
            if not chunk:
                return buffer.value()
            buffer.add(chunk)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._response.content.at_eof():
            self._response.release()  # fully read: the connection goes back to the pool
        else:
            self._response.close()  # unread body: drop the connection; the server sees it


def _lazy_read_timer_supported() -> bool:
    """Whether aiohttp's protocol still has the read-timer hooks :class:`_IdleTimedProtocol`
    overrides (checked once: another aiohttp keeps its own timer, with the same bound)."""
    probe = ResponseHandler
    hooks = (
        "_reschedule_timeout",
        "_drop_timeout",
        "_on_read_timeout",
        "start_timeout",
        "connection_lost",
    )
    return all(callable(getattr(probe, name, None)) for name in hooks)


class _IdleTimedProtocol(ResponseHandler):
    """aiohttp's response protocol, its read timeout kept on one lazily re-armed timer per
    connection.

    aiohttp re-arms ``sock_read`` on every ``data_received`` (cancel, then a new timer), and
    cancels it when a response ends. Here a chunk only stamps its arrival; the one timer, armed
    when a request first goes out on the connection (aiohttp's ``start_timeout``), re-arms
    itself on firing at ``last chunk + read_timeout`` while data keeps coming, and raises
    aiohttp's own timeout error once the silence really reached it. Where aiohttp drops the
    timeout (the response's end, pausing for flow control, an error), the timer is left armed
    but *idle*: firing idle, it lapses without a word, and the next request (or a resume) on the
    connection wakes it again, so a kept-alive connection arms one timer per read timeout's span,
    not one per request. Losing the connection cancels it. Closing the connection from this
    side while a body is being read (the transport closed mid-stream) ends that read with an
    error (:meth:`_end_body`).
    """

    _last_data = 0.0
    _idle = True  # no response is waiting for data: the armed timer, if any, lapses on firing

    def _reschedule_timeout(self) -> None:
        timeout = self._read_timeout
        if not timeout:
            self._cancel_read_timer()
            return
        now = self._loop.time()
        self._last_data = now
        self._idle = False
        handle = self._read_timeout_handle
        if handle is not None and handle.when() > now + timeout:  # armed for a longer bound
            handle.cancel()
            handle = None
        if handle is None:
            self._read_timeout_handle = self._loop.call_at(now + timeout, self._on_read_timeout)

    def _drop_timeout(self) -> None:
        self._idle = True

    def _cancel_read_timer(self) -> None:
        self._idle = True
        handle = self._read_timeout_handle
        if handle is not None:
            handle.cancel()
            self._read_timeout_handle = None

    def connection_lost(self, exc: BaseException | None) -> None:
        super().connection_lost(exc)
        self._cancel_read_timer()

    def close(self) -> None:
        self._end_body()
        super().close()

    def abort(self) -> None:
        self._end_body()
        super().abort()

    def _end_body(self) -> None:
        """The connection is being closed from this side: a body still being read gets an error.

        aiohttp detaches the body from a connection it closes, unended, so a task reading it (a
        turn streaming while its client's transport is closed) would wait for ever: the read
        timer goes with the connection. Only a close from this side comes here; a body whose
        own reader closed it has no one waiting."""
        payload = self._payload
        if payload is not None and self.transport is not None and not payload.is_eof():
            payload.set_exception(
                aiohttp.ClientConnectionError(
                    "the transport was closed while the body was being read"
                )
            )

    def _on_read_timeout(self) -> None:
        self._read_timeout_handle = None
        timeout = self._read_timeout
        if not timeout or self._idle:
            return
        due = self._last_data + timeout
        if due > self._loop.time():  # data came since the timer was armed: wait for the rest
            self._read_timeout_handle = self._loop.call_at(due, self._on_read_timeout)
            return
        super()._on_read_timeout()


_LAZY_READ_TIMER = _lazy_read_timer_supported()
#: ``ClientSession.request`` only wraps aiohttp's request coroutine, ``_request``, in its
#: context manager; awaited, the two are the same request. The wrapper is costly to make: its
#: class is a subscripted generic (``_BaseRequestContextManager[ClientResponse]``), whose call
#: tries to set ``__orig_class__`` on a slotted instance and swallows the AttributeError, about
#: 3 us a request. An aiohttp without ``_request`` is asked the public way.
_DIRECT = inspect.iscoroutinefunction(getattr(aiohttp.ClientSession, "_request", None))


class AiohttpTransport:
    """An :class:`~rxturn.transport.AsyncTransport` over one pooled aiohttp session.

    Args:
        connect_timeout: seconds to open a TCP (+TLS) connection.
        read_timeout: longest silence tolerated while waiting for headers or body data
            (an idle timeout, not a total deadline); ``None`` disables it.
        limit: most simultaneous connections in the pool.
        limit_per_host: most simultaneous connections to one host (0 = no per-host limit).
        keepalive_timeout: seconds an idle pooled connection is kept.
        ssl: ``True`` (verify: with ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` when ``trust_env``
            and they are set, else the system store), ``False`` (no verification — only for
            local servers), or an :class:`ssl.SSLContext` (custom CA; the environment's is then
            not read).
        trust_env: honour the environment's proxies (``HTTPS_PROXY``, ``HTTP_PROXY``,
            ``ALL_PROXY``, ``NO_PROXY``) and CA bundle (``SSL_CERT_FILE``, ``SSL_CERT_DIR``),
            as the SDKs' HTTP client does (on by default); ``False`` ignores them all.
        max_decompressed_bytes: most bytes one compressed response may inflate to (256 MiB);
            past it the read fails with :class:`~rxturn.errors.DecompressionLimitError`.
        max_expansion_ratio: most decompressed bytes per compressed byte (100), checked once a
            body has inflated past 16 MiB; past it, the same error.

    Raises:
        ConfigError: a timeout is not a finite number of seconds > 0 (``None`` is how to
            disable the read timeout), or a limit is not a positive number.

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
        trust_env: bool = True,
        max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
        max_expansion_ratio: float = DEFAULT_MAX_EXPANSION_RATIO,
    ) -> None:
        _seconds("connect_timeout", connect_timeout)
        _positive("max_expansion_ratio", max_expansion_ratio)
        if (
            isinstance(max_decompressed_bytes, bool)
            or not isinstance(max_decompressed_bytes, int)  # pyright: ignore[reportUnnecessaryIsInstance]
            or max_decompressed_bytes < 1
        ):
            raise ConfigError(
                "AiohttpTransport: max_decompressed_bytes must be an integer >= 1, "
                f"got {shown(max_decompressed_bytes, 100)}"
            )
        if read_timeout is not None:
            _seconds("read_timeout", read_timeout)
        _seconds("keepalive_timeout", keepalive_timeout)
        if not positive(limit, integer=True):  # callers may be untyped
            raise ConfigError(
                f"AiohttpTransport: limit must be an integer >= 1, got {shown(limit, 100)}"
            )
        if not positive(limit_per_host, integer=True, allow_zero=True):
            raise ConfigError(
                "AiohttpTransport: limit_per_host must be an integer >= 0, got "
                f"{shown(limit_per_host, 100)}"
            )
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = None if read_timeout is None else float(read_timeout)
        self.limit = limit
        self.limit_per_host = limit_per_host
        self._keepalive_timeout = float(keepalive_timeout)
        if not isinstance(ssl, bool | _ssl.SSLContext):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                "AiohttpTransport: ssl must be True, False or an ssl.SSLContext, got "
                f"{shown(ssl, 100)}"
            )
        if not isinstance(trust_env, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"AiohttpTransport: trust_env must be a bool, got {shown(trust_env, 100)}"
            )
        self._ssl = ssl
        self._trust_env = trust_env
        #: the environment's proxies, read when the pool opens (``trust_env``); ``{}`` = none
        self._proxies: dict[str, str] = {}
        self.max_decompressed_bytes = max_decompressed_bytes
        self.max_expansion_ratio = as_float(max_expansion_ratio)  # a huge int: inf, no bound
        #: each event loop's pool (a loop in each of two threads: a pool each)
        self._pools: dict[asyncio.AbstractEventLoop, _Pool] = {}
        #: (loop, session) of the last request: one read finds it, whatever other threads do
        self._recent: tuple[asyncio.AbstractEventLoop, aiohttp.ClientSession] | None = None
        #: held while ``_pools`` changes (loops in other threads change it too)
        self._opening = threading.Lock()

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
        """True when no pool is open (never opened, or closed by :meth:`aclose` or with its
        loop)."""
        return all(pool.session.closed for pool in list(self._pools.values()))

    async def _session_for(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        """The pool of ``loop``: its open one, or a new one.

        Pools whose loop closed without a shutdown that closed them are let go on the way:
        their connections went with their loop, and closing the session only marks it so
        (aiohttp leaves a closed loop alone), which keeps it from being reported unclosed.
        """
        dead: list[aiohttp.ClientSession] = []
        with self._opening:
            pool = self._pools.get(loop)
            if pool is not None and not pool.session.closed:
                self._recent = (loop, pool.session)
                return pool.session
            for other, kept in list(self._pools.items()):
                if other.is_closed() or kept.session.closed:
                    del self._pools[other]
                    dead.append(kept.session)
            pool = self._pools[loop] = _Pool(self._open(loop))
            self._recent = (loop, pool.session)
        for session in dead:
            if not session.closed:
                await session.close()
        keeper = _pool_keeper(pool.session)
        await keeper.asend(None)  # registered with this loop's async generators
        with self._opening:
            if self._pools.get(loop) is pool:
                pool.keeper = keeper
                return pool.session
        await keeper.aclose()  # closed meanwhile (aclose): closes the session
        return pool.session

    def _open(self, loop: asyncio.AbstractEventLoop) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self.limit,
            limit_per_host=self.limit_per_host,
            keepalive_timeout=self._keepalive_timeout,
            ssl=self._ssl,
        )
        factory = getattr(connector, "_factory", None)
        if (
            _LAZY_READ_TIMER
            and isinstance(factory, functools.partial)
            and factory.func is ResponseHandler
        ):
            connector._factory = functools.partial(_IdleTimedProtocol, loop=loop)  # pyright: ignore[reportAttributeAccessIssue, reportPrivateUsage]
        self._proxies = _environment_proxies() if self._trust_env else {}
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=self.connect_timeout, sock_read=self.read_timeout
            ),
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,  # rxturn inflates bodies itself, in bounded steps
            trust_env=False,  # proxies and CAs are read here, explicitly; .netrc never
            raise_for_status=False,
        )

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
        loop = asyncio.get_running_loop()
        recent = self._recent
        if recent is not None and recent[0] is loop and not recent[1].closed:
            session = recent[1]
        else:
            session = await self._session_for(loop)
        connect_timeout, read_timeout = self.connect_timeout, self.read_timeout
        sent = dict(headers)
        for name in sent:  # (a loop, not a generator: asked of every request)
            # only a name of its length can lower to it: the others are not lowered at all
            if len(name) == _ACCEPT_ENCODING_LENGTH and name.lower() == "accept-encoding":
                break
        else:
            sent["accept-encoding"] = ACCEPT_ENCODING  # only what _inflate decodes
        try:
            request = session._request if _DIRECT else session.request  # pyright: ignore[reportPrivateUsage]
            response = await request(
                method,
                url,
                headers=sent,
                # megabytes of inline media: as raw bytes, aiohttp warns (ResourceWarning,
                # "might lock the event loop") and writes them in one go
                data=io.BytesIO(body) if len(body) > LARGE_BODY_BYTES else body,
                allow_redirects=False,
                proxy=self._proxy_for(url) if self._proxies else None,
                # (an http: URL is never verified: no call to find out)
                ssl=self._ssl if url.startswith("http:") else self._ssl_for(url),
            )
        except Exception as exc:
            # the mapper is made for a request that failed only (its secrets, later still)
            errors = map_aiohttp_errors(
                url, connect_timeout=connect_timeout, read_timeout=read_timeout, headers=headers
            )
            error = errors.translate(exc)
            if error is None:
                raise
        else:
            return _AiohttpResponse(
                response,
                url,
                headers,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                max_decompressed_bytes=self.max_decompressed_bytes,
                max_expansion_ratio=self.max_expansion_ratio,
            )
        try:
            raise error  # outside the except block: no third-party __context__
        finally:
            error = None  # this frame is in its traceback: holding it makes a cycle

    def _proxy_for(self, url: str) -> str | None:
        """The proxy the environment names for ``url`` (``None``: direct, or ``NO_PROXY``)."""
        parts = urlsplit(url)
        proxy = self._proxies.get(parts.scheme) or self._proxies.get("all")
        if proxy is None or not parts.hostname:
            return None
        # urllib's NO_PROXY matching (hosts, domain suffixes, host:port, ``*``), as SDKs use it
        if urllib.request.proxy_bypass_environment(parts.netloc, self._proxies):  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
            return None
        return proxy

    def _ssl_for(self, url: str) -> _ssl.SSLContext | bool:
        """What verifies an ``https`` URL: the caller's choice, else the (environment's) CAs."""
        if self._ssl is not True or not url.startswith("https:"):
            return self._ssl
        if self._trust_env:
            return _verifying_context(
                os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
            )
        return _verifying_context(None, None)

    async def aclose(self) -> None:
        """Close the pools and their connections (idempotent; a later send reopens).

        The pool of the running loop is closed before this returns; the pool of another loop
        that is still open (in another thread) is closed on that loop, by the loop (at once if
        it runs, else when it runs again or shuts down).
        """
        with self._opening:
            pools, self._pools, self._recent = self._pools, {}, None
        running = asyncio.get_running_loop()
        for loop, pool in pools.items():
            if pool.session.closed:
                continue
            if loop is running and pool.keeper is not None:
                await pool.keeper.aclose()  # closes the session
            elif loop.is_closed():
                await pool.session.close()  # (only marks it: aiohttp leaves a closed loop alone)
            # else: the keeper, dropped here, is closed by its own loop, and closes the pool
            # (a pool of this loop still without one: _session_for closes it, finding it gone)


class _Pool:
    """One loop's connection pool, and the keeper that closes it with the loop."""

    __slots__ = ("keeper", "session")

    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session
        self.keeper: AsyncGenerator[None, None] | None = None


async def _pool_keeper(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    """Closes ``session`` when its event loop shuts down, or when the transport is dropped.

    Started once (``asend(None)``) on the pool's loop, it is one of the loop's async
    generators: ``loop.shutdown_asyncgens()``, which ``asyncio.run`` calls before closing the
    loop, closes it, and so does the loop's finalizer when the transport (its only holder) is
    garbage-collected while the loop is open. Either way the pool closes on its own loop, where
    its connections are: no "Unclosed client session" at exit, nothing left for the next loop.
    A generator, not a task: nothing shows in ``asyncio.all_tasks()``.
    """
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


_ACCEPT_ENCODING_LENGTH = len("accept-encoding")


def _environment_proxies() -> dict[str, str]:
    """``{scheme: proxy URL}`` from ``*_PROXY`` (lower case wins), with ``no`` for ``NO_PROXY``.

    A proxy URL without a scheme (``HTTPS_PROXY=proxy:3128``) is taken as ``http://``, as the
    SDKs' client takes it.
    """
    proxies: dict[str, str] = {}
    for scheme, value in urllib.request.getproxies_environment().items():
        if scheme not in ("http", "https", "all", "no") or not value.strip():
            continue
        value = value.strip()
        if scheme != "no" and "://" not in value:
            value = "http://" + value
        proxies[scheme] = value
    return proxies


@functools.lru_cache(maxsize=8)
def _verifying_context(cafile: str | None, capath: str | None) -> _ssl.SSLContext:
    """A verifying TLS context: the given CA file/directory, else OpenSSL's compiled-in store.

    Built once per (file, directory) and process: loading a CA store takes milliseconds.
    """
    cafile = cafile or None
    capath = capath or None
    if cafile is None and capath is None:
        paths = _ssl.get_default_verify_paths()
        cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
        capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    try:
        return _ssl.create_default_context(cafile=cafile, capath=capath)
    except (OSError, _ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the CA bundle {shown(cafile or capath)}: {exc}") from None


def _positive(name: str, value: object) -> None:
    if not positive(value):
        raise ConfigError(
            f"AiohttpTransport: {name} must be a positive number, got {shown(value, 100)}"
        )


def _seconds(name: str, value: object) -> None:
    """A timeout: finite seconds > 0 (aiohttp fails on an infinite one, later and obscurely)."""
    problem = seconds_problem(value)
    if problem is not None:
        raise ConfigError(f"AiohttpTransport: {name} {problem}")
