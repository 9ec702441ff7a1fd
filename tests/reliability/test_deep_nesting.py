"""JSON nested thousands of levels deep, at every place rxturn decodes JSON.

msgspec raises ``RecursionError`` (not ``msgspec.DecodeError``) on such input, so a site that
only catches ``DecodeError`` lets it escape untyped. Each site must treat it exactly like
malformed JSON: the typed error that site raises for broken JSON, and, on the network paths, the
retry ladder decides (a malformed stream is transient: the next attempt is made).

Sites, each fed 100,000 levels of ``[`` and of ``{"a":`` (under one object, see ``DEEP``):

- streaming payloads: SSE ``data:`` (Anthropic, OpenAI, OpenAI Responses; also a deep unknown
  field, which the decoders skip recursively), NDJSON lines (Ollama) — sans-IO and (but
  Responses) through real servers;
- non-streaming reply bodies of every client (Responses: sans-IO), and error bodies (a 500,
  a 200 JSON on a streaming request);
- tool arguments: streamed (the fold's decode of a closed block, and the partial-JSON parser for
  a block left open at ``max_tokens``), and in non-streaming replies;
- replay input (``replay_message`` and ``rxturn replay``), ``rxturn chat --json``, the fake
  provider's request parsing, scenario files, ``message_from_json``, the audit JSONL.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from aiohttp import ClientSession, web

from rxturn import replay_message
from rxturn.engine.handler import StreamHandler
from rxturn.engine.records.audit import AuditTrail
from rxturn.errors import (
    ConfigError,
    InvalidToolInputError,
    ServerError,
    StreamProtocolError,
    UnexpectedResponseError,
    is_retryable,
)
from rxturn.messages import message_from_json
from rxturn.testing import FakeProvider, load_scenario
from rxturn.wire import (
    decoder_for,
    parse_anthropic_message,
    parse_error_body,
    parse_ollama_chat,
    parse_openai_completion,
)
from rxturn.wire._partial_json import parse_partial
from rxturn.wire.openai_responses import parse_openai_response

from .conftest import (
    FORMAT_NAMES,
    ScriptedEntry,
    ScriptedProvider,
    Site,
    ToolScript,
    make_client,
    resilient,
    run_turn,
    serve,
    wire_reply,
    wire_stream,
)

pytestmark = pytest.mark.timeout(60)

LEVELS = 100_000
# Rooted in an object: a top-level array is already the wrong shape for a reply or an event (a
# typed error before any recursion), so the nesting is put where the decoders must descend.
DEEP = {"arrays": b'{"a":' + b"[" * LEVELS, "objects": b'{"a":' * LEVELS}
SHAPES = list(DEEP)
TOO_DEEP = "nested too deeply"


def deep_event(fmt: str, deep: bytes) -> bytes:
    """One stream event whose payload is ``deep``, in ``fmt``'s framing."""
    if fmt == "ollama":
        return deep + b"\n"
    return (
        b"event: content_block_delta\ndata: " + deep + b"\n\n"
        if fmt == "anthropic"
        else (b"data: " + deep + b"\n\n")
    )


def deep_field_event(fmt: str, deep: bytes) -> bytes:
    """A well-shaped event with one extra, unknown field holding ``deep`` (skipped recursively)."""
    if fmt == "anthropic":
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"x"},"extra":' + deep + b"\n\n"
        )
    if fmt == "openai":
        return (
            b'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
            b'"delta":{"content":"x"}}],"extra":' + deep + b"\n\n"
        )
    return b'{"model":"m","message":{"role":"assistant","content":"x"},"extra":' + deep + b"\n"


def deep_tool(deep: bytes) -> str:
    return '{"city": ' + deep.decode()


# ------------------------------------------------------------------------------ sans-IO sites


# only the Anthropic decoder re-decodes a payload loosely
DECODER_SITES = [(fmt, where) for fmt in FORMAT_NAMES for where in ("payload", "unknown field")] + [
    ("anthropic", "loose re-decode")
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("fmt", "where"), DECODER_SITES)
def test_stream_decoders_raise_a_protocol_error(fmt: str, where: str, shape: str) -> None:
    deep = DEEP[shape]
    if where == "payload":
        data = deep_event(fmt, deep)
    elif where == "unknown field":
        data = deep_field_event(fmt, deep)
    else:
        # the strict decode fails on the text's type; the loose re-decode (which tells unknown
        # event types from broken known ones) skips it and meets the nesting
        data = (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":5},"extra":' + deep + b"\n\n"
        )
    prefix = wire_stream(fmt, text=["ok "], complete=False)
    decoder = decoder_for(fmt)
    events: list[Any] = []
    # the loose re-decode reports the strict decode's finding (the text's type)
    expected = "unexpected JSON shape" if where == "loose re-decode" else TOO_DEEP
    with pytest.raises(StreamProtocolError, match=expected) as caught:
        for piece in (prefix, data, b"", prefix):
            events += decoder.feed(piece)
        events += decoder.close()
    assert is_retryable(caught.value), "a malformed stream is transient: the ladder decides"
    assert any(getattr(event, "text", None) == "ok " for event in events), "earlier text lost"


PARSERS: dict[str, Callable[[bytes], Any]] = {
    "anthropic": parse_anthropic_message,
    "openai": parse_openai_completion,
    "ollama": parse_ollama_chat,
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_reply_parsers_raise_a_protocol_error(fmt: str, shape: str) -> None:
    with pytest.raises(StreamProtocolError, match=TOO_DEEP):
        PARSERS[fmt](DEEP[shape])
    # deep inside an otherwise well-formed reply: the unknown field is skipped recursively
    body = wire_reply(fmt, text="hi")
    with pytest.raises(StreamProtocolError, match=TOO_DEEP):
        PARSERS[fmt](body[:-1] + b',"extra":' + DEEP[shape] + b"}")


RESPONSES_START = (
    b'data: {"type":"response.created","response":{"id":"resp_1","model":"m"}}\n\n'
    b'data: {"type":"response.output_text.delta","output_index":0,"content_index":0,'
    b'"delta":"ok "}\n\n'
)
RESPONSES_SITES = {
    "payload": lambda deep: deep,
    "known event, unknown field": lambda deep: (
        b'{"type":"response.output_text.delta","output_index":0,"content_index":0,'
        b'"delta":"x","extra":' + deep
    ),
    # an event of a type the decoder does not model: its type is read apart (and meets the
    # nesting) to tell it from a broken known event; the error reports the first decode's finding
    "unknown event type": lambda deep: b'{"type":"response.hosted_tool.x","extra":' + deep,
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("where", list(RESPONSES_SITES))
def test_the_responses_decoder_raises_a_protocol_error(where: str, shape: str) -> None:
    decoder = decoder_for("openai-responses")
    events: list[Any] = []
    data = b"data: " + RESPONSES_SITES[where](DEEP[shape]) + b"\n\n"
    expected = "unexpected JSON shape" if where == "unknown event type" else TOO_DEEP
    with pytest.raises(StreamProtocolError, match=expected) as caught:
        for piece in (RESPONSES_START, data, RESPONSES_START):
            events += decoder.feed(piece)
        events += decoder.close()
    assert is_retryable(caught.value), "a malformed stream is transient: the ladder decides"
    assert any(getattr(event, "text", None) == "ok " for event in events), "earlier text lost"


@pytest.mark.parametrize("shape", SHAPES)
def test_the_responses_reply_parser_raises_a_protocol_error(shape: str) -> None:
    with pytest.raises(StreamProtocolError, match=TOO_DEEP):
        parse_openai_response(DEEP[shape])
    with pytest.raises(StreamProtocolError, match=TOO_DEEP):
        parse_openai_response(b'{"id":"resp_1","model":"m","output":[],"extra":' + DEEP[shape])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_tool_arguments_of_a_reply_are_invalid_tool_input(fmt: str, shape: str) -> None:
    body = wire_reply(fmt, tool=("call_1", "get_weather", deep_tool(DEEP[shape])), stop="tool_call")
    # Anthropic's input is an object in the body itself (a malformed body); the others carry a
    # JSON string that is parsed on its own (invalid tool input)
    expected = StreamProtocolError if fmt == "anthropic" else InvalidToolInputError
    with pytest.raises(expected, match=TOO_DEEP) as caught:
        PARSERS[fmt](body)
    assert (type(caught.value) is InvalidToolInputError) == (fmt != "anthropic")


@pytest.mark.parametrize("shape", SHAPES)
def test_error_bodies_are_simply_not_understood(shape: str) -> None:
    assert parse_error_body(DEEP[shape]) == (None, None)
    assert parse_error_body(b'{"error":' + DEEP[shape]) == (None, None)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("closed", [True, False], ids=["closed-block", "open-at-max-tokens"])
@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
def test_streamed_tool_json_is_invalid_tool_input(fmt: str, closed: bool, shape: str) -> None:
    """A closed block goes through the fold's JSON decode, an open one (the reply cut at
    ``max_tokens``) through the partial-JSON parser: both fail the same typed way."""
    tool = ToolScript(fragments=(deep_tool(DEEP[shape]),), closed=closed)
    data = wire_stream(fmt, tool=tool, stop="tool_call" if closed else "max_tokens")
    with pytest.raises(InvalidToolInputError) as caught:
        replay_message(data, fmt)
    assert TOO_DEEP in str(caught.value) or "recursion limit" in str(caught.value)


def _at_stack_depth(frames_left: int, action: Callable[[], Any]) -> Any:
    """Run ``action`` with only about ``frames_left`` frames of recursion budget left."""
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back

    def down(n: int) -> Any:
        return action() if n <= 0 else down(n - 1)

    return down(sys.getrecursionlimit() - depth - frames_left)


def test_the_partial_json_parser_near_the_stack_limit_raises_value_error() -> None:
    """Its own depth cap (200) is not reached, but the caller's stack is nearly full."""
    with pytest.raises(ValueError, match="recursion limit"):
        _at_stack_depth(60, lambda: parse_partial("[" * 150))
    assert _at_stack_depth(60, lambda: parse_partial("[[1, 2")) == [[1, 2]]


# ------------------------------------------------------------------------------ local inputs


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_replay_raises_a_located_protocol_error(fmt: str, shape: str) -> None:
    data = wire_stream(fmt, text=["ok"], complete=False) + deep_event(fmt, DEEP[shape])
    with pytest.raises(StreamProtocolError, match=TOO_DEEP) as caught:
        replay_message(data, fmt)
    assert "line" in str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
def test_rxturn_replay_prints_one_line_and_exits_2(shape: str, tmp_path: Path) -> None:
    path = tmp_path / "deep.sse"
    path.write_bytes(
        wire_stream("anthropic", text=["ok"], complete=False) + deep_event("anthropic", DEEP[shape])
    )
    for extra in ([], ["--json"]):
        result = asyncio.run(_run_cli("replay", str(path), *extra))
        code, out, err = result
        assert code == 2, (code, err)
        assert out == ""
        assert err.count("\n") == 1 and TOO_DEEP in err and "Traceback" not in err, err


@pytest.mark.parametrize("shape", SHAPES)
def test_local_json_documents_fail_with_their_usual_errors(shape: str) -> None:
    deep = DEEP[shape]
    with pytest.raises(msgspec.DecodeError, match=TOO_DEEP):
        message_from_json(deep)
    with pytest.raises(ConfigError, match="audit JSON line 1"):
        AuditTrail.from_jsonl(deep)
    with pytest.raises(ConfigError, match="invalid JSON"):
        load_scenario(deep)


@pytest.mark.parametrize("shape", SHAPES)
async def test_the_fake_provider_answers_a_deep_request_with_400(shape: str) -> None:
    async with FakeProvider({"models": {"*": [{"text": "ok"}]}}) as fake, ClientSession() as http:
        async with http.post(fake.base_url + "/v1/messages", data=DEEP[shape]) as response:
            assert response.status == 400
            body = await response.json()
        assert "not valid JSON" in body["error"]["message"]
        async with http.post(
            fake.base_url + "/v1/messages",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5},
        ) as response:
            assert response.status == 200, "the server must survive and serve the next request"


# ------------------------------------------------------------------------------ real servers


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_deep_body_fails_the_attempt_and_the_ladder_retries(
    fmt: str, mode: str, shape: str
) -> None:
    deep = DEEP[shape]
    bad = ScriptedEntry(
        stream=wire_stream(fmt, text=["par", "tial"], complete=False) + deep_event(fmt, deep),
        reply=deep,
    )
    good = ScriptedEntry(stream=wire_stream(fmt, text=["fine"]), reply=wire_reply(fmt, text="fine"))
    async with ScriptedProvider([bad]) as server, make_client(fmt, server) as client:
        _, error = await run_turn(client, StreamHandler.passthrough(), mode)
    assert isinstance(error, StreamProtocolError) and TOO_DEEP in str(error), repr(error)
    if mode == "streaming":
        async with ScriptedProvider([bad, good]) as server, make_client(fmt, server) as client:
            result, error = await run_turn(client, resilient(), mode)
            assert error is None, repr(error)
            assert result.text == "fine" and result.turns[-1].attempts == 2
            assert len(server.requests) == 2


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_deep_tool_arguments_from_a_server_are_invalid_tool_input(
    fmt: str, mode: str, shape: str
) -> None:
    arguments = deep_tool(DEEP[shape])
    entry = ScriptedEntry(
        stream=wire_stream(fmt, tool=ToolScript(fragments=(arguments,)), stop="tool_call"),
        reply=wire_reply(fmt, tool=("call_1", "get_weather", arguments), stop="tool_call"),
    )
    async with ScriptedProvider([entry]) as server, make_client(fmt, server) as client:
        _, error = await run_turn(client, StreamHandler.passthrough(), mode)
    expected = (
        StreamProtocolError
        if (fmt, mode) == ("anthropic", "non_streaming")
        else (InvalidToolInputError)
    )
    assert isinstance(error, expected) and TOO_DEEP in str(error), repr(error)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_a_deep_error_body_is_a_readable_status_error(
    fmt: str, mode: str, shape: str
) -> None:
    async def failing(request: web.Request, site: Site) -> web.StreamResponse:
        return web.Response(status=500, body=DEEP[shape], content_type="application/json")

    async with serve(failing) as site, make_client(fmt, site) as client:
        _, error = await run_turn(client, StreamHandler.passthrough(), mode)
    assert type(error) is ServerError and error.status_code == 500, repr(error)
    assert str(error).startswith("HTTP 500: ") and len(str(error)) <= 501


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fmt", ["anthropic", "openai"])
async def test_a_deep_json_200_on_a_streaming_request_is_unexpected(fmt: str, shape: str) -> None:
    async def liar(request: web.Request, site: Site) -> web.StreamResponse:
        return web.Response(status=200, body=DEEP[shape], content_type="application/json")

    async with serve(liar) as site, make_client(fmt, site) as client:
        _, error = await run_turn(client, StreamHandler.passthrough(), "streaming")
    assert isinstance(error, UnexpectedResponseError), repr(error)
    assert error.content_type == "application/json"


async def _run_cli(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    from cli._support import clean_env

    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "rxturn",
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=clean_env(**(env or {})),
    )
    out, err = await asyncio.wait_for(process.communicate(), 45)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.slow
@pytest.mark.parametrize("no_stream", [False, True], ids=["stream", "no-stream"])
@pytest.mark.parametrize("fmt", FORMAT_NAMES)
async def test_chat_json_reports_a_deep_reply_as_one_error_object(
    fmt: str, no_stream: bool
) -> None:
    deep = DEEP["arrays"]
    entry = ScriptedEntry(stream=deep_event(fmt, deep), reply=deep)
    async with ScriptedProvider([entry]) as server:
        base = server.openai_base_url if fmt == "openai" else server.base_url
        argv = ["chat", "--provider", fmt, "--model", "m", "--base-url", base, "--json"]
        code, out, err = await _run_cli(*argv, *(["--no-stream"] if no_stream else []), "hi")
    assert code == 1, (code, out, err)
    assert "Traceback" not in err, err
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    record = msgspec.json.decode(lines[0])
    assert set(record) == {"error", "turns"}, record  # the failed turn's audit beside it
    assert record["error"]["type"] in {"StreamProtocolError", "RescueFailed"}, record
    assert TOO_DEEP in record["error"]["message"], record
