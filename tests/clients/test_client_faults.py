"""HTTP faults → typed errors (docs/reliability.md §3), against the fake provider and small
aiohttp.web servers of our own (for bytes the fake does not script: HTML pages, redirects, huge
bodies).

Expected classes come from the status table of docs/behaviour.md §2.9 / the error tree in
``rxturn.errors``; retry hints from the scripted ``retry_after``.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from _client_support import (
    ANTHROPIC_KEY,
    PROVIDER_IDS,
    PROVIDERS,
    REQUEST,
    Provider,
    run_stream,
)
from aiohttp import web
from aiohttp.test_utils import TestServer

from rxturn import StreamHandler, TurnEngine
from rxturn.clients import AnthropicClient, OpenAIClient
from rxturn.errors import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConfigError,
    ConnectError,
    ContextOverflowError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    ProviderStreamError,
    RateLimitError,
    ReadError,
    RequestTimeoutError,
    ServerError,
    StreamProtocolError,
    is_retryable,
)
from rxturn.events import MessageDelta, MessageStart, MessageStop
from rxturn.messages import RequestOptions
from rxturn.testing import FakeProvider

ServerFactory = Callable[..., Awaitable[TestServer]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def one(entry: dict[str, Any]) -> dict[str, Any]:
    return {"models": {"*": [entry]}}


async def both_paths(provider: Provider, fake: FakeProvider) -> list[BaseException]:
    """The error of a streaming attempt and of a non-streaming call (the entry repeats)."""
    async with provider.client(fake) as client:
        events, stream_error = await run_stream(client.stream(REQUEST))
        assert events == [], "an HTTP error comes before any event"
        assert stream_error is not None
        with pytest.raises(Exception) as info:
            await client.create(REQUEST)
    return [stream_error, info.value]


STATUS_CASES: list[tuple[int, type[APIStatusError], bool]] = [
    (400, BadRequestError, False),
    (401, AuthenticationError, False),
    (403, PermissionDeniedError, False),
    (404, NotFoundError, False),
    (408, RequestTimeoutError, True),
    (422, BadRequestError, False),
    (429, RateLimitError, True),
    (500, ServerError, True),
    (502, ServerError, True),
    (503, OverloadedError, True),
    (504, ServerError, True),
    (529, OverloadedError, True),
]


@pytest.mark.parametrize(
    ("status", "cls", "retryable"), STATUS_CASES, ids=[str(case[0]) for case in STATUS_CASES]
)
@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_http_status_becomes_its_typed_error(
    provider: Provider, status: int, cls: type[APIStatusError], retryable: bool
) -> None:
    async with FakeProvider(one({"status": status})) as fake:
        errors = await both_paths(provider, fake)
    for error in errors:
        assert type(error) is cls, error
        assert isinstance(error, APIStatusError)
        assert error.status_code == status
        assert str(error).startswith(f"HTTP {status}: ")
        assert error.body  # the provider's JSON error body, kept (capped)
        assert is_retryable(error) is retryable
        assert error.retry_after is None
        if provider.request_id_header:
            assert error.request_id and error.request_id.startswith("req_fake")


@pytest.mark.parametrize(("status", "cls"), [(429, RateLimitError), (529, OverloadedError)])
@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_rate_limits_carry_retry_after(
    provider: Provider, status: int, cls: type[APIStatusError]
) -> None:
    async with FakeProvider(one({"status": status, "retry_after": 2.5})) as fake:
        errors = await both_paths(provider, fake)
    for error in errors:
        assert type(error) is cls
        assert isinstance(error, RateLimitError)
        assert error.retry_after == 2.5


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_context_overflow_400_is_recognised(provider: Provider) -> None:
    entry = {"status": 400, "error_message": "prompt is too long: 210000 tokens > 200000 maximum"}
    async with FakeProvider(one(entry)) as fake:
        errors = await both_paths(provider, fake)
    for error in errors:
        assert isinstance(error, ContextOverflowError)
        assert "prompt is too long" in str(error)
        assert not is_retryable(error)


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_unknown_model_is_not_found(provider: Provider) -> None:
    async with FakeProvider({"models": {"other": [{"text": "x"}]}}) as fake:
        errors = await both_paths(provider, fake)
    for error in errors:
        assert isinstance(error, NotFoundError) and "primary" in str(error)


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_connection_refused_is_a_connect_error(provider: Provider) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    class Closed:  # looks like a FakeProvider whose port nobody listens on
        base_url = f"http://127.0.0.1:{port}"
        openai_base_url = base_url + "/v1"

    async with provider.client(Closed()) as client:  # pyright: ignore[reportArgumentType]
        events, error = await run_stream(client.stream(REQUEST))
        with pytest.raises(ConnectError, match=f"cannot connect to http://127.0.0.1:{port}"):
            await client.create(REQUEST)
    assert events == [] and isinstance(error, ConnectError)
    assert is_retryable(error)


class TestStreamFaults:
    @pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
    async def test_drop_mid_stream_delivers_events_then_ends_without_message_stop(
        self, provider: Provider
    ) -> None:
        entry = {"text": "Hello world, how are you?", "chunk_chars": 3, "drop_after_events": 4}
        async with FakeProvider(one(entry)) as fake, provider.client(fake) as client:
            events, error = await run_stream(client.stream(REQUEST))
        assert events and isinstance(events[0], MessageStart)
        assert not any(isinstance(e, MessageStop) for e in events)
        # the handler owns the truncation rule: either a clean end or a typed read error
        assert error is None or isinstance(error, ReadError), error

    @pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
    async def test_malformed_event_is_a_protocol_error_after_the_good_events(
        self, provider: Provider
    ) -> None:
        entry = {"text": "Hello world", "chunk_chars": 2, "malformed_after_events": 3}
        async with FakeProvider(one(entry)) as fake, provider.client(fake) as client:
            events, error = await run_stream(client.stream(REQUEST))
        assert isinstance(error, StreamProtocolError), error
        assert events and isinstance(events[0], MessageStart)
        assert is_retryable(error)

    @pytest.mark.parametrize(
        ("provider", "cls"),
        [
            (PROVIDERS[0], OverloadedError),
            (PROVIDERS[1], OverloadedError),
            (PROVIDERS[2], OverloadedError),
            (PROVIDERS[3], ProviderStreamError),
            (PROVIDERS[4], OverloadedError),
        ],
        ids=PROVIDER_IDS,
    )
    async def test_in_stream_overload_error_is_typed(
        self, provider: Provider, cls: type[Exception]
    ) -> None:
        """Anthropic and OpenAI carry the error ``type``; Ollama's ``{"error": "…"}`` only a
        message, so there the error is a generic in-stream provider error."""
        entry = {
            "text": "Hello world",
            "error_event_after_events": 3,
            "error_type": "overloaded_error",
        }
        async with FakeProvider(one(entry)) as fake, provider.client(fake) as client:
            events, error = await run_stream(client.stream(REQUEST))
        assert isinstance(error, cls), error
        assert events and isinstance(events[0], MessageStart)
        assert not any(isinstance(e, MessageStop) for e in events)

    @pytest.mark.parametrize("provider", PROVIDERS[:2], ids=PROVIDER_IDS[:2])
    async def test_in_stream_permanent_error_is_not_retryable(self, provider: Provider) -> None:
        entry = {
            "text": "Hi",
            "error_event_after_events": 2,
            "error_type": "invalid_request_error",
            "error_message": "bad things",
        }
        async with FakeProvider(one(entry)) as fake, provider.client(fake) as client:
            _, error = await run_stream(client.stream(REQUEST))
        assert isinstance(error, ProviderStreamError) and "bad things" in str(error)
        assert not is_retryable(error)

    async def test_idle_read_timeout_is_a_read_error(self) -> None:
        entry = {"text": "Hello world", "stall_after_events": 2}
        async with (
            FakeProvider(one(entry)) as fake,
            AnthropicClient("m", base_url=fake.base_url, read_timeout=0.05) as client,
        ):
            events, error = await run_stream(client.stream(REQUEST))
        assert isinstance(error, ReadError) and "read timed out after 0.05s" in str(error)
        assert events and isinstance(events[0], MessageStart)


class TestCreateFaults:
    @pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
    async def test_malformed_body_is_a_protocol_error(self, provider: Provider) -> None:
        entry = {"text": "Hello", "malformed_after_events": 1}
        async with FakeProvider(one(entry)) as fake, provider.client(fake) as client:
            with pytest.raises(StreamProtocolError):
                await client.create(REQUEST)

    @pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
    async def test_dropped_connection_is_a_read_error(self, provider: Provider) -> None:
        entry = {"text": "Hello", "drop_after_events": 1}
        async with FakeProvider(one(entry)) as fake, provider.client(fake) as client:
            with pytest.raises(ReadError):
                await client.create(REQUEST)


# --- bytes the fake does not script: our own small servers ----------------------------------


async def serve(aiohttp_server: ServerFactory, handler: Handler) -> str:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


BAD_GATEWAY = b"""<html>
<head><title>502 Bad Gateway</title><style>body { color: red }</style></head>
<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx/1.25.3</center></body>
</html>"""


async def test_html_502_page_is_a_readable_server_error(aiohttp_server: ServerFactory) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=502, body=BAD_GATEWAY, content_type="text/html")

    base = await serve(aiohttp_server, handler)
    async with AnthropicClient("m", base_url=base) as client:
        _, error = await run_stream(client.stream(REQUEST))
        with pytest.raises(ServerError) as info:
            await client.create(REQUEST)
    for err in (error, info.value):
        assert isinstance(err, ServerError)
        assert str(err) == "HTTP 502: Bad Gateway (HTML error page)"  # the status said once
        assert "<title>" in err.body
        assert is_retryable(err)


def _default_pages() -> list[type[web.HTTPException]]:
    """aiohttp's error exceptions that need no argument: each answers its default text."""
    import inspect

    from aiohttp import web_exceptions

    found: list[type[web.HTTPException]] = []
    for cls in vars(web_exceptions).values():
        if inspect.isclass(cls) and issubclass(cls, web.HTTPException) and cls.status_code >= 400:
            with contextlib.suppress(TypeError):  # (405, 413, 451 need arguments)
                cls()
                found.append(cls)
    return found


async def test_a_default_error_text_does_not_say_the_status_twice(
    aiohttp_server: ServerFactory,
) -> None:
    # aiohttp's default body is "404: Not Found": the line read "HTTP 404: 404: Not Found"
    pages = _default_pages()
    assert len(pages) > 30
    current: list[type[web.HTTPException]] = []

    async def handler(request: web.Request) -> web.Response:
        raise current[-1]()

    base = await serve(aiohttp_server, handler)
    async with AnthropicClient("m", base_url=base) as client:
        for page in pages:
            current.append(page)
            with pytest.raises(APIStatusError) as info:
                await client.create(REQUEST)
            said = page()
            assert said.text == f"{said.status}: {said.reason}"  # what the server sent
            assert str(info.value) == f"HTTP {said.status}: {said.reason}"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, "400 tokens is more than this model takes"),
        (404, "404 page not found"),
        (500, "5000 workers busy"),
        (404, "404"),
    ],
)
async def test_a_body_that_starts_with_the_number_keeps_its_text(
    aiohttp_server: ServerFactory, status: int, body: str
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, text=body)

    base = await serve(aiohttp_server, handler)
    async with AnthropicClient("m", base_url=base) as client:
        with pytest.raises(APIStatusError) as info:
            await client.create(REQUEST)
    assert str(info.value) == f"HTTP {status}: {body}"


async def test_html_page_without_title_is_summarised(aiohttp_server: ServerFactory) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(
            status=503,
            body=b"<html><body><p>Service   temporarily\n down"
            b"</p><script>var x = 1;</script></body></html>",
            content_type="text/html",
        )

    base = await serve(aiohttp_server, handler)
    async with OpenAIClient("m", base_url=base) as client:
        with pytest.raises(OverloadedError) as info:
            await client.create(REQUEST)
    assert str(info.value) == "HTTP 503: Service temporarily down (HTML error page)"


async def test_x_should_retry_is_honoured(aiohttp_server: ServerFactory) -> None:
    verdicts = iter(["false", "true"])

    async def handler(request: web.Request) -> web.Response:
        status = 500 if request.headers.get("x-case") == "500" else 418
        return web.Response(
            status=status,
            body=b'{"error":{"message":"nope"}}',
            headers={"x-should-retry": next(verdicts)},
        )

    base = await serve(aiohttp_server, handler)
    async with OpenAIClient("m", base_url=base) as client:
        with pytest.raises(ServerError) as server_error:
            await client.create(REQUEST, RequestOptions(extra_headers={"x-case": "500"}))
        with pytest.raises(APIStatusError) as teapot:
            await client.create(REQUEST)
    assert server_error.value.should_retry is False and not is_retryable(server_error.value)
    assert teapot.value.should_retry is True and is_retryable(teapot.value)


async def test_a_rate_limit_the_provider_says_not_to_retry_is_sent_once(
    aiohttp_server: ServerFactory,
) -> None:
    # docs/reliability.md: x-should-retry: false stops the retries of any status; a 429 with
    # it climbed the rate-limit ladder (4 requests and their waits, then an escalation)
    requests: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        requests.append(1)
        return web.Response(
            status=429,
            body=b'{"error":{"message":"quota spent","type":"insufficient_quota"}}',
            headers={"x-should-retry": "false", "retry-after": "0"},
        )

    base = await serve(aiohttp_server, handler)
    async with OpenAIClient("m", base_url=base) as client:
        engine = TurnEngine(client, handler=StreamHandler.default())
        with pytest.raises(RateLimitError, match="quota spent"):
            await engine.run("hi")
    assert len(requests) == 1


async def test_retry_after_http_date_and_request_id(aiohttp_server: ServerFactory) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(
            status=429,
            body=b"slow down",
            headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT", "x-request-id": "req_abc"},
        )

    base = await serve(aiohttp_server, handler)
    async with OpenAIClient("m", base_url=base) as client:
        with pytest.raises(RateLimitError) as info:
            await client.create(REQUEST)
    assert info.value.retry_after == 0.0  # a date in the past: retry now
    assert info.value.request_id == "req_abc"
    assert str(info.value) == "HTTP 429: slow down"


async def test_redirect_is_not_followed(aiohttp_server: ServerFactory) -> None:
    stolen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        if request.path.startswith("/elsewhere"):
            stolen.append(request.headers.get("x-api-key"))
            return web.Response(body=b"{}")
        raise web.HTTPTemporaryRedirect(location="/elsewhere/v1/messages")

    base = await serve(aiohttp_server, handler)
    async with AnthropicClient("m", base_url=base, api_key=ANTHROPIC_KEY) as client:
        _, error = await run_stream(client.stream(REQUEST))
        with pytest.raises(APIStatusError) as info:
            await client.create(REQUEST)
    for err in (error, info.value):
        assert type(err) is APIStatusError
        assert err.status_code == 307
        assert str(err).startswith("HTTP 307: redirect to /elsewhere/v1/messages not followed")
        assert not is_retryable(err)
    assert stolen == []


@pytest.mark.parametrize("status", [300, 304])
async def test_a_3xx_without_location_is_not_called_a_redirect(
    aiohttp_server: ServerFactory, status: int
) -> None:
    """No ``Location``: nothing was redirected, so the error says what the body says."""

    async def handler(request: web.Request) -> web.Response:
        body = b"" if status == 304 else b'{"error":{"message":"pick one","type":"choices"}}'
        return web.Response(status=status, body=body, content_type="application/json")

    base = await serve(aiohttp_server, handler)
    async with AnthropicClient("m", base_url=base, api_key=ANTHROPIC_KEY) as client:
        _, error = await run_stream(client.stream(REQUEST))
    assert type(error) is APIStatusError and error.status_code == status
    expected = "(empty body)" if status == 304 else "choices: pick one"
    assert str(error) == f"HTTP {status}: {expected}"


async def test_error_body_is_read_at_most_8_kib(aiohttp_server: ServerFactory) -> None:
    written: list[int] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(status=500)
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for _ in range(1024):  # 1024 x 64 KiB = 64 MiB offered, far beyond any buffer
                await response.write(b"e" * 65536)
                written.append(65536)
            await response.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            pass
        return response

    base = await serve(aiohttp_server, handler)
    async with AnthropicClient("m", base_url=base) as client:
        with pytest.raises(ServerError) as info:
            await client.create(REQUEST)
    body = info.value.body
    assert body == "e" * 8192
    assert sum(written) < 64 * 1024 * 1024, "the rest of the body must not be read"
    assert len(str(info.value)) < 600


async def test_the_key_echoed_by_a_server_is_scrubbed(
    aiohttp_server: ServerFactory,
) -> None:
    """The key here matches no key pattern: only the client's own scrubbing can hide it."""
    key = "opaque-Key-Value-123456789"

    async def handler(request: web.Request) -> web.Response:
        echoed = request.headers.get("authorization", "")
        return web.Response(
            status=401,
            content_type="application/json",
            text=(
                '{"error":{"message":"Incorrect API key provided: ' + echoed + '",'
                '"type":"invalid_request_error","code":"invalid_api_key"}}'
            ),
        )

    base = await serve(aiohttp_server, handler)
    async with OpenAIClient("m", base_url=base, api_key=key) as client:
        _, error = await run_stream(client.stream(REQUEST))
        with pytest.raises(AuthenticationError) as info:
            await client.create(REQUEST)
    for err in (error, info.value):
        assert isinstance(err, AuthenticationError)
        assert str(err).startswith("HTTP 401: invalid_request_error: Incorrect API key provided")
        for text in (str(err), repr(err), err.body, repr(vars(err))):
            assert key not in text
    assert key not in repr(client)


class TestReplyBodyCap:
    async def test_declared_length_over_10_mb_is_refused_before_reading(
        self, aiohttp_server: ServerFactory
    ) -> None:
        """The server declares 11 MB and sends 5 bytes; only a Content-Length pre-check can fail
        fast here (reading would wait for the rest until the bounded wait gives up)."""
        release = asyncio.Event()

        async def handler(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse(headers={"content-length": str(11_000_000)})
            await response.prepare(request)
            await response.write(b'{"id"')
            await release.wait()
            return response

        base = await serve(aiohttp_server, handler)
        try:
            async with AnthropicClient("m", base_url=base) as client:
                with pytest.raises(StreamProtocolError, match="11000000 bytes exceeds"):
                    await asyncio.wait_for(client.create(REQUEST), 5)
        finally:
            release.set()

    async def test_chunked_body_over_10_mb_is_cut_off(self, aiohttp_server: ServerFactory) -> None:
        async def handler(request: web.Request) -> web.StreamResponse:
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            try:
                for _ in range(12):
                    await response.write(b" " * 1_000_000)
                await response.write_eof()
            except (ConnectionError, asyncio.CancelledError):
                pass
            return response

        base = await serve(aiohttp_server, handler)
        async with OpenAIClient("m", base_url=base) as client:
            with pytest.raises(StreamProtocolError, match="exceeds the 10000000-byte limit"):
                await client.create(REQUEST)


async def test_request_that_cannot_be_built_fails_both_paths_before_sending() -> None:
    async with FakeProvider(one({"text": "x"})) as fake:
        async with AnthropicClient("m", base_url=fake.base_url) as client:
            options = RequestOptions(max_tokens=0)
            _, error = await run_stream(client.stream(REQUEST, options))
            with pytest.raises(ConfigError, match="max_tokens"):
                await client.create(REQUEST, options)
        assert isinstance(error, ConfigError)
        assert fake.requests == []


async def test_error_event_after_good_events_surfaces_while_the_server_stalls(
    aiohttp_server: ServerFactory,
) -> None:
    """An ``error`` event written in the same chunk as good events, then silence: the error is
    raised with that chunk, not when a next chunk (or the end of the body) finally comes."""
    release = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1",'
            b'"model":"m","usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
            b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
            b'"message":"busy"}}\n\n'
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(release.wait(), 30)  # silence, bounded
        return response

    base = await serve(aiohttp_server, handler)
    try:
        async with AnthropicClient("m", base_url=base) as client:
            events, error = await run_stream(client.stream(REQUEST))
    finally:
        release.set()
    # message_start's usage comes at once (billed even though the stream then fails)
    assert [type(e) for e in events] == [MessageStart, MessageDelta]
    assert isinstance(error, OverloadedError)
    assert "busy" in str(error)
