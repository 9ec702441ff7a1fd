"""What every HTTP provider client shares on the wire: one request, one response, typed errors.

A provider module (:mod:`~rxturn.clients.anthropic`, :mod:`~rxturn.clients.openai`,
:mod:`~rxturn.clients.ollama`) only says *what* to send — URL path, auth headers, JSON body (built
with the provider-agnostic helpers of :mod:`rxturn.clients._request`) — and which wire format
comes back. :class:`HttpClient` does the HTTP, the same way for all of them:

* ``stream`` is cold (:func:`rxturn.sources.from_async_iterable`): each subscription makes exactly
  one POST; body chunks go to the sans-IO decoder as they arrive and every decoded event is
  pushed at once (nothing is buffered); the response is closed in ``finally``, so disposing the
  subscription drops the connection. A stream that ends without its terminal event simply
  completes — the stream handler owns the truncation rule.
* ``create`` reads a body capped at 10 MB (Content-Length pre-check plus a streaming cap).
* A non-2xx status becomes a typed error (docs/behaviour.md §2.9): at most 8 KiB of the body is
  read, the provider's error ``type`` and message are extracted, ``Retry-After`` /
  ``retry-after-ms``, ``x-should-retry`` and the request id are kept, and
  :func:`~rxturn.errors.status_error` picks the class.
* Secrets: the key lives in a :class:`~rxturn.clients._connection.Secret` (its repr is
  ``'***'``), is only ever placed in the request headers, and is scrubbed from every error body;
  logs carry method, URL (without query), model and stream flag — never headers.

The connection settings (headers, base URL, timeouts, the key) are checked in
:mod:`rxturn.clients._connection`; reading error bodies and judging a 2xx that is not the body
asked for are :mod:`rxturn.clients._responses`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self
from urllib.parse import urlsplit

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from .._arguments import check_instance, shown
from .._version import __version__
from ..errors import (
    APIStatusError,
    ConfigError,
    ProviderError,
    RxturnError,
    StreamProtocolError,
    UnexpectedResponseError,
    redact,
    scrub_secrets,
)
from ..events import EventBatch, StreamEvent
from ..messages import Message, Request, RequestOptions
from ..resilience.backoff import parse_retry_after
from ..sources import Bridge, bridge_loop_here, start_bridge
from ..transport._base import display_url as _safe_url
from ..transport._base import request_secrets
from ..wire import decoder_for
from ..wire._lines import without_bom
from ._base import keeps_thinking
from ._connection import HttpSettings, check_base_url, check_headers, check_timeout
from ._connection import Secret as _Secret  # the name the tests know
from ._content import inline_media_bytes
from ._request import check_max_tokens, encode_body, resolve_model
from ._responses import (
    ERROR_BODY_LIMIT,
    HEAD_BYTES,
    HTML_TYPES,
    ErrorContext,
    is_json_type,
    json_instead_of_stream,
    looks_html,
    media_type,
    parse_should_retry,
    read_head,
    status_error_of,
    unexpected,
)

if TYPE_CHECKING:
    from ..transport import AsyncTransport, HttpResponse

__all__ = [
    "ERROR_BODY_LIMIT",
    "REPLY_BODY_LIMIT",
    "HttpClient",
    "HttpSettings",
    "parse_retry_after",
    "parse_should_retry",
]

#: Non-streaming reply bodies larger than this are refused (docs/reliability.md).
REPLY_BODY_LIMIT = 10 * 1000 * 1000
#: Non-streaming replies larger than this are parsed in a worker thread, off the event loop
#: (docs/reliability.md): the worst shapes of this size parse in about 10 ms.
_PARSE_INLINE_BYTES = 256 * 1024
#: Requests carrying more inline media than this are built and encoded in a worker thread:
#: base64 and JSON of a 30 MB image hold the loop for about 0.1 s, a 1 MiB one for ~4 ms.
_BUILD_INLINE_BYTES = 1024 * 1024

_log = logging.getLogger("rxturn.clients")
_USER_AGENT = f"rxturn/{__version__}"


# --- the client base --------------------------------------------------------------------------


class HttpClient:
    """The machinery behind every provider client (see the module docstring).

    Subclasses set the class attributes and implement :meth:`_body` and :meth:`_parse_reply`;
    :meth:`_auth_headers` defaults to a bearer token.
    """

    #: decoder format for :func:`rxturn.wire.decoder_for` (``"anthropic"``, ``"openai"``, …).
    wire_format: ClassVar[str]
    #: appended to ``base_url`` for every request.
    _path: ClassVar[str]
    #: ``Accept`` header of a streaming request.
    _stream_accept: ClassVar[str] = "text/event-stream"
    #: whether the API needs a ``max_tokens`` (else ``None`` omits it and the server decides).
    _max_tokens_required: ClassVar[bool] = False
    #: media types that announce the streamed wire format. A body of another type (or of none)
    #: is still decoded as the stream — some compatible servers label it oddly — but one that
    #: yields no event becomes an :class:`~rxturn.errors.UnexpectedResponseError`.
    _stream_types: ClassVar[frozenset[str]] = frozenset({"text/event-stream"})
    #: whether the provider wants thinking back in later requests when the request enables it
    #: (:func:`rxturn.clients.keeps_thinking`).
    replays_thinking: ClassVar[bool] = False
    #: the environment variable read for the key when none is given (as the provider's SDK
    #: reads it); ``None``: the provider has no conventional one.
    _key_variable: ClassVar[str | None] = None
    #: the provider's own endpoint: with it, a missing key is a ConfigError at construction.
    _own_base_url: ClassVar[str | None] = None
    #: (the key they were made with, the streaming path's, the other's): the headers every
    #: request sends but its own ``extra_headers``, made on first use and again if the key
    #: changes (a factory may set it after construction)
    _fixed_headers: tuple[_Secret | None, dict[str, str], dict[str, str]] | None = None

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None,
        base_url: str,
        max_tokens: int | None,
        extra_headers: Mapping[str, str] | None = None,
        transport: AsyncTransport | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float | None = 120.0,
    ) -> None:
        name = type(self).__name__
        if not isinstance(model, str) or not model.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{name}: model must be a non-empty string, got {shown(model, 100)}")
        if api_key is not None and (
            not isinstance(api_key, str)  # pyright: ignore[reportUnnecessaryIsInstance]
            or not api_key.strip()
            or any(ch.isspace() or ord(ch) < 32 for ch in api_key)
        ):
            # never echo the value: it is (almost) a key
            raise ConfigError(
                f"{name}: api_key must be a non-empty string without whitespace or control "
                "characters"
            )
        check_timeout("connect_timeout", connect_timeout)
        check_timeout("read_timeout", read_timeout, optional=True)
        check_instance(extra_headers, Mapping, f"{name}: extra_headers", "a dict", optional=True)
        if transport is not None:
            from ..transport._base import AsyncTransport as Transport

            check_instance(transport, Transport, f"{name}: transport", "an AsyncTransport")
        headers = dict(extra_headers or {})
        check_headers(headers, f"{name}: extra_headers")
        self._model = model
        self._base_url = check_base_url(base_url)
        self._url = self._base_url + self._path
        self._extra_headers = headers
        self._transport = transport
        self._owns_transport = transport is None
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        check_max_tokens(name, max_tokens, required=self._max_tokens_required)
        self._max_tokens = max_tokens
        if api_key is None:
            api_key = self._key_from_environment()
        self._key = _Secret(api_key) if api_key else None

    def _key_from_environment(self) -> str | None:
        """The key the SDK would use when none is given: ``_key_variable`` from the environment.

        An explicit ``api_key`` always wins. With the provider's own endpoint (no ``base_url``,
        or one on the provider's host however spelled) a missing key is a ConfigError now, not
        a 401 later; any other base URL (a local server, the fake provider, a compatible API)
        may go without one.
        """
        variable = self._key_variable
        if variable is None:
            return None
        value = os.environ.get(variable, "").strip()
        if value:
            if any(ch.isspace() or ord(ch) < 32 for ch in value):
                raise ConfigError(
                    f"{type(self).__name__}: {variable} holds whitespace or control characters"
                )
            return value
        # the provider's own host wants a key whatever the path, and went without one to
        # answer 401 after the retries
        if self._at_own_endpoint():
            raise ConfigError(
                f"{type(self).__name__}: no API key for {self._base_url}: pass api_key= or set "
                f"{variable}"
            )
        return None

    def _at_own_endpoint(self) -> bool:
        """Whether :attr:`base_url` is the provider's own host, however spelled
        (``HTTPS://API.OPENAI.COM/v1``, ``:443``), not a compatible server's."""
        own = self._own_base_url
        return own is not None and urlsplit(self._base_url).hostname == urlsplit(own).hostname

    # -- identity ------------------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The model used when ``RequestOptions.model`` does not override it."""
        return self._model

    @property
    def base_url(self) -> str:
        """Where requests go (no trailing slash)."""
        return self._base_url

    @property
    def url(self) -> str:
        """The URL a request is sent to: :attr:`base_url` plus the API's path."""
        return self._url

    @property
    def max_tokens(self) -> int | None:
        """The default output-token cap of a request (``None``: omitted, the server decides;
        Ollama's ``num_predict``). ``RequestOptions.max_tokens`` overrides it per request."""
        return self._max_tokens

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    # -- lifecycle -----------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's own connection pool (a transport passed in is left open).

        A request made after it opens a new pool. ``await client.close()``, the SDKs' name for
        it, is the same call.
        """
        if self._owns_transport and self._transport is not None:
            transport, self._transport = self._transport, None
            await transport.aclose()

    async def close(self) -> None:
        """:meth:`aclose`, under the name the ``anthropic`` and ``openai`` SDKs' async clients
        (and aiohttp's session) give it."""
        await self.aclose()

    def _get_transport(self) -> AsyncTransport:
        transport = self._transport
        if transport is None:
            from ..transport.aiohttp import AiohttpTransport  # aiohttp loads on first request

            transport = self._transport = AiohttpTransport(
                connect_timeout=self._connect_timeout, read_timeout=self._read_timeout
            )
        return transport

    # -- subclass hooks ------------------------------------------------------------------------

    def _auth_headers(self, key: str | None) -> dict[str, str]:
        """A bearer token (OpenAI-compatible servers, Ollama); no header without a key."""
        return {"authorization": f"Bearer {key}"} if key is not None else {}

    def _body(
        self, request: Request, options: RequestOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _parse_reply(self, body: bytes, *, keep_thinking: bool) -> Message:
        raise NotImplementedError

    # -- the two calls -------------------------------------------------------------------------

    def stream(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[StreamEvent]:
        """A cold Observable of one streaming attempt: one POST per subscription.

        Events are pushed as the bytes arrive. Disposing the subscription closes the response.
        Errors are :class:`~rxturn.errors.RxturnError` subclasses: ``ConfigError`` for a request
        that cannot be built, ``APIStatusError`` subclasses for a non-2xx status,
        ``TransportError`` for network failures, ``StreamProtocolError`` for malformed bytes and
        the in-stream error types. A stream cut short simply completes without ``MessageStop``.
        """
        from .._batching import unbatch_

        return unbatch_(self.stream_batches(request, options))

    def stream_batches(
        self, request: Request, options: RequestOptions | None = None
    ) -> Observable[EventBatch]:
        """:meth:`stream`, one item per network chunk: the events it completed, in order.

        The same request, events, errors and disposal as :meth:`stream`; chunks that complete
        no event emit nothing. This is what the stream handler subscribes: a long reply then
        costs one Rx emission per chunk instead of one per event.
        """
        opts = options or RequestOptions()

        def subscribe(
            observer: abc.ObserverBase[EventBatch], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return self.attach_batches(request, opts, observer, scheduler)

        return reactivex.create(subscribe)

    def attach_batches(
        self,
        request: Request,
        options: RequestOptions | None,
        observer: abc.ObserverBase[EventBatch],
        scheduler: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        """One subscription of :meth:`stream_batches`, without Rx's subscription wrappers:
        the attempt starts at once and pushes to ``observer``; the disposable lets it go.

        This is how the stream handler runs an attempt (it is the one observer of it); the
        items, errors and disposal are :meth:`stream_batches`'s. ``scheduler`` names the loop
        when this is called off it (an asyncio scheduler), as the subscribe-time scheduler does.
        """
        loop, here = bridge_loop_here(observer, scheduler, None, _WHAT)
        if loop is None:
            return Disposable()
        attempt = _Attempt(observer, loop, self, request, options or RequestOptions())
        return start_bridge(attempt, here=here)

    async def create(self, request: Request, options: RequestOptions | None = None) -> Message:
        """One non-streaming request; the whole reply (id, model, stop reason, usage).

        The reply keeps its thinking when :func:`~rxturn.clients.keeps_thinking` says so for
        these options, as the streaming fold of the engine does.

        Raises:
            ConfigError, APIStatusError, TransportError: as for :meth:`stream`.
            UnexpectedResponseError: a 2xx that is not a JSON reply (an HTML page, an empty
                body, an event stream, another content type that does not parse).
            StreamProtocolError: the reply is larger than 10 MB or does not parse.
        """
        opts = options or RequestOptions()
        url, headers, body, model = await self._prepared(request, opts, stream=False)
        try:
            response = await self._get_transport().send(
                "POST", url, headers=headers, body=body, stream=False
            )
            try:
                if not 200 <= response.status < 300:
                    raise await self._status_error(response)
                media = media_type(response.headers)
                if media in HTML_TYPES:
                    raise self._unexpected(response, media, await read_head(response), False)
                data = await response.read(REPLY_BODY_LIMIT)
            finally:
                await response.aclose()
            if not data.strip():
                raise self._unexpected(response, media, data, False)
            data = without_bom(data)
            keep = keeps_thinking(self, opts)
            try:
                if len(data) <= _PARSE_INLINE_BYTES:
                    return self._parse_reply(data, keep_thinking=keep)
                # A big reply costs tens to hundreds of ms of Python work (one object per
                # content block): parse it in a worker thread so the loop keeps running.
                return await asyncio.to_thread(self._parse_reply, data, keep_thinking=keep)
            except StreamProtocolError as exc:
                if type(exc) is not StreamProtocolError or is_json_type(media):
                    raise  # a JSON reply that is broken, or an invalid tool input: as it is
                raise self._unexpected(response, media, data, False, exc) from None
        except Exception as exc:
            self._scrub(exc, headers)
            self._log_failure(model, False, exc)
            raise

    async def _stream_into(
        self, request: Request, options: RequestOptions, bridge: Bridge[EventBatch]
    ) -> None:
        """Send one streaming request and push each chunk's events to ``bridge`` until the
        body ends or the bridge is disposed (the response is closed either way)."""

        url, headers, body, model = await self._prepared(request, options, stream=True)
        try:
            transport = self._transport  # (made on first use: no call once it is)
            if transport is None:
                transport = self._get_transport()
            response = await transport.send("POST", url, headers=headers, body=body, stream=True)
            try:
                if not 200 <= response.status < 300:
                    raise await self._status_error(response)
                media = media_type(response.headers)
                if media in HTML_TYPES:
                    raise self._unexpected(response, media, await read_head(response), True)
                if media == "application/json" and media not in self._stream_types:
                    raise await self._json_instead_of_stream(response)
                decoder = decoder_for(self.wire_format)
                chunks = aiter(response.aiter_bytes())
                # Until the first event, keep how the body starts: a body that turns out not to
                # be the stream (no content type, or another one) says so with its first bytes.
                head = b""
                events: list[StreamEvent]  # (never kept while the next chunk is awaited)
                async for chunk in chunks:
                    if len(head) < HEAD_BYTES:
                        head += chunk[: HEAD_BYTES - len(head)]
                    try:
                        events = decoder.feed(chunk)
                    except StreamProtocolError as exc:
                        if media in self._stream_types:
                            raise
                        raise self._unexpected(response, media, head, True, exc) from None
                    if events:
                        break
                else:  # the body ended before a single event
                    try:
                        events = decoder.close()
                    except StreamProtocolError as exc:
                        if media in self._stream_types:
                            raise
                        raise self._unexpected(response, media, head, True, exc) from None
                    if not events:
                        if not head or media not in self._stream_types or looks_html(head):
                            raise self._unexpected(response, media, head, True)
                        return  # the stream's own type and no event: truncated; the handler decides
                observer = bridge.observer  # (no bound method kept alive while it streams)
                observer.on_next(events)
                del events
                if bridge.disposed:
                    return
                decoder.check()
                async for chunk in chunks:
                    events = decoder.feed(chunk)
                    if events:
                        observer.on_next(events)
                        if bridge.disposed:
                            return
                        # A decoder defers an error found after good events in the same chunk
                        # (so those reach observers first); surface it now, not at the next
                        # chunk, which may never come.
                        decoder.check()
                    del events
                events = decoder.close()
                if events:
                    observer.on_next(events)
            finally:
                await response.aclose()
        except Exception as exc:
            self._scrub(exc, headers)
            self._log_failure(model, True, exc)
            raise

    # -- internals -----------------------------------------------------------------------------

    async def _prepared(
        self, request: Request, options: RequestOptions, *, stream: bool
    ) -> tuple[str, dict[str, str], bytes, str]:
        """:meth:`_prepare`, in a worker thread when the request carries megabytes of inline
        media (their base64 and JSON would hold the event loop for tenths of a second)."""
        if inline_media_bytes(request) <= _BUILD_INLINE_BYTES:
            return self._prepare(request, options, stream=stream)
        return await asyncio.to_thread(self._prepare, request, options, stream=stream)

    def _prepare(
        self, request: Request, options: RequestOptions, *, stream: bool
    ) -> tuple[str, dict[str, str], bytes, str]:
        model = self._model if options.model is None else resolve_model(options, self._model)
        body = encode_body(self._body(request, options, model=model, stream=stream))
        fixed = self._fixed_headers
        if fixed is None or fixed[0] is not self._key:
            fixed = self._fixed_headers = (
                self._key,
                self._constant_headers(stream=True),
                self._constant_headers(stream=False),
            )
        headers = dict(fixed[1] if stream else fixed[2])  # (each request its own dict)
        if options.extra_headers:
            check_headers(options.extra_headers, "RequestOptions.extra_headers")
            headers.update(options.extra_headers)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("POST %s model=%s stream=%s", _safe_url(self._url), model, stream)
        return self._url, headers, body, model

    def _constant_headers(self, *, stream: bool) -> dict[str, str]:
        """The headers every request of this client sends on one path (made once per key)."""
        headers = {
            "content-type": "application/json",
            "accept": self._stream_accept if stream else "application/json",
            "user-agent": _USER_AGENT,
        }
        headers.update(self._auth_headers(self._key.reveal() if self._key else None))
        headers.update(self._extra_headers)
        return headers

    def _secrets(self) -> tuple[str, ...]:
        """The key, and the credentials ``extra_headers`` carries (an Azure ``api-key``, a
        proxy's ``authorization`` given there instead of ``api_key``): what no error may quote."""
        key = (self._key.reveal(),) if self._key else ()
        if not self._extra_headers:
            return key
        return tuple(dict.fromkeys(key + request_secrets("", self._extra_headers)))

    def _scrub(self, exc: Exception, headers: Mapping[str, str]) -> None:
        """The boundary where errors leave the client: no credential of the request (the key,
        or one in its headers, ``RequestOptions.extra_headers`` included) anywhere in them (a
        hostile server may echo it back at us, in a body, a header, a redirect), no third-party
        exception behind them (aiohttp's may hold the request headers). See
        :func:`~rxturn.errors.scrub_secrets`."""
        if isinstance(exc, RxturnError):
            secrets = self._secrets() + request_secrets("", headers)
            scrub_secrets(exc, tuple(dict.fromkeys(secrets)))

    def scrub(self, error: BaseException) -> None:
        """Make an error raised *downstream* of this client safe to hand out, in place.

        What the client decoded can still reach an error after it left the client: the fold
        of a streamed reply runs in the stream handler and the engine, and its
        :class:`~rxturn.errors.InvalidToolInputError` keeps the tool arguments verbatim (model
        output, which a hostile server can fill with the key). Only the client knows its key,
        so the handler and the engine ask it, once per failed attempt or turn. An error that is
        not an :class:`~rxturn.errors.RxturnError` is left as it is.
        """
        if isinstance(error, RxturnError):
            scrub_secrets(error, self._secrets())

    async def _json_instead_of_stream(self, response: HttpResponse) -> ProviderError:
        """A 2xx JSON body where an event stream was asked for (:func:`json_instead_of_stream`)."""
        return await json_instead_of_stream(response, self._error_context())

    def _unexpected(
        self,
        response: HttpResponse,
        media: str,
        head: bytes,
        stream: bool,
        failure: StreamProtocolError | None = None,
    ) -> UnexpectedResponseError:
        """The error for a 2xx whose body is not what was asked for (:func:`unexpected`)."""
        return unexpected(response, media, head, stream, self._error_context(), failure)

    async def _status_error(self, response: HttpResponse) -> APIStatusError:
        """The typed error for a non-2xx response (:func:`status_error_of`)."""
        return await status_error_of(response, self._secrets())

    def _error_context(self) -> ErrorContext:
        return ErrorContext(_safe_url(self._url), self._secrets(), self.wire_format == "ollama")

    def _log_failure(self, model: str, stream: bool, exc: Exception) -> None:
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug(
                "POST %s model=%s stream=%s failed: %s: %s",
                _safe_url(self._url),
                model,
                stream,
                type(exc).__name__,
                redact(str(exc), self._secrets()),
            )


_WHAT = "from_async_iterable"  # what a missing event loop is reported as (stream_batches)


class _Attempt(Bridge[EventBatch]):
    """One streaming attempt: the bridge that drives :meth:`HttpClient._stream_into`."""

    __slots__ = ("client", "options", "request")

    def __init__(
        self,
        observer: abc.ObserverBase[EventBatch],
        loop: asyncio.AbstractEventLoop,
        client: HttpClient,
        request: Request,
        options: RequestOptions,
    ) -> None:
        super().__init__(observer, loop, None, _WHAT)
        self.client = client
        self.request = request
        self.options = options

    def produce(self) -> Awaitable[None]:
        return self.client._stream_into(  # pyright: ignore[reportPrivateUsage]
            self.request, self.options, self
        )
