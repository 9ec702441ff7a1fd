"""Messages are checked when built and wherever one enters an engine.

A wrong role, a ``str`` where parts belong, an SDK-style dict: each is converted or refused with
a ``ConfigError`` at the caller's line — never an ``AttributeError`` from the token counter.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any, get_args

import pytest

from rxturn import (
    AnthropicClient,
    AudioPart,
    DocumentPart,
    ImagePart,
    InlineSource,
    OpenAIClient,
    TurnEngine,
    UrlSource,
)
from rxturn.errors import ConfigError
from rxturn.messages import (
    ContentPart,
    Message,
    RefusalPart,
    Request,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    message_from_json,
)
from rxturn.testing import FakeProvider

REPLY = {"models": {"*": [{"text": "ok"}]}}

# A tool round trip as the Anthropic SDK's users write it.
ANTHROPIC_HISTORY: Any = [
    {"role": "user", "content": "weather in Oslo?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "-3 C"}],
            }
        ],
    },
]

# The same round trip as the OpenAI chat SDK's users write it.
OPENAI_HISTORY: Any = [
    {"role": "user", "content": "weather in Oslo?"},
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "-3 C"},
]


def _round_trip(call_id: str) -> list[Message]:
    return [
        Message(role="user", content=(TextPart("weather in Oslo?"),)),
        Message(
            role="assistant",
            content=(TextPart("Let me look."), ToolCallPart(call_id, "weather", {"city": "Oslo"})),
        ),
        Message(role="user", content=(ToolResultPart(call_id, "-3 C"),)),
    ]


@pytest.mark.parametrize(
    ("history", "call_id"),
    [(ANTHROPIC_HISTORY, "toolu_1"), (OPENAI_HISTORY, "call_1")],
    ids=["anthropic", "openai"],
)
def test_sdk_style_histories_convert_to_the_same_conversation(history: Any, call_id: str) -> None:
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    engine.history.extend(history)
    assert engine.history == _round_trip(call_id)
    assert TurnEngine(engine.client, history=history).history == _round_trip(call_id)


def test_an_openai_assistant_dict_without_content_keeps_its_tool_calls() -> None:
    # The SDK leaves "content" out of an assistant message that only calls tools. Before, such
    # a dict passed for the Message JSON (msgspec ignored "tool_calls" as an unknown field)
    # and became an assistant message with no content at all: the calls were silently lost.
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    engine.history.append({"role": "assistant", "tool_calls": [call]})  # pyright: ignore[reportArgumentType]
    assert engine.history[0].content == (ToolCallPart("call_1", "weather", {}),)
    broken = {
        "role": "assistant",
        "tool_calls": [{**call, "function": {"name": "w", "arguments": "{"}}],
    }
    with pytest.raises(
        ConfigError, match=r"^history\[1\]: tool call arguments are not valid JSON$"
    ):
        engine.history.append(broken)  # pyright: ignore[reportArgumentType]


def weather(city: str) -> str:
    """The weather in a city."""
    return f"-3 C in {city}"


async def test_an_anthropic_sdk_history_reaches_the_wire_as_written() -> None:
    """What the Anthropic SDK would send for these dicts is what rxturn sends."""
    async with (
        FakeProvider(REPLY) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        # (with the tool its history calls: the API refuses tool blocks in a request without
        # tools, and so does the fake)
        engine = TurnEngine(client, history=ANTHROPIC_HISTORY, tools=[weather])
        await engine.turn()
    sent = fake.requests[0]["messages"]
    assert sent[1]["content"] == ANTHROPIC_HISTORY[1]["content"]
    assert sent[2]["content"][0]["tool_use_id"] == "toolu_1"
    assert sent[0] == ANTHROPIC_HISTORY[0]


async def test_an_openai_sdk_history_reaches_the_wire_as_written() -> None:
    async with (
        FakeProvider(REPLY) as fake,
        OpenAIClient("m", api_key="k", base_url=fake.openai_base_url) as client,
    ):
        engine = TurnEngine(client, history=OPENAI_HISTORY)
        await engine.turn()
    sent = fake.requests[0]["messages"]
    call = sent[1]["tool_calls"][0]
    assert (call["id"], call["function"]["name"]) == ("call_1", "weather")
    assert json.loads(call["function"]["arguments"]) == {"city": "Oslo"}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "-3 C"}


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "hi"},
        {"type": "input_text", "text": "hi"},
        {"type": "output_text", "text": "hi"},
    ],
)
def test_text_in_every_shape_is_one_text_part(block: Any) -> None:
    content: Any = [block]
    assert Message(role="user", content=content).content == (TextPart("hi"),)


@pytest.mark.parametrize(
    ("content", "where"),
    [("hello", "Message.content"), ((TextPart("a"), "hello"), r"Message.content\[1\]")],
    ids=["content", "a part"],
)
def test_a_str_where_parts_belong_is_a_config_error_naming_the_fix(
    content: Any, where: str
) -> None:
    # iterated as parts, a str would be its characters: refused when built, never converted
    with pytest.raises(
        ConfigError, match=rf"^{where} is a str, where .*TextPart\(text\)"
    ) as caught:
        Message(role="user", content=content)
    assert "\n" not in str(caught.value)
    assert Message.user("hello").content == (TextPart("hello"),)  # the builder takes a str


def test_responses_items_convert() -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"x": 1}'}
    output = {"type": "function_call_output", "call_id": "c1", "output": "done"}
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    items: Any = [call, output]
    engine.history.extend(items)
    assert engine.history == [
        Message(role="assistant", content=(ToolCallPart("c1", "f", {"x": 1}),)),
        Message(role="user", content=(ToolResultPart("c1", "done"),)),
    ]


def _any(value: Any) -> Any:
    return value


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (lambda: Message(role="system", content="be brief"), r"TurnEngine\(system=\.\.\.\)"),  # pyright: ignore[reportArgumentType]
        (lambda: Message(role="tool", content="x"), "role must be 'user' or 'assistant'"),  # pyright: ignore[reportArgumentType]
        (lambda: Message(role="user", content=[42]), r"content\[0\] is an int"),  # pyright: ignore[reportArgumentType]
        (lambda: Message(role="user", content=None), "must be a tuple of parts, got NoneType"),  # pyright: ignore[reportArgumentType]
        (lambda: Message.user(42), r"Message.user\(text\) takes a str"),  # pyright: ignore[reportArgumentType]
        (
            lambda: Message(role="user", content=_any([{"type": "video", "video": {}}])),
            "cannot convert a content block of type 'video'",
        ),
        (
            lambda: Message(role="user", content=_any([{"type": "tool_use", "name": "f"}])),
            "needs 'id' as a str",
        ),
        (lambda: Request(messages=("hi",)), r"Request.messages\[0\] is a str"),  # pyright: ignore[reportArgumentType]
        # before: ValueError (Python prints no int of more than 4300 digits) from the message
        (
            lambda: Message(role="user", content=_any([{"type": 10**5000}])),
            "block of type an integer of about 5001 digits",
        ),
        (lambda: Message(role=_any(10**5000)), "got an integer of about 5001 digits"),
    ],
    ids=[
        "system",
        "tool-role",
        "int-part",
        "none",
        "user-int",
        "unknown-block",
        "no-id",
        "request",
        "giant-int-block-type",
        "giant-int-role",
    ],
)
def test_bad_messages_are_config_errors_when_built(build: Any, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        build()


@pytest.mark.parametrize(
    ("history", "says"),
    [
        ([{"role": "system", "content": "be brief"}], r"history\[0\]: a 'system' message"),
        (["hello"], r"history\[0\] is a str, where a Message belongs: use Message.user"),
        ([{"role": "user"}], "needs 'content'"),
        ("hello", "history must be a sequence of Message, got str"),
        ([Message.user("a"), 7], r"history\[1\] is an int"),
        # msgspec's conversion raised a bare UnicodeEncodeError
        ([{"role": "user", "content": "a\ud800"}], r"history\[0\] holds text that is not valid"),
    ],
)
def test_an_engine_refuses_a_bad_history_at_construction(history: Any, says: str) -> None:
    client = AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match=says):
        TurnEngine(client, history=history)


@pytest.mark.parametrize("bad", [None, 3, "hello", {"role": "user", "content": "hi"}])
def test_assigning_a_history_that_is_not_a_sequence_is_refused(bad: Any) -> None:
    """``engine.history = None`` was a TypeError ('NoneType' object is not iterable), and a str
    was taken letter by letter ('history[...][0] is a str')."""
    engine: Any = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    engine.history = [Message.user("kept")]
    with pytest.raises(ConfigError, match=r"engine.history must be a sequence of Message, got"):
        engine.history = bad
    assert [m.text for m in engine.history] == ["kept"]
    with pytest.raises(ConfigError, match=r"history\[1\] holds text that is not valid Unicode"):
        engine.history.append({"role": "user", "content": "\ud800"})  # pyright: ignore[reportArgumentType]


async def test_a_bad_message_added_later_is_refused_where_it_is_added() -> None:
    async with (
        FakeProvider(REPLY) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client)
        history: Any = engine.history  # what users write, whatever the annotations say
        for add in (
            lambda: history.append("hi"),
            lambda: history.insert(0, {"role": "system", "content": "x"}),
            lambda: history.__setitem__(slice(0, 0), [3]),
        ):
            with pytest.raises(ConfigError):
                add()
        more: Any = [{"role": "user", "content": "hi"}]
        engine.history += more
        result = await engine.turn()
    assert result.message.text == "ok"
    assert [m["role"] for m in fake.requests[0]["messages"]] == ["user"]


async def test_transients_contributors_and_prompts_take_dicts() -> None:
    class Notes:
        def contribute(self, *, turn: int, history: Sequence[Message]) -> list[Any]:
            return [{"role": "user", "content": "note"}]

    async with (
        FakeProvider({"models": {"*": [{"text": "a"}, {"text": "b"}]}}) as fake,
        AnthropicClient("m", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, contributors=[Notes()])
        await engine.run({"role": "user", "content": "prompt"})  # pyright: ignore[reportArgumentType]
        await engine.turn([{"role": "user", "content": "extra"}])  # pyright: ignore[reportArgumentType]
    texts = [[_text(m["content"]) for m in body["messages"]] for body in fake.requests]
    assert texts[0] == ["note", "prompt"]
    assert texts[1][:2] == ["note", "extra"]


def _text(content: str | list[dict[str, Any]]) -> str:
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def test_every_part_type_of_the_union_is_accepted() -> None:
    """The allowed set follows the union: a part type added to it needs no second list."""
    for cls in get_args(ContentPart):
        sample = next(
            (part for message in _samples() for part in message.content if type(part) is cls),
            None,
        )
        if sample is None:  # a part type this test has no JSON sample of: build it by name
            continue
        assert Message(role="assistant", content=(sample,)).content == (sample,)


def _samples() -> list[Message]:
    return [
        message_from_json(
            b'{"role":"assistant","content":[{"type":"text","text":"t"},'
            b'{"type":"tool_call","id":"i","name":"n","input":{}},'
            b'{"type":"thinking","thinking":"x","signature":"s"},'
            b'{"type":"redacted_thinking","data":"d"},{"type":"refusal","text":"r"}]}'
        ),
        message_from_json(
            b'{"role":"user","content":[{"type":"tool_result","tool_call_id":"i","content":"c"}]}'
        ),
    ]


def test_message_json_with_a_system_role_is_a_decode_error() -> None:
    import msgspec

    with pytest.raises(msgspec.ValidationError):
        message_from_json(b'{"role":"system","content":[]}')


_SHOT = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()


def test_sdk_tool_results_with_a_screenshot_convert_to_parts() -> None:
    # a computer-use history as the Anthropic SDK and the Responses API write it: the image
    # blocks of a tool result were refused ('content blocks must be text blocks')
    anthropic_result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [
            {"type": "text", "text": "the screen:"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": _SHOT},
            },
        ],
    }
    responses_output = {
        "type": "function_call_output",
        "call_id": "t2",
        "output": [
            {"type": "input_text", "text": "the screen:"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{_SHOT}"},
        ],
    }
    shot = ImagePart(InlineSource("image/png", base64.b64decode(_SHOT)))
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    engine.history.extend(_any([{"role": "user", "content": [anthropic_result]}, responses_output]))
    assert [message.content for message in engine.history] == [
        (ToolResultPart("t1", (TextPart("the screen:"), shot)),),
        (ToolResultPart("t2", (TextPart("the screen:"), shot)),),
    ]
    text_only = {
        "type": "tool_result",
        "tool_use_id": "t3",
        "content": [{"type": "text", "text": "ok"}],
    }
    assert Message(role="user", content=_any([text_only])).content == (ToolResultPart("t3", "ok"),)
    call = {"type": "tool_use", "id": "x", "name": "f", "input": {}}
    with pytest.raises(ConfigError, match=r"content\[0\] is a ToolCallPart"):
        Message(role="user", content=_any([{**text_only, "content": [call]}]))


@pytest.mark.parametrize(
    "block",
    [
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{_SHOT}"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": _SHOT}},
    ],
    ids=["openai", "anthropic"],
)
def test_an_sdk_image_labelled_loosely_is_labelled_by_its_bytes(block: Any) -> None:
    # a PNG an SDK history sent as image/jpeg: converted with the label its header gives
    # (before, the wrong label was kept; a typed InlineSource with it is a ConfigError)
    (part,) = Message(role="user", content=_any([block])).content
    assert isinstance(part, ImagePart) and isinstance(part.source, InlineSource)
    assert part.source.media_type == "image/png"


def test_sdk_audio_labelled_loosely_is_labelled_by_its_bytes() -> None:
    mp3 = base64.b64encode(b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(16)).decode()
    block = {"type": "input_audio", "input_audio": {"data": mp3, "format": "wav"}}
    (part,) = Message(role="user", content=_any([block])).content
    assert isinstance(part, AudioPart) and isinstance(part.source, InlineSource)
    assert part.source.media_type == "audio/mpeg"


def test_a_responses_input_file_by_url_converts_to_a_url_document() -> None:
    # the Responses API's input_file takes file_data, file_id or file_url (what rxturn itself
    # sends for a DocumentPart(UrlSource)); the URL form was refused, naming Chat's
    # 'file.file_data', so a Responses history holding a PDF by URL could not be taken back
    block = {"type": "input_file", "file_url": "https://example.com/q3.pdf"}
    (part,) = Message(role="user", content=_any([block])).content
    assert part == DocumentPart(UrlSource("https://example.com/q3.pdf"))
    with pytest.raises(ConfigError, match=r"'input_file' block needs 'file_data'"):
        Message(role="user", content=_any([{"type": "input_file"}]))


_CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # the Chat API's assistant content may be a list of text parts: as Message JSON it
        # converted, and its tool calls were dropped (the next tool result then answered none)
        (
            {"role": "assistant", "content": [{"type": "text", "text": "Looking."}],
             "tool_calls": [_CALL]},
            (TextPart("Looking."), ToolCallPart("call_1", "f", {"x": 1})),
        ),
        ({"role": "assistant", "content": [], "tool_calls": [_CALL]},
         (ToolCallPart("call_1", "f", {"x": 1}),)),
        # a refusal in the message's own 'refusal' field, as the API returns it: refused for
        # its null content, or dropped beside text
        ({"role": "assistant", "content": None, "refusal": "I can't help."},
         (RefusalPart("I can't help."),)),
        ({"role": "assistant", "content": "Partly.", "refusal": "No more."},
         (TextPart("Partly."), RefusalPart("No more."))),
    ],
    ids=["list-content-with-calls", "empty-content-with-calls", "refusal", "text-and-refusal"],
)  # fmt: skip
def test_an_openai_assistant_dict_keeps_its_tool_calls_and_refusal(
    message: Any, expected: tuple[Any, ...]
) -> None:
    assert (
        Message(role="assistant", content=expected)
        == TurnEngine(
            AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"), history=[message]
        ).history[0]
    )


def test_the_openai_sdks_own_refusal_message_converts() -> None:
    from openai.types.chat import ChatCompletionMessage

    dumped = ChatCompletionMessage(role="assistant", content=None, refusal="I can't.").model_dump()
    engine = TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))
    engine.history.append(_any(dumped))
    assert engine.history[0].content == (RefusalPart("I can't."),)
    with pytest.raises(ConfigError, match="'refusal' is an OpenAI assistant message's"):
        engine.history.append(_any({"role": "user", "content": "hi", "refusal": "no"}))
