"""Prompt caching through an agent loop: three tool rounds against the fake provider, every
request after the first carrying its breakpoints, and the fake reading the cached prefix."""

from __future__ import annotations

import itertools
from typing import Any

from rxturn import AnthropicClient, CachePoint, ImagePart, InlineSource, Message, TurnEngine
from rxturn.messages import RequestOptions, TextPart
from rxturn.testing import FakeProvider
from rxturn.testing._cache import PromptCache

GIF = b"GIF89a\x02\x00\x02\x00\x00\x00\x00;"
MANUAL = "The manual. " + "Step one of many, read with care. " * 40
SCRIPT = {
    "models": {
        "*": [
            {"tool_calls": [{"name": "lookup", "input": {"page": 1}}]},
            {"tool_calls": [{"name": "lookup", "input": {"page": 2}}]},
            {"tool_calls": [{"name": "lookup", "input": {"page": 3}}]},
            {"text": "All three pages read."},
        ]
    }
}


def lookup(page: int) -> str:
    """Read one page of the manual."""
    return f"page {page}: nothing unusual"


def _marked(body: dict[str, Any]) -> list[tuple[int, str]]:
    """(message index, block type) of every block carrying cache_control."""
    return [
        (index, block["type"])
        for index, message in enumerate(body["messages"])
        if isinstance(message["content"], list)
        for block in message["content"]
        if "cache_control" in block
    ]


async def test_three_tool_rounds_every_request_carries_its_breakpoints() -> None:
    options = RequestOptions(cache_system="1h", cache_tools="1h", cache_messages=True)
    prompt = Message.user(MANUAL, ImagePart(InlineSource("image/gif", GIF)), CachePoint())
    async with (
        FakeProvider(SCRIPT) as fake,
        AnthropicClient("claude-test", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(
            client, system="You answer from the manual.", tools=[lookup], request_options=options
        )
        result = await engine.run(prompt)
    assert result.message.text == "All three pages read."
    bodies = fake.requests
    assert len(bodies) == 4
    for round_, body in enumerate(bodies):
        assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        assert body["cache_control"] == {"type": "ephemeral"}  # the rolling conversation
        # the marker stays on the first message's image (the block before it), every round
        assert _marked(body) == [(0, "image")], round_
        assert len(body["messages"]) == 1 + 2 * round_
    # the history keeps the marker, so the next run starts from the same cached prefix
    assert engine.session.history[0].content[-1] == CachePoint()
    tool_results = [m for m in engine.session.history if m.tool_results]
    assert [r.tool_results[0].content for r in tool_results] == [
        f"page {page}: nothing unusual" for page in (1, 2, 3)
    ]

    # What the fake provider reported for each request, replayed on a fresh cache: the first
    # request writes everything up to its last breakpoint; every later one reads the previous
    # request's whole prefix (the rolling breakpoint) and writes only the new round.
    cache = PromptCache()
    accounted = [cache.account(body) for body in bodies]
    assert accounted[0][0] == 0 and accounted[0][1] > 0
    for previous, (read, write) in itertools.pairwise(accounted):
        assert read == sum(previous)
        assert 0 < write < read


async def test_a_marker_in_a_hand_built_history_is_sent() -> None:
    """A marker is an ordinary part of the history: ``turn()`` sends it as cache_control."""
    async with (
        FakeProvider({"models": {"*": [{"text": "ok"}]}}) as fake,
        AnthropicClient("claude-test", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        engine.session.history.extend(
            [
                Message.user("context", CachePoint("5m")),
                Message.assistant("noted"),
                Message(role="user", content=(TextPart("question"),)),
            ]
        )
        await engine.turn()
    [body] = fake.requests
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "context", "cache_control": {"type": "ephemeral", "ttl": "5m"}}
    ]
