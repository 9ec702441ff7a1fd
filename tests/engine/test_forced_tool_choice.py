"""A forced tool choice in the agent loop: it forces the run's first turn, not every turn.

A model that obeys ``tool_choice="any"`` (or a tool's name) on every request calls a tool on
every turn, so a run that forced each turn could only end at ``max_turns``, with no answer. The
request bodies the fake provider kept are the oracle: each wire's forced choice on the first
request, each wire's ``auto`` after the tools ran.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxturn import AnthropicClient, OpenAIClient, OpenAIResponsesClient, RequestOptions, TurnEngine
from rxturn.testing import FakeProvider

# (the wire, tool_choice, what the first request sends, what a later one sends), by the APIs'
# docs: Anthropic {"type": "any" | "tool" | "auto"}, Chat "required" / {"type": "function",
# "function": {"name"}} / "auto", Responses "required" / {"type": "function", "name"} / "auto"
CASES = [
    ("anthropic", "any", {"type": "any"}, {"type": "auto"}),
    ("anthropic", "lookup", {"type": "tool", "name": "lookup"}, {"type": "auto"}),
    ("openai", "required", "required", "auto"),
    ("openai", "lookup", {"type": "function", "function": {"name": "lookup"}}, "auto"),
    ("openai-responses", "any", "required", "auto"),
    ("openai-responses", "lookup", {"type": "function", "name": "lookup"}, "auto"),
]


def _client(wire: str, fake: FakeProvider) -> Any:
    if wire == "anthropic":
        return AnthropicClient("m", api_key="k", base_url=fake.base_url)
    if wire == "openai":
        return OpenAIClient("m", api_key="k", base_url=fake.openai_base_url)
    return OpenAIResponsesClient("m", api_key="k", base_url=fake.openai_base_url)


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize(("wire", "choice", "first", "later"), CASES)
async def test_a_forced_tool_choice_forces_the_first_turn_of_a_run(
    wire: str, choice: str, first: object, later: object
) -> None:
    call = {"tool_calls": [{"id": "c1", "name": "lookup", "input": {"city": "Oslo"}}]}
    scenario = {"models": {"*": [call, {"text": "Sunny in Oslo."}, call, {"text": "Still."}]}}
    async with FakeProvider(scenario) as fake, _client(wire, fake) as client:
        engine = TurnEngine(
            client, tools=[lookup], request_options=RequestOptions(tool_choice=choice)
        )
        first_run = await engine.run("Weather in Oslo?")
        second_run = await engine.run("And now?")
        sent = [body["tool_choice"] for body in fake.requests]
    assert (first_run.text, second_run.text) == ("Sunny in Oslo.", "Still.")
    assert not first_run.hit_max_turns
    # each run's first request is forced again; the engine's options are left as they were
    assert sent == [first, later, first, later]
    assert engine.request_options.tool_choice == choice
