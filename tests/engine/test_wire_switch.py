"""A conversation that moves between wires mid tool loop, against the fake provider.

The tool the model calls switches the engine's client (as a failover to another provider
does), so the next request of the same loop goes out on another wire with the history the
first one made. What that wire's API would refuse is read off the request bodies the fake
received:

* tool call ids: Ollama names no call, so every reply's calls were ``call_0``…: two turns of a
  loop put ``call_0`` twice in the history, which the Anthropic API refuses ("tool_use ids
  must be unique") and which left results ambiguous on every wire; an id one wire made that
  the next one's pattern or length refuses went out as it was;
* kept reasoning: another provider's reasoning went to Anthropic as a ``thinking`` block with
  a signature Anthropic never gave (a Responses item's ``encrypted_content``, or none at all).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from rxturn import (
    AnthropicClient,
    OllamaClient,
    OpenAIClient,
    OpenAIResponsesClient,
    TurnEngine,
)
from rxturn.messages import ThinkingPart, ToolCallPart
from rxturn.testing import FakeProvider
from rxturn.testing._emit_base import thinking_signature

ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")
ANSWER = {"text": "Cold in Oslo."}


def _call(call_id: str, *, thinking: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "tool_calls": [{"id": call_id, "name": "weather", "input": {"city": "Oslo"}}]
    }
    if thinking is not None:
        entry["thinking"] = thinking
    return entry


def _client(wire: str, fake: FakeProvider) -> Any:
    model = wire  # each wire has its own scenario list
    if wire == "anthropic":
        return AnthropicClient(model, api_key="k", base_url=fake.base_url)
    if wire == "openai":
        return OpenAIClient(model, api_key="k", base_url=fake.openai_base_url)
    if wire == "openai-responses":
        return OpenAIResponsesClient(model, api_key="k", base_url=fake.openai_base_url)
    return OllamaClient(model, base_url=fake.base_url)


async def _loop(
    scenario: dict[str, list[Any]], first: str, then: str, switch_after: int, **engine: Any
) -> tuple[FakeProvider, Any]:
    """Run one tool loop that starts on wire ``first`` and whose ``switch_after``-th tool call
    moves the engine to wire ``then``; the fake and the run's result."""
    async with AsyncExitStack() as stack:
        fake = await stack.enter_async_context(FakeProvider({"models": scenario}))
        clients = {
            wire: await stack.enter_async_context(_client(wire, fake)) for wire in (first, then)
        }
        calls = 0

        async def weather(city: str) -> str:
            nonlocal calls
            calls += 1
            if calls == switch_after:
                holder.client = clients[then]
            return f"{city}: -3 C"

        holder = TurnEngine(clients[first], tools=[weather], **engine)
        result = await holder.run("Weather in Oslo?")
    return fake, result


def _anthropic_ids(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    uses: list[str] = []
    results: list[str] = []
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else ():
            if block["type"] == "tool_use":
                uses.append(block["id"])
            elif block["type"] == "tool_result":
                results.append(block["tool_use_id"])
    return uses, results


async def test_ollama_ids_stay_unique_across_the_turns_of_a_loop_and_a_failover() -> None:
    # what rxturn names Ollama's calls, in each reply: the same id twice in one conversation
    scenario = {"ollama": [_call("call_0"), _call("call_0")], "anthropic": [ANSWER]}
    fake, result = await _loop(scenario, "ollama", "anthropic", switch_after=2)
    assert result.text == ANSWER["text"]
    last = fake.requests[-1]
    uses, results = _anthropic_ids(last)
    assert len(uses) == 2
    assert len(set(uses)) == 2, uses
    assert results == uses  # each result answers its own call
    # Ollama's own second request already told the two calls apart by their results
    assert "call_0" in uses


async def test_three_ollama_turns_number_on() -> None:
    scenario = {"ollama": [_call("call_0"), _call("call_0"), _call("call_0"), ANSWER]}
    fake, result = await _loop(scenario, "ollama", "ollama", switch_after=0)
    ids = [
        part.id
        for turn in result.turns
        for part in turn.message.content
        if isinstance(part, ToolCallPart)
    ]
    assert len(ids) == 3
    assert len(set(ids)) == 3, ids
    assert len(fake.requests) == 4


Check = Callable[[str], bool]

ID_PAIRS = [
    # an OpenAI-compatible server's id (Kimi's form) replayed on Anthropic: pattern
    ("openai", "functions.weather:0", "anthropic", lambda i: bool(ANTHROPIC_ID.fullmatch(i))),
    # a long id replayed on OpenAI Chat (at most 40 characters) and on Responses (64)
    ("anthropic", "toolu_" + "A1b2" * 12, "openai", lambda i: 0 < len(i) <= 40),
    ("openai", "call_" + "x9" * 35, "openai-responses", lambda i: 0 < len(i) <= 64),
    # a Responses call id on Anthropic and on Chat: taken as it is
    ("openai-responses", "call_Kx81fQ", "anthropic", lambda i: i == "call_Kx81fQ"),
    ("openai-responses", "call_Kx81fQ", "openai", lambda i: i == "call_Kx81fQ"),
]


def _sent_ids(wire: str, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    if wire == "anthropic":
        return _anthropic_ids(body)
    if wire == "openai":
        uses = [c["id"] for m in body["messages"] for c in m.get("tool_calls", ())]
        results = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
        return uses, results
    items = body["input"]
    uses = [i["call_id"] for i in items if i.get("type") == "function_call"]
    results = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    return uses, results


@pytest.mark.parametrize(("first", "call_id", "then", "fits"), ID_PAIRS)
async def test_an_id_from_one_wire_goes_out_as_the_next_takes_it(
    first: str, call_id: str, then: str, fits: Check
) -> None:
    scenario = {first: [_call(call_id)], then: [ANSWER]}
    fake, result = await _loop(scenario, first, then, switch_after=1)
    assert result.text == ANSWER["text"]
    (sent,), (answered,) = _sent_ids(then, fake.requests[-1])
    assert fits(sent), sent
    assert answered == sent  # the result still answers its call


async def test_distinct_ids_stay_distinct_when_made_to_fit() -> None:
    long = "call_" + "z" * 60
    scenario = {
        "anthropic": [
            {
                "tool_calls": [
                    {"id": f"{long}a", "name": "weather", "input": {"city": "Oslo"}},
                    {"id": f"{long}b", "name": "weather", "input": {"city": "Bergen"}},
                ]
            }
        ],
        "openai": [ANSWER],
    }
    fake, _ = await _loop(scenario, "anthropic", "openai", switch_after=2)
    uses, results = _sent_ids("openai", fake.requests[-1])
    assert len(set(uses)) == 2
    assert all(len(i) <= 40 for i in uses)
    assert results == uses


THOUGHT = "Oslo: the tool knows."


@pytest.mark.parametrize("first", ["openai-responses", "ollama"])
async def test_another_providers_reasoning_is_not_sent_to_anthropic_as_signed(
    first: str,
) -> None:
    scenario = {first: [_call("call_1", thinking=THOUGHT)], "anthropic": [ANSWER]}
    fake, result = await _loop(scenario, first, "anthropic", switch_after=1, keep_thinking=True)
    kept = result.turns[0].message.content[0]
    assert isinstance(kept, ThinkingPart)  # the first wire's reasoning was kept
    blocks = [
        block
        for message in fake.requests[-1]["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
    ]
    for block in blocks:
        if block["type"] == "thinking":  # only a block Anthropic signed may go back
            assert block["signature"] == thinking_signature(block["thinking"]), block


@pytest.mark.parametrize(
    ("first", "call_id", "kind"),
    [("anthropic", "toolu_1", "anthropic"), ("openai-responses", "call_1", "openai-responses")],
)
async def test_signed_reasoning_goes_back_to_its_own_provider_only(
    first: str, call_id: str, kind: str
) -> None:
    """Held before: Anthropic thinking and Responses reasoning stay out of the other wires."""
    others = [w for w in ("anthropic", "openai-responses", "openai", "ollama") if w != first]
    for then in others:
        scenario = {first: [_call(call_id, thinking=THOUGHT)], then: [ANSWER]}
        fake, result = await _loop(scenario, first, then, switch_after=1, keep_thinking=True)
        kept = result.turns[0].message.content[0]
        assert isinstance(kept, ThinkingPart), then
        assert kept.signature == thinking_signature(THOUGHT, kind=kind)  # what must not leak
        sent = str(fake.requests[-1])
        assert THOUGHT not in sent, then
        assert thinking_signature(THOUGHT, kind=kind) not in sent, then
