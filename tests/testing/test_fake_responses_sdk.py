"""The official ``openai`` SDK's Responses API, unmodified, against the fake.

``responses.stream(...)`` (the SDK's own accumulator and final response),
``responses.create(stream=True)`` (the raw semantic events, in the API's order) and
``responses.create(...)`` all get the scripted reply back; refusals, ``max_tokens`` and errors
come out as the API sends them. Expected values are the scenario's, written out here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]

FULL = {
    "thinking": "The user wants the weather; call the tool.",
    "text": 'Checking "Paris" — ünïcode ok.',
    "tool_calls": [
        {"id": "call_1", "name": "get_weather", "input": {"city": "Paris", "days": [1, 2]}},
        {"id": "call_2", "name": "get_time", "input": {}},
    ],
    "usage": {"input_tokens": 31, "output_tokens": 7},
    "chunk_chars": 3,
}
TOOLS: Any = [
    {
        "type": "function",
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    }
]


def _client(fake: FakeProvider) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="test", max_retries=0)


def _calls(output: list[Any]) -> list[tuple[str, str, Any]]:
    return [
        (item.call_id, item.name, json.loads(item.arguments))
        for item in output
        if item.type == "function_call"
    ]


EXPECTED_CALLS = [
    ("call_1", "get_weather", {"city": "Paris", "days": [1, 2]}),
    ("call_2", "get_time", {}),
]


async def test_responses_stream_final_response_is_the_scripted_reply(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    async with (
        _client(fake) as client,
        client.responses.stream(model="gpt-5", input="weather in Paris?", tools=TOOLS) as stream,
    ):
        text = "".join([e.delta async for e in stream if e.type == "response.output_text.delta"])
        final = await stream.get_final_response()
    assert text == FULL["text"]
    assert final.model == "gpt-5"
    assert final.status == "completed"
    assert [item.type for item in final.output] == [
        "reasoning",
        "message",
        "function_call",
        "function_call",
    ]
    reasoning = final.output[0]
    assert reasoning.type == "reasoning"
    assert [s.text for s in reasoning.summary] == [FULL["thinking"]]
    assert reasoning.encrypted_content is None  # not asked for
    assert final.output_text == FULL["text"]
    assert _calls(final.output) == EXPECTED_CALLS
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (31, 7)
    assert final.usage.total_tokens == 38
    assert fake.received[0].path == "/v1/responses"


async def test_create_stream_sends_the_events_in_the_apis_order(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    async with _client(fake) as client:
        stream = await client.responses.create(model="gpt-5", input="hi", stream=True)
        events = [event async for event in stream]
    kinds = [event.type for event in events]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    # the same shape as the recorded reasoning + text stream (reasoning_summary.sse), then calls
    collapsed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    assert collapsed == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert summary == FULL["thinking"]
    # chunk_chars 3: the thinking is cut into ceil(len / 3) deltas
    deltas = [e for e in events if e.type == "response.reasoning_summary_text.delta"]
    assert len(deltas) == -(-len(str(FULL["thinking"])) // 3)
    arguments = [
        "".join(
            e.delta
            for e in events
            if e.type == "response.function_call_arguments.delta" and e.output_index == index
        )
        for index in (2, 3)
    ]
    assert [json.loads(a) for a in arguments] == [{"city": "Paris", "days": [1, 2]}, {}]


async def test_create_returns_the_scripted_response(serve: Serve) -> None:
    fake = await serve({"models": {"*": [FULL]}})
    async with _client(fake) as client:
        response = await client.responses.create(model="gpt-5", input="hi")
    assert response.status == "completed"
    assert response.output_text == FULL["text"]
    assert _calls(response.output) == EXPECTED_CALLS
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (31, 7)


async def test_usage_default_and_null(serve: Serve) -> None:
    # default: the words of instructions and input; the deltas (2 of 4 characters) out
    scenario = {"models": {"m": [{"text": "abcdefgh", "chunk_chars": 4}, {"usage": None}]}}
    fake = await serve(scenario)
    async with _client(fake) as client:
        counted = await client.responses.create(
            model="m", instructions="be brief", input="three words here"
        )
        async with client.responses.stream(model="m", input="x") as stream:
            unreported = await stream.get_final_response()
    assert counted.usage is not None
    assert (counted.usage.input_tokens, counted.usage.output_tokens) == (5, 2)
    assert unreported.usage is None


async def test_encrypted_content_only_when_included_and_deterministic(serve: Serve) -> None:
    fake = await serve(
        {"models": {"*": [{"thinking": "step one", "text": "a"}, {"thinking": "step two"}]}}
    )
    include: Any = ["reasoning.encrypted_content"]
    async with _client(fake) as client:
        first = await client.responses.create(model="m", input="x", include=include, store=False)
        again = await client.responses.create(model="m", input="x", include=include, store=False)
        fake.reset()
        repeat = await client.responses.create(model="m", input="x", include=include, store=False)
        plain = await client.responses.create(model="m", input="x")
    values = [r.output[0].encrypted_content for r in (first, again, repeat, plain)]  # pyright: ignore[reportAttributeAccessIssue]
    assert all(isinstance(v, str) and v for v in values[:3])
    assert values[0] != values[1]  # "step one" vs "step two"
    assert values[0] == values[2]  # same text, same key: same value
    assert values[3] is None


async def test_max_tokens_is_an_incomplete_response(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "cut short", "stop_reason": "max_tokens"}]}})
    async with _client(fake) as client:
        stream = await client.responses.create(model="m", input="x", stream=True)
        events = [event async for event in stream]
        response = await client.responses.create(model="m", input="x")
    last = events[-1]
    assert last.type == "response.incomplete"
    assert last.response.status == "incomplete"
    assert last.response.incomplete_details is not None
    assert last.response.incomplete_details.reason == "max_output_tokens"
    assert "response.completed" not in [e.type for e in events]
    assert response.status == "incomplete"
    assert response.output_text == "cut short"


async def test_refusal_is_a_refusal_content_part(serve: Serve) -> None:
    fake = await serve({"models": {"*": [{"text": "I won't do that.", "stop_reason": "refusal"}]}})
    async with _client(fake) as client:
        async with client.responses.stream(model="m", input="x") as stream:
            deltas = [e.delta async for e in stream if e.type == "response.refusal.delta"]
            final = await stream.get_final_response()
        response = await client.responses.create(model="m", input="x")
    assert "".join(deltas) == "I won't do that."
    for reply in (final, response):
        message = reply.output[0]
        assert message.type == "message"
        assert [(p.type, getattr(p, "refusal", None)) for p in message.content] == [
            ("refusal", "I won't do that.")
        ]
        assert reply.output_text == ""


async def test_http_errors_reach_the_sdk_typed(serve: Serve) -> None:
    fake = await serve(
        {
            "models": {
                "*": [
                    {"status": 429, "retry_after": 0.25},
                    {"status": 400, "error_message": "bad input"},
                ]
            }
        }
    )
    async with _client(fake) as client:
        with pytest.raises(openai.RateLimitError) as limited:
            await client.responses.create(model="m", input="x")
        with pytest.raises(openai.BadRequestError) as bad:
            await client.responses.create(model="m", input="x")
    assert limited.value.response.headers["retry-after-ms"] == "250"
    assert "bad input" in str(bad.value)
    assert bad.value.response.headers["x-request-id"].startswith("req_fake")


async def test_in_stream_error_event_and_unknown_model(serve: Serve) -> None:
    fake = await serve(
        {
            "models": {
                "gpt-5": [{"text": "abcdefgh", "chunk_chars": 2, "error_event_after_events": 4}]
            }
        }
    )
    async with _client(fake) as client:
        stream = await client.responses.create(model="gpt-5", input="x", stream=True)
        events = [event async for event in stream]
        with pytest.raises(openai.NotFoundError):
            await client.responses.create(model="other", input="x")
    assert [e.type for e in events][:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert events[-1].type == "error"
    assert events[-1].code == "server_error"
    # numbered like every event of the stream (the SDK's ResponseErrorEvent requires it)
    assert [e.sequence_number for e in events] == [0, 1, 2, 3, 4]


async def test_responses_route_without_v1(serve: Serve, http: Any) -> None:
    fake = await serve({"models": {"*": [{"text": "hi"}]}})
    async with http.post(fake.base_url + "/responses", json={"model": "m", "input": "x"}) as resp:
        body = await resp.json()
    assert resp.status == 200
    assert body["output"][0]["content"][0]["text"] == "hi"
