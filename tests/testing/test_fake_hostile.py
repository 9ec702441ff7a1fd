"""What a sloppy or hostile client gets from the fake: a path no route serves, a method a
route does not take and a body over the size limit are answered in the provider's JSON error
shape; an HTTP/1.0 client gets its stream; and the bodies kept for ``/_fake/requests`` have a
bound."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from rxturn.testing import FakeProvider, _server

Serve = Callable[[Any], Awaitable[FakeProvider]]

PATHS: dict[str, str] = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "ollama": "/api/chat",
}
GOOD: dict[str, dict[str, Any]] = {
    "anthropic": {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
    "openai": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "openai-responses": {"model": "m", "input": "hi"},
    "ollama": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": False},
}


def _shape(wire: str, body: Any) -> str:
    """Which provider's error shape ``body`` has ("" for none), and that it carries a message."""
    if wire == "anthropic":
        error = body["error"]
        assert body["type"] == "error" and error["message"] and error["type"]
        return "anthropic"
    if wire == "ollama":
        assert isinstance(body["error"], str) and body["error"]
        return "ollama"
    error = body["error"]
    assert error["message"] and error["type"] == "invalid_request_error"
    assert set(error) == {"message", "type", "param", "code"}
    return "openai"


@pytest.mark.parametrize(
    ("path", "headers", "wire"),
    [
        ("/v1/models/nothing", {}, "openai"),
        ("/v1/nothing", {"anthropic-version": "2023-06-01"}, "anthropic"),
        ("/api/generate", {}, "ollama"),
    ],
)
async def test_a_path_no_route_serves_is_a_404_in_the_api_s_shape(
    serve: Serve, http: aiohttp.ClientSession, path: str, headers: dict[str, str], wire: str
) -> None:
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    async with http.post(fake.base_url + path, json={"model": "m"}, headers=headers) as response:
        assert response.status == 404
        assert response.content_type == "application/json"
        body = await response.json()
    assert _shape(wire, body) == {"openai-responses": "openai"}.get(wire, wire)
    assert path in json.dumps(body)  # it says which request it could not route


@pytest.mark.parametrize("wire", list(PATHS))
@pytest.mark.parametrize("method", ["GET", "PUT"])
async def test_a_method_the_route_does_not_take_is_a_405_in_its_shape(
    serve: Serve, http: aiohttp.ClientSession, wire: str, method: str
) -> None:
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    url = fake.base_url + PATHS[wire]
    async with http.request(method, url, json=GOOD[wire]) as response:
        assert response.status == 405
        assert response.headers["Allow"] == "POST"
        body = await response.json()
    assert _shape(wire, body) == {"openai-responses": "openai"}.get(wire, wire)
    assert fake.records == []  # not a request to the API: nothing taken, nothing recorded
    async with http.get(fake.base_url + "/_fake/requests") as response:
        assert response.status == 200  # the server's own route is untouched


@pytest.mark.parametrize("wire", list(PATHS))
async def test_a_body_over_the_limit_is_a_413_in_the_api_s_shape_and_recorded(
    serve: Serve, http: aiohttp.ClientSession, wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_server, "_MAX_REQUEST_BYTES", 1000)  # (64 MiB otherwise)
    fake = await serve({"models": {"*": [{"text": "served"}]}})
    url = fake.base_url + PATHS[wire]
    big = GOOD[wire] | {"pad": "x" * 2000}
    async with http.post(url, json=big) as response:
        assert response.status == 413
        body = await response.json()
    assert _shape(wire, body) == {"openai-responses": "openai"}.get(wire, wire)
    if wire == "anthropic":
        assert body["error"]["type"] == "request_too_large"
    assert [(r.path, r.model, r.body, r.end) for r in fake.records] == [
        (PATHS[wire], None, None, "completed")
    ]
    async with http.post(url, json=GOOD[wire]) as response:  # the server carries on
        assert response.status == 200
        assert "served" in await response.text()


async def _http10(port: int, path: str, body: dict[str, Any]) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    writer.write(head.encode() + data)
    try:
        async with asyncio.timeout(10):
            return await reader.read()  # HTTP/1.0: the body ends when the server closes
    finally:
        writer.close()


@pytest.mark.parametrize("wire", list(PATHS))
@pytest.mark.parametrize("paced", [False, True])
async def test_an_http_1_0_client_gets_its_stream_unchunked(
    serve: Serve, wire: str, paced: bool
) -> None:
    """HTTP/1.0 has no chunked encoding: the stream is the body up to the connection's close
    (it was a 500, "Using chunked encoding is forbidden for HTTP/1.0", with a traceback)."""
    entry: dict[str, Any] = {"text": "over one oh", "chunk_chars": 4}
    if paced:
        entry["delay_ms"] = 1
    fake = await serve({"models": {"*": [entry]}})
    reply = await _http10(fake.port, PATHS[wire], GOOD[wire] | {"stream": True})
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200"), head
    assert b"chunked" not in head.lower()
    text = body.decode()
    for piece in ("over", " one", " oh"):
        assert piece in text
    last = {
        "anthropic": "event: message_stop",
        "openai": "data: [DONE]",
        "openai-responses": "event: response.completed",
        "ollama": '"done":true',
    }[wire]
    assert last in text
    assert [r.end for r in fake.records] == ["completed"]


async def test_the_bodies_kept_for_the_records_have_a_bound(
    serve: Serve, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the budget a body is served but the records keep a note in its place: a client
    sending large bodies cannot grow the server's memory without end."""
    small = json.dumps(GOOD["anthropic"]).encode()
    large = json.dumps(GOOD["anthropic"] | {"pad": "x" * 500}).encode()
    monkeypatch.setattr(_server, "_KEPT_BODY_BYTES", len(small) + len(large) - 1)
    fake = await serve({"models": {"*": [{"text": "served"}]}})
    url = fake.base_url + "/v1/messages"
    for data in (small, large, small):
        async with http.post(url, data=data) as response:
            assert response.status == 200
            assert "served" in await response.text()
    kept = [record.body for record in fake.records]
    assert kept[0] == GOOD["anthropic"]
    assert kept[1] == (
        f"<request body of {len(large)} bytes not kept: the fake provider keeps at most "
        f"{len(small) + len(large) - 1} bytes of request bodies>"
    )
    assert kept[2] == GOOD["anthropic"]  # it still fits
    assert fake.requests == kept and [r.body for r in fake.received] == kept
    assert [r.model for r in fake.records] == ["m", "m", "m"]
    fake.reset()  # forgetting the records frees the budget
    async with http.post(url, data=large) as response:
        assert response.status == 200
    assert [record.body for record in fake.records] == [json.loads(large)]


async def test_stop_does_not_wait_on_a_body_that_never_comes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A client that sends the headers and part of the body, then nothing: stopping closes
    its connection instead of waiting out the shutdown timeout for its handler."""
    monkeypatch.setattr(_server, "_SHUTDOWN_TIMEOUT", 3600.0)  # (2 s otherwise)
    serving = asyncio.Event()
    serve = FakeProvider._serve

    async def noted(self: FakeProvider, request: Any, wire: Any) -> Any:
        serving.set()  # the handler is running: next it reads the body
        return await serve(self, request, wire)

    monkeypatch.setattr(FakeProvider, "_serve", noted)
    fake = await FakeProvider().start()
    reader, writer = await asyncio.open_connection("127.0.0.1", fake.port)
    try:
        writer.write(b'POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"mo')
        async with asyncio.timeout(10):
            await serving.wait()
            await asyncio.sleep(0)  # (the handler is now waiting in its read of the body)
            await fake.stop()
            assert await reader.read() == b""  # closed, with no answer
    finally:
        writer.close()
    assert fake.records == []  # its body never arrived: nothing to record


@pytest.mark.parametrize("wire", ["anthropic", "ollama"])
async def test_a_gzip_body_that_does_not_decompress_is_a_400_in_the_api_s_shape(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    """It was a 500 "Server got itself in trouble", with a traceback."""
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    async with http.post(fake.base_url + PATHS[wire], data=b"not gzip", headers=headers) as resp:
        assert resp.status == 400
        body = await resp.json()
    assert _shape(wire, body) == wire
    assert "content-encoding: gzip" in json.dumps(body)
    assert [(r.model, r.body, r.end) for r in fake.records] == [(None, None, "completed")]


async def test_a_malformed_http_request_is_logged_in_one_line(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    """What the HTTP layer refuses (here a chunk size that is not hex) is logged as one line
    without aiohttp's traceback: a hostile client cannot fill the server's stderr."""
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    reader, writer = await asyncio.open_connection("127.0.0.1", fake.port)
    try:
        writer.write(
            b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
        )
        async with asyncio.timeout(10):
            reply = await reader.read()
    finally:
        writer.close()
    assert reply.startswith(b"HTTP/1.0 400") or reply.startswith(b"HTTP/1.1 400")
    logged = [r for r in caplog.records if r.name == "rxturn.testing.fake_provider"]
    assert len(logged) == 1
    assert logged[0].exc_info is None
    message = logged[0].getMessage()
    assert "\n" not in message and "chunk size" in message
