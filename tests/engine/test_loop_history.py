"""What a run leaves in the history is a conversation the APIs accept on the next request.

Every wire but Ollama's refuses a request whose tool call has no result after it (Anthropic
``tool_use`` ids without ``tool_result``, OpenAI Chat an assistant ``tool_calls`` without its
``tool`` messages, Responses a ``function_call`` without its ``function_call_output``). The
fake provider does not check the pairing, so the test reads the bodies it received.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxturn import AnthropicClient, OpenAIClient, OpenAIResponsesClient, StopReason, TurnEngine
from rxturn.messages import ToolResultPart
from rxturn.testing import FakeProvider


def _client(wire: str, fake: FakeProvider) -> Any:
    if wire == "anthropic":
        return AnthropicClient("m", api_key="test-key", base_url=fake.base_url)
    if wire == "openai":
        return OpenAIClient("m", api_key="test-key", base_url=fake.openai_base_url)
    return OpenAIResponsesClient("m", api_key="test-key", base_url=fake.openai_base_url)


def _calls_and_results(wire: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The tool call ids a request body sends, and the ids its tool results answer."""
    calls: list[str] = []
    results: list[str] = []
    if wire == "anthropic":
        for message in body["messages"]:
            blocks = message["content"] if isinstance(message["content"], list) else []
            calls += [b["id"] for b in blocks if b["type"] == "tool_use"]
            results += [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    elif wire == "openai":
        for message in body["messages"]:
            calls += [c["id"] for c in message.get("tool_calls") or ()]
            if message["role"] == "tool":
                results.append(message["tool_call_id"])
    else:
        for item in body["input"]:
            if item.get("type") == "function_call":
                calls.append(item["call_id"])
            elif item.get("type") == "function_call_output":
                results.append(item["call_id"])
    return calls, results


# (a refusal with a call: Anthropic's stop reason; the OpenAI wires let the call win)
@pytest.mark.parametrize(
    ("wire", "stop"),
    [
        ("anthropic", "max_tokens"),
        ("openai", "max_tokens"),
        ("responses", "max_tokens"),
        ("anthropic", "refusal"),
        ("anthropic", "stop_sequence"),
    ],
)
async def test_a_run_ended_by_a_reply_with_calls_leaves_no_call_without_a_result(
    wire: str, stop: str
) -> None:
    ran: list[int] = []

    def add(a: int, b: int) -> int:
        ran.append(a + b)
        return a + b

    cut = {"text": "Adding", "tool_calls": [{"id": "c1", "name": "add", "input": {"a": 1, "b": 2}}]}
    scenario = {"models": {"*": [{**cut, "stop_reason": stop}, {"text": "Hello again"}]}}
    async with FakeProvider(scenario) as fake, _client(wire, fake) as client:
        engine = TurnEngine(client, tools=[add])
        first = await engine.run("add 1 and 2")
        assert first.stop_reason is StopReason(stop)  # the run ended there
        assert ran == []  # and ran no tool
        (kept,) = first.message.tool_calls  # the reply keeps its call
        assert kept.id == "c1"
        (answered,) = engine.history[2].content  # ... and the history answers it
        assert isinstance(answered, ToolResultPart) and answered.is_error
        assert answered.tool_call_id == "c1"
        await engine.run("never mind")
        calls, results = _calls_and_results(wire, fake.requests[1])
    assert calls == ["c1"]
    assert results == calls
