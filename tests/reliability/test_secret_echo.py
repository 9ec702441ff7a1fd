"""A hostile server echoes the API key in every field it can; no error rxturn raises holds it.

The server (raw bytes on 127.0.0.1, so nothing is normalised on the way) reads the credential
the client sent and writes it back: in a JSON error body (type, message, code), in the request-id
headers, in the reason phrase, in ``Retry-After``, in a redirect ``Location`` (as is and
percent-encoded), in an in-stream error event, in a 200 HTML page, in a ``Content-Type`` (shown
lower-cased), in a header line too long for aiohttp (quoted cut short: the key cut in two), in a
broken status line and a broken header line (which aiohttp reports with a
``ClientResponseError`` whose ``request_info`` holds the request headers, key included), and in
a reply's tool arguments: non-streaming, streamed in a block that closes, and streamed in a block
left open at ``max_tokens``. Streamed arguments are folded downstream of the client (the
handler's attempt guard, the engine's fold), so the handler and the engine ask the client to
scrub those errors (``HttpClient.scrub``).

A credential the caller sends in a header of its own instead of ``api_key`` (Azure's
``api-key``, in the client's or the request's ``extra_headers``) is held to the same rule.

Every error — on both paths, with the passthrough handler and with the resilient one (retries,
then the non-streaming rescue: ``RescueFailed`` chains) — goes through
:func:`rxturn.testing.assert_no_secret`, which walks ``str``/``repr``, ``args``, attributes,
``__cause__``/``__context__``, ``__notes__`` and containers. The observers' records (the
``AttemptReset`` reasons and errors of failed attempts) are walked too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import msgspec
import pytest

from rxturn.engine import TurnEngine
from rxturn.engine.handler import StreamHandler
from rxturn.engine.observation.observers import RecordingObserver
from rxturn.errors import RxturnError
from rxturn.resilience.policies import RateLimitPolicy, RetryPolicy, TimeoutPolicy
from rxturn.testing import assert_no_secret

from .conftest import FORMAT_NAMES, RawHTTPServer, RawRequest, ToolScript, make_client, wire_stream

pytestmark = pytest.mark.timeout(60)

KEYS = {"sk-shaped": "sk-ant-test-SECRET-123456", "opaque": "rxturn-SECRET-key-0x5EED1234"}


def response(status: str, headers: dict[str, str], body: bytes) -> bytes:
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"HTTP/1.1 {status}\r\n{head}Connection: close\r\n\r\n".encode() + body


def error_body(key: str) -> bytes:
    return msgspec.json.encode(
        {"type": "error", "error": {"type": key, "message": f"bad key {key}", "code": key}}
    )


def echo_headers(key: str) -> dict[str, str]:
    return {"request-id": key, "x-request-id": key, "x-echo": key}


def in_stream_error(fmt: str, key: str) -> bytes:
    error = {"type": key, "message": f"key {key} revoked", "code": key}
    if fmt == "ollama":
        return msgspec.json.encode({"error": error}) + b"\n"
    if fmt == "openai":
        return b"data: " + msgspec.json.encode({"error": error}) + b"\n\n"
    return (
        b"event: error\ndata: " + msgspec.json.encode({"type": "error", "error": error}) + b"\n\n"
    )


def tool_reply(fmt: str, key: str) -> bytes:
    broken = '{"token": "' + key  # unfinished JSON that quotes the key
    if fmt == "openai":
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": broken}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return msgspec.json.encode(
            {"id": "x", "model": "m", "choices": [{"index": 0, "message": message}]}
        )
    if fmt == "ollama":
        call = {"function": {"name": "f", "arguments": broken}}
        message = {"role": "assistant", "content": "", "tool_calls": [call]}
        return msgspec.json.encode({"model": "m", "message": message, "done": True})
    return error_body(key)  # Anthropic tool input is an object, never a string to parse


def streamed_tool_reply(fmt: str, key: str, *, closed: bool) -> bytes:
    """A streamed tool call whose arguments quote the key and do not parse: in a block that
    closes (strict parse), or in one still open at ``max_tokens`` (partial parse; a missing
    colon defeats it)."""
    broken = '{"token": "' + key if closed else '{"token" "' + key + '"'
    tool = ToolScript(fragments=(broken[:9], broken[9:]), closed=closed)
    body = wire_stream(fmt, tool=tool, stop="tool_call" if closed else "max_tokens")
    content_type = "application/x-ndjson" if fmt == "ollama" else "text/event-stream"
    return response("200 OK", {"Content-Type": content_type}, body)


Echo = Callable[[RawRequest, str, str], bytes]

ECHOES: dict[str, Echo] = {
    "error body and headers": lambda r, key, fmt: response(
        "401 Unauthorized",
        {"Content-Type": "application/json", **echo_headers(key)},
        error_body(key),
    ),
    "reason phrase": lambda r, key, fmt: response(
        f"500 Broken {key}", {"Content-Type": "text/plain"}, key.encode()
    ),
    "retry-after": lambda r, key, fmt: response(
        "429 Too Many Requests",
        {"Retry-After": key, "retry-after-ms": key, "Content-Type": "text/plain"},
        b"slow down " + key.encode(),
    ),
    "redirect location": lambda r, key, fmt: response(
        "307 Temporary Redirect",
        {"Location": f"http://127.0.0.2:9/steal?k={key}&q={quote(key, safe='')}"},
        b"",
    ),
    "html 200": lambda r, key, fmt: response(
        "200 OK",
        {"Content-Type": "text/html", **echo_headers(key)},
        f"<html><title>Login {key}</title>{key}</html>".encode(),
    ),
    "json error on a 200": lambda r, key, fmt: response(
        "200 OK", {"Content-Type": "application/json"}, error_body(key)
    ),
    "in-stream error event": lambda r, key, fmt: (
        response(
            "200 OK",
            {"Content-Type": "application/x-ndjson" if fmt == "ollama" else "text/event-stream"},
            in_stream_error(fmt, key),
        )
        if r.streaming
        else response("200 OK", {"Content-Type": "application/json"}, error_body(key))
    ),
    "broken status line": lambda r, key, fmt: f"HTTP/1.1 2x0 {key}\r\n\r\n".encode(),
    "broken header line": lambda r, key, fmt: (
        f"HTTP/1.1 200 OK\r\nX-Token {key}\r\nContent-Type: text/plain\r\n\r\nx".encode()
    ),
    # the media type is shown lower-cased: the key must be found lower-cased too
    "content type": lambda r, key, fmt: response("200 OK", {"Content-Type": f"text/{key}"}, b"?"),
    # aiohttp quotes 100 bytes of an over-long line and then "...": the key cut in two
    "over-long header line": lambda r, key, fmt: (
        f"HTTP/1.1 200 OK\r\nX-Echo: {'a' * 80}{key}{'a' * 9000}\r\n\r\n".encode()
    ),
    "tool arguments": lambda r, key, fmt: (
        streamed_tool_reply(fmt, key, closed=True)
        if r.streaming
        else response("200 OK", {"Content-Type": "application/json"}, tool_reply(fmt, key))
    ),
    "unfinished tool arguments": lambda r, key, fmt: (
        streamed_tool_reply(fmt, key, closed=False)
        if r.streaming
        else response("200 OK", {"Content-Type": "application/json"}, tool_reply(fmt, key))
    ),
}


def resilient() -> StreamHandler:
    return StreamHandler(
        timeouts=TimeoutPolicy(first_event=2.0, per_event=2.0, total=5.0),
        retry=RetryPolicy(base_delay=0.001, max_delay=0.01),
        rate_limit=RateLimitPolicy(default_delay=0.01),
    )


# (a non-streaming reply has no unfinished block: there that echo is the plain one, left out)
CASES = [
    (echo, mode)
    for echo in ECHOES
    for mode in ("streaming", "non_streaming")
    if (echo, mode) != ("unfinished tool arguments", "non_streaming")
]


@pytest.mark.parametrize("handler", ["passthrough", "resilient"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
@pytest.mark.parametrize("key_kind", list(KEYS))
@pytest.mark.parametrize(("echo", "mode"), CASES)
async def test_no_error_holds_the_echoed_key(
    echo: str, key_kind: str, fmt: str, mode: str, handler: str
) -> None:
    key = KEYS[key_kind]
    make_echo = ECHOES[echo]

    def respond(request: RawRequest) -> bytes:
        return make_echo(request, request.credential, fmt)

    chosen = StreamHandler.passthrough() if handler == "passthrough" else resilient()
    async with RawHTTPServer(respond) as server, make_client(fmt, server, api_key=key) as client:
        recorder = RecordingObserver()
        engine = TurnEngine(
            client,
            handler=chosen,
            mode=mode,  # pyright: ignore[reportArgumentType]
            observers=[recorder],
        )
        error: BaseException | None = None
        try:
            await asyncio.wait_for(engine.run("hi"), 20)
        except RxturnError as exc:
            error = exc
    assert server.requests and server.requests[0].credential == key, "the key was never sent"
    assert isinstance(error, RxturnError), f"{echo}: the turn did not fail: {error!r}"
    # whole, lower-cased (a header value shown normalised), and its first 12 characters (a
    # quote cut short)
    for secret in (key, key.lower(), key[:12]):
        assert_no_secret(error, secret, name="error")
        records: list[Any] = [kwargs for _, kwargs in recorder.calls]
        assert_no_secret(records, secret, name="observer records")


# --- a credential given in a header of the caller's choosing ---------------------------------

HEADER_KEY = "azure-SECRET-key-0x5EED1234"


def _echo_every_header(request: RawRequest) -> bytes:
    body = msgspec.json.encode(
        {"error": {"type": "authentication_error", "message": f"denied: {request.headers}"}}
    )
    return response("401 Unauthorized", {"Content-Type": "application/json"}, body)


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("where", ["client extra_headers", "RequestOptions.extra_headers"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_credential_in_extra_headers_is_scrubbed_too(
    fmt: str, where: str, mode: str
) -> None:
    """Azure's ``api-key``, a gateway's token: a credential the caller sends in a header of its
    own (no ``api_key``) is as secret as the key, wherever the server echoes it."""
    from rxturn.messages import Message, Request, RequestOptions

    headers = {"api-key": HEADER_KEY}
    async with RawHTTPServer(_echo_every_header) as server:
        if where == "client extra_headers":
            client = make_client(fmt, server, api_key=None, extra_headers=headers)
            options = RequestOptions()
        else:
            client = make_client(fmt, server, api_key=None)
            options = RequestOptions(extra_headers=headers)
        request = Request(messages=(Message.user("hi"),))
        async with client:
            if mode == "streaming":
                failed: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()
                client.stream(request, options).subscribe(on_error=failed.set_result)
                error = await asyncio.wait_for(failed, 20)
            else:
                with pytest.raises(RxturnError) as caught:
                    await client.create(request, options)
                error = caught.value
    assert server.requests[0].headers.get("api-key") == HEADER_KEY, "the header was never sent"
    assert isinstance(error, RxturnError) and "denied" in str(error), repr(error)
    assert_no_secret(error, HEADER_KEY, name="error")
