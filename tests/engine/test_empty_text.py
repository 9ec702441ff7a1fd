"""Empty and whitespace-only text, per wire, as each real API takes it.

The Anthropic Messages API answers an empty text block, a message whose text is all
whitespace and a final assistant message ending in whitespace with a 400; rxturn refuses those
with a ConfigError before any request, and the fake answers them with the API's 400. OpenAI
Chat, Responses and Ollama take empty text, and rxturn sends it as is.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from rxturn import (
    AnthropicClient,
    Message,
    OllamaClient,
    OpenAIClient,
    OpenAIResponsesClient,
    TurnEngine,
)
from rxturn.errors import ConfigError
from rxturn.messages import ImagePart, TextPart, UrlSource
from rxturn.testing import FakeProvider

SCRIPT = {"models": {"*": [{"text": "ok"}]}}


@pytest.mark.parametrize(
    ("history", "prompt", "match"),
    [
        ((), "", "messages\\[0\\] \\(user\\) has an empty text part"),
        ((), " \n\t", "messages\\[0\\] \\(user\\) holds only whitespace text"),
        ((Message.user(""), Message.assistant("hi")), "go on", "messages\\[0\\].*empty text"),
        (
            (Message(role="user", content=(TextPart(" "), TextPart("\n"))),),
            "go on",
            "messages\\[0\\].*only whitespace",
        ),
        (
            (Message(role="user", content=(ImagePart(UrlSource("https://x.test/a.png")),)),),
            Message(role="user", content=(TextPart("see"), TextPart(""))),
            "messages\\[1\\].*empty text",
        ),
    ],
    ids=["empty prompt", "blank prompt", "empty in history", "blank parts", "empty part"],
)
async def test_anthropic_refuses_what_the_api_refuses_before_any_request(
    history: tuple[Message, ...], prompt: str | Message, match: str
) -> None:
    async with (
        FakeProvider(SCRIPT) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        engine.history = list(history)
        with pytest.raises(ConfigError, match=match) as caught:
            await engine.run(prompt)
        assert "\n" not in str(caught.value)
        assert fake.requests == []  # nothing was sent
        assert engine.history == list(history)


async def test_anthropic_prefill_rules() -> None:
    """A final assistant message (a prefill) may be empty, but may not end in whitespace."""
    async with (
        FakeProvider(SCRIPT) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        engine.history = [Message.user("hi"), Message.assistant("Sure: ")]
        with pytest.raises(ConfigError, match="ending in whitespace"):
            await engine.turn()
        assert fake.requests == []
        engine.history = [Message.user("hi"), Message.assistant("")]
        result = await engine.turn()
    assert result.message.text == "ok"
    assert fake.requests[0]["messages"][-1] == {"role": "assistant", "content": ""}


async def test_an_empty_reply_in_the_history_does_not_break_the_next_anthropic_request() -> None:
    """The fold keeps an empty reply as an assistant message with no parts; sent as
    ``content: []`` the real API refuses the next request ("all messages must have non-empty
    content"), so the Anthropic body leaves it out, as the Responses body does."""
    script = {"models": {"*": [{"text": ""}, {"text": "ok"}]}}
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        assert (await engine.run("hi")).text == ""
        assert engine.history[-1].content == ()  # the reply as the fold made it
        assert (await engine.run("again")).text == "ok"
    assert fake.requests[1]["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "again"},
    ]


async def test_a_blank_reply_of_the_model_is_sent_without_its_blank_text() -> None:
    """A model's reply of whitespace alone, or before its tool calls, says nothing; the API
    refuses it in a later request ("text content blocks must contain non-whitespace text"),
    so every later turn of the conversation would fail. The Anthropic body leaves that blank
    text out of the model's earlier replies (a user's blank text is still refused)."""
    from rxturn.messages import ToolCallPart, ToolResultPart

    def clock() -> str:
        """The time."""
        return "noon"

    script = {"models": {"*": [{"text": "\n\n"}, {"text": "ok"}]}}
    async with (
        FakeProvider(script) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, tools=[clock])
        assert (await engine.run("hi")).text == "\n\n"
        assert (await engine.run("again")).text == "ok"
        assert fake.requests[1]["messages"] == [
            {"role": "user", "content": "hi"},
            {"role": "user", "content": "again"},
        ]
        call = ToolCallPart("toolu_1", "clock", {})
        engine.history = [
            Message.user("time?"),
            Message(role="assistant", content=(TextPart("\n\n"), call)),
            Message(role="user", content=(ToolResultPart("toolu_1", "noon"),)),
        ]
        await engine.turn()
    assert fake.requests[-1]["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "clock", "input": {}}],
    }


async def test_an_empty_user_message_is_refused_on_anthropic() -> None:
    async with (
        FakeProvider(SCRIPT) as fake,
        AnthropicClient("claude-x", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, history=[Message(role="user", content=())])
        with pytest.raises(ConfigError, match=r"messages\[0\] \(user\) has no content"):
            await engine.run("go on")
        assert fake.requests == []


def _openai(fake: FakeProvider) -> Any:
    return OpenAIClient("gpt-x", api_key="k", base_url=fake.openai_base_url)


def _responses(fake: FakeProvider) -> Any:
    return OpenAIResponsesClient("gpt-x", api_key="k", base_url=fake.openai_base_url)


def _ollama(fake: FakeProvider) -> Any:
    return OllamaClient("llama3", base_url=fake.base_url)


@pytest.mark.parametrize(
    "make", [_openai, _responses, _ollama], ids=["chat", "responses", "ollama"]
)
async def test_other_wires_send_empty_text_as_is(make: Any) -> None:
    async with FakeProvider(SCRIPT) as fake, make(fake) as client:
        result = await TurnEngine(client).run("")
        assert result.text == "ok"
        (body,) = fake.requests
    sent = body.get("messages", body.get("input"))
    assert "" in str(sent) and sent[-1]["role"] == "user"
    text: Any = sent[-1]["content"]
    assert text == "" or text == [{"type": "input_text", "text": ""}]


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "must be non-empty"),
        (
            [{"role": "user", "content": ""}],
            "messages.0: all messages must have non-empty content except for the optional "
            "final assistant message",
        ),
        (
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": []},
                {"role": "user", "content": "again"},
            ],
            "messages.1: all messages must have non-empty content except for the optional "
            "final assistant message",
        ),
        ([{"role": "user", "content": " \n"}], "must contain non-whitespace text"),
        (
            [{"role": "user", "content": [{"type": "text", "text": " "}]}],
            "must contain non-whitespace text",
        ),
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Sure "}],
            "final assistant content cannot end with trailing whitespace",
        ),
    ],
    ids=[
        "empty block",
        "empty string",
        "empty list",
        "blank string",
        "blank block",
        "prefill whitespace",
    ],
)
async def test_the_fake_answers_refused_text_with_the_apis_400(
    messages: list[Any], error: str
) -> None:
    async with FakeProvider(SCRIPT) as fake, aiohttp.ClientSession() as http:
        body = {"model": "claude-x", "max_tokens": 16, "messages": messages}
        async with http.post(f"{fake.base_url}/v1/messages", json=body) as response:
            status, answer = response.status, await response.json()
        # the refused request took no entry: a fine one is answered with it
        good = {**body, "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]}
        async with http.post(f"{fake.base_url}/v1/messages", json=good) as response:
            assert response.status == 200
    assert status == 400
    assert answer["error"]["type"] == "invalid_request_error"
    assert answer["error"]["message"].endswith(error)
    assert answer["error"]["message"].startswith("messages")


async def test_the_fake_takes_an_empty_prefill_and_text_beside_blank_text() -> None:
    async with FakeProvider(SCRIPT) as fake, aiohttp.ClientSession() as http:
        for messages in (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}],
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": []}],
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": " "}, {"type": "text", "text": "a"}],
                }
            ],
        ):
            body = {"model": "claude-x", "max_tokens": 16, "messages": messages}
            async with http.post(f"{fake.base_url}/v1/messages", json=body) as response:
                assert response.status == 200, await response.text()
