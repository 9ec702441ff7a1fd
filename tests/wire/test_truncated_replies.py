"""A reply cut at the token limit keeps its unfinished tool call, streamed or not.

Streamed, a tool call still open at a ``max_tokens`` stop keeps its input parsed as far as it
goes (the fold, as the official SDK's partial-mode parser does). The same reply fetched without
streaming (``--no-stream``, or the non-streaming rescue) failed with ``InvalidToolInputError``:
the non-streaming parsers parsed the cut ``arguments`` strictly. Now both paths give the same
message. Arguments that are not a prefix of JSON, or a reply that did not stop at the limit,
are still an error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rxturn import replay_message
from rxturn.errors import InvalidToolInputError
from rxturn.messages import StopReason, ToolCallPart
from rxturn.wire import parse_openai_completion, parse_openai_response

CUT = ['{"city": "Par', '{"n": 1, "tags": ["a", "b', '{"deep": {"x": [1, 2', ""]


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (
        b"data: [DONE]\n\n"
    )


def _chat_stream(arguments: str, finish: str) -> bytes:
    call = {"index": 0, "id": "t1", "type": "function", "function": {"name": "f"}}
    head = {**call, "function": {"name": "f", "arguments": ""}}
    base = {"id": "c", "object": "chat.completion.chunk", "model": "g"}
    return _sse(
        {**base, "choices": [{"index": 0, "delta": {"tool_calls": [head]}}]},
        {
            **base,
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]},
                }
            ],
        },
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    )


def _chat_body(arguments: str, finish: str) -> bytes:
    call = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "model": "g",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
    ).encode()


def _response_body(arguments: str, incomplete: bool) -> bytes:
    item = {"type": "function_call", "call_id": "t1", "name": "f", "arguments": arguments}
    body: dict[str, Any] = {"id": "r", "object": "response", "model": "g", "output": [item]}
    if incomplete:
        body |= {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}
    else:
        body |= {"status": "completed"}
    return json.dumps(body).encode()


@pytest.mark.parametrize("arguments", CUT, ids=["string", "array", "nested", "none"])
def test_a_chat_completion_cut_at_the_limit_is_the_streamed_reply(arguments: str) -> None:
    streamed = replay_message(_chat_stream(arguments, "length"))
    fetched = parse_openai_completion(_chat_body(arguments, "length"))
    assert fetched.stop_reason is StopReason.MAX_TOKENS
    assert fetched.content == streamed.content
    assert isinstance(fetched.content[0], ToolCallPart)


@pytest.mark.parametrize("arguments", CUT, ids=["string", "array", "nested", "none"])
def test_a_response_cut_at_the_limit_keeps_the_call_parsed_as_far_as_it_goes(
    arguments: str,
) -> None:
    fetched = parse_openai_response(_response_body(arguments, incomplete=True))
    chat = parse_openai_completion(_chat_body(arguments, "length"))
    assert fetched.stop_reason is StopReason.MAX_TOKENS
    assert [p.input for p in fetched.tool_calls] == [p.input for p in chat.tool_calls]


def test_what_the_sdk_parser_keeps() -> None:
    fetched = parse_openai_completion(_chat_body('{"n": 1, "tags": ["a", "b', "length"))
    assert fetched.tool_calls[0].input == {"n": 1, "tags": ["a"]}


@pytest.mark.parametrize(
    "body",
    [
        _chat_body('{"city": "Par', "tool_calls"),  # not cut by the limit: broken
        _chat_body('{"city": }', "length"),  # no continuation makes it JSON
        _response_body('{"city": "Par', incomplete=False),
    ],
    ids=["chat-closed", "chat-malformed", "response-closed"],
)
def test_arguments_that_are_broken_are_still_an_error(body: bytes) -> None:
    parse = parse_openai_response if b'"object": "response"' in body else parse_openai_completion
    with pytest.raises(InvalidToolInputError):
        parse(body)
