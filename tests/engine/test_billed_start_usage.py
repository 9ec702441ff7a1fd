"""An attempt failing after it reported usage was billed all the same: the audit says so.

Anthropic reports the input tokens in ``message_start`` and the cumulative output tokens in
``message_delta``. An attempt cut between the two (a dropped connection, a stall, an error event)
was billed for its input all the same, so its attempt record must carry that usage and the turn's
``billed_usage`` must count it. Real HTTP: the fake provider on 127.0.0.1, the real client.
OpenAI-compatible servers that report usage on every chunk are the same case, checked through a
``MockTransport`` (the fake provider reports usage once, at the end).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypedDict

import pytest

from rxturn import StreamHandler, TurnEngine
from rxturn.clients import OpenAIClient
from rxturn.errors import ProviderStreamError, ReadError, StreamTimeoutError
from rxturn.messages import Message, Usage
from rxturn.resilience.policies import RetryPolicy, TimeoutPolicy
from rxturn.testing import MockResponse, MockTransport

pytestmark = pytest.mark.timeout(30)

FAST_RETRY = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01, jitter=0.0)


class CacheCounts(TypedDict):
    cache_read_tokens: int
    cache_write_tokens: int


# the fake Anthropic wire reports its cache counts as zero, as the real API does
ZERO_CACHE: CacheCounts = {"cache_read_tokens": 0, "cache_write_tokens": 0}
KEPT = Usage(input_tokens=42, output_tokens=3, **ZERO_CACHE)


def scenario(fault: dict[str, Any]) -> dict[str, Any]:
    """First request: a reply reporting 42 input tokens that fails by ``fault``; then a whole
    reply that reports :data:`KEPT`."""
    failing = {
        "text": "a reply that breaks off halfway",
        "chunk_chars": 4,
        "usage": {"input_tokens": 42, "output_tokens": 9},
        **fault,
    }
    return {
        "models": {
            "*": [failing, {"text": "whole", "usage": {"input_tokens": 42, "output_tokens": 3}}]
        }
    }


# message_start reports output_tokens min(9, 1) = 1 in the fake, as the API usually does
FAILED = Usage(input_tokens=42, output_tokens=1, **ZERO_CACHE)


@pytest.mark.parametrize(
    ("fault", "timeouts"),
    [
        ({"drop_after_events": 4}, TimeoutPolicy(rescue=False)),
        ({"error_event_after_events": 3, "error_type": "api_error"}, TimeoutPolicy(rescue=False)),
        (
            {"stall_after_events": 3},
            TimeoutPolicy(per_event=0.2, max_consecutive_timeouts=1, rescue=False),
        ),
    ],
    ids=["dropped", "error-event", "stalled"],
)
async def test_a_failed_attempt_keeps_message_start_usage(
    served: Callable[..., Any], fault: dict[str, Any], timeouts: TimeoutPolicy
) -> None:
    async with served(scenario(fault)) as (_, client):
        engine = TurnEngine(client, handler=StreamHandler(retry=FAST_RETRY, timeouts=timeouts))
        engine.history.append(Message.user("say something"))
        result = await engine.turn()

    assert result.text == "whole"
    assert result.usage == KEPT  # the served reply's usage, as the provider reported it
    failed, kept = result.attempt_log
    assert failed.outcome != "served" and failed.usage == FAILED
    if "stall_after_events" in fault:
        assert failed.outcome == StreamTimeoutError.__name__
    assert (kept.outcome, kept.usage) == ("served", KEPT)
    assert result.billed_usage == Usage(input_tokens=84, output_tokens=4, **ZERO_CACHE)
    (record,) = engine.session.runs[0].turns
    assert record.billed_usage == Usage(input_tokens=84, output_tokens=4, **ZERO_CACHE)
    assert record.discarded_usage == FAILED
    assert (record.input_tokens, record.output_tokens) == (42, 3)  # the reply's own


async def test_a_served_reply_keeps_its_final_usage_and_message(served: Callable[..., Any]) -> None:
    """The early usage report changes nothing about a reply that completes: the last
    ``message_delta`` has the final say."""
    plain = {
        "models": {"*": [{"text": "whole", "usage": {"input_tokens": 42, "output_tokens": 3}}]}
    }
    async with served(plain) as (_, client):
        engine = TurnEngine(client)
        engine.history.append(Message.user("hi"))
        result = await engine.turn()
    assert result.usage == KEPT
    (attempt,) = result.attempt_log
    assert (attempt.outcome, attempt.usage) == ("served", KEPT)
    assert result.billed_usage == KEPT
    assert engine.history[-1].usage == KEPT


# -- OpenAI-compatible servers that report usage on every chunk ---------------------------------


def _chat_chunk(delta: dict[str, Any], usage: dict[str, int], finish: str | None = None) -> bytes:
    chunk = {
        "id": "c",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": {"prompt_tokens": usage["in"], "completion_tokens": usage["out"]},
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@pytest.mark.parametrize("fault", ["malformed-chunk", "dropped"])
async def test_usage_an_openai_stream_reported_before_it_failed_is_billed(fault: str) -> None:
    """Per-chunk usage (vLLM's ``continuous_usage_stats`` and others): the attempt that breaks
    after two chunks reported 5 in / 2 out; that usage was lost, kept only for the finish."""
    failing = [
        _chat_chunk({"role": "assistant", "content": ""}, {"in": 5, "out": 1}),
        _chat_chunk({"content": "Hel"}, {"in": 5, "out": 2}),
    ]
    whole = [
        _chat_chunk({"role": "assistant", "content": ""}, {"in": 5, "out": 1}),
        _chat_chunk({"content": "Hello"}, {"in": 5, "out": 2}),
        _chat_chunk({}, {"in": 5, "out": 3}, "stop"),
        b"data: [DONE]\n\n",
    ]
    sse = {"content-type": "text/event-stream"}
    if fault == "malformed-chunk":
        first = MockResponse(headers=sse, chunks=[*failing, b"data: {broken\n\n"])
    else:
        first = MockResponse(headers=sse, chunks=failing, error=ReadError("connection reset"))
    answers = [first, MockResponse(headers=sse, chunks=whole)]
    transport = MockTransport(lambda request: answers[len(transport.requests) - 1])
    client = OpenAIClient("m", api_key="k", base_url="http://mock.invalid/v1", transport=transport)
    engine = TurnEngine(
        client, handler=StreamHandler(retry=FAST_RETRY, timeouts=TimeoutPolicy(rescue=False))
    )
    engine.history.append(Message.user("hi"))
    async with client:
        result = await engine.turn()

    assert result.text == "Hello"
    failed, kept = result.attempt_log
    assert failed.outcome != "served" and failed.usage == Usage(input_tokens=5, output_tokens=2)
    assert (kept.outcome, kept.usage) == ("served", Usage(input_tokens=5, output_tokens=3))
    assert result.billed_usage == Usage(input_tokens=10, output_tokens=5)


def _responses_event(kind: str, **fields: Any) -> bytes:
    body = json.dumps({"type": kind, **fields})
    return f"event: {kind}\ndata: {body}\n\n".encode()


async def test_usage_a_failed_responses_stream_reported_is_billed() -> None:
    """``response.failed`` carries the response, its ``usage`` included: what the provider
    billed for the attempt (here 40 in, 6 of them cached, 4 out). It was dropped with the
    error, and the failed turn's audit said the attempt reported nothing."""
    from rxturn.clients import OpenAIResponsesClient

    response = {"id": "resp_1", "model": "m", "status": "in_progress", "output": []}
    failed = {
        **response,
        "status": "failed",
        "error": {"code": "server_error", "message": "the model broke down"},
        "usage": {
            "input_tokens": 40,
            "input_tokens_details": {"cached_tokens": 6},
            "output_tokens": 4,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 44,
        },
    }
    chunks = [
        _responses_event("response.created", response=response, sequence_number=0),
        _responses_event("response.failed", response=failed, sequence_number=1),
    ]
    sse = {"content-type": "text/event-stream"}
    transport = MockTransport(lambda request: MockResponse(headers=sse, chunks=chunks))
    client = OpenAIResponsesClient(
        "m", api_key="k", base_url="http://mock.invalid/v1", transport=transport
    )
    engine = TurnEngine(client)  # passthrough: one attempt
    with pytest.raises(ProviderStreamError, match="the model broke down"):
        async with client:
            await engine.run("hi")
    (turn,) = engine.session.runs[-1].turns
    (attempt,) = turn.attempt_log
    billed = Usage(input_tokens=40, output_tokens=4, cache_read_tokens=6, output_reasoning_tokens=0)
    assert (attempt.outcome, attempt.usage) == ("ProviderStreamError", billed)
    assert turn.billed_usage == billed
