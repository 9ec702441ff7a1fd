"""What each wire cannot take is a ConfigError before anything is sent; the Anthropic cache
breakpoint budget; Ollama's raw base64 images; documented size limits."""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any

import pytest
from _client_support import PROVIDER_IDS, PROVIDERS, Provider, run_stream
from _media_files import MP3, pdf, png

from rxturn import (
    AnthropicClient,
    AudioPart,
    CachePoint,
    DocumentPart,
    FileIdSource,
    ImagePart,
    InlineSource,
    Message,
    OllamaClient,
    OpenAIClient,
    OpenAIResponsesClient,
    UrlSource,
)
from rxturn.clients.anthropic import build_anthropic_body
from rxturn.clients.ollama import build_ollama_body
from rxturn.clients.openai import build_openai_body
from rxturn.clients.openai_responses import build_responses_body
from rxturn.errors import BadRequestError, ConfigError, is_retryable
from rxturn.messages import (
    RedactedThinkingPart,
    Request,
    RequestOptions,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)
from rxturn.testing import FakeProvider

PNG = png(4, 4)
IMAGE = ImagePart(InlineSource("image/png", PNG))
URL_PDF = DocumentPart(UrlSource("https://example.com/a.pdf"))
TOOL = ToolSchema(name="t")


def anthropic(request: Request, options: RequestOptions | None = None) -> dict[str, Any]:
    return build_anthropic_body(
        request, options or RequestOptions(), model="m", max_tokens=100, stream=False
    )


def chat(request: Request, options: RequestOptions | None = None) -> dict[str, Any]:
    return build_openai_body(
        request, options or RequestOptions(), model="m", max_tokens=None, stream=False
    )


def responses(request: Request, options: RequestOptions | None = None) -> dict[str, Any]:
    return build_responses_body(
        request, options or RequestOptions(), model="m", max_tokens=None, stream=False
    )


def ollama(request: Request, options: RequestOptions | None = None) -> dict[str, Any]:
    return build_ollama_body(
        request, options or RequestOptions(), model="m", max_tokens=None, stream=False
    )


def user(*parts: Any) -> Request:
    return Request(messages=(Message(role="user", content=parts),))


def tool_loop(result: ToolResultPart) -> Request:
    return Request(
        messages=(
            Message.user("go"),
            Message(role="assistant", content=(ToolCallPart(id="c1", name="t"),)),
            Message(role="user", content=(result,)),
        ),
        tools=(TOOL,),
    )


AUDIO = AudioPart(InlineSource("audio/mpeg", MP3))


@pytest.mark.parametrize(
    ("build", "request_", "match"),
    [
        (anthropic, user(TextPart("hi"), AUDIO), "Anthropic Messages API cannot take AudioPart"),
        (
            anthropic,
            user(ImagePart(FileIdSource("file-x", "openai"))),
            "the file id belongs to 'openai', not 'anthropic'",
        ),
        (chat, user(URL_PDF), "a file part takes inline bytes or a file id, not a URL"),
        (
            chat,
            user(ImagePart(FileIdSource("file-x", "openai"))),
            "image_url takes a URL or inline bytes, not a file id",
        ),
        (chat, user(AudioPart(UrlSource("https://x.test/a.mp3"))), "input_audio takes inline"),
        (
            chat,
            Request(messages=(Message(role="assistant", content=(IMAGE,)),)),
            "media goes in user messages only",
        ),
        (
            chat,
            tool_loop(ToolResultPart("c1", (IMAGE,))),
            "a tool message carries text only; set RequestOptions\\(tool_media_in_user=True\\)",
        ),
        (responses, user(AUDIO), "Responses API cannot take AudioPart"),
        (ollama, user(ImagePart(UrlSource("https://x.test/a.png"))), "inline bytes only"),
        # Ollama has no file store: an id is refused as an id, never with 'upload the file to
        # ollama' (what the other-provider message suggested)
        (ollama, user(ImagePart(FileIdSource("file-x", "openai"))), "inline bytes only"),
        (ollama, user(DocumentPart(InlineSource("application/pdf", pdf(1)))), "images and plain"),
        (ollama, tool_loop(ToolResultPart("c1", (IMAGE,))), "a tool message takes text only"),
        (
            anthropic,
            user(ImagePart(InlineSource("application/pdf", pdf(1)))),
            "not a known image type",
        ),
    ],
    ids=lambda v: v.__name__ if callable(v) else None,
)
def test_a_part_the_wire_cannot_take_is_refused(build: Any, request_: Request, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as caught:
        build(request_)
    text = str(caught.value)
    assert "\n" not in text
    assert base64.b64encode(PNG).decode()[:24] not in text  # never the bytes


async def test_refused_before_anything_is_sent() -> None:
    async with FakeProvider() as fake:
        for client in (
            AnthropicClient("m", api_key="k", base_url=fake.base_url),
            OpenAIResponsesClient("m", api_key="k", base_url=fake.openai_base_url),
            OllamaClient("m", base_url=fake.base_url),
        ):
            async with client:
                with pytest.raises(ConfigError):
                    await client.create(user(TextPart("hi"), AUDIO))
        async with OpenAIClient("m", api_key="k", base_url=fake.openai_base_url) as chat_client:
            with pytest.raises(ConfigError):
                await chat_client.create(user(URL_PDF))
        assert fake.requests == []


def test_ollama_images_are_raw_base64_and_text_documents_text() -> None:
    body = ollama(user(TextPart("what is it?"), IMAGE, DocumentPart.from_text("notes")))
    assert body["messages"] == [
        {
            "role": "user",
            "content": "what is it?\n\nnotes",
            "images": [base64.b64encode(PNG).decode()],
        }
    ]
    # Ollama's content is one string: a text document is set apart from the text around it by
    # a blank line (it was run into it: 'Summarise:Q3 grew'), the message's own text parts are
    # joined as they are
    parts = (TextPart("Sum"), TextPart("marise:"), DocumentPart.from_text("Q3 grew"))
    assert ollama(user(*parts, TextPart("Thanks.")))["messages"][0]["content"] == (
        "Summarise:\n\nQ3 grew\n\nThanks."
    )
    assert ollama(user(DocumentPart.from_text("a"), DocumentPart.from_text("b")))["messages"][0][
        "content"
    ] == ("a\n\nb")


def test_markers_are_ignored_where_caching_is_implicit() -> None:
    marked = user(TextPart("a"), CachePoint(), TextPart("b"))
    assert ollama(marked)["messages"] == [{"role": "user", "content": "ab"}]
    assert chat(marked)["messages"] == [{"role": "user", "content": "ab"}]  # implicit mode
    assert responses(marked)["input"] == [{"role": "user", "content": "ab"}]
    explicit = RequestOptions(prompt_cache_options={"mode": "explicit"})
    assert responses(marked, explicit)["input"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": "a",
                    "prompt_cache_breakpoint": {"mode": "explicit"},
                },
                {"type": "input_text", "text": "b"},
            ],
        }
    ]
    with pytest.raises(ConfigError, match="'implicit' or 'explicit'"):
        chat(marked, RequestOptions(prompt_cache_options={"mode": "always"}))


def test_a_tool_result_marked_in_explicit_mode() -> None:
    request = Request(
        messages=(
            Message(role="assistant", content=(ToolCallPart(id="c1", name="t"),)),
            Message(role="user", content=(ToolResultPart("c1", "42"), CachePoint())),
        )
    )
    explicit = RequestOptions(prompt_cache_options={"mode": "explicit"})
    assert chat(request, explicit)["messages"][1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [
            {"type": "text", "text": "42", "prompt_cache_breakpoint": {"mode": "explicit"}}
        ],
    }
    assert responses(request, explicit)["input"][1] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": "42", "prompt_cache_breakpoint": {"mode": "explicit"}}
        ],
    }


@pytest.mark.parametrize(
    "content",
    [(TextPart("a"), CachePoint()), (ToolCallPart(id="c1", name="t"), CachePoint())],
    ids=["after text", "after a tool call"],
)
def test_an_assistant_marker_in_explicit_mode_is_refused_by_responses(content: Any) -> None:
    # Responses sends an assistant message back as output text, which takes no breakpoint:
    # the marker was dropped without a word, where Chat marks the message's text (and
    # refuses a marker it has no text for)
    request = Request(
        messages=(Message.user("q"), Message(role="assistant", content=content), Message.user("r"))
    )
    explicit = RequestOptions(prompt_cache_options={"mode": "explicit"})
    with pytest.raises(ConfigError, match="CachePoint in an assistant message"):
        responses(request, explicit)
    assert responses(request)["input"][0] == {"role": "user", "content": "q"}  # implicit: dropped


# -- OpenAI's explicit mode and the cache switches -------------------------------------------
# Explicit mode caches only what a request marks: the switches were dropped there, so a request
# asking for its system prompt and conversation to be cached had nothing cached at all.

EXPLICIT = {"mode": "explicit"}


def _explicit(**switches: Any) -> RequestOptions:
    return RequestOptions(prompt_cache_options=EXPLICIT, **switches)


def test_the_switches_are_explicit_breakpoints_in_chat() -> None:
    request = Request(messages=(Message.user("q"),), system="be brief", tools=(TOOL,))
    body = chat(request, _explicit(cache_system=True, cache_messages="1h"))
    assert body["messages"] == [
        {
            "role": "system",
            "content": [{"type": "text", "text": "be brief", "prompt_cache_breakpoint": EXPLICIT}],
        },
        {
            "role": "user",
            "content": [{"type": "text", "text": "q", "prompt_cache_breakpoint": EXPLICIT}],
        },
    ]


def test_the_switches_are_explicit_breakpoints_in_responses() -> None:
    # instructions is a plain string, which takes no breakpoint: the system prompt goes first
    request = Request(messages=(Message.user("q"),), system="be brief")
    body = responses(request, _explicit(cache_system=True, cache_messages=True))
    assert "instructions" not in body
    assert body["input"] == [
        {
            "role": "system",
            "content": [
                {"type": "input_text", "text": "be brief", "prompt_cache_breakpoint": EXPLICIT}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "input_text", "text": "q", "prompt_cache_breakpoint": EXPLICIT}],
        },
    ]
    only_messages = responses(request, _explicit(cache_messages=True))
    assert only_messages["instructions"] == "be brief"


def test_the_rolling_conversation_ends_at_the_last_tool_result() -> None:
    request = Request(
        messages=(
            Message.user("q"),
            Message(role="assistant", content=(ToolCallPart(id="c1", name="t"),)),
            Message(role="user", content=(ToolResultPart("c1", "42"),)),
        )
    )
    marked = {"type": "text", "text": "42", "prompt_cache_breakpoint": EXPLICIT}
    assert chat(request, _explicit(cache_messages=True))["messages"][-1]["content"] == [marked]
    output = responses(request, _explicit(cache_messages=True))["input"][-1]["output"]
    assert output == [{**marked, "type": "input_text"}]
    assert chat(request, _explicit())["messages"][0] == {"role": "user", "content": "q"}


@pytest.mark.parametrize("build", [chat, responses], ids=["chat", "responses"])
def test_cache_tools_cannot_act_in_explicit_mode_and_is_refused(build: Any) -> None:
    request = Request(messages=(Message.user("q"),), tools=(TOOL,))
    with pytest.raises(ConfigError, match=r"^RequestOptions\.cache_tools cannot act in OpenAI"):
        build(request, _explicit(cache_tools=True))
    build(request, RequestOptions(cache_tools=True))  # implicit mode: OpenAI caches by itself


def test_a_conversation_ending_where_no_breakpoint_goes_is_refused() -> None:
    prefill = Request(messages=(Message.user("q"), Message.assistant("The answer is")))
    with pytest.raises(ConfigError, match=r"^RequestOptions\.cache_messages: the request ends"):
        responses(prefill, _explicit(cache_messages=True))
    calls = Request(
        messages=(Message.user("q"), Message(role="assistant", content=(ToolCallPart("c", "t"),)))
    )
    with pytest.raises(ConfigError, match=r"^RequestOptions\.cache_messages: the request ends"):
        chat(calls, _explicit(cache_messages=True))


def test_the_switches_stay_ignored_where_caching_is_implicit() -> None:
    request = Request(messages=(Message.user("q"),), system="s", tools=(TOOL,))
    switches = RequestOptions(cache_system=True, cache_tools=True, cache_messages=True)
    plain = RequestOptions()
    assert chat(request, switches)["messages"] == chat(request, plain)["messages"]
    assert responses(request, switches) == responses(request, plain)
    assert ollama(request, switches) == ollama(request, plain)


# -- Anthropic cache breakpoints ---------------------------------------------------------------


def _marked_blocks(body: dict[str, Any]) -> list[str]:
    return [
        block["text"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if "cache_control" in block
    ]


def test_at_most_four_breakpoints_the_oldest_markers_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    messages = tuple(
        Message(
            role="user" if i % 2 == 0 else "assistant", content=(TextPart(f"m{i}"), CachePoint())
        )
        for i in range(5)
    )
    request = Request(messages=messages, system="s", tools=(TOOL,))
    with caplog.at_level(logging.WARNING, logger="rxturn.clients"):
        body = anthropic(request, RequestOptions(cache_system=True, cache_messages="5m"))
    assert _marked_blocks(body) == ["m3", "m4"]  # 2 switches + the 2 newest markers
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    assert "cache_control" not in body["tools"][0]
    [record] = caplog.records
    assert record.name == "rxturn.clients" and "dropped the 3 oldest" in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rxturn.clients"):
        body = anthropic(Request(messages=messages[:4]))
    assert _marked_blocks(body) == ["m0", "m1", "m2", "m3"] and caplog.records == []


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ((CachePoint(), TextPart("x")), "first in a message"),
        ((TextPart(""), CachePoint()), "empty text part"),
        ((ThinkingPart("hmm", "sig"), CachePoint(), TextPart("x")), "right after a thinking"),
        ((RedactedThinkingPart("opaque"), CachePoint(), TextPart("x")), "right after a thinking"),
    ],
)
def test_markers_in_impossible_places(content: tuple[Any, ...], match: str) -> None:
    request = Request(messages=(Message(role="assistant", content=content),))
    with pytest.raises(ConfigError, match=match):
        anthropic(request)


@pytest.mark.parametrize("value", [1, "10m", "yes"])
def test_bad_cache_switches(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"RequestOptions\.cache_system must be"):
        anthropic(user(TextPart("x")), RequestOptions(cache_system=value, prompt_cache_key="k"))
    with pytest.raises(ConfigError, match=r"CachePoint\.ttl must be"):
        anthropic(user(TextPart("x"), CachePoint(value)))


def test_cache_switches_without_a_system_or_tools_do_nothing() -> None:
    body = anthropic(user(TextPart("x")), RequestOptions(cache_system=True, cache_tools=True))
    assert "system" not in body and "tools" not in body and "cache_control" not in body


# -- size limits -------------------------------------------------------------------------------


def test_anthropic_image_limit_names_the_documented_5mb() -> None:
    big = ImagePart(InlineSource("image/png", PNG + bytes(4 * 1024 * 1024)))
    with pytest.raises(ConfigError, match=r"Anthropic accepts images up to 5 MB each"):
        anthropic(user(big))
    fits = ImagePart(InlineSource("image/png", PNG + bytes(3 * 1024 * 1024)))
    assert anthropic(user(fits))["messages"][0]["content"][0]["type"] == "image"


def test_anthropic_request_limit_names_the_documented_32mb() -> None:
    page = DocumentPart(InlineSource("application/pdf", pdf(1) + bytes(5 * 1024 * 1024)))
    with pytest.raises(ConfigError, match=r"Anthropic accepts requests up to 32 MB"):
        anthropic(user(*([page] * 6)))


def test_openai_request_limit_names_the_documented_50mb() -> None:
    page = DocumentPart(InlineSource("application/pdf", pdf(1) + bytes(10 * 1000 * 1000)))
    with pytest.raises(ConfigError, match=r"OpenAI accepts requests up to 50 MB"):
        chat(user(*([page] * 4)))
    with pytest.raises(ConfigError, match=r"OpenAI accepts requests up to 50 MB"):
        responses(user(*([page] * 4)))


async def test_an_undocumented_limit_lets_the_providers_400_through_unretried() -> None:
    script = {
        "models": {
            "*": [
                {
                    "status": 400,
                    "error_type": "invalid_request_error",
                    "error_message": "could not process image",
                }
            ]
        }
    }
    async with FakeProvider(script) as fake, OllamaClient("m", base_url=fake.base_url) as client:
        with pytest.raises(BadRequestError, match="could not process image") as caught:
            await client.create(user(TextPart("what?"), IMAGE))
    assert not is_retryable(caught.value)
    assert len(fake.requests) == 1


def test_a_1h_breakpoint_after_a_5m_one_is_refused() -> None:
    request = Request(
        messages=(
            Message.user("a", CachePoint("5m")),
            Message.assistant("b"),
            Message.user("c", CachePoint("1h")),
        ),
        system="s",
    )
    with pytest.raises(ConfigError, match=r"a 1h cache breakpoint \(a CachePoint\) after a 5m one"):
        anthropic(request)
    with pytest.raises(
        ConfigError, match=r"\(cache_messages\) after a 5m one \(the system prompt\)"
    ):
        anthropic(
            Request(messages=(Message.user("x"),), system="s"),
            RequestOptions(cache_system=True, cache_messages="1h"),
        )
    # the API's order is tools, then system: a 5m last tool before a 1h system prompt is wrong
    with pytest.raises(
        ConfigError, match=r"\(the system prompt\) after a 5m one \(the last tool\)"
    ):
        anthropic(
            Request(messages=(Message.user("x"),), system="s", tools=(TOOL,)),
            RequestOptions(cache_tools="5m", cache_system="1h"),
        )
    # longer first is fine
    ordered = Request(messages=(Message.user("a", CachePoint("1h")),), system="s")
    body = anthropic(ordered, RequestOptions(cache_system="1h", cache_messages="5m"))
    assert body["system"][0]["cache_control"]["ttl"] == "1h"


@pytest.mark.parametrize("provider", PROVIDERS, ids=PROVIDER_IDS)
async def test_every_route_of_the_fake_takes_an_image_streaming(provider: Provider) -> None:
    request = user(TextPart("what is it?"), IMAGE, CachePoint())
    async with FakeProvider({"models": {"*": [{"text": "a square"}]}}) as fake:
        async with provider.client(fake) as client:
            events, error = await run_stream(client.stream(request))
        assert error is None
        assert events
        [body] = fake.requests
    assert base64.b64encode(PNG).decode() in str(body)


def test_a_plain_text_document_stays_its_own_part_beside_the_prompt() -> None:
    # what docs/content.md's table says: a `text` part (Chat), an `input_text` part
    # (Responses). The message was sent as one joined string, "Summarise:Q3 grew", where the
    # document's first word ran into the prompt's last
    marked = user(TextPart("Summarise:"), DocumentPart.from_text("Q3 grew"))
    assert chat(marked)["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Summarise:"},
                {"type": "text", "text": "Q3 grew"},
            ],
        }
    ]
    assert responses(marked)["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Summarise:"},
                {"type": "input_text", "text": "Q3 grew"},
            ],
        }
    ]
    # text alone still goes as the plain string the APIs have always taken
    assert chat(user(TextPart("a"), TextPart("b")))["messages"][0]["content"] == "ab"
    assert responses(user(TextPart("a"), TextPart("b")))["input"][0]["content"] == "ab"


async def test_megabytes_of_inline_media_are_encoded_off_the_event_loop() -> None:
    # before, base64 and JSON of the body ran on the loop for every attempt: a 30 MB image
    # held it for about 0.1 s (Ollama takes any size; OpenAI up to 50 MB of base64)
    big = ImagePart(InlineSource("image/png", png(4, 4) + bytes(2 * 1024 * 1024)))
    built_on: list[tuple[str, int]] = []

    class Recording(OllamaClient):
        def _body(self, request: Request, *args: Any, **kwargs: Any) -> dict[str, Any]:
            built_on.append((request.messages[0].text, threading.get_ident()))
            return super()._body(request, *args, **kwargs)

    loop_thread = threading.get_ident()
    script = {"models": {"*": [{"text": "a square"}] * 3}}
    async with FakeProvider(script) as fake, Recording("m", base_url=fake.base_url) as client:
        await client.create(user(TextPart("small"), IMAGE))
        await client.create(user(TextPart("big"), big))
        _, error = await run_stream(client.stream(user(TextPart("big stream"), big)))
    assert error is None
    assert [text for text, _ in built_on] == ["small", "big", "big stream"]
    assert built_on[0][1] == loop_thread  # (a small body stays where it is cheapest)
    assert loop_thread not in (built_on[1][1], built_on[2][1])
