"""Request bodies the real APIs refuse for their structure get a 400 in the wire's error shape;
bodies they accept (unknown fields included) are served; and the fake's one-write path and its
event-by-event path send the same bytes, with or without the per-entry cache."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from rxturn.testing import FakeProvider, load_scenario
from rxturn.testing._emit import ReplyContext, TailCache, Wire, stream_body, stream_events

PATHS: dict[str, str] = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
    "ollama": "/api/chat",
}
HELLO = [{"role": "user", "content": "hello there"}]

Serve = Callable[[Any], Awaitable[FakeProvider]]


def _good(wire: str) -> dict[str, Any]:
    if wire == "anthropic":
        return {"model": "m", "max_tokens": 64, "messages": HELLO}
    if wire == "openai-responses":
        return {"model": "m", "input": "hello there"}
    return {"model": "m", "messages": HELLO, "stream": False}


# (wire, what replaces or removes fields of the good body, the error body the API would send)
REFUSED: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "anthropic",
        {"messages": "x"},
        {"type": "invalid_request_error", "message": "messages: Input should be a valid list"},
    ),
    (
        "anthropic",
        {"messages": None},
        {"type": "invalid_request_error", "message": "messages: Field required"},
    ),
    (
        "anthropic",
        {"messages": [{"role": "user", "content": "a"}, "not an object"]},
        {
            "type": "invalid_request_error",
            "message": "messages.1: Input should be a valid dictionary",
        },
    ),
    (
        "anthropic",
        {"max_tokens": "64"},
        {"type": "invalid_request_error", "message": "max_tokens: Input should be a valid integer"},
    ),
    (
        "anthropic",
        {"messages": [{"role": "user", "content": 5}]},
        {
            "type": "invalid_request_error",
            "message": "messages.0.content: Input should be a valid string or a valid list",
        },
    ),
    (
        "anthropic",
        {"messages": [{"content": "a"}]},
        {"type": "invalid_request_error", "message": "messages.0.role: Field required"},
    ),
    (
        "openai",
        {"messages": "x"},
        {
            "message": "Invalid type for 'messages': expected an array, but got a string instead.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "invalid_type",
        },
    ),
    (
        "openai",
        {"messages": None},
        {
            "message": "Missing required parameter: 'messages'.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "missing_required_parameter",
        },
    ),
    (
        "openai",
        {"messages": [1]},
        {
            "message": "Invalid type for 'messages[0]': expected an object, but got an integer "
            "instead.",
            "type": "invalid_request_error",
            "param": "messages[0]",
            "code": "invalid_type",
        },
    ),
    (
        "openai",
        {"stream": "yes"},
        {
            "message": "Invalid type for 'stream': expected a boolean or null, but got a string "
            "instead.",
            "type": "invalid_request_error",
            "param": "stream",
            "code": "invalid_type",
        },
    ),
    (
        "openai-responses",
        {"input": 7},
        {
            "message": "Invalid type for 'input': expected a string or an array or null, but "
            "got an integer instead.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "invalid_type",
        },
    ),
    (
        "openai-responses",
        {"include": "reasoning.encrypted_content"},
        {
            "message": "Invalid type for 'include': expected an array or null, but got a string "
            "instead.",
            "type": "invalid_request_error",
            "param": "include",
            "code": "invalid_type",
        },
    ),
    # values the APIs refuse: a token cap below 1 or beyond 2**31 - 1, an unknown role, a
    # temperature out of range or not a number; and Anthropic's required max_tokens
    (
        "anthropic",
        {"max_tokens": None},
        {"type": "invalid_request_error", "message": "max_tokens: Field required"},
    ),
    (
        "anthropic",
        {"max_tokens": 0},
        {
            "type": "invalid_request_error",
            "message": "max_tokens: Input should be greater than or equal to 1",
        },
    ),
    (
        "anthropic",
        {"max_tokens": 10**30},
        {
            "type": "invalid_request_error",
            "message": "max_tokens: Input should be less than or equal to 2147483647",
        },
    ),
    (
        "anthropic",
        {"messages": [{"role": "system", "content": "a"}]},
        {
            "type": "invalid_request_error",
            "message": "messages.0.role: Input should be 'user' or 'assistant'",
        },
    ),
    (
        "anthropic",
        {"temperature": 1.5},
        {
            "type": "invalid_request_error",
            "message": "temperature: Input should be less than or equal to 1",
        },
    ),
    (
        "anthropic",
        {"temperature": "hot"},
        {
            "type": "invalid_request_error",
            "message": "temperature: Input should be a valid number or None",
        },
    ),
    (
        "openai",
        {"max_tokens": -5},
        {
            "message": "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, "
            "but got -5 instead.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "integer_below_min_value",
        },
    ),
    (
        "openai",
        {"max_completion_tokens": 2**31},
        {
            "message": "Invalid 'max_completion_tokens': integer above maximum value. Expected a "
            "value <= 2147483647, but got 2147483648 instead.",
            "type": "invalid_request_error",
            "param": "max_completion_tokens",
            "code": "integer_above_max_value",
        },
    ),
    (
        "openai",
        {"messages": [{"role": "wizard", "content": "a"}]},
        {
            "message": "Invalid value: 'wizard'. Supported values are: 'system', 'assistant', "
            "'user', 'function', 'tool', and 'developer'.",
            "type": "invalid_request_error",
            "param": "messages[0].role",
            "code": "invalid_value",
        },
    ),
    (
        "openai",
        {"temperature": "hot"},
        {
            "message": "Invalid type for 'temperature': expected a number or null, but got a "
            "string instead.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "invalid_type",
        },
    ),
    (
        "openai-responses",
        {"max_output_tokens": 0},
        {
            "message": "Invalid 'max_output_tokens': integer below minimum value. Expected a "
            "value >= 1, but got 0 instead.",
            "type": "invalid_request_error",
            "param": "max_output_tokens",
            "code": "integer_below_min_value",
        },
    ),
    (
        "openai-responses",
        {"temperature": 2.5},
        {
            "message": "Invalid 'temperature': decimal above maximum value. Expected a value "
            "<= 2, but got 2.5 instead.",
            "type": "invalid_request_error",
            "param": "temperature",
            "code": "decimal_above_max_value",
        },
    ),
]
REFUSED_OLLAMA: list[tuple[dict[str, Any], str]] = [
    ({"messages": "x"}, "invalid type for 'messages': expected an array or null, got a string"),
    (
        {"messages": [{"role": "user", "content": ["a"]}]},
        "invalid type for 'messages[0].content': expected a string or null, got an array",
    ),
    ({"messages": [{"content": "a"}]}, "missing required field 'messages[0].role'"),
]


def _with(wire: str, change: dict[str, Any]) -> dict[str, Any]:
    body = _good(wire)
    for key, value in change.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


async def _post(http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with http.post(url, json=body) as response:
        return response.status, await response.json()


@pytest.mark.parametrize(("wire", "change", "error"), REFUSED)
async def test_a_structurally_wrong_body_is_refused_in_the_wire_s_shape(
    serve: Serve,
    http: aiohttp.ClientSession,
    wire: str,
    change: dict[str, Any],
    error: dict[str, Any],
) -> None:
    fake = await serve({"models": {"*": [{"text": "first"}, {"text": "second"}]}})
    url = fake.base_url + PATHS[wire]
    status, body = await _post(http, url, _with(wire, change))
    assert status == 400
    assert body == ({"type": "error", "error": error} if wire == "anthropic" else {"error": error})
    # the refused request is recorded, and takes no entry: the next one gets the first
    assert fake.requests == [_with(wire, change)]
    assert [record.end for record in fake.records] == ["completed"]
    status, good = await _post(http, url, _good(wire))
    assert status == 200 and "first" in str(good)


@pytest.mark.parametrize(("change", "message"), REFUSED_OLLAMA)
async def test_ollama_refuses_in_its_shape(
    serve: Serve, http: aiohttp.ClientSession, change: dict[str, Any], message: str
) -> None:
    fake = await serve({"models": {"*": [{"text": "hi"}]}})
    status, body = await _post(http, fake.base_url + "/api/chat", _with("ollama", change))
    assert (status, body) == (400, {"error": message})


@pytest.mark.parametrize("wire", list(PATHS))
async def test_unknown_fields_and_optional_nulls_are_served(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    fake = await serve({"models": {"*": [{"text": "fine"}]}})
    body = _good(wire) | {"a_field_from_next_year": {"x": [1]}, "temperature": 0.5}
    if wire == "openai":
        body["messages"] = [*HELLO, {"role": "assistant", "content": None, "tool_calls": []}]
    if wire == "anthropic":
        body["system"] = [{"type": "text", "text": "terse", "cache_control": {"type": "x"}}]
    if wire == "ollama":
        body["messages"] = [*HELLO, {"role": "assistant", "content": None, "images": None}]
    status, reply = await _post(http, fake.base_url + PATHS[wire], body)
    assert status == 200 and "fine" in str(reply)


@pytest.mark.parametrize("wire", list(PATHS))
async def test_a_body_that_is_not_a_json_object_is_refused_and_recorded(
    serve: Serve, http: aiohttp.ClientSession, wire: str
) -> None:
    """Every request received is on record, garbage included: a test that asserts "nothing
    was sent" on the records must not pass because what was sent could not be parsed."""
    fake = await serve({"models": {"*": [{"text": "first"}]}})
    url = fake.base_url + PATHS[wire]
    statuses: list[int] = []
    for data in (b"{not json", b'["m"]', b"\xff\xfe"):
        async with http.post(url, data=data) as response:
            statuses.append(response.status)
    assert statuses == [400, 400, 400]
    async with http.get(fake.base_url + "/_fake/requests") as response:
        records = await response.json()
    assert [(r["path"], r["model"], r["body"], r["end"]) for r in records] == [
        (PATHS[wire], None, "{not json", "completed"),
        (PATHS[wire], None, ["m"], "completed"),
        (PATHS[wire], None, "\ufffd\ufffd", "completed"),
    ]
    assert fake.requests == ["{not json", ["m"], "\ufffd\ufffd"]
    status, good = await _post(http, url, _good(wire))  # refused: no entry was taken
    assert status == 200 and "first" in str(good)


async def test_a_missing_model_is_named_before_the_structure(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"*": [{"text": "x"}]}})
    status, body = await _post(http, fake.base_url + "/v1/messages", {"messages": "x"})
    assert status == 400
    assert body["error"]["message"] == "model: field required"


# ----------------------------------------------------------------------------- same bytes

ENTRIES: list[dict[str, Any]] = [
    {"text": "Hello there, a reply in pieces.", "chunk_chars": 5},
    {"text": 'ünï "quoted" \\ and\nlines', "thinking": "let me see", "chunk_chars": 3},
    {"tool_calls": [{"id": "call_1", "name": "f", "input": {"a": [1, "b"]}}], "text": "calling"},
    {"tool_calls": [{"name": "f"}, {"name": "g", "input": {"x": 1}}]},  # generated ids
    {"text": "fixed", "usage": {"input_tokens": 3, "output_tokens": 2}},
    {"text": "none", "usage": None},
    {"text": "raw", "raw_usage": {"input_tokens": 4, "output_tokens": 1, "cost": 0.5}},
    {"stop_reason": "refusal"},
    {},
]
WIRES: list[Wire] = ["anthropic", "openai", "openai-responses", "ollama"]


@pytest.mark.parametrize("wire", WIRES)
def test_the_joined_body_and_the_cached_events_are_the_events(wire: Wire) -> None:
    entries = load_scenario({"models": {"*": ENTRIES}}).models["*"]
    cache = TailCache()
    for entry in entries:
        for ctx in (
            ReplyContext(model="m", seq=7, prompt_words=4),
            ReplyContext(model='mé"', seq=123456, include_usage=True, cache_read=2),
        ):
            events = stream_events(entry, wire, ctx)
            for _ in range(2):  # the second time from the cache
                assert stream_events(entry, wire, ctx, cache) == events
                assert stream_body(entry, wire, ctx, cache) == b"".join(events)


_STAMP = re.compile(rb"\r\nDate: [^\r]*")
#: each wire's creation time in a body: two requests a second apart differ there alone
_CREATED = re.compile(rb'"created(?:_at)?":(?:"[^"]*"|\d+)')


async def _raw(fake_url: str, wire: str) -> bytes:
    host, port = fake_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    body = (
        b'{"model":"m","max_tokens":9,"stream":true,"stream_options":{"include_usage":true},'
        b'"messages":[{"role":"user","content":"one two three"}],"input":"one two"}'
    )
    writer.write(
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n%s"
        % (PATHS[wire].encode(), len(body), body)
    )
    try:
        return _STAMP.sub(b"", await asyncio.wait_for(reader.read(), 10))
    finally:
        writer.close()


@pytest.mark.parametrize("wire", WIRES)
async def test_one_write_and_paced_writes_send_the_same_bytes(serve: Serve, wire: str) -> None:
    # the same entry unpaced (one write) and paced (an event at a time), each a server's first
    # request: the same status line and headers, and the same body once de-chunked (the paced
    # reply is one chunk per event, the unpaced one a single chunk)
    text = {"text": "Hello there, a reply in pieces.", "chunk_chars": 6}
    unpaced = await serve({"models": {"*": [text]}})
    paced = await serve({"models": {"*": [text | {"delay_ms": 0.5}]}})
    one, many = await _raw(unpaced.base_url, wire), await _raw(paced.base_url, wire)
    one_head, one_body = one.split(b"\r\n\r\n", 1)
    many_head, many_body = many.split(b"\r\n\r\n", 1)
    assert one_head == many_head
    assert b"Transfer-Encoding: chunked" in one_head
    assert _CREATED.sub(b"", _dechunk(one_body)) == _CREATED.sub(b"", _dechunk(many_body))
    assert one_body.count(b"\r\n0\r\n\r\n") == 1 and one_body.endswith(b"\r\n0\r\n\r\n")


def _dechunk(data: bytes) -> bytes:
    out = b""
    while True:
        size_line, data = data.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return out
        out, data = out + data[:size], data[size + 2 :]
