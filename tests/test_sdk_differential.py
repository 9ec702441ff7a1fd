"""Differential: generated, valid-but-unusual streams folded by rxturn and by the official SDKs.

The recorded corpus (tests/test_conformance.py) holds what providers happened to send; this file
generates what they may send: several text blocks, empty deltas, tool arguments split anywhere
(inside ``\\uXXXX`` escapes and between the characters of multi-byte text), parallel tool calls
interleaved, thinking with a signature, refusals, usage in odd places (an OpenAI usage chunk with
no choices before the finish, Anthropic ``message_delta`` usage with null counters), a tool block
left open by ``max_tokens``, unknown event types and extra fields, CRLF framing, SSE comments and
``retry:`` lines; Anthropic redacted thinking, signature deltas, citations, server tool blocks and
a second ``message_delta``; OpenAI chat reasoning deltas, content after the finish, ``n=2`` choices
in any order and logprobs; Responses reasoning summaries (streamed or whole), annotations, parts
sent whole at their done, incomplete and failed responses. Each stream is given to the SDK's own
streaming helper (``messages.stream`` / ``chat.completions.stream`` / ``responses.stream``)
through an in-process ``MockTransport`` and to :func:`rxturn.replay_message` (with and without
kept thinking); the SDK's final message is the oracle for text, tool calls (id, name, parsed
input), thinking, the stop reason and usage (mapped by ``tests/usage_oracle.py``).

Each property runs ``RXTURN_DIFF_EXAMPLES`` examples (default 40, deterministic: CI time); set
``RXTURN_FUZZ_EXPLORE=1`` for fresh random examples on each run (with a count in the thousands,
add ``--timeout=0``: the suite's per-test limit of 120 s would cut the run short).
"""

from __future__ import annotations

import itertools
import json
import os
from typing import Any

import anthropic
import httpx2
import jiter
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from usage_oracle import anthropic_expected, chat_expected, responses_expected

from rxturn import replay_message
from rxturn.errors import ProviderStreamError, StreamProtocolError
from rxturn.messages import (
    Message,
    RedactedThinkingPart,
    RefusalPart,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)

_SETTINGS = settings(
    max_examples=int(os.environ.get("RXTURN_DIFF_EXAMPLES", "40")),
    deadline=None,
    derandomize=not os.environ.get("RXTURN_FUZZ_EXPLORE"),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _http(body: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


def _anthropic_sdk(body: bytes) -> Any:
    client = anthropic.Anthropic(
        api_key="test-key", base_url="http://127.0.0.1:9", http_client=_http(body), max_retries=0
    )
    with client.messages.stream(
        model="claude-test", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        return stream.get_final_message()


def _openai_sdk(body: bytes) -> Any:
    client = openai.OpenAI(
        api_key="test-key", base_url="http://127.0.0.1:9", http_client=_http(body), max_retries=0
    )
    with client.chat.completions.stream(
        model="gpt-test", messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        try:
            return stream.get_final_completion()
        except openai.LengthFinishReasonError as exc:  # raised after the fold: its completion
            return exc.completion


def _sse(events: list[dict[str, Any] | str], newline: str, *, named: bool) -> bytes:
    """SSE framing: a dict is one event (named by its type when ``named``), a str a raw line."""
    out: list[str] = []
    for event in events:
        if isinstance(event, str):
            out.append(event + newline)
            continue
        name = f"event: {event['type']}{newline}" if named and "type" in event else ""
        out.append(f"{name}data: {json.dumps(event)}{newline}{newline}")
    return "".join(out).encode()


# -- strategies --------------------------------------------------------------------------------

_TEXT = st.text(
    alphabet=st.sampled_from(list('ab é€😀"\\\n\t/')), min_size=0, max_size=8
)  # quotes, backslashes, control characters and 2-, 3-, 4-byte UTF-8
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
_INPUTS = st.dictionaries(st.sampled_from(["q", "n", "é", "k\\"]), _JSON_VALUES, max_size=3)
_NOISE = st.sampled_from([": keep-alive", "retry: 1500", ":"])


@st.composite
def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at drawn positions (empty pieces included: empty deltas)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def _arguments(draw: st.DrawFn) -> str:
    """A tool input as JSON text, ASCII-escaped or not (so cuts land inside ``\\u`` escapes)."""
    value = draw(_INPUTS)
    return json.dumps(value, ensure_ascii=draw(st.booleans()))


def _noise(draw: st.DrawFn) -> list[str]:
    return draw(st.lists(_NOISE, max_size=2))


# -- Anthropic ---------------------------------------------------------------------------------


def _counter(draw: st.DrawFn) -> int | None:
    return draw(st.none() | st.integers(0, 5000))


_ANTHROPIC_BLOCKS = ["text", "tool", "thinking", "redacted", "server_tool", "search_result"]
_CITATION = {
    "type": "web_search_result_location",
    "url": "https://example.com/a",
    "title": "a",
    "encrypted_index": "eidx",
    "cited_text": "cited",
}
_SEARCH_RESULT = {
    "type": "web_search_result",
    "url": "https://example.com/a",
    "title": "a",
    "encrypted_content": "enc",
    "page_age": None,
}


@st.composite
def _anthropic_block(
    draw: st.DrawFn, kind: str, index: int, cut: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One content block as ``content_block_start`` carries it, and its deltas in order."""
    deltas: list[dict[str, Any]] = []
    if kind == "text":
        block: dict[str, Any] = {"type": "text", "text": draw(_TEXT)}
        if draw(st.booleans()):
            block["citations"] = None
        for piece in draw(_pieces(draw(_TEXT))):
            if draw(st.integers(0, 3)) == 0:  # a cited passage: its citation comes first
                deltas.append({"type": "citations_delta", "citation": _CITATION})
            deltas.append({"type": "text_delta", "text": piece})
    elif kind == "thinking":
        block = {
            "type": "thinking",
            "thinking": draw(st.just("") | _TEXT),
            "signature": draw(st.sampled_from(["", "start-sig"])),
        }
        deltas += [{"type": "thinking_delta", "thinking": p} for p in draw(_pieces(draw(_TEXT)))]
        for signature in draw(st.lists(st.sampled_from(["", "sig==", "sig2=="]), max_size=2)):
            deltas.append({"type": "signature_delta", "signature": signature})
    elif kind == "redacted":
        block = {"type": "redacted_thinking", "data": draw(st.sampled_from(["", "EqQBCkgIARAB=="]))}
    elif kind == "search_result":
        block = {
            "type": "web_search_tool_result",
            "tool_use_id": f"srvtoolu_{index}",
            "content": draw(st.lists(st.just(_SEARCH_RESULT), max_size=2)),
        }
    else:  # a client tool, or a server tool (web search) whose input streams the same way
        server = kind == "server_tool"
        block = {
            "type": "server_tool_use" if server else "tool_use",
            "id": f"{'srvtoolu' if server else 'toolu'}_{index}",
            "name": "web_search" if server else f"tool_{index}",
            "input": draw(st.just({}) | _INPUTS),  # real streams: {}; the SDK keeps any
        }
        arguments = draw(_arguments())
        if cut:
            arguments = arguments[: draw(st.integers(0, len(arguments)))]
        if draw(st.integers(0, 4)) or cut:  # else no delta at all: the start's input stands
            pieces = draw(_pieces(arguments))
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    return block, deltas


@st.composite
def anthropic_streams(draw: st.DrawFn) -> bytes:
    start_usage: dict[str, Any] = {
        "input_tokens": draw(st.integers(0, 5000)),
        "output_tokens": draw(st.integers(0, 5)),
        "cache_read_input_tokens": _counter(draw),
        "cache_creation_input_tokens": _counter(draw),
    }
    if draw(st.booleans()):
        five, hour = draw(st.integers(0, 50)), draw(st.integers(0, 50))
        start_usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": five,
            "ephemeral_1h_input_tokens": hour,
        }
    message = {
        "id": "msg_gen",
        "type": "message",
        "role": "assistant",
        "model": "claude-gen",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": start_usage,
    }
    events: list[dict[str, Any] | str] = [
        *_noise(draw),
        {"type": "message_start", "message": message},
    ]
    kinds = draw(st.lists(st.sampled_from(_ANTHROPIC_BLOCKS), max_size=4))
    truncated = bool(kinds) and kinds[-1] == "tool" and draw(st.booleans())
    for index, kind in enumerate(kinds):
        if draw(st.booleans()):
            events.append({"type": "ping"})
        if draw(st.booleans()):
            events.append({"type": "gen_unknown_event", "index": index, "x": [1]})
        block, deltas = draw(_anthropic_block(kind, index, truncated and index == len(kinds) - 1))
        if draw(st.booleans()):
            block["gen_extra_field"] = {"ignored": True}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        if not (truncated and index == len(kinds) - 1):
            events.append({"type": "content_block_stop", "index": index})
    if truncated:
        reason = "max_tokens"
    else:
        reason = draw(
            st.sampled_from(["end_turn", "tool_use", "stop_sequence", "refusal", "max_tokens"])
        )
    final_usage: dict[str, Any] = {"output_tokens": draw(st.integers(0, 5000))}
    for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        if draw(st.booleans()):
            final_usage[key] = _counter(draw)
    if draw(st.booleans()):
        final_usage["server_tool_use"] = {"web_search_requests": draw(st.integers(0, 3))}
    if draw(st.booleans()):
        final_usage["output_tokens_details"] = {"thinking_tokens": draw(st.integers(0, 50))}
    sequence = "\n\nHuman:" if reason == "stop_sequence" and draw(st.booleans()) else None
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": sequence},
            "usage": final_usage,
        }
    )
    if draw(st.integers(0, 4)) == 0:  # a second message_delta: its counters win where present
        again: dict[str, Any] = {"output_tokens": draw(st.integers(0, 5000))}
        if draw(st.booleans()):
            again["cache_read_input_tokens"] = _counter(draw)
        # (the same reason: a null one clears the SDK's, where rxturn keeps the last it knew)
        events.append({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": again})
    events += [*_noise(draw), {"type": "message_stop"}]
    return _sse(events, draw(st.sampled_from(["\n", "\r\n"])), named=True)


def _stop(sdk_reason: str | None, has_tool_calls: bool) -> StopReason:
    reason = StopReason.parse(sdk_reason) or StopReason.END_TURN
    return StopReason.TOOL_CALL if reason is StopReason.END_TURN and has_tool_calls else reason


def _check_anthropic(body: bytes) -> Message:
    sdk = _anthropic_sdk(body)
    ours = replay_message(body, "anthropic")
    kept = replay_message(body, "anthropic", keep_thinking=True)
    expected: list[Any] = []
    expected_kept: list[Any] = []
    for block in sdk.content:
        if block.type == "text" and block.text:
            expected.append(TextPart(block.text))
        elif block.type == "tool_use":
            expected.append(ToolCallPart(block.id, block.name, block.input))
        elif block.type == "thinking":
            expected_kept.append(ThinkingPart(block.thinking, block.signature))
            continue
        elif block.type == "redacted_thinking":
            expected_kept.append(RedactedThinkingPart(block.data))
            continue
        else:
            continue
        expected_kept.append(expected[-1])
    assert list(ours.content) == expected
    assert list(kept.content) == expected_kept
    assert (ours.id, ours.model) == (sdk.id, sdk.model)
    assert ours.usage == anthropic_expected(sdk.usage)
    assert ours.stop_reason is _stop(sdk.stop_reason, bool(ours.tool_calls))
    return ours


@_SETTINGS
@given(anthropic_streams())
def test_anthropic_generated_streams_fold_as_the_sdk_folds(body: bytes) -> None:
    _check_anthropic(body)


def _anthropic_blocks(*blocks: list[dict[str, Any]], reason: str = "end_turn") -> bytes:
    message = {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
    events: list[dict[str, Any] | str] = [{"type": "message_start", "message": message}]
    for index, block in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block[0]})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in block[1:]]
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 2}}
    )
    events.append({"type": "message_stop"})
    return _sse(events, "\n", named=True)


def test_anthropic_text_block_that_starts_with_text() -> None:
    # the SDK starts a block from its content_block as sent: text there is the block's first text
    body = _anthropic_blocks(
        [{"type": "text", "text": "Hel"}, {"type": "text_delta", "text": "lo"}],
        [{"type": "text", "text": "only at the start"}],
    )
    ours = _check_anthropic(body)
    assert ours.text == "Hello" + "only at the start"


# -- OpenAI Chat Completions -------------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-gen",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-gen",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def _chat_usage(draw: st.DrawFn) -> dict[str, Any]:
    prompt, completion = draw(st.integers(0, 5000)), draw(st.integers(0, 5000))
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if draw(st.booleans()):
        usage["prompt_tokens_details"] = {"cached_tokens": draw(st.integers(0, prompt))}
    if draw(st.booleans()):
        usage["completion_tokens_details"] = {
            "reasoning_tokens": draw(st.integers(0, completion)),
            "accepted_prediction_tokens": draw(st.integers(0, 3)),
        }
    return usage


@st.composite
def openai_streams(draw: st.DrawFn) -> bytes:
    chunks: list[dict[str, Any] | str] = [*_noise(draw)]
    chunks.append(_chunk({"role": "assistant", "content": draw(st.sampled_from(["", None]))}))
    refusing = draw(st.integers(0, 4)) == 0
    lane = "refusal" if refusing else "content"
    if draw(st.booleans()):  # reasoning first (DeepSeek, vLLM and others; the SDK joins it)
        field = draw(st.sampled_from(["reasoning_content", "reasoning"]))
        chunks += [_chunk({field: piece}) for piece in draw(_pieces(draw(_TEXT)))]
    for piece in draw(_pieces(draw(_TEXT))):
        chunks.append(_chunk({lane: piece}))
    calls = [] if refusing else draw(st.lists(_arguments(), max_size=3))
    finish = draw(
        st.sampled_from(["stop", "tool_calls", "length"] if calls else ["stop", "length"])
    )
    if finish == "length" and calls:
        calls[-1] = calls[-1][: draw(st.integers(0, len(calls[-1])))]
    # every call opens (id, name, maybe a first fragment) in index order, then fragments interleave
    # (some servers send a call's name in a chunk after the one with its id)
    queues: list[list[dict[str, str]]] = []
    for index, arguments in enumerate(calls):
        queue = [{"arguments": piece} for piece in draw(_pieces(arguments))]
        first = queue.pop(0) if queue else {"arguments": ""}
        name = {"name": f"tool_{index}"}
        if draw(st.booleans()):
            queue.insert(draw(st.integers(0, len(queue))), name)
        else:
            first = {**name, **first}
        call = {"index": index, "id": f"call_{index}", "type": "function", "function": first}
        chunks.append(_chunk({"tool_calls": [call]}))
        queues.append(queue)
    while any(queues):
        index = draw(st.sampled_from([i for i, q in enumerate(queues) if q]))
        piece = {"index": index, "function": queues[index].pop(0)}
        chunks.append(_chunk({"tool_calls": [piece]}, gen_extra={"n": index}))
    usage = _chat_usage(draw) if draw(st.integers(0, 3)) else None
    usage_chunk = {**_chunk({}), "choices": [], "usage": usage}
    early_usage = usage is not None and draw(st.booleans())
    if early_usage:
        chunks.append(usage_chunk)
    chunks.append(_chunk({}, finish, **({"usage": None} if draw(st.booleans()) else {})))
    if draw(st.integers(0, 3)) == 0:  # content after the finish (the SDK appends it)
        late = "refusal" if refusing else "content"
        chunks += [_chunk({late: piece}) for piece in draw(_pieces(draw(_TEXT)))]
    if usage is not None and not early_usage:
        chunks.append(usage_chunk)
    if draw(st.booleans()):
        _second_choice(draw, chunks)
    if draw(st.integers(0, 3)) == 0:
        _logprobs(draw, chunks)
    chunks += [*_noise(draw), "data: [DONE]", ""]
    return _sse(chunks, draw(st.sampled_from(["\n", "\r\n"])), named=False)


def _second_choice(draw: st.DrawFn, chunks: list[dict[str, Any] | str]) -> None:
    """``n=2``: choice 1's deltas and finish, in chunks of their own or beside choice 0's (before
    or after it in the list). (The SDK places the first chunk's choices by index but appends a
    choice first seen later, so a chunk with choice 1 alone before choice 0 exists would put it
    at position 0: choice 1 comes in the first chunk or after it.)"""
    at = [i for i, c in enumerate(chunks) if isinstance(c, dict) and c["choices"]]
    entries = [
        {"index": 1, "delta": {"content": draw(_TEXT)}, "finish_reason": None},
        {"index": 1, "delta": {}, "finish_reason": draw(st.sampled_from(["stop", "length"]))},
    ]
    for entry in entries:
        where = draw(st.sampled_from(at))
        chunk = chunks[where]
        assert isinstance(chunk, dict)
        if draw(st.booleans()) and all(c["index"] == 0 for c in chunk["choices"]):
            chunk["choices"] = (
                [entry, *chunk["choices"]] if draw(st.booleans()) else [*chunk["choices"], entry]
            )
        else:
            chunks.insert(where + 1, {**chunk, "choices": [entry]})
            at = [i for i, c in enumerate(chunks) if isinstance(c, dict) and c["choices"]]


def _logprobs(draw: st.DrawFn, chunks: list[dict[str, Any] | str]) -> None:
    """``logprobs: true``: each choice carries its tokens' log probabilities."""
    for chunk in chunks:
        if isinstance(chunk, dict):
            for choice in chunk["choices"]:
                token = {"token": "a", "logprob": -0.25, "bytes": [97], "top_logprobs": []}
                choice["logprobs"] = {"content": [token], "refusal": None}


def test_openai_tool_name_in_a_later_chunk() -> None:
    # the id first, the name after (and a second call opened in between): the SDK joins each
    # call's fields by index; rxturn dropped the nameless call, and had its arguments nowhere
    call_a = {"index": 0, "id": "call_a", "type": "function", "function": {"arguments": '{"a"'}}
    call_b = {"index": 1, "id": "call_b", "type": "function", "function": {"name": "g"}}
    chunks: list[dict[str, Any] | str] = [
        _chunk({"role": "assistant", "content": None}),
        _chunk({"tool_calls": [call_a]}),
        _chunk({"tool_calls": [call_b]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": ": 1}"}}]}),
        _chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
        _chunk({}, "tool_calls"),
        "data: [DONE]",
        "",
    ]
    ours = _check_openai(_sse(chunks, "\n", named=False))
    assert ours.tool_calls == [
        ToolCallPart("call_a", "f", {"a": 1}),
        ToolCallPart("call_b", "g", {}),
    ]


def test_openai_content_after_the_finish_and_a_second_finish() -> None:
    # the SDK appends choice 0's deltas after its finish_reason to the same message and keeps the
    # last finish_reason; rxturn dropped everything after the first finish ("b", "length")
    usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
    chunks: list[dict[str, Any] | str] = [
        _chunk({"role": "assistant", "content": "a"}),
        _chunk({}, "stop"),
        {**_chunk({}), "choices": [], "usage": usage},
        _chunk({"content": "b"}),
        _chunk({}, "length"),
        "data: [DONE]",
        "",
    ]
    ours = _check_openai(_sse(chunks, "\n", named=False))
    assert (ours.text, ours.stop_reason) == ("ab", StopReason.MAX_TOKENS)


def test_openai_choice_one_listed_before_choice_zero() -> None:
    # n=2, choice 1 first in the list: the SDK places choices by index, rxturn follows index 0
    other = {"index": 1, "delta": {"role": "assistant", "content": "one"}, "finish_reason": None}
    first = _chunk({"role": "assistant", "content": "zero"})
    first["choices"].insert(0, other)
    later = _chunk({"content": " more"})
    later["choices"].insert(0, {**other, "delta": {"content": " two"}})
    chunks: list[dict[str, Any] | str] = [first, later, _chunk({}, "stop"), "data: [DONE]", ""]
    assert _check_openai(_sse(chunks, "\n", named=False)).text == "zero more"


def _check_openai(body: bytes) -> Message:
    sdk = _openai_sdk(body)
    ours = replay_message(body, "openai")
    kept = replay_message(body, "openai", keep_thinking=True)
    (choice,) = [c for c in sdk.choices if c.index == 0]
    assert ours.text == (choice.message.content or "")
    extra = choice.message.model_extra or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning") or ""
    thought = [part for part in kept.content if isinstance(part, ThinkingPart)]
    assert "".join(part.thinking for part in thought) == reasoning
    assert [part for part in kept.content if not isinstance(part, ThinkingPart)] == list(
        ours.content
    )
    assert ours.refusal == (choice.message.refusal or "")
    expected_calls = []
    for call in choice.message.tool_calls or []:
        arguments = call.function.arguments
        try:
            parsed = json.loads(arguments) if arguments else {}
        except json.JSONDecodeError:  # left open by "length": the SDK's partial parser
            parsed = jiter.from_json(arguments.encode(), partial_mode=True)
        expected_calls.append(ToolCallPart(call.id, call.function.name, parsed))
    assert ours.tool_calls == expected_calls
    assert (ours.id, ours.model) == (sdk.id, sdk.model)
    assert ours.usage == chat_expected(sdk.usage)
    expected_stop = _stop(choice.finish_reason, bool(expected_calls))
    if choice.message.refusal and expected_stop is StopReason.END_TURN:
        expected_stop = StopReason.REFUSAL
    assert ours.stop_reason is expected_stop
    return ours


@_SETTINGS
@given(openai_streams())
def test_openai_generated_streams_fold_as_the_sdk_folds(body: bytes) -> None:
    _check_openai(body)


def test_anthropic_tool_block_whose_start_carries_its_input() -> None:
    # the SDK keeps a tool_use start's input when no input_json_delta follows, and lets the
    # deltas replace it when they do; here closed, and left open by max_tokens
    start = {"type": "tool_use", "id": "toolu_a", "name": "f", "input": {"q": "é", "n": [1]}}
    replaced = {**start, "id": "toolu_b"}
    closed = _check_anthropic(
        _anthropic_blocks(
            [start],
            [replaced, {"type": "input_json_delta", "partial_json": '{"r": 2}'}],
            reason="tool_use",
        )
    )
    assert [call.input for call in closed.tool_calls] == [{"q": "é", "n": [1]}, {"r": 2}]
    open_body = _anthropic_blocks([start], reason="max_tokens").replace(
        b'event: content_block_stop\ndata: {"type": "content_block_stop", "index": 0}\n\n', b""
    )
    cut = _check_anthropic(open_body)
    assert cut.stop_reason is StopReason.MAX_TOKENS
    assert [call.input for call in cut.tool_calls] == [{"q": "é", "n": [1]}]


# -- OpenAI Responses --------------------------------------------------------------------------


def _response(status: str, output: list[dict[str, Any]] | None, usage: Any) -> dict[str, Any]:
    return {
        "id": "resp_gen",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "gpt-gen",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
        "gen_extra": None,
    }


def _where(item: dict[str, Any], at: int, **more: int) -> dict[str, Any]:
    return {"item_id": item["id"], "output_index": at, **more}


def _function_call(draw: st.DrawFn, at: int, events: list[dict[str, Any] | str]) -> dict[str, Any]:
    arguments = draw(_arguments())
    item = {
        "type": "function_call",
        "id": f"fc_{at}",
        "call_id": f"call_{at}",
        "name": f"tool_{at}",
        "arguments": "",
        "status": "in_progress",
    }
    events.append({"type": "response.output_item.added", "output_index": at, "item": item})
    for piece in draw(_pieces(arguments)):
        delta = {"type": "response.function_call_arguments.delta", "delta": piece}
        events.append({**delta, **_where(item, at)})
    done = {"type": "response.function_call_arguments.done", "arguments": arguments}
    events.append({**done, **_where(item, at)})
    return {**item, "arguments": arguments, "status": "completed"}


def _cut_call(draw: st.DrawFn, at: int, events: list[dict[str, Any] | str]) -> dict[str, Any]:
    item = {
        "type": "function_call",
        "id": f"fc_{at}",
        "call_id": f"call_{at}",
        "name": f"tool_{at}",
        "arguments": "",
        "status": "in_progress",
    }
    events.append({"type": "response.output_item.added", "output_index": at, "item": item})
    arguments = draw(_arguments())
    arguments = arguments[: draw(st.integers(0, len(arguments)))]
    for piece in draw(_pieces(arguments)):
        delta = {"type": "response.function_call_arguments.delta", "delta": piece}
        events.append({**delta, **_where(item, at)})
    return {**item, "arguments": arguments, "status": "incomplete"}


def _reasoning(draw: st.DrawFn, at: int, events: list[dict[str, Any] | str]) -> dict[str, Any]:
    item = {"type": "reasoning", "id": f"rs_{at}", "summary": [], "encrypted_content": None}
    events.append({"type": "response.output_item.added", "output_index": at, "item": item})
    summary: list[dict[str, Any]] = []
    streamed = draw(st.integers(0, 3)) > 0  # else each part's text comes whole with its done
    for index, text in enumerate(draw(st.lists(_TEXT, max_size=3))):
        where = _where(item, at, summary_index=index)
        empty = {"type": "summary_text", "text": ""}
        events.append({"type": "response.reasoning_summary_part.added", **where, "part": empty})
        for piece in draw(_pieces(text)) if streamed else []:
            events.append(
                {"type": "response.reasoning_summary_text.delta", **where, "delta": piece}
            )
        events.append({"type": "response.reasoning_summary_text.done", **where, "text": text})
        part = {**empty, "text": text}
        events.append({"type": "response.reasoning_summary_part.done", **where, "part": part})
        summary.append(part)
    # the item's done carries one encrypted_content, the completed response another (re-encrypted)
    encrypted = draw(st.sampled_from([None, "enc-done"]))
    return {**item, "summary": summary, "encrypted_content": encrypted}


def _message(draw: st.DrawFn, at: int, events: list[dict[str, Any] | str]) -> dict[str, Any]:
    item = {
        "type": "message",
        "id": f"msg_{at}",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    events.append({"type": "response.output_item.added", "output_index": at, "item": item})
    parts: list[dict[str, Any]] = []
    streamed = draw(st.integers(0, 3)) > 0  # else each part's text comes whole with its done
    for index, text in enumerate(draw(st.lists(_TEXT, min_size=1, max_size=3))):
        where = _where(item, at, content_index=index)
        annotations: list[dict[str, Any]] = []
        if draw(st.integers(0, 3)):
            empty = {"type": "output_text", "text": "", "annotations": []}
            kind, field, extra = "output_text", "text", {"logprobs": []}
        else:
            empty = {"type": "refusal", "refusal": ""}
            kind, field, extra = "refusal", "refusal", {}
        events.append({"type": "response.content_part.added", **where, "part": empty})
        for piece in draw(_pieces(text)) if streamed else []:
            delta = {"type": f"response.{kind}.delta", **where, "delta": piece}
            events.append({**delta, **extra})
            if kind == "output_text" and draw(st.integers(0, 4)) == 0:
                annotation = {
                    "type": "url_citation",
                    "url": "https://example.com/a",
                    "title": "a",
                    "start_index": 0,
                    "end_index": len(piece),
                }
                added = {"type": "response.output_text.annotation.added", **where}
                events.append(
                    {**added, "annotation_index": len(annotations), "annotation": annotation}
                )
                annotations.append(annotation)
        events.append({"type": f"response.{kind}.done", **where, field: text, **extra})
        part: dict[str, Any] = {**empty, field: text}
        if kind == "output_text":
            part["annotations"] = annotations
        events.append({"type": "response.content_part.done", **where, "part": part})
        parts.append(part)
    return {**item, "content": parts, "status": "completed"}


_ITEMS = {"message": _message, "function_call": _function_call, "reasoning": _reasoning}


@st.composite
def responses_streams(draw: st.DrawFn) -> bytes:
    events: list[dict[str, Any] | str] = [*_noise(draw)]
    events.append({"type": "response.created", "response": _response("in_progress", [], None)})
    status = draw(st.sampled_from(["completed", "completed", "incomplete", "failed"]))
    reason = draw(st.sampled_from(["max_output_tokens", "content_filter"]))
    items: list[dict[str, Any]] = []
    kinds = draw(st.lists(st.sampled_from(list(_ITEMS)), max_size=4))
    for at, kind in enumerate(kinds):
        if draw(st.booleans()):
            events.append({"type": "response.gen_unknown", "output_index": at})
        if (
            at == len(kinds) - 1
            and kind == "function_call"
            and (status, reason) == ("incomplete", "max_output_tokens")
            and draw(st.booleans())
        ):  # a call cut by the limit: no done events; the response holds it as it stands
            items.append(_cut_call(draw, at, events))
            break
        done = _ITEMS[kind](draw, at, events)
        events.append({"type": "response.output_item.done", "output_index": at, "item": done})
        if done["type"] == "reasoning" and draw(st.booleans()):
            done = {**done, "encrypted_content": "enc-final"}
        items.append(done)
    usage = None
    if draw(st.integers(0, 3)):
        given_in, given_out = draw(st.integers(0, 5000)), draw(st.integers(0, 5000))
        usage = {
            "input_tokens": given_in,
            "input_tokens_details": {"cached_tokens": draw(st.integers(0, given_in))},
            "output_tokens": given_out,
            "output_tokens_details": {"reasoning_tokens": draw(st.integers(0, given_out))},
            "total_tokens": given_in + given_out,
        }
    # a terminal response may leave its output out (the SDK takes the items as done then)
    listed = draw(st.integers(0, 4)) != 0 or any(i.get("status") == "incomplete" for i in items)
    final = _response(status, items if listed else None, usage)
    if status == "incomplete":
        final["incomplete_details"] = {"reason": reason}
    elif status == "failed":
        final["error"] = {"code": "server_error", "message": "The model failed."}
    events.append({"type": f"response.{status}", "response": final})
    for number, event in enumerate(e for e in events if isinstance(e, dict)):
        event["sequence_number"] = number
    events += _noise(draw)
    return _sse(events, draw(st.sampled_from(["\n", "\r\n"])), named=True)


def _responses_sdk(body: bytes) -> Any:
    """The SDK's final response, or (no ``response.completed``) the terminal event's response."""
    client = openai.OpenAI(
        api_key="test-key", base_url="http://127.0.0.1:9", http_client=_http(body), max_retries=0
    )
    with client.responses.stream(model="gpt-test", input="hi") as stream:
        last = None
        for event in stream:
            if (
                event.type == "response.completed"
                or event.type == "response.incomplete"
                or event.type == "response.failed"
            ):
                last = event.response
        return stream.get_final_response() if last and last.status == "completed" else last


@_SETTINGS
@given(responses_streams())
def test_responses_generated_streams_fold_as_the_sdk_folds(body: bytes) -> None:
    sdk = _responses_sdk(body)
    if sdk.status == "failed":
        with pytest.raises(ProviderStreamError, match="The model failed"):
            replay_message(body, "openai-responses")
        return
    ours = replay_message(body, "openai-responses")
    kept = replay_message(body, "openai-responses", keep_thinking=True)
    expected: list[Any] = []
    expected_kept: list[Any] = []
    for item in sdk.output:
        parts: list[Any] = []
        if item.type == "message":
            for content in item.content:
                if content.type == "output_text" and content.text:
                    parts.append(TextPart(content.text))
                elif content.type == "refusal" and content.refusal:
                    parts.append(RefusalPart(content.refusal))
        elif item.type == "function_call":
            arguments = item.arguments
            if item.status == "incomplete":  # cut by the limit: the SDK's partial parser
                parsed = jiter.from_json(arguments.encode(), partial_mode=True) if arguments else {}
            else:
                parsed = json.loads(arguments) if arguments else {}
            parts.append(ToolCallPart(item.call_id, item.name, parsed))
        elif item.type == "reasoning":
            summary = "\n\n".join(part.text for part in item.summary)
            expected_kept.append(ThinkingPart(summary, item.encrypted_content, item.id))
        expected += parts
        expected_kept += parts
    assert list(ours.content) == expected
    assert list(kept.content) == expected_kept
    assert (ours.id, ours.model) == (sdk.id, sdk.model)
    assert ours.usage == responses_expected(sdk.usage)
    reason = sdk.incomplete_details.reason if sdk.incomplete_details else None
    if reason == "max_output_tokens":
        assert ours.stop_reason is StopReason.MAX_TOKENS
    elif reason == "content_filter":
        assert ours.stop_reason is StopReason.REFUSAL
    elif ours.tool_calls:
        assert ours.stop_reason is StopReason.TOOL_CALL
    elif any(c.type == "refusal" for i in sdk.output if i.type == "message" for c in i.content):
        # a refusal part is a refusal, even one that says nothing (no text part for it then)
        assert ours.stop_reason is StopReason.REFUSAL
    else:
        assert ours.stop_reason is StopReason.END_TURN


def _one_item(item: dict[str, Any], stray: dict[str, Any]) -> bytes:
    events: list[dict[str, Any] | str] = [
        {"type": "response.created", "response": _response("in_progress", [], None)},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {**stray, **_where(item, 0)},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": _response("completed", [item], None)},
    ]
    return _sse(events, "\n", named=True)


@pytest.mark.parametrize(
    ("item", "stray"),
    [
        (
            {"type": "function_call", "id": "fc_0", "call_id": "c", "name": "f", "arguments": "{}"},
            {
                "type": "response.output_text.delta",
                "content_index": 0,
                "delta": "x",
                "logprobs": [],
            },
        ),
        (
            {"type": "message", "id": "msg_0", "role": "assistant", "content": []},
            {"type": "response.function_call_arguments.delta", "delta": "{}"},
        ),
    ],
    ids=["text-at-a-call", "arguments-at-a-message"],
)
def test_responses_delta_aimed_at_an_item_of_another_type(
    item: dict[str, Any], stray: dict[str, Any]
) -> None:
    # the SDK's stream asserts the item's type; rxturn kept the text as a part the completed
    # response lacks, and dropped the arguments without a word
    body = _one_item(item, stray)
    with pytest.raises(AssertionError):
        _responses_sdk(body)
    with pytest.raises(StreamProtocolError, match=f"output 0, which is a '?{item['type']}'? item"):
        replay_message(body, "openai-responses")


# --- a non-streaming body behind a UTF-8 byte-order mark ------------------------------------

_BOM = b"\xef\xbb\xbf"
_ANTHROPIC_REPLY = (
    b'{"id":"msg_1","type":"message","role":"assistant","model":"claude-test",'
    b'"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",'
    b'"usage":{"input_tokens":3,"output_tokens":1}}'
)
_OPENAI_REPLY = (
    b'{"id":"c1","object":"chat.completion","created":0,"model":"gpt-test","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}'
)


def _json_http(body: bytes) -> httpx2.Client:
    def handler(request: httpx2.Request) -> httpx2.Response:
        headers = {"content-type": "application/json"}
        return httpx2.Response(200, headers=headers, content=body)

    return httpx2.Client(transport=httpx2.MockTransport(handler))


async def test_a_reply_behind_a_bom_is_read_as_the_sdks_read_it() -> None:
    """RFC 8259 lets a parser ignore a leading BOM, and the SDKs' client does (``json.loads``):
    a reply they serve must not fail here as invalid JSON."""
    from rxturn import Message as RxMessage
    from rxturn.clients import AnthropicClient, OpenAIClient
    from rxturn.messages import Request
    from rxturn.testing import MockResponse, MockTransport

    sdk_anthropic = anthropic.Anthropic(
        api_key="k", base_url="http://x", http_client=_json_http(_BOM + _ANTHROPIC_REPLY)
    ).messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "x"}]
    )
    sdk_openai = openai.OpenAI(
        api_key="k", base_url="http://x", http_client=_json_http(_BOM + _OPENAI_REPLY)
    ).chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "x"}])
    block = sdk_anthropic.content[0]
    assert block.type == "text" and block.text == sdk_openai.choices[0].message.content == "hi"

    request = Request(messages=(RxMessage.user("x"),))
    for client_type, body in ((AnthropicClient, _ANTHROPIC_REPLY), (OpenAIClient, _OPENAI_REPLY)):
        response = MockResponse(headers={"content-type": "application/json"}, chunks=[_BOM, body])
        client = client_type(
            "m", api_key="k", base_url="http://x", transport=MockTransport(response)
        )
        assert (await client.create(request)).text == "hi"
