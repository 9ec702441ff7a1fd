"""A compacted conversation still opens the way every API requires (docs/behaviour.md §4.5).

Anthropic refuses a request whose first message is not the user's, or whose tool result does not
answer a ``tool_use`` of the message right before it; OpenAI refuses a tool message that does not
follow the assistant message with its call. The checks read the request bodies the fake
provider received, after the default compactor ran.
"""

from __future__ import annotations

import itertools
from typing import Any

from rxturn import AnthropicClient, ContextWindow, Message, RecordingObserver, TurnEngine
from rxturn.testing import FakeProvider


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def assert_opens_as_the_api_requires(messages: list[dict[str, Any]]) -> None:
    assert messages, "no message sent"
    assert messages[0]["role"] == "user", messages[0]
    assert all(block["type"] != "tool_result" for block in _blocks(messages[0])), messages[0]
    for before, message in itertools.pairwise(messages):
        calls = {b["id"] for b in _blocks(before) if b["type"] == "tool_use"}
        for block in _blocks(message):
            if block["type"] == "tool_result":
                assert block["tool_use_id"] in calls, (block, before)


async def _run(script: dict[str, Any], history: list[Message], **engine: Any) -> list[Any]:
    observer = RecordingObserver()
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("claude-sonnet-4-5", api_key="k", base_url=fake.base_url) as client,
    ):
        turns = TurnEngine(
            client,
            history=history,
            context_window=ContextWindow(max_tokens=2000),
            observers=[observer],
            **engine,
        )
        await turns.run("latest question")
        sent = [request["messages"] for request in fake.requests]
    assert any(name == "on_compaction" for name, _ in observer.calls)  # it did compact
    return sent


async def test_a_compacted_chat_opens_with_a_user_message() -> None:
    """Long questions, short answers: the cut that fits falls after a question, before its
    answer; that answer cannot open the conversation."""
    history: list[Message] = []
    for i in range(12):
        history.append(Message.user(f"question {i}: " + "lorem ipsum dolor sit amet " * 30))
        history.append(Message.assistant(f"answer {i}"))
    sent = await _run({"models": {"*": [{"text": "ok"}]}}, history)
    for messages in sent:
        assert_opens_as_the_api_requires(messages)
    assert sent[-1][-1] == {"role": "user", "content": "latest question"}


async def test_a_compacted_tool_loop_keeps_its_prompt_before_the_calls() -> None:
    """A tool loop whose results outgrow the window: the last user message is a tool result, so
    the kept units open with a call; the loop's prompt leads them."""

    def lookup(q: str) -> str:
        """Look something up."""
        return f"{q}: " + "a long page of results " * 60

    calls = [
        {"tool_calls": [{"id": f"call_{n}", "name": "lookup", "input": {"q": f"item {n}"}}]}
        for n in range(6)
    ]
    script = {"models": {"*": [*calls, {"text": "done"}]}}
    sent = await _run(script, [], tools=[lookup])
    assert len(sent) == 7
    for messages in sent:
        assert_opens_as_the_api_requires(messages)
    assert sent[-1][0] == {"role": "user", "content": "latest question"}
    assert len(sent[-1]) < 1 + 2 * 6  # compacted: some exchanges were dropped
