"""The ``chat`` span's request attributes, as a sampler sees them at span start, and the
request the server received: what the span says was asked is what was sent."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from rxturn import AnthropicClient, OpenAIClient, TurnEngine
from rxturn.messages import RequestOptions, ResponseFormat
from rxturn.testing import FakeProvider

from .conftest import Telemetry

REPLY = {"models": {"*": [{"text": "ok", "usage": {"input_tokens": 3, "output_tokens": 1}}]}}


class AtStart(SpanProcessor):
    """The attributes each span carried when it started (what a sampler decides on)."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, Any]] = {}

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.seen[span.name] = dict(span.attributes or {})

    def on_end(self, span: ReadableSpan) -> None:
        pass


async def _turn(
    telemetry: Telemetry, client_type: type[Any], options: RequestOptions, **client: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One turn: the ``chat`` span's attributes at its start, and the body the server got."""
    starts = AtStart()
    telemetry.tracer_provider.add_span_processor(starts)
    async with FakeProvider(REPLY) as fake:
        base = fake.base_url if client_type is AnthropicClient else fake.openai_base_url
        async with client_type("m", api_key="k", base_url=base, **client) as model_client:
            engine = TurnEngine(
                model_client, observers=[telemetry.observer()], request_options=options
            )
            await engine.run("hi")
        (body,) = fake.requests
    return starts.seen["chat m"], body


@pytest.mark.parametrize(
    ("client", "sent"),
    [({}, 8192), ({"max_tokens": 100}, 100)],
    ids=["the client's default", "the client's own"],
)
async def test_the_max_tokens_every_anthropic_request_carries_is_on_the_span(
    telemetry: Telemetry, client: dict[str, Any], sent: int
) -> None:
    # the Messages API requires max_tokens: the client sends its own when the options set
    # none, and the span said nothing of it
    start, body = await _turn(telemetry, AnthropicClient, RequestOptions(), **client)
    assert body["max_tokens"] == sent
    assert start["gen_ai.request.max_tokens"] == sent


async def test_every_request_parameter_set_is_on_the_span_at_its_start(
    telemetry: Telemetry,
) -> None:
    options = RequestOptions(
        max_tokens=77,
        temperature=0.25,
        stop_sequences=("END", "STOP"),
        response_format=ResponseFormat(name="r", schema={"type": "object"}),
    )
    start, body = await _turn(telemetry, OpenAIClient, options, max_tokens=500)
    # what was sent (the options' max_tokens wins over the client's)
    assert (body["max_tokens"], body["temperature"]) == (77, 0.25)
    assert body["stop"] == ["END", "STOP"]
    assert start["gen_ai.request.max_tokens"] == 77
    assert start["gen_ai.request.temperature"] == 0.25
    assert tuple(start["gen_ai.request.stop_sequences"]) == ("END", "STOP")
    assert start["gen_ai.output.type"] == "json"
    assert start["gen_ai.request.stream"] is True
    assert start["gen_ai.operation.name"] == "chat"
    assert start["gen_ai.provider.name"] == "openai"
    assert start["gen_ai.request.model"] == "m"
    assert start["server.address"] == "127.0.0.1" and isinstance(start["server.port"], int)


async def test_what_was_not_sent_is_not_on_the_span(telemetry: Telemetry) -> None:
    start, body = await _turn(telemetry, OpenAIClient, RequestOptions())
    assert not {"max_tokens", "max_completion_tokens", "temperature", "stop"} & set(body)
    assert not {
        "gen_ai.request.max_tokens",
        "gen_ai.request.temperature",
        "gen_ai.request.stop_sequences",
        "gen_ai.output.type",
    } & set(start)
