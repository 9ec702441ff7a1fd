"""Structured output on every wire: one request, the JSON as the reply text.

Each client sends its provider's native structured-output field (Anthropic ``output_config``,
OpenAI ``response_format``, Responses ``text.format``, Ollama ``format``). The fake provider
answers such a request with a value that follows the schema, and — like the real Anthropic API
— refuses an Anthropic format schema whose objects are not closed. So a client that forced a
tool instead (and let the agent loop run it turn after turn) or sent an open schema fails here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rxturn import (
    AnthropicClient,
    Message,
    OllamaClient,
    OpenAIClient,
    OpenAIResponsesClient,
    RequestOptions,
    StopReason,
    TurnEngine,
)
from rxturn.messages import ResponseFormat
from rxturn.testing import FakeProvider

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "temperature": {"type": "integer"},
        "sky": {"type": "string", "enum": ["clear", "cloudy"]},
        "wind": {"type": "object", "properties": {"speed": {"type": "number"}}},
    },
    "required": ["city"],
}
WIRES = ["anthropic", "openai", "openai-responses", "ollama"]


def _client(wire: str, fake: FakeProvider) -> Any:
    if wire == "anthropic":
        return AnthropicClient("m", api_key="k", base_url=fake.base_url)
    if wire == "openai":
        return OpenAIClient("m", api_key="k", base_url=fake.openai_base_url)
    if wire == "openai-responses":
        return OpenAIResponsesClient("m", api_key="k", base_url=fake.openai_base_url)
    return OllamaClient("m", base_url=fake.base_url)


def _sent_schema(wire: str, body: dict[str, Any]) -> dict[str, Any]:
    if wire == "anthropic":
        return body["output_config"]["format"]["schema"]
    if wire == "openai":
        return body["response_format"]["json_schema"]["schema"]
    if wire == "openai-responses":
        return body["text"]["format"]["schema"]
    return body["format"]


def calls_nobody(city: str) -> str:
    raise AssertionError("a structured-output reply is not a tool call")


@pytest.mark.parametrize("mode", ["streaming", "non_streaming"])
@pytest.mark.parametrize("wire", WIRES)
async def test_one_request_and_the_json_is_the_reply_text(wire: str, mode: Any) -> None:
    fmt = ResponseFormat(name="weather", schema=SCHEMA)
    async with FakeProvider({"models": {"*": [{}]}}) as fake, _client(wire, fake) as client:
        engine = TurnEngine(
            client,
            tools=[calls_nobody],
            mode=mode,
            request_options=RequestOptions(response_format=fmt),
        )
        result = await engine.run("Weather in Oslo?")
        assert len(fake.requests) == 1
        assert result.stop_reason is StopReason.END_TURN
        assert not result.message.tool_calls
        assert json.loads(result.text) == {
            "city": "",
            "temperature": 0,
            "sky": "clear",
            "wind": {"speed": 0},
        }
        # the history keeps a form the API takes: a second run goes through, one request more
        again = await engine.run("And in Bergen?")
        assert json.loads(again.text)["city"] == ""
        assert len(fake.requests) == 2
        assert [m.role for m in engine.history] == ["user", "assistant"] * 2
        sent = fake.requests[1]
        assert "tools" not in sent
        assert "properties" in _sent_schema(wire, sent)


def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_format_after_a_tool_loop_is_one_request_the_api_takes(wire: str) -> None:
    # the common pattern: tools first, then the findings as JSON. The history then holds tool
    # calls and results, which the Anthropic API refuses in a request that defines no tools
    # (the fake says so as it does): there the tools go along, with tool_choice none, so the
    # model still cannot call one and the reply is the JSON
    call = {"tool_calls": [{"id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}]}
    script = {"models": {"*": [call, {"text": "Sunny in Oslo."}, {}]}}
    async with FakeProvider(script) as fake, _client(wire, fake) as client:
        engine = TurnEngine(client, tools=[weather])
        await engine.run("Weather in Oslo?")
        assert len(fake.requests) == 2
        fmt = ResponseFormat(name="weather", schema=SCHEMA)
        engine.request_options = RequestOptions(response_format=fmt)
        result = await engine.run("As JSON, please.")
        assert len(fake.requests) == 3
        assert not result.message.tool_calls
        assert json.loads(result.text)["city"] == ""
        sent = fake.requests[2]
    if wire == "anthropic":
        assert [tool["name"] for tool in sent["tools"]] == ["weather"]
        assert sent["tool_choice"] == {"type": "none"}
    else:  # the other APIs take tool calls in a history without tool definitions
        assert "tools" not in sent


@pytest.mark.parametrize("wire", WIRES)
async def test_a_strict_format_is_tightened_the_same_way_on_every_wire(wire: str) -> None:
    fmt = ResponseFormat(name="weather", schema=SCHEMA, strict=True)
    async with FakeProvider({"models": {"*": [{}]}}) as fake, _client(wire, fake) as client:
        engine = TurnEngine(client, request_options=RequestOptions(response_format=fmt))
        await engine.run("Weather in Oslo?")
        schema = _sent_schema(wire, fake.requests[0])
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["city", "temperature", "sky", "wind"]
    assert schema["properties"]["wind"] == {
        "type": "object",
        "properties": {"speed": {"type": "number"}},
        "additionalProperties": False,
        "required": ["speed"],
    }
    assert SCHEMA["required"] == ["city"], "the caller's schema is never modified"


async def test_the_fake_refuses_an_open_anthropic_format_schema() -> None:
    """What the Anthropic client's closing of objects is for: the API's 400 otherwise."""
    from rxturn import BadRequestError

    async with (
        FakeProvider({"models": {"*": [{}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client,
            request_options=RequestOptions(
                extra_body={"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}}
            ),
        )
        with pytest.raises(BadRequestError, match="additionalProperties"):
            await engine.run("Weather in Oslo?")


async def test_a_summary_for_compaction_is_plain_text() -> None:
    """The engine's format shapes its replies, not the summary its compactor asks for."""
    fmt = ResponseFormat(name="weather", schema=SCHEMA)
    async with (
        FakeProvider({"models": {"*": [{"text": "They talked about Oslo."}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, request_options=RequestOptions(response_format=fmt))
        summary = await engine.summarize([Message.user("Weather in Oslo?")])
        assert summary == "They talked about Oslo."
        assert "output_config" not in fake.requests[0]


def _cyclic() -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["again"] = schema  # a dict that holds itself: no JSON can
    return schema


def takes_anything(value: str) -> str:
    return value


@pytest.mark.parametrize("wire", WIRES)
async def test_a_schema_that_holds_itself_is_a_config_error_before_sending(wire: str) -> None:
    """Tightening a strict format walked the cycle into a RecursionError from a turn (Anthropic
    closes every format's objects, so there a non-strict format did too); now the options are
    refused where they are checked, with the engine."""
    from rxturn import ConfigError

    strict = [True, False] if wire == "anthropic" else [True]
    async with FakeProvider({"models": {"*": [{}]}}) as fake, _client(wire, fake) as client:
        for flag in strict:
            fmt = ResponseFormat(name="loop", schema=_cyclic(), strict=flag)
            with pytest.raises(ConfigError, match="response_format: schema must be JSON"):
                engine = TurnEngine(client, request_options=RequestOptions(response_format=fmt))
                await engine.run("hi")
        assert fake.requests == []


def test_a_tool_schema_that_holds_itself_is_refused_by_the_tool() -> None:
    """It crashed the first turn's token count, or strict_tools' tightening, with a
    RecursionError."""
    from rxturn import ConfigError, Tool

    with pytest.raises(ConfigError, match=r"Tool\(input_schema=\.\.\.\) must be JSON: it holds"):
        Tool(takes_anything, input_schema=_cyclic())
    with pytest.raises(ConfigError, match=r"Tool\(input_schema=\.\.\.\) must be JSON"):
        Tool(takes_anything, input_schema={"type": "object", "default": object()})
