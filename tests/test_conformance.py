"""Conformance: rxturn folds every recorded stream into what the official SDK folds it into.

Each recorded stream (the fixtures corpus, README in its folder) is served over a loopback
aiohttp server; the official ``anthropic`` / ``openai`` SDK is pointed at it and asked for its final
message; rxturn folds the same bytes with :func:`rxturn.replay_message`. The SDK is the
oracle: every expected value is computed from its result inside the test.

Compared: text parts (Anthropic: non-empty text blocks in order, interleaved with tool calls;
OpenAI: ``choices[0].message.content``), tool calls (id, name, parsed input), usage (every count:
the SDK's folded usage object mapped as docs/usage-and-cost.md says, ``tests/usage_oracle.py``)
and the stop reason (mapped with ``StopReason.parse``; a reason rxturn does not know
leaves rxturn at ``end_turn``, which is asserted explicitly; a refusal is ``refusal``). With
``keep_thinking``, thinking blocks are compared too; the OpenAI Responses streams are compared with
the SDK's ``responses.stream`` final response.

Where the SDK rejects a stream, rxturn must raise its own typed error instead. The recorded
corpus has no such stream, so the second half of this file derives them from the recordings (an
in-stream error event, a data line that is not JSON, a tool call whose JSON is garbage) and
checks both sides on each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import jiter
import openai
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from slow_params import mostly_slow
from usage_oracle import anthropic_expected, chat_expected, responses_expected

from rxturn import replay_message
from rxturn.errors import (
    InvalidToolInputError,
    OverloadedError,
    ProviderStreamError,
    RateLimitError,
    RxturnError,
    StreamProtocolError,
)
from rxturn.messages import (
    Message,
    RedactedThinkingPart,
    RefusalPart,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
    message_to_json,
)

ServerFactory = Callable[..., Awaitable[TestServer]]


from recorded import ANTHROPIC_FIXTURES as ANTHROPIC  # noqa: E402
from recorded import FIXTURES as ROOT  # noqa: E402
from recorded import OPENAI_FIXTURES as OPENAI  # noqa: E402
from recorded import RESPONSES_FIXTURES as RESPONSES  # noqa: E402


def test_the_corpus_is_all_there() -> None:
    # every file of both folders is collected below; an empty glob would pass vacuously
    assert len(ANTHROPIC) >= 10 and len(OPENAI) >= 12
    on_disk = {p for folder in ("anthropic", "openai") for p in (ROOT / folder).iterdir()}
    on_disk = {p for p in on_disk if p.suffix == ".sse"}
    assert on_disk == set(ANTHROPIC) | set(OPENAI)


# -- serving bytes to the official SDKs ------------------------------------------------------


async def _serve(aiohttp_server: ServerFactory, body: bytes) -> TestServer:
    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        # a few uneven writes, like a real stream, so the SDK's own decoder is exercised
        for start in range(0, len(body), 777):
            await response.write(body[start : start + 777])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", handler)
    app.router.add_post("/chat/completions", handler)
    app.router.add_post("/responses", handler)
    return await aiohttp_server(app, host="127.0.0.1")


async def _anthropic_final(aiohttp_server: ServerFactory, body: bytes) -> Any:
    server = await _serve(aiohttp_server, body)
    client = anthropic.AsyncAnthropic(
        base_url=str(server.make_url("")), api_key="test-key", max_retries=0
    )
    try:
        async with client.messages.stream(
            model="claude-test", max_tokens=1024, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            return await stream.get_final_message()
    finally:
        await client.close()


async def _openai_final(aiohttp_server: ServerFactory, body: bytes) -> Any:
    """The SDK's final completion. ``finish_reason == "length"`` makes ``get_final_completion``
    raise ``LengthFinishReasonError`` *after* folding; its ``completion`` is that fold."""
    server = await _serve(aiohttp_server, body)
    client = openai.AsyncOpenAI(
        base_url=str(server.make_url("")), api_key="test-key", max_retries=0
    )
    try:
        async with client.chat.completions.stream(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            try:
                return await stream.get_final_completion()
            except openai.LengthFinishReasonError as exc:
                return exc.completion
    finally:
        await client.close()


# -- comparing -------------------------------------------------------------------------------


def _expected_stop(sdk_reason: str | None, has_tool_calls: bool) -> StopReason:
    parsed = StopReason.parse(sdk_reason)
    reason = parsed if parsed is not None else StopReason.END_TURN
    if reason is StopReason.END_TURN and has_tool_calls:
        return StopReason.TOOL_CALL
    return reason


def _usage(message: Message) -> tuple[int, int] | None:
    return (
        None if message.usage is None else (message.usage.input_tokens, message.usage.output_tokens)
    )


@pytest.mark.parametrize("path", ANTHROPIC, ids=lambda p: p.name)
async def test_anthropic_fixture_matches_the_sdk(aiohttp_server: ServerFactory, path: Path) -> None:
    body = path.read_bytes()
    sdk = await _anthropic_final(aiohttp_server, body)
    ours = replay_message(body, "anthropic")
    assert replay_message(path) == ours  # auto-detected format, read from the file

    expected_parts: list[Any] = []
    for block in sdk.content:
        if block.type == "text" and block.text:
            expected_parts.append(TextPart(block.text))
        elif block.type == "tool_use":  # client tools only: server tools are not ours to run
            expected_parts.append(ToolCallPart(block.id, block.name, block.input))
    assert list(ours.content) == expected_parts

    assert (ours.id, ours.model) == (sdk.id, sdk.model)
    assert ours.usage == anthropic_expected(sdk.usage)
    assert ours.usage is not None and ours.usage.input_tokens == (
        sdk.usage.input_tokens
        + (sdk.usage.cache_creation_input_tokens or 0)
        + (sdk.usage.cache_read_input_tokens or 0)
    )
    expected_stop = _expected_stop(sdk.stop_reason, bool(ours.tool_calls))
    assert ours.stop_reason is expected_stop
    if StopReason.parse(sdk.stop_reason) is None:  # e.g. "pause_turn": rxturn keeps its default
        assert sdk.stop_reason is not None
        assert ours.stop_reason in (StopReason.END_TURN, StopReason.TOOL_CALL)


@pytest.mark.parametrize("path", OPENAI, ids=lambda p: p.name)
async def test_openai_fixture_matches_the_sdk(aiohttp_server: ServerFactory, path: Path) -> None:
    body = path.read_bytes()
    sdk = await _openai_final(aiohttp_server, body)
    ours = replay_message(body, "openai")
    assert replay_message(path) == ours

    choice = sdk.choices[0]  # rxturn folds choices[0] only (docs/behaviour.md §6)
    assert ours.text == (choice.message.content or "")
    assert all(
        isinstance(p, ToolCallPart) or (isinstance(p, TextPart | RefusalPart) and p.text)
        for p in ours.content
    )

    expected_calls = []
    for call in choice.message.tool_calls or []:
        arguments = call.function.arguments
        try:
            parsed = json.loads(arguments) if arguments else {}
        except json.JSONDecodeError:  # left open by a "length" stop: the SDK's partial parser
            parsed = jiter.from_json(arguments.encode(), partial_mode=True)
        expected_calls.append(ToolCallPart(call.id, call.function.name, parsed))
    assert ours.tool_calls == expected_calls

    assert ours.id == sdk.id
    assert ours.model == sdk.model
    assert ours.usage == chat_expected(sdk.usage)
    assert _usage(ours) == (
        None if sdk.usage is None else (sdk.usage.prompt_tokens, sdk.usage.completion_tokens)
    )
    expected_stop = _expected_stop(choice.finish_reason, bool(expected_calls))
    if choice.message.refusal and expected_stop is StopReason.END_TURN:
        expected_stop = StopReason.REFUSAL  # refused in words
    assert ours.stop_reason is expected_stop
    assert ours.refusal == (choice.message.refusal or "")


def test_the_corpus_covers_the_interesting_cases() -> None:
    """Guard the corpus: the comparisons above must have met these cases at least once."""
    folded = {p.name: replay_message(p) for p in [*ANTHROPIC, *OPENAI]}
    reasons = {m.stop_reason for m in folded.values()}
    assert {StopReason.END_TURN, StopReason.TOOL_CALL, StopReason.MAX_TOKENS} <= reasons
    assert any(len(m.tool_calls) >= 2 for m in folded.values())  # parallel tool calls
    assert any(m.content == () for m in folded.values())  # refusals
    # a tool block left open by max_tokens, kept with its partially parsed input
    truncated = [
        m for m in folded.values() if m.stop_reason is StopReason.MAX_TOKENS and m.tool_calls
    ]
    assert truncated


# -- streams the SDK rejects: rxturn must raise its typed error ------------------------------

_BLOCKS = re.compile(rb"(?:\r\n|\n){2,}")


def _events(body: bytes) -> list[bytes]:
    return [block for block in _BLOCKS.split(body) if block.strip()]


def _join(blocks: list[bytes]) -> bytes:
    return b"\n\n".join(blocks) + b"\n\n"


def _anthropic_error(error_type: str) -> bytes:
    payload = {"type": "error", "error": {"type": error_type, "message": f"{error_type} now"}}
    return b"event: error\ndata: " + json.dumps(payload).encode()


def _inject_after_first(body: bytes, block: bytes) -> bytes:
    blocks = _events(body)
    return _join([blocks[0], block, *blocks[1:]])


async def _sdk_raises(call: Awaitable[Any]) -> BaseException:
    try:
        await call
    except Exception as exc:
        return exc
    raise AssertionError("the official SDK accepted the stream")


ERROR_TYPES = [
    ("overloaded_error", OverloadedError),
    ("rate_limit_error", RateLimitError),
    ("api_error", ProviderStreamError),
]


#: An error injected into every recorded stream, on every error type, is a whole-suite check: the
#: inner loop keeps a plain, a tool and a thinking stream of each provider.
KEPT_FOR_ERRORS = {
    "basic_response.sse",
    "tool_use_response.sse",
    "thinking_stream.sse",
    "plain_text.sse",
    "tool_call.sse",
}


def _mostly_slow(paths: list[Path]) -> list[Any]:
    names = [path.name for path in paths]
    return mostly_slow("path", paths, ids=names, keep=KEPT_FOR_ERRORS & set(names))


@pytest.mark.parametrize(("error_type", "expected"), ERROR_TYPES, ids=[e for e, _ in ERROR_TYPES])
@pytest.mark.parametrize("path", _mostly_slow(ANTHROPIC))
async def test_anthropic_in_stream_error(
    aiohttp_server: ServerFactory, path: Path, error_type: str, expected: type[RxturnError]
) -> None:
    body = _inject_after_first(path.read_bytes(), _anthropic_error(error_type))
    sdk_error = await _sdk_raises(_anthropic_final(aiohttp_server, body))
    assert isinstance(sdk_error, anthropic.APIError)
    with pytest.raises(expected) as info:
        replay_message(body)
    assert type(info.value) is expected
    assert error_type in str(info.value) or f"{error_type} now" in str(info.value)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"message": "boom", "type": "server_error"}, ProviderStreamError),
        ({"message": "slow down", "type": "rate_limit_error", "code": 429}, RateLimitError),
    ],
    ids=["server_error", "rate_limit"],
)
@pytest.mark.parametrize("path", _mostly_slow(OPENAI))
async def test_openai_in_stream_error(
    aiohttp_server: ServerFactory, path: Path, error: dict[str, Any], expected: type[RxturnError]
) -> None:
    body = _inject_after_first(path.read_bytes(), b"data: " + json.dumps({"error": error}).encode())
    sdk_error = await _sdk_raises(_openai_final(aiohttp_server, body))
    assert isinstance(sdk_error, openai.APIError)
    with pytest.raises(expected) as info:
        replay_message(body)
    assert error["message"] in str(info.value)


@pytest.mark.parametrize("path", _mostly_slow([*ANTHROPIC, *OPENAI]))
async def test_data_line_that_is_not_json(aiohttp_server: ServerFactory, path: Path) -> None:
    blocks = _events(path.read_bytes())
    # cut the JSON of the second event in half
    lines = blocks[1].splitlines()
    position = next(i for i, line in enumerate(lines) if line.startswith(b"data:"))
    lines[position] = lines[position][: len(lines[position]) // 2]
    body = _join([blocks[0], b"\n".join(lines), *blocks[2:]])
    provider = path.parent.name
    final = _anthropic_final if provider == "anthropic" else _openai_final
    await _sdk_raises(final(aiohttp_server, body))
    with pytest.raises(StreamProtocolError) as info:
        replay_message(body, provider)
    # block 0's lines, one blank line, then the cut line's place in block 1
    line_number = blocks[0].count(b"\n") + 1 + 1 + position + 1
    assert body.splitlines()[line_number - 1] == lines[position]
    assert f"line {line_number}" in str(info.value)


def _client_tool_indexes(body: bytes) -> set[int]:
    indexes = set()
    for block in _events(body):
        for line in block.splitlines():
            if line.startswith(b"data:") and b'"content_block_start"' in line:
                event = json.loads(line[5:])
                if event["content_block"]["type"] == "tool_use":
                    indexes.add(event["index"])
    return indexes


def _garbage_first_tool_fragment(body: bytes, *, client: bool) -> bytes:
    """Prefix the first input fragment of a client (or server) tool block with ``x``: no JSON
    document starts that way."""
    client_indexes = _client_tool_indexes(body)
    out: list[bytes] = []
    done = False
    for block in _events(body):
        if not done and b'"input_json_delta"' in block:
            data = next(line for line in block.splitlines() if line.startswith(b"data:"))
            if (json.loads(data[5:])["index"] in client_indexes) == client:
                block = block.replace(b'"partial_json":"', b'"partial_json":"x', 1)
                done = True
        out.append(block)
    assert done
    return _join(out)


def _has_tool_input(path: Path, *, client: bool) -> bool:
    body = path.read_bytes()
    return b"input_json_delta" in body and (bool(_client_tool_indexes(body)) == client)


@pytest.mark.parametrize(
    "path", [p for p in ANTHROPIC if _has_tool_input(p, client=True)], ids=lambda p: p.name
)
async def test_tool_json_the_sdk_cannot_parse(aiohttp_server: ServerFactory, path: Path) -> None:
    body = _garbage_first_tool_fragment(path.read_bytes(), client=True)
    sdk_error = await _sdk_raises(_anthropic_final(aiohttp_server, body))
    assert "Unable to parse tool parameter JSON" in str(sdk_error)
    with pytest.raises(InvalidToolInputError) as info:
        replay_message(body)
    assert info.value.raw.startswith("x")
    assert "line " in str(info.value)


@pytest.mark.parametrize(
    "path", [p for p in ANTHROPIC if _has_tool_input(p, client=False)], ids=lambda p: p.name
)
async def test_server_tool_input_is_not_rxturns_to_parse(
    aiohttp_server: ServerFactory, path: Path
) -> None:
    """The one deliberate divergence: the SDK also parses a *server* tool's input (it runs on
    the provider, rxturn never sees a call for it), so garbage there fails the SDK, not rxturn."""
    original = replay_message(path)
    body = _garbage_first_tool_fragment(path.read_bytes(), client=False)
    await _sdk_raises(_anthropic_final(aiohttp_server, body))
    assert replay_message(body) == original


# -- thinking kept, against the anthropic SDK ------------------------------------------------


@pytest.mark.parametrize(
    "path", [p for p in ANTHROPIC if b'"thinking"' in p.read_bytes()], ids=lambda p: p.name
)
async def test_anthropic_thinking_kept_matches_the_sdk(
    aiohttp_server: ServerFactory, path: Path
) -> None:
    """With ``keep_thinking``, thinking (text and signature) and redacted thinking stay in block
    order exactly as the SDK accumulates them; without it, the message is unchanged."""
    body = path.read_bytes()
    sdk = await _anthropic_final(aiohttp_server, body)
    kept = replay_message(body, "anthropic", keep_thinking=True)
    expected: list[Any] = []
    for block in sdk.content:
        if block.type == "text" and block.text:
            expected.append(TextPart(block.text))
        elif block.type == "tool_use":
            expected.append(ToolCallPart(block.id, block.name, block.input))
        elif block.type == "thinking":
            expected.append(ThinkingPart(block.thinking, block.signature))
        elif block.type == "redacted_thinking":
            expected.append(RedactedThinkingPart(block.data))
    assert list(kept.content) == expected
    assert any(isinstance(p, ThinkingPart | RedactedThinkingPart) for p in kept.content)
    plain = replay_message(body, "anthropic")
    assert [p for p in kept.content if isinstance(p, TextPart | ToolCallPart)] == list(
        plain.content
    )
    assert b'"thinking"' not in message_to_json(plain)  # off: the JSON has no thinking


def test_the_corpus_has_real_thinking() -> None:
    kinds = {
        type(p).__name__ for p in ANTHROPIC for p in replay_message(p, keep_thinking=True).content
    }
    assert {"ThinkingPart", "RedactedThinkingPart"} <= kinds


# -- the OpenAI Responses API, against the openai SDK ----------------------------------------


async def _responses_final(aiohttp_server: ServerFactory, body: bytes) -> tuple[Any, Any]:
    """The SDK's ``responses.stream``: its final response (``None`` when the stream ended
    without ``response.completed``) and the text it accumulated from the deltas, per part."""
    server = await _serve(aiohttp_server, body)
    client = openai.AsyncOpenAI(
        base_url=str(server.make_url("")), api_key="test-key", max_retries=0
    )
    try:
        async with client.responses.stream(model="gpt-test", input="hi") as stream:
            snapshot: dict[tuple[int, int], str] = {}  # text the SDK accumulated per part
            async for event in stream:
                if event.type == "response.output_text.delta":
                    snapshot[(event.output_index, event.content_index)] = event.snapshot
            try:
                final = await stream.get_final_response()
            except RuntimeError:
                final = None
            return final, snapshot
    finally:
        await client.close()


def _responses_expected(response: Any, *, keep_thinking: bool) -> list[Any]:
    parts: list[Any] = []
    for item in response.output:
        if item.type == "message":
            for content in item.content:
                if content.type == "output_text" and content.text:
                    parts.append(TextPart(content.text))
                elif content.type == "refusal" and content.refusal:
                    parts.append(RefusalPart(content.refusal))
        elif item.type == "function_call":
            parts.append(
                ToolCallPart(
                    item.call_id, item.name, json.loads(item.arguments) if item.arguments else {}
                )
            )
        elif item.type == "reasoning" and keep_thinking:
            summary = "\n\n".join(s.text for s in item.summary or [])
            if not summary and item.content:  # servers that stream raw reasoning text
                summary = "".join(c.text for c in item.content)
            parts.append(ThinkingPart(summary, item.encrypted_content, item.id))
    return parts


@pytest.mark.parametrize("path", RESPONSES, ids=lambda p: p.name)
async def test_responses_fixture_matches_the_sdk(aiohttp_server: ServerFactory, path: Path) -> None:
    body = path.read_bytes()
    final, snapshot = await _responses_final(aiohttp_server, body)
    assert final is not None
    ours = replay_message(body, "openai-responses")
    assert replay_message(path) == ours  # auto-detected
    assert list(ours.content) == _responses_expected(final, keep_thinking=False)
    # the SDK's own delta accumulation agrees on the text it accumulates
    streamed = [text for _, text in sorted(snapshot.items()) if text]
    assert [p.text for p in ours.content if isinstance(p, TextPart)] == streamed
    kept = replay_message(body, "openai-responses", keep_thinking=True)
    expected = _responses_expected(final, keep_thinking=True)
    if path.name == "openrouter_raw_reasoning.sse":
        # the one divergence: OpenRouter renames its temporary reasoning ids in the final
        # response; rxturn keeps the id the stream announced the item with
        streamed_ids = re.findall(rb'output_item\.added".*?"id":"(rs_[^"]+)"', body)
        expected = [
            _replace_id(p, streamed_ids.pop(0).decode()) if isinstance(p, ThinkingPart) else p
            for p in expected
        ]
    assert list(kept.content) == expected
    assert (ours.id, ours.model) == (final.id, final.model)
    assert ours.usage == responses_expected(final.usage)
    assert _usage(ours) == (
        None if final.usage is None else (final.usage.input_tokens, final.usage.output_tokens)
    )
    if final.incomplete_details is not None and final.incomplete_details.reason == (
        "max_output_tokens"
    ):
        expected_stop = StopReason.MAX_TOKENS
    elif any(item.type == "function_call" for item in final.output):
        expected_stop = StopReason.TOOL_CALL
    elif any(isinstance(p, RefusalPart) for p in ours.content):
        expected_stop = StopReason.REFUSAL
    else:
        expected_stop = StopReason.END_TURN
    assert ours.stop_reason is expected_stop


def _replace_id(part: ThinkingPart, id_: str) -> ThinkingPart:
    assert part.id != id_
    return ThinkingPart(part.thinking, part.signature, id_)


def test_the_responses_corpus_covers_the_interesting_cases() -> None:
    folded = [replay_message(p, keep_thinking=True) for p in RESPONSES]
    assert any(m.stop_reason is StopReason.TOOL_CALL for m in folded)
    assert any(m.stop_reason is StopReason.END_TURN and m.text for m in folded)
    thinking = [p for m in folded for p in m.content if isinstance(p, ThinkingPart)]
    assert any(p.signature for p in thinking) and any(p.thinking for p in thinking)
    assert all(p.id.startswith("rs_") for p in thinking if p.signature)


# -- a refusal ends the agent loop -------------------------------------------------------------


async def test_a_refusal_with_a_tool_call_ends_the_agent_loop(
    aiohttp_server: ServerFactory,
) -> None:
    """A recorded tool-use stream whose stop reason says ``refusal``: the call is in the
    message, but only ``tool_call`` continues a loop, so the tool never runs and one request is
    made."""
    from rxturn import TurnEngine
    from rxturn.clients.anthropic import AnthropicClient

    recorded = (ROOT / "anthropic" / "tool_use_response.sse").read_bytes()
    body = recorded.replace(b'"stop_reason":"tool_use"', b'"stop_reason":"refusal"')
    assert body != recorded
    requests: list[bytes] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        requests.append(await request.read())
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        await response.write(body)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", handler)
    server = await aiohttp_server(app, host="127.0.0.1")
    ran: list[str] = []

    def get_weather(location: str) -> str:
        ran.append(location)
        return "sunny"

    client = AnthropicClient("claude-test", api_key="k", base_url=str(server.make_url("")))
    try:
        result = await TurnEngine(client, tools=[get_weather]).run("weather?")
    finally:
        await client.aclose()
    assert result.stop_reason is StopReason.REFUSAL
    assert result.message.tool_calls and not ran
    assert len(result.turns) == 1 and len(requests) == 1


# -- usage objects beyond the recordings: every count, folded as the SDK folds it -------------


def _with_anthropic_usage(start: dict[str, Any], delta: dict[str, Any]) -> bytes:
    """The recorded basic stream with its ``message_start`` / ``message_delta`` usage replaced."""
    blocks = []
    for block in _events((ROOT / "anthropic" / "basic_response.sse").read_bytes()):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith(b"data:"):
                event = json.loads(line[5:])
                if event["type"] == "message_start":
                    event["message"]["usage"] = start
                elif event["type"] == "message_delta":
                    event["usage"] = delta
                lines[i] = b"data: " + json.dumps(event).encode()
        blocks.append(b"\n".join(lines))
    return _join(blocks)


_SPLIT = {"ephemeral_5m_input_tokens": 300, "ephemeral_1h_input_tokens": 200}
ANTHROPIC_USAGES = {
    "cache_write_split": (
        {
            "input_tokens": 12,
            "cache_creation_input_tokens": 500,
            "cache_read_input_tokens": 0,
            "cache_creation": _SPLIT,
            "output_tokens": 1,
        },
        {"output_tokens": 9},
    ),
    "cache_read_and_thinking": (
        {"input_tokens": 4, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 9000},
        {"output_tokens": 70, "output_tokens_details": {"thinking_tokens": 50}},
    ),
    # a delta's counts win where not null: the total of writes moves, the split no longer adds up
    "delta_overrides_and_split_dropped": (
        {
            "input_tokens": 3,
            "cache_creation_input_tokens": 500,
            "cache_read_input_tokens": 7,
            "cache_creation": _SPLIT,
            "output_tokens": 1,
        },
        {
            "input_tokens": 5,
            "cache_creation_input_tokens": 650,
            "cache_read_input_tokens": None,
            "output_tokens": 40,
            "server_tool_use": {"web_search_requests": 2, "web_fetch_requests": 1},
        },
    ),
    "unknown_counts_in_details": (
        {"input_tokens": 8, "output_tokens": 1, "service_tier": "standard", "new_thing": 4},
        {"output_tokens": 3, "fallback_credit": {"status": {"type": "redeemed"}}},
    ),
}


@pytest.mark.parametrize("case", ANTHROPIC_USAGES, ids=list(ANTHROPIC_USAGES))
async def test_anthropic_usage_folds_as_the_sdk(aiohttp_server: ServerFactory, case: str) -> None:
    start, delta = ANTHROPIC_USAGES[case]
    body = _with_anthropic_usage(start, delta)
    sdk = await _anthropic_final(aiohttp_server, body)
    ours = replay_message(body, "anthropic")
    assert ours.usage == anthropic_expected(sdk.usage)
    assert ours.usage is not None
    if case == "cache_write_split":
        assert (ours.usage.cache_write_5m_tokens, ours.usage.cache_write_1h_tokens) == (300, 200)
        assert ours.usage.input_tokens == 12 + 500
    if case == "delta_overrides_and_split_dropped":
        assert ours.usage.cache_write_5m_tokens is None
        assert ours.usage.input_tokens == 5 + 650 + 7  # the start's reads stand: null keeps them
        assert ours.usage.details == {
            "server_tool_use.web_search_requests": 2,
            "server_tool_use.web_fetch_requests": 1,
        }


def _with_openai_usage(usage: dict[str, Any]) -> bytes:
    blocks = []
    for block in _events((ROOT / "openai" / "plain_text.sse").read_bytes()):
        if block.startswith(b"data: {") and b'"usage":{' in block:
            chunk = json.loads(block[6:])
            chunk["usage"] = usage
            block = b"data: " + json.dumps(chunk).encode()
        blocks.append(block)
    return _join(blocks)


OPENAI_USAGES = {
    "cached_audio_reasoning": {
        "prompt_tokens": 2000,
        "completion_tokens": 300,
        "total_tokens": 2300,
        "prompt_tokens_details": {"cached_tokens": 1536, "audio_tokens": 40, "image_tokens": 85},
        "completion_tokens_details": {
            "reasoning_tokens": 200,
            "audio_tokens": 12,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 3,
        },
    },
    "openrouter_cost": {
        "prompt_tokens": 14,
        "completion_tokens": 30,
        "total_tokens": 44,
        "cost": 0.000123,
        "is_byok": False,
        "cost_details": {"upstream_inference_cost": None},
    },
}


@pytest.mark.parametrize("case", OPENAI_USAGES, ids=list(OPENAI_USAGES))
async def test_openai_usage_folds_as_the_sdk(aiohttp_server: ServerFactory, case: str) -> None:
    body = _with_openai_usage(OPENAI_USAGES[case])
    sdk = await _openai_final(aiohttp_server, body)
    ours = replay_message(body, "openai")
    assert ours.usage == chat_expected(sdk.usage)
    assert ours.usage is not None
    if case == "openrouter_cost":
        assert ours.usage.provider_cost == 0.000123
    else:
        assert ours.usage.details == {
            "prompt_tokens_details.image_tokens": 85,
            "completion_tokens_details.accepted_prediction_tokens": 0,
            "completion_tokens_details.rejected_prediction_tokens": 3,
        }


BAD_USAGES = [
    ({"prompt_tokens": -5, "completion_tokens": 1}, "'prompt_tokens' is -5"),
    ({"prompt_tokens": "12", "completion_tokens": 1}, "'prompt_tokens' is '12'"),
    ({"prompt_tokens": 1.5, "completion_tokens": 1}, "'prompt_tokens' is 1.5"),
    ({"prompt_tokens": 10**30, "completion_tokens": 1}, "'prompt_tokens' is 1000000"),
    (
        {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": True}},
        "'prompt_tokens_details.cached_tokens' is True",
    ),
]


@pytest.mark.parametrize(("usage", "message"), BAD_USAGES, ids=[m for _, m in BAD_USAGES])
def test_garbage_usage_is_a_typed_error(usage: dict[str, Any], message: str) -> None:
    body = _with_openai_usage(usage)
    with pytest.raises(StreamProtocolError, match="malformed OpenAI usage") as info:
        replay_message(body, "openai")
    assert message in str(info.value)
    assert "line " in str(info.value)


def test_unknown_and_null_usage_fields_are_not_an_error() -> None:
    usage = {
        "prompt_tokens": 5,
        "completion_tokens": None,  # null: not reported
        "prompt_tokens_details": None,
        "odd": -3,  # not a count: left out
        "label": "x",
        "nested": {"deep": {"count": 4}},
        "list": [1, 2],
    }
    message = replay_message(_with_openai_usage(usage), "openai")
    assert message.usage is not None
    assert (message.usage.input_tokens, message.usage.output_tokens) == (5, 0)
    assert message.usage.cache_read_tokens is None
    assert message.usage.details == {"nested.deep.count": 4}


@pytest.mark.parametrize("delta", [{"output_tokens": None}, {}], ids=["null", "absent"])
async def test_anthropic_delta_output_tokens_always_replaces(
    aiohttp_server: ServerFactory, delta: dict[str, Any]
) -> None:
    """The SDK copies ``message_delta``'s ``output_tokens`` over the start's unconditionally: a
    null or missing one leaves the reply's output unreported, in the SDK and in rxturn."""
    body = _with_anthropic_usage({"input_tokens": 11, "output_tokens": 1}, delta)
    sdk = await _anthropic_final(aiohttp_server, body)
    assert sdk.usage.output_tokens is None
    ours = replay_message(body, "anthropic")
    assert ours.usage == anthropic_expected(sdk.usage) == Usage(input_tokens=11)
