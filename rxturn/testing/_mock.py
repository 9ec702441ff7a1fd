"""``MockTransport``: canned HTTP responses for a client, with no sockets at all.

Where :class:`~rxturn.testing.FakeProvider` is a real server speaking the providers' wire
formats, a :class:`MockTransport` sits one level lower: it *is* the
:class:`~rxturn.transport.AsyncTransport` a client sends through, and answers each request with
a :class:`MockResponse` you wrote — a status, headers, and the body as the exact chunks the
client will read (so a test chooses every chunk boundary), optionally followed by an error (a
connection that breaks mid-body). It works like httpx's ``MockTransport``: give it a handler
``request -> response`` (sync or async), or one fixed response for every request.

Examples:
    A fixed response, split where the test wants::

        transport = MockTransport(MockResponse(chunks=[b"event: message_start\\n", b"data: ..."]))
        async with AnthropicClient("m", api_key="k", transport=transport) as client:
            ...
        assert transport.requests[0].url.endswith("/v1/messages")
        assert transport.responses[0].closed

    A handler choosing per request::

        def answer(request: MockRequest) -> MockResponse:
            if b'"stream":true' in request.body:
                return MockResponse(chunks=SSE_CHUNKS)
            return MockResponse(429, headers={"retry-after": "2"}, chunks=[b"{}"])

        transport = MockTransport(answer)

A handler may raise instead of answering (say :class:`~rxturn.errors.ConnectError`): the client
sees it from ``send``, as from a real transport.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import cast

import msgspec

from .._arguments import shown
from ..errors import ConfigError
from ..transport._base import CappedBody, display_url

__all__ = ["MockHttpResponse", "MockRequest", "MockResponse", "MockTransport"]


class MockRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a client sent: method, URL, headers (lower-case names), body, and whether it will
    read the body as a stream."""

    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes
    stream: bool


class MockResponse(msgspec.Struct, frozen=True):
    """A canned response: a value, so one can answer any number of requests.

    Attributes:
        status: the HTTP status code.
        headers: response headers (looked up case-insensitively by the client).
        chunks: the body, as the chunks ``aiter_bytes`` yields, in order (empty chunks are
            skipped, as a network never delivers one); ``read`` joins them.
        error: raised after the last chunk instead of ending the body, e.g. a
            :class:`~rxturn.errors.ReadError` for a connection that drops mid-stream.
    """

    status: int = 200
    headers: Mapping[str, str] = msgspec.field(default_factory=dict[str, str])
    chunks: Sequence[bytes] = ()
    error: BaseException | None = None

    def __post_init__(self) -> None:
        # Checked where it is built: a wrong value here failed deep inside a client later.
        status = cast("object", self.status)
        if type(status) is not int or not 100 <= status <= 599:
            raise ConfigError(
                f"MockResponse: status must be an int from 100 to 599, got {shown(status)}"
            )
        headers = cast("object", self.headers)
        if not isinstance(headers, Mapping):
            kind = type(headers).__name__
            raise ConfigError(f"MockResponse: headers must be a mapping of str to str, got {kind}")
        for name, value in cast("Mapping[object, object]", headers).items():
            if not isinstance(name, str) or not isinstance(value, str):
                raise ConfigError(
                    f"MockResponse: headers[{shown(name, 100)}] must be a str, got "
                    f"{type(value).__name__}"
                )
        chunks = cast("object", self.chunks)
        kind = type(chunks).__name__
        if isinstance(chunks, str | bytes | bytearray | memoryview) or not isinstance(
            chunks, Sequence
        ):
            raise ConfigError(
                "MockResponse: chunks must be a sequence of bytes (not bytes itself: "
                f"[body] for one chunk), got {kind}"
            )
        for index, chunk in enumerate(cast("Sequence[object]", chunks)):
            if not isinstance(chunk, bytes | bytearray | memoryview):
                raise ConfigError(
                    f"MockResponse: chunks[{index}] must be bytes, got {type(chunk).__name__}"
                )
        error = cast("object", self.error)
        if error is not None and not isinstance(error, BaseException):
            raise ConfigError(
                f"MockResponse: error must be an exception or None, got {type(error).__name__}"
            )


Handler = Callable[[MockRequest], "MockResponse | Awaitable[MockResponse]"]


class _Headers(Mapping[str, str]):
    """Case-insensitive, read-only headers (names stored in lower case)."""

    __slots__ = ("_items",)

    def __init__(self, headers: Mapping[str, str]) -> None:
        self._items = {name.lower(): value for name, value in headers.items()}

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return repr(self._items)


class MockHttpResponse:
    """The live :class:`~rxturn.transport.HttpResponse` for one request (see
    :attr:`MockTransport.responses`)."""

    __slots__ = ("_spec", "_where", "closed", "reads")

    def __init__(self, spec: MockResponse, url: str) -> None:
        self._spec = spec
        self._where = display_url(url)
        #: ``aclose()`` was called.
        self.closed = False
        #: chunks handed out so far (``aiter_bytes``) — how far the client read.
        self.reads = 0

    def __repr__(self) -> str:
        return f"<MockHttpResponse {self._spec.status} {self._where}>"

    @property
    def status(self) -> int:
        return self._spec.status

    @property
    def headers(self) -> Mapping[str, str]:
        return _Headers(self._spec.headers)

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for chunk in self._spec.chunks:
            if chunk:
                self.reads += 1
                yield chunk
        if self._spec.error is not None:
            raise self._spec.error

    async def read(self, limit: int) -> bytes:
        body = CappedBody(limit, self._where)
        for chunk in self._spec.chunks:
            body.add(chunk)
        if self._spec.error is not None:
            raise self._spec.error
        return body.value()

    async def aclose(self) -> None:
        self.closed = True


class MockTransport:
    """An :class:`~rxturn.transport.AsyncTransport` answering from a handler, without sockets.

    Args:
        handler: ``request -> response`` (a plain or an async function), or one
            :class:`MockResponse` for every request.

    Attributes:
        requests: every request sent, in order.
        responses: the response handed out for each of them, in order (``closed`` tells
            whether the client released it).
        closed: ``aclose()`` was called on the transport.
    """

    def __init__(self, handler: Handler | MockResponse) -> None:
        if not isinstance(handler, MockResponse) and not callable(handler):
            raise ConfigError(
                "MockTransport: handler must be a callable or a MockResponse, "
                f"got {type(handler).__name__}"
            )
        self._handler = handler
        self.requests: list[MockRequest] = []
        self.responses: list[MockHttpResponse] = []
        self.closed = False

    def __repr__(self) -> str:
        return f"<MockTransport requests={len(self.requests)}>"

    async def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        body: bytes,
        stream: bool,
    ) -> MockHttpResponse:
        request = MockRequest(
            method=method,
            url=url,
            headers=dict(_Headers(headers).items()),
            body=bytes(body),
            stream=stream,
        )
        self.requests.append(request)
        if isinstance(self._handler, MockResponse):
            spec = self._handler
        else:
            answer = self._handler(request)
            spec = await answer if inspect.isawaitable(answer) else answer
            if not isinstance(spec, MockResponse):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(
                    f"MockTransport: the handler returned {type(spec).__name__}, not a MockResponse"
                )
        response = MockHttpResponse(spec, url)
        self.responses.append(response)
        return response

    async def aclose(self) -> None:
        self.closed = True
