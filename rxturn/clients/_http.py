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
* Secrets: the key lives in a :class:`_Secret` (its repr is ``'***'``), is only ever placed in the
  request headers, and is scrubbed from every error body; logs carry method, URL (without query),
  model and stream flag — never headers.
"""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypedDict
from urllib.parse import urlsplit

import reactivex
from reactivex import Observable, abc

from .._headers import header
from .._validate import positive
from .._version import __version__
from ..errors import (
    APIStatusError,
    ConfigError,
    ProviderError,
    RxturnError,
    StreamProtocolError,
    TransportError,
    UnexpectedResponseError,
    redact,
    scrub_secrets,
    status_error,
)
from ..events import EventBatch, StreamEvent
from ..messages import Message, Request, RequestOptions
from ..resilience.backoff import parse_retry_after
from ..sources import Bridge, open_bridge
from ..transport._base import display_url as _safe_url
from ._base import keeps_thinking
from ._request import check_max_tokens, encode_body, resolve_model

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

#: Error bodies are read up to this many bytes (docs/reliability.md).
ERROR_BODY_LIMIT = 8 * 1024
#: Non-streaming reply bodies larger than this are refused (docs/reliability.md).
REPLY_BODY_LIMIT = 10 * 1000 * 1000
#: Non-streaming replies larger than this are parsed in a worker thread, off the event loop
#: (docs/reliability.md): the worst shapes of this size parse in about 10 ms.
_PARSE_INLINE_BYTES = 256 * 1024

_log = logging.getLogger("rxturn.clients")
_BAD_HEADER_CHARS = re.compile(r"[\r\n\x00]")
_USER_AGENT = f"rxturn/{__version__}"


class HttpSettings(TypedDict, total=False):
    """The connection settings every client constructor takes as keywords (for ``**kwargs``
    of the ``from_env`` constructors)."""

    extra_headers: Mapping[str, str] | None
    transport: AsyncTransport | None
    connect_timeout: float
    read_timeout: float | None


class _Secret:
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


# --- header parsing (pure, unit-tested) -------------------------------------------------------


def parse_should_retry(value: str | None) -> bool | None:
    """The ``x-should-retry`` header verdict: ``"true"`` / ``"false"``, else ``None``."""
    if value is None:
        return None
    lowered = value.strip().lower()
    return True if lowered == "true" else False if lowered == "false" else None


def _check_headers(headers: Mapping[str, str], where: str) -> None:
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{where}: header names and values must be strings ({name!r})")
        if not name or _BAD_HEADER_CHARS.search(name) or _BAD_HEADER_CHARS.search(value):
            raise ConfigError(f"{where}: header {name!r} contains a line break or NUL character")


def _check_base_url(base_url: str) -> str:
    if not isinstance(base_url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"base_url must be a string, got {type(base_url).__name__}")
    try:
        parts = urlsplit(base_url.strip())
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise ConfigError(f"base_url {base_url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"base_url must be an absolute http(s) URL such as 'https://api.example.com', "
            f"got {redact(base_url)!r}"
        )
    if parts.username or parts.password:
        raise ConfigError("base_url must not contain credentials; pass api_key instead")
    return base_url.strip().rstrip("/")


def _check_timeout(name: str, value: float | None, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not positive(value):
        raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")


# --- error bodies -----------------------------------------------------------------------------

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_SCRIPT = re.compile(r"<(script|style)[^>]*>.*?</\1>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")


def _readable(raw: bytes, content_type: str) -> str:
    """A one-line summary of a non-JSON error body (an HTML page from a proxy, plain text)."""
    text = raw.decode("utf-8", "replace").strip()
    is_html = "html" in content_type.lower() or text[:1] == "<"
    if is_html:
        title = _TITLE.search(raw)
        if title:
            summary = _SPACE.sub(" ", html.unescape(title.group(1).decode("utf-8", "replace")))
        else:
            summary = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", _SCRIPT.sub(" ", text))))
        summary = summary.strip()
        return f"{summary[:200]} (HTML error page)" if summary else "(HTML error page)"
    return _SPACE.sub(" ", text)[:300]


async def _read_error_body(response: HttpResponse) -> tuple[bytes, str]:
    """At most :data:`ERROR_BODY_LIMIT` bytes of an error body, and a note if reading failed.

    The rest of a longer body is never read: closing the response drops the connection.
    """
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            parts.append(chunk)
            size += len(chunk)
            if size >= ERROR_BODY_LIMIT:
                return b"".join(parts)[:ERROR_BODY_LIMIT], ""
    except TransportError as exc:
        return b"".join(parts), f" [error body unreadable: {exc}]"
    return b"".join(parts), ""


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
            raise ConfigError(f"{name}: model must be a non-empty string, got {model!r}")
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
        _check_timeout("connect_timeout", connect_timeout)
        _check_timeout("read_timeout", read_timeout, optional=True)
        headers = dict(extra_headers or {})
        _check_headers(headers, f"{name}: extra_headers")
        self._model = model
        self._base_url = _check_base_url(base_url)
        self._url = self._base_url + self._path
        self._key = _Secret(api_key) if api_key else None
        self._extra_headers = headers
        self._transport = transport
        self._owns_transport = transport is None
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        check_max_tokens(name, max_tokens, required=self._max_tokens_required)
        self._max_tokens = max_tokens

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
        """Close the client's own connection pool (a transport passed in is left open)."""
        if self._owns_transport and self._transport is not None:
            transport, self._transport = self._transport, None
            await transport.aclose()

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
        opts = options or RequestOptions()
        return open_bridge(observer, scheduler, _Attempt(self, request, opts).run, None, _WHAT)

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
        url, headers, body, model = self._prepare(request, opts, stream=False)
        try:
            response = await self._get_transport().send(
                "POST", url, headers=headers, body=body, stream=False
            )
            try:
                if not 200 <= response.status < 300:
                    raise await self._status_error(response)
                media = _media_type(response.headers)
                if media in _HTML_TYPES:
                    raise self._unexpected(response, media, await _read_head(response), False)
                data = await response.read(REPLY_BODY_LIMIT)
            finally:
                await response.aclose()
            if not data.strip():
                raise self._unexpected(response, media, data, False)
            keep = keeps_thinking(self, opts)
            try:
                if len(data) <= _PARSE_INLINE_BYTES:
                    return self._parse_reply(data, keep_thinking=keep)
                # A big reply costs tens to hundreds of ms of Python work (one object per
                # content block): parse it in a worker thread so the loop keeps running.
                return await asyncio.to_thread(self._parse_reply, data, keep_thinking=keep)
            except StreamProtocolError as exc:
                if type(exc) is not StreamProtocolError or _is_json_type(media):
                    raise  # a JSON reply that is broken, or an invalid tool input: as it is
                raise self._unexpected(response, media, data, False, exc) from None
        except Exception as exc:
            self._scrub(exc)
            self._log_failure(model, False, exc)
            raise

    async def _stream_into(
        self, request: Request, options: RequestOptions, bridge: Bridge[EventBatch]
    ) -> None:
        """Send one streaming request and push each chunk's events to ``bridge`` until the
        body ends or the bridge is disposed (the response is closed either way)."""
        from ..wire import decoder_for

        url, headers, body, model = self._prepare(request, options, stream=True)
        try:
            response = await self._get_transport().send(
                "POST", url, headers=headers, body=body, stream=True
            )
            try:
                if not 200 <= response.status < 300:
                    raise await self._status_error(response)
                media = _media_type(response.headers)
                if media in _HTML_TYPES:
                    raise self._unexpected(response, media, await _read_head(response), True)
                if media == "application/json" and media not in self._stream_types:
                    raise await self._json_instead_of_stream(response)
                decoder = decoder_for(self.wire_format)
                feed: Callable[[bytes], list[StreamEvent]] = decoder.feed
                chunks = aiter(response.aiter_bytes())
                # Until the first event, keep how the body starts: a body that turns out not to
                # be the stream (no content type, or another one) says so with its first bytes.
                head = b""
                events: list[StreamEvent] = []
                async for chunk in chunks:
                    if len(head) < _HEAD_BYTES:
                        head += chunk[: _HEAD_BYTES - len(head)]
                    try:
                        events = feed(chunk)
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
                        if not head or media not in self._stream_types or _looks_html(head):
                            raise self._unexpected(response, media, head, True)
                        return  # the stream's own type and no event: truncated; the handler decides
                emit = bridge.emit
                emit(events)
                if bridge.disposed:
                    return
                decoder.check()
                async for chunk in chunks:
                    events = feed(chunk)
                    if events:
                        emit(events)
                        if bridge.disposed:
                            return
                        # A decoder defers an error found after good events in the same chunk
                        # (so those reach observers first); surface it now, not at the next
                        # chunk, which may never come.
                        decoder.check()
                events = decoder.close()
                if events:
                    emit(events)
            finally:
                await response.aclose()
        except Exception as exc:
            self._scrub(exc)
            self._log_failure(model, True, exc)
            raise

    # -- internals -----------------------------------------------------------------------------

    def _prepare(
        self, request: Request, options: RequestOptions, *, stream: bool
    ) -> tuple[str, dict[str, str], bytes, str]:
        model = resolve_model(options, self._model)
        body = encode_body(self._body(request, options, model=model, stream=stream))
        headers = {
            "content-type": "application/json",
            "accept": self._stream_accept if stream else "application/json",
            "user-agent": _USER_AGENT,
        }
        headers.update(self._auth_headers(self._key.reveal() if self._key else None))
        headers.update(self._extra_headers)
        if options.extra_headers:
            _check_headers(options.extra_headers, "RequestOptions.extra_headers")
            headers.update(options.extra_headers)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("POST %s model=%s stream=%s", _safe_url(self._url), model, stream)
        return self._url, headers, body, model

    def _secrets(self) -> tuple[str, ...]:
        return (self._key.reveal(),) if self._key else ()

    def _scrub(self, exc: Exception) -> None:
        """The boundary where errors leave the client: no key anywhere in them (a hostile server
        may echo it back at us, in a body, a header, a redirect), no third-party exception behind
        them (aiohttp's may hold the request headers). See :func:`~rxturn.errors.scrub_secrets`."""
        if isinstance(exc, RxturnError):
            scrub_secrets(exc, self._secrets())

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
        """A 2xx JSON body where an event stream was asked for: usually an error in disguise.

        An error object keeps the provider's own classification (an overload still goes to the
        rate-limit ladder), its message saying where it came from; any other JSON document is an
        :class:`~rxturn.errors.UnexpectedResponseError`.
        """
        from ..wire import parse_error_body
        from ..wire._errors import stream_error

        raw, _ = await _read_error_body(response)
        error_type, error_message = parse_error_body(raw)
        if error_type is None and error_message is None:
            return self._unexpected(response, "application/json", raw, True)
        error = stream_error(error_type, error_message)
        error.message = (
            f"{error.message} (HTTP {response.status} application/json from "
            f"{_safe_url(self._url)} instead of an event stream)"
        )
        error.args = (error.message,)
        return error

    def _unexpected(
        self,
        response: HttpResponse,
        media: str,
        head: bytes,
        stream: bool,
        failure: StreamProtocolError | None = None,
    ) -> UnexpectedResponseError:
        """The error for a 2xx whose body is not what was asked for; see :func:`_judge`."""
        status = response.status
        expected = (
            ("an NDJSON stream" if self.wire_format == "ollama" else "an event stream")
            if stream
            else "a JSON reply"
        )
        reason, retryable = _judge(status, media, head, stream, failure)
        return UnexpectedResponseError(
            status_code=status,
            content_type=media,
            url=_safe_url(self._url),
            head=_preview(head, self._secrets()),
            expected=expected,
            reason=redact(reason, self._secrets()),
            retryable=retryable,
        )

    async def _status_error(self, response: HttpResponse) -> APIStatusError:
        headers = response.headers
        status = response.status
        raw, note = await _read_error_body(response)
        from ..wire import parse_error_body

        error_type, error_message = parse_error_body(raw)
        secrets = self._secrets()
        if 300 <= status < 400:
            location = header(headers, "location") or "(no location)"
            detail = (
                f"redirect to {redact(location, secrets)} not followed (rxturn never follows "
                "redirects, so an API key is never sent to another host; fix base_url)"
            )
        elif error_message is not None:
            detail = f"{error_type}: {error_message}" if error_type else error_message
        else:
            detail = _readable(raw, header(headers, "content-type") or "")
        text = raw.decode("utf-8", "replace")
        return status_error(
            status,
            redact(text + note, secrets),
            retry_after=parse_retry_after(headers),
            request_id=header(headers, "request-id") or header(headers, "x-request-id"),
            error_type=error_type,
            error_message=redact(detail, secrets) if detail else None,
            should_retry=parse_should_retry(header(headers, "x-should-retry")),
        )

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


# --- 2xx responses that are not what was asked for ------------------------------------------

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: Bytes of a body kept to show how it starts (more than the preview, so that a key cut by the
#: preview's end is still whole when it is scrubbed).
_HEAD_BYTES = 1024
_PREVIEW_CHARS = 160
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def _media_type(headers: Mapping[str, str]) -> str:
    """The declared media type, lower-cased, without parameters (``""`` when none)."""
    content_type = header(headers, "content-type") or ""
    return content_type.split(";", 1)[0].strip().lower()


def _is_json_type(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def _looks_html(head: bytes) -> bool:
    return head.lstrip()[:1] == b"<"


def _preview(head: bytes, secrets: tuple[str, ...]) -> str:
    """How a body starts, on one line: secrets removed, whitespace collapsed, cut short."""
    text = redact(head[: _HEAD_BYTES * 4].decode("utf-8", "replace"), secrets)
    text = _CONTROL.sub(" ", _SPACE.sub(" ", text)).strip()
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"


async def _read_head(response: HttpResponse) -> bytes:
    """The start of a body that will not be used (at most :data:`ERROR_BODY_LIMIT` bytes)."""
    raw, _ = await _read_error_body(response)
    return raw


def _judge(
    status: int, media: str, head: bytes, stream: bool, failure: StreamProtocolError | None
) -> tuple[str, bool]:
    """What a 2xx that is not the asked-for body most likely is, and whether a retry can help.

    The rule of thumb: retry when something between us and the provider may have spoiled this
    one response; do not when the response shows the request reached the wrong thing, which
    answers the same way every time (``docs/reliability.md`` has the table).
    """
    if not head.strip():
        if status in (204, 205):
            # The server said on purpose that it has nothing for this request: the same request
            # gets the same answer (a wrong endpoint that accepts any POST).
            return "the server answered with no content", False
        # An upstream or a proxy closed before writing anything; the same as a stream cut off
        # before its first event, which the ladder retries.
        return "the body is empty", True
    if media in _HTML_TYPES or _looks_html(head):
        # A web page for people: a captive portal, a proxy's login page, a wrong base_url. It
        # will be the same page on the next attempt; retrying would only delay a clear error.
        title = _TITLE.search(head)
        named = ""
        if title:
            named = _SPACE.sub(" ", html.unescape(title.group(1).decode("utf-8", "replace")))
            named = f" ({named.strip()[:80]!r})" if named.strip() else ""
        return (
            f"an HTML page{named}: a captive portal, a proxy's login page or a wrong base_url?",
            False,
        )
    if stream and media == "application/json":
        # A JSON document without an error object: the server ignores "stream": true, and will
        # keep ignoring it.
        return 'a JSON document: does the server ignore "stream": true?', False
    if not stream and media == "text/event-stream":
        # The mirror case: the server streams although "stream" was false; it always will.
        return 'an event stream: does the server ignore "stream": false?', False
    # Another content type (or none) whose body does not decode: a misrouted request or an
    # intermediary's one-off answer; which one cannot be told, so a few quick retries decide.
    if failure is not None:
        return f"it does not decode ({failure})", True
    return "not a single event in it", True


_WHAT = "from_async_iterable"  # what a missing event loop is reported as (stream_batches)


class _Attempt:
    """One streaming attempt's arguments, bound for the bridge that drives it."""

    __slots__ = ("client", "options", "request")

    def __init__(self, client: HttpClient, request: Request, options: RequestOptions) -> None:
        self.client = client
        self.request = request
        self.options = options

    def run(self, bridge: Bridge[EventBatch]) -> Awaitable[None]:
        return self.client._stream_into(  # pyright: ignore[reportPrivateUsage]
            self.request, self.options, bridge
        )
