"""A 2xx response that is not what was asked for, and statuses no retry can fix.

Every client (Anthropic, OpenAI, Ollama), both paths (streaming, and the non-streaming call the
rescue also uses), against real servers on 127.0.0.1. The expected verdicts are the rules of
``docs/reliability.md``:

=====================================  =========================================  ==========
what came back (status 2xx)            error                                      retried?
=====================================  =========================================  ==========
``text/html`` page                     ``UnexpectedResponseError``                no
HTML labelled as the stream            ``UnexpectedResponseError``                no
JSON error object (streaming)          the provider's error, saying where from    its class
JSON without an error (streaming)      ``UnexpectedResponseError``                no
event stream (non-streaming)           ``UnexpectedResponseError``                no
empty body (200)                       ``UnexpectedResponseError``                yes
204 No Content                         ``UnexpectedResponseError``                no
other content type that doesn't parse  ``UnexpectedResponseError``                yes
no / odd content type, body parses     served (real servers do this)              —
=====================================  =========================================  ==========

and a 501 / 505 / 506 / 508 / 510 / 511 is a ``ServerError`` that is not retried (a 500 is).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from rxturn.engine.handler import StreamHandler
from rxturn.errors import (
    OverloadedError,
    ProviderStreamError,
    ServerError,
    UnexpectedResponseError,
    is_retryable,
    status_error,
)

from .conftest import (
    FORMAT_NAMES,
    TEST_KEY,
    RawHTTPServer,
    RawRequest,
    Site,
    make_client,
    resilient,
    run_turn,
    serve,
    wire_reply,
    wire_stream,
)

pytestmark = pytest.mark.timeout(60)

MODES = ["streaming", "non_streaming"]
PORTAL = (
    b"<!DOCTYPE html><html><head><title>Hotel WiFi - Sign in</title></head><body>"
    b"<form action='/login'>Room number <input name=room></form></body></html>"
)


def healthy(fmt: str, streaming: bool) -> web.Response:
    if not streaming:
        return web.Response(body=wire_reply(fmt, text="fine"), content_type="application/json")
    kind = "application/x-ndjson" if fmt == "ollama" else "text/event-stream"
    return web.Response(body=wire_stream(fmt, text=["fine"]), headers={"Content-Type": kind})


def is_streaming(site: Site, fmt: str) -> bool:
    return site.bodies[-1].get("stream", fmt == "ollama") is True


async def first_then_healthy(
    fmt: str, mode: str, first: web.Response, handler: StreamHandler
) -> tuple[Any, Any, Site]:
    """The server answers ``first`` once, then healthy replies; one engine run."""

    async def respond(request: web.Request, site: Site) -> web.StreamResponse:
        if len(site.requests) == 1:
            return first
        return healthy(fmt, is_streaming(site, fmt))

    async with serve(respond) as site, make_client(fmt, site) as client:
        result, error = await run_turn(client, handler, mode)
    return result, error, site


# ------------------------------------------------------------------------------ never retried


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_an_html_page_is_unexpected_and_not_retried(fmt: str, mode: str) -> None:
    page = web.Response(status=200, body=PORTAL, content_type="text/html")
    _, error, site = await first_then_healthy(fmt, mode, page, resilient())
    assert type(error) is UnexpectedResponseError, repr(error)
    assert len(site.requests) == 1, "a web page must not be retried"
    assert not is_retryable(error)
    message = str(error)
    assert message.startswith(f"HTTP 200 text/html from {site.base_url}/"), message
    assert "Hotel WiFi - Sign in" in message and "captive portal" in message
    assert "\n" not in message and len(message) < 600
    assert error.status_code == 200 and error.content_type == "text/html"
    assert error.head.startswith("<!DOCTYPE html>") and len(error.head) <= 161


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_html_labelled_as_the_stream_is_unexpected(fmt: str) -> None:
    kind = "application/x-ndjson" if fmt == "ollama" else "text/event-stream"
    page = web.Response(status=200, body=PORTAL, headers={"Content-Type": kind})
    _, error, site = await first_then_healthy(fmt, "streaming", page, resilient())
    assert type(error) is UnexpectedResponseError and not is_retryable(error), repr(error)
    assert len(site.requests) == 1 and "HTML page" in str(error)


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
async def test_a_json_document_on_a_streaming_request_is_unexpected(fmt: str) -> None:
    """A full reply where a stream was asked for: the server ignores ``stream: true``."""
    reply = web.Response(
        status=200, body=wire_reply(fmt, text="x"), content_type="application/json"
    )
    _, error, site = await first_then_healthy(fmt, "streaming", reply, resilient())
    assert type(error) is UnexpectedResponseError and not is_retryable(error), repr(error)
    assert len(site.requests) == 1
    assert '"stream": true' in str(error) and "application/json" in str(error)


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_an_event_stream_on_a_non_streaming_request_is_unexpected(fmt: str) -> None:
    stream = web.Response(
        status=200,
        body=wire_stream("openai", text=["x"]),
        headers={"Content-Type": "text/event-stream"},
    )
    _, error, _ = await first_then_healthy(fmt, "non_streaming", stream, resilient())
    assert type(error) is UnexpectedResponseError and not is_retryable(error), repr(error)
    assert '"stream": false' in str(error) and error.expected == "a JSON reply"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_204_no_content_is_unexpected_and_not_retried(fmt: str, mode: str) -> None:
    _, error, site = await first_then_healthy(fmt, mode, web.Response(status=204), resilient())
    assert type(error) is UnexpectedResponseError and not is_retryable(error), repr(error)
    assert len(site.requests) == 1
    assert str(error).startswith("HTTP 204 ") and "empty body" in str(error)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("status", [501, 505, 506, 508, 510, 511])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_statuses_no_retry_can_fix_are_not_retried(fmt: str, status: int, mode: str) -> None:
    first = web.Response(status=status, text="nope", content_type="text/plain")
    _, error, site = await first_then_healthy(fmt, mode, first, resilient())
    assert type(error) is ServerError and error.status_code == status, repr(error)
    assert not is_retryable(error) and len(site.requests) == 1


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_500_is_still_retried(fmt: str) -> None:
    first = web.Response(status=500, text="boom", content_type="text/plain")
    result, error, site = await first_then_healthy(fmt, "streaming", first, resilient())
    assert error is None and result.text == "fine" and len(site.requests) == 2


def test_x_should_retry_overrides_a_permanent_status_but_the_never_retried_ones() -> None:
    assert not is_retryable(status_error(506, ""))
    assert is_retryable(status_error(506, "", should_retry=True))
    assert not is_retryable(status_error(501, "", should_retry=True))  # no such endpoint
    assert is_retryable(status_error(502, ""))


# ------------------------------------------------------------------------------ retried


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_an_empty_200_is_unexpected_and_retried(fmt: str, mode: str) -> None:
    empty = web.Response(status=200, body=b"", content_type="text/event-stream")
    _, error, _ = await first_then_healthy(fmt, mode, empty, StreamHandler.passthrough())
    assert type(error) is UnexpectedResponseError and is_retryable(error), repr(error)
    assert "empty body" in str(error)
    if mode == "streaming":  # the ladder only runs on the streaming path
        empty = web.Response(status=200, body=b"", content_type="text/event-stream")
        result, error, site = await first_then_healthy(fmt, mode, empty, resilient())
        assert error is None and result.text == "fine" and len(site.requests) == 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_another_content_type_that_does_not_parse_is_unexpected(fmt: str, mode: str) -> None:
    busy = web.Response(status=200, text="upstream busy, try again", content_type="text/plain")
    _, error, _ = await first_then_healthy(fmt, mode, busy, StreamHandler.passthrough())
    assert type(error) is UnexpectedResponseError and is_retryable(error), repr(error)
    assert "text/plain" in str(error) and "upstream busy" in str(error)
    if mode == "streaming":
        busy = web.Response(status=200, text="upstream busy, try again", content_type="text/plain")
        result, error, site = await first_then_healthy(fmt, mode, busy, resilient())
        assert error is None and result.text == "fine" and len(site.requests) == 2


# ------------------------------------------------------------------------------ JSON errors


ERROR_OBJECTS = {
    "anthropic": (
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        OverloadedError,
    ),
    "openai": (b'{"error":{"message":"bad things","type":"server_error"}}', ProviderStreamError),
}


@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
async def test_a_json_error_object_on_a_streaming_request_says_where_it_came_from(fmt: str) -> None:
    body, cls = ERROR_OBJECTS[fmt]
    first = web.Response(status=200, body=body, content_type="application/json")
    _, error, site = await first_then_healthy(fmt, "streaming", first, StreamHandler.passthrough())
    assert isinstance(error, cls), repr(error)
    assert f"HTTP 200 application/json from {site.base_url}/" in str(error)


# ------------------------------------------------------------------------------ real servers


def raw_stream(fmt: str, content_type: str | None) -> RawHTTPServer:
    """A stream with exactly the given Content-Type header (``None``: no such header)."""

    def respond(request: RawRequest) -> bytes:
        body = (
            wire_stream(fmt, text=["fine"]) if request.streaming else wire_reply(fmt, text="fine")
        )
        header = f"Content-Type: {content_type}\r\n".encode() if content_type is not None else b""
        return b"HTTP/1.1 200 OK\r\n" + header + b"Connection: close\r\n\r\n" + body

    return RawHTTPServer(respond)


LABELS = [
    None,
    "text/event-stream; charset=utf-8",
    "text/event-stream;charset=UTF-8",
    "application/octet-stream",
    "text/plain",
    "application/x-ndjson",
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("label", LABELS, ids=lambda label: str(label))
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_body_that_parses_is_served_whatever_its_label(
    fmt: str, label: str | None, mode: str
) -> None:
    """Real OpenAI-compatible servers send no content type, a charset, or odd ones."""
    async with raw_stream(fmt, label) as server, make_client(fmt, server) as client:
        result, error = await run_turn(client, StreamHandler.passthrough(), mode)
    assert error is None, repr(error)
    assert result.text == "fine"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_no_content_type_and_an_unparsable_body_is_unexpected(fmt: str, mode: str) -> None:
    def respond(request: RawRequest) -> bytes:
        return b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nnot a stream at all"

    async with RawHTTPServer(respond) as server, make_client(fmt, server) as client:
        _, error = await run_turn(client, StreamHandler.passthrough(), mode)
    assert type(error) is UnexpectedResponseError, repr(error)
    assert "(no content type)" in str(error) and error.content_type == ""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_the_first_bytes_shown_are_scrubbed_of_the_key(fmt: str, mode: str) -> None:
    def respond(request: RawRequest) -> bytes:
        page = b"<html><title>Proxy</title>key " + request.credential.encode() + b" rejected</html>"
        return b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n" + page

    async with RawHTTPServer(respond) as server, make_client(fmt, server) as client:
        _, error = await run_turn(client, StreamHandler.passthrough(), mode)
    assert server.requests[0].credential == TEST_KEY, "the key was not sent: nothing proven"
    assert type(error) is UnexpectedResponseError and "[redacted]" in error.head, repr(error)
