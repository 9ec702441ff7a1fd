"""Media and cache markers on the wire, compared with what the official SDKs send.

Each test sends the same content twice to the fake provider on loopback, which records every
request body: once through an rxturn client, once through the official ``anthropic`` /
``openai`` SDK given the content in the SDK's own typed shapes (written from the SDKs' type
definitions: ``ImageBlockParam``, ``DocumentBlockParam``, ``ChatCompletionContentPartParam``,
``ResponseInputImageParam``…). The recorded bodies must agree.
"""

from __future__ import annotations

import base64
from typing import Any

import anthropic
import openai
import pytest
from _media_files import pdf, png, wav
from anthropic.types import MessageParam, TextBlockParam

from rxturn import (
    AnthropicClient,
    AudioPart,
    CachePoint,
    DocumentPart,
    FileIdSource,
    ImagePart,
    InlineSource,
    Message,
    OpenAIClient,
    OpenAIResponsesClient,
    UrlSource,
)
from rxturn.messages import (
    Request,
    RequestOptions,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)
from rxturn.testing import FakeProvider

PNG = png(8, 6)
PDF = pdf(2)
WAV = wav(0.25)
B64_PNG = base64.b64encode(PNG).decode()
B64_PDF = base64.b64encode(PDF).decode()
B64_WAV = base64.b64encode(WAV).decode()
TOOL = ToolSchema(name="screenshot", input_schema={"type": "object", "properties": {}})


async def _bodies(fake: FakeProvider) -> list[dict[str, Any]]:
    return list(fake.requests)


async def test_anthropic_media_and_cache_match_the_sdk() -> None:
    request = Request(
        system="You read documents.",
        tools=(TOOL,),
        messages=(
            Message.user(
                "Compare these.",
                ImagePart(InlineSource("image/png", PNG)),
                ImagePart(UrlSource("https://example.com/cat.png")),
                ImagePart(FileIdSource("file_011", "anthropic")),
                DocumentPart(
                    InlineSource("application/pdf", PDF),
                    title="Report",
                    context="Q3 numbers",
                    citations=True,
                ),
                CachePoint("1h"),
                DocumentPart(InlineSource("text/plain", b"plain notes"), title="Notes"),
                DocumentPart(UrlSource("https://example.com/a.pdf")),
                CachePoint(),
            ),
            Message(
                role="assistant",
                content=(ToolCallPart(id="toolu_1", name="screenshot", input={}),),
            ),
            Message(
                role="user",
                content=(
                    ToolResultPart(
                        "toolu_1",
                        (TextPart("the screen:"), ImagePart(InlineSource("image/png", PNG))),
                    ),
                ),
            ),
        ),
    )
    options = RequestOptions(cache_system="1h", cache_tools="1h")
    async with FakeProvider() as fake:
        async with AnthropicClient("claude-test", api_key="k", base_url=fake.base_url) as client:
            await client.create(request, options)
        async with anthropic.AsyncAnthropic(
            base_url=fake.base_url, api_key="k", max_retries=0
        ) as sdk:
            await sdk.messages.create(
                model="claude-test",
                max_tokens=8192,
                system=[
                    {
                        "type": "text",
                        "text": "You read documents.",
                        "cache_control": {"type": "ephemeral", "ttl": "1h"},
                    }
                ],
                tools=[
                    {
                        "name": "screenshot",
                        "input_schema": {"type": "object", "properties": {}},
                        "cache_control": {"type": "ephemeral", "ttl": "1h"},
                    }
                ],
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Compare these."},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": B64_PNG,
                                },
                            },
                            {
                                "type": "image",
                                "source": {"type": "url", "url": "https://example.com/cat.png"},
                            },
                            {"type": "image", "source": {"type": "file", "file_id": "file_011"}},
                            {
                                "type": "document",
                                "source": {
                                    "type": "base64",
                                    "media_type": "application/pdf",
                                    "data": B64_PDF,
                                },
                                "title": "Report",
                                "context": "Q3 numbers",
                                "citations": {"enabled": True},
                                "cache_control": {"type": "ephemeral", "ttl": "1h"},
                            },
                            {
                                "type": "document",
                                "source": {
                                    "type": "text",
                                    "media_type": "text/plain",
                                    "data": "plain notes",
                                },
                                "title": "Notes",
                            },
                            {
                                "type": "document",
                                "source": {"type": "url", "url": "https://example.com/a.pdf"},
                                "cache_control": {"type": "ephemeral"},
                            },
                        ],
                    },
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "toolu_1",
                                "content": [
                                    {"type": "text", "text": "the screen:"},
                                    {
                                        "type": "image",
                                        "source": {
                                            "type": "base64",
                                            "media_type": "image/png",
                                            "data": B64_PNG,
                                        },
                                    },
                                ],
                            }
                        ],
                    },
                ],
            )
        ours, theirs = await _bodies(fake)
    for field in ("messages", "system", "tools", "max_tokens", "model"):
        assert ours[field] == theirs[field], field


async def test_openai_chat_media_match_the_sdk() -> None:
    request = Request(
        messages=(
            Message.user(
                "Describe.",
                ImagePart(InlineSource("image/png", PNG), detail="low"),
                ImagePart(UrlSource("https://example.com/cat.png")),
                DocumentPart(InlineSource("application/pdf", PDF), filename="report.pdf"),
                DocumentPart(FileIdSource("file-abc", "openai")),
                DocumentPart(InlineSource("text/plain", b"plain notes")),
                AudioPart(InlineSource("audio/wav", WAV)),
                CachePoint(),
            ),
        )
    )
    options = RequestOptions(prompt_cache_key="tenant-7", prompt_cache_options={"mode": "explicit"})
    async with FakeProvider() as fake:
        async with OpenAIClient("gpt-test", api_key="k", base_url=fake.openai_base_url) as client:
            await client.create(request, options)
        async with openai.AsyncOpenAI(
            base_url=fake.openai_base_url, api_key="k", max_retries=0
        ) as sdk:
            await sdk.chat.completions.create(
                model="gpt-test",
                prompt_cache_key="tenant-7",
                prompt_cache_options={"mode": "explicit"},
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Describe."},
                            {
                                "type": "image_url",
                                "image_url": {
                                    "url": f"data:image/png;base64,{B64_PNG}",
                                    "detail": "low",
                                },
                            },
                            {
                                "type": "image_url",
                                "image_url": {"url": "https://example.com/cat.png"},
                            },
                            {
                                "type": "file",
                                "file": {
                                    "filename": "report.pdf",
                                    "file_data": f"data:application/pdf;base64,{B64_PDF}",
                                },
                            },
                            {"type": "file", "file": {"file_id": "file-abc"}},
                            {"type": "text", "text": "plain notes"},
                            {
                                "type": "input_audio",
                                "input_audio": {"data": B64_WAV, "format": "wav"},
                                "prompt_cache_breakpoint": {"mode": "explicit"},
                            },
                        ],
                    }
                ],
            )
        ours, theirs = await _bodies(fake)
    for field in ("messages", "prompt_cache_key", "prompt_cache_options"):
        assert ours[field] == theirs[field], field


async def test_openai_chat_tool_result_media_moved_into_a_user_message() -> None:
    request = Request(
        messages=(
            Message.user("Look at the screen."),
            Message(role="assistant", content=(ToolCallPart(id="call_1", name="screenshot"),)),
            Message(
                role="user",
                content=(
                    ToolResultPart(
                        "call_1", (TextPart("captured"), ImagePart(InlineSource("image/png", PNG)))
                    ),
                ),
            ),
        ),
        tools=(TOOL,),
    )
    async with FakeProvider() as fake:
        async with OpenAIClient("gpt-test", api_key="k", base_url=fake.openai_base_url) as client:
            await client.create(request, RequestOptions(tool_media_in_user=True))
        async with openai.AsyncOpenAI(
            base_url=fake.openai_base_url, api_key="k", max_retries=0
        ) as sdk:
            await sdk.chat.completions.create(
                model="gpt-test",
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": "screenshot",
                            "parameters": {"type": "object", "properties": {}},
                        },
                    }
                ],
                messages=[
                    {"role": "user", "content": "Look at the screen."},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "screenshot", "arguments": "{}"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "call_1", "content": "captured"},
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image_url",
                                "image_url": {"url": f"data:image/png;base64,{B64_PNG}"},
                            }
                        ],
                    },
                ],
            )
        ours, theirs = await _bodies(fake)
    assert ours["messages"] == theirs["messages"]


async def test_responses_media_match_the_sdk() -> None:
    request = Request(
        messages=(
            Message.user(
                "Describe.",
                ImagePart(InlineSource("image/png", PNG)),
                ImagePart(FileIdSource("file-img", "openai"), detail="high"),
                DocumentPart(InlineSource("application/pdf", PDF), filename="report.pdf"),
                DocumentPart(UrlSource("https://example.com/a.pdf")),
            ),
            Message(role="assistant", content=(ToolCallPart(id="call_1", name="screenshot"),)),
            Message(
                role="user",
                content=(
                    ToolResultPart(
                        "call_1", (TextPart("captured"), ImagePart(InlineSource("image/png", PNG)))
                    ),
                ),
            ),
        )
    )
    async with FakeProvider() as fake:
        async with OpenAIResponsesClient(
            "gpt-test", api_key="k", base_url=fake.openai_base_url
        ) as client:
            await client.create(request, RequestOptions(prompt_cache_key="tenant-7"))
        async with openai.AsyncOpenAI(
            base_url=fake.openai_base_url, api_key="k", max_retries=0
        ) as sdk:
            await sdk.responses.create(
                model="gpt-test",
                prompt_cache_key="tenant-7",
                input=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "Describe."},
                            {
                                "type": "input_image",
                                "image_url": f"data:image/png;base64,{B64_PNG}",
                                "detail": "auto",
                            },
                            {"type": "input_image", "file_id": "file-img", "detail": "high"},
                            {
                                "type": "input_file",
                                "filename": "report.pdf",
                                "file_data": f"data:application/pdf;base64,{B64_PDF}",
                            },
                            {"type": "input_file", "file_url": "https://example.com/a.pdf"},
                        ],
                    },
                    {
                        "type": "function_call",
                        "call_id": "call_1",
                        "name": "screenshot",
                        "arguments": "{}",
                    },
                    {
                        "type": "function_call_output",
                        "call_id": "call_1",
                        "output": [
                            {"type": "input_text", "text": "captured"},
                            {
                                "type": "input_image",
                                "image_url": f"data:image/png;base64,{B64_PNG}",
                                "detail": "auto",
                            },
                        ],
                    },
                ],
            )
        ours, theirs = await _bodies(fake)
    for field in ("input", "prompt_cache_key"):
        assert ours[field] == theirs[field], field


@pytest.mark.parametrize("streaming", [False, True])
async def test_anthropic_cache_reads_and_writes_reported_by_the_fake(streaming: bool) -> None:
    """The fake's prompt cache, seen through the official SDK: the first request writes the
    marked prefix, the second (same prefix, one more turn) reads it."""
    system: list[TextBlockParam] = [
        {"type": "text", "text": "one two three four", "cache_control": {"type": "ephemeral"}}
    ]
    first: list[MessageParam] = [{"role": "user", "content": "five six"}]
    second: list[MessageParam] = [
        *first,
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "seven"},
    ]
    script = {"models": {"*": [{"text": "ok"}]}}
    async with (
        FakeProvider(script) as fake,
        anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="k", max_retries=0) as sdk,
    ):
        usages = []
        for messages in (first, second):
            kwargs: dict[str, Any] = {
                "model": "claude-test",
                "max_tokens": 64,
                "system": system,
                "messages": messages,
            }
            if streaming:
                async with sdk.messages.stream(**kwargs) as stream:
                    usages.append((await stream.get_final_message()).usage)
            else:
                usages.append((await sdk.messages.create(**kwargs)).usage)
        # the same prefix under automatic caching (top-level cache_control) is read as well
        auto = await sdk.messages.create(
            model="claude-test",
            max_tokens=64,
            system=system,
            messages=second,
            cache_control={"type": "ephemeral"},
        )
    write, read = usages
    assert (write.cache_creation_input_tokens, write.cache_read_input_tokens) == (4, 0)
    assert write.input_tokens == 2  # "five six": after the breakpoint, not cached
    assert (read.cache_creation_input_tokens, read.cache_read_input_tokens) == (0, 4)
    assert read.input_tokens == 4  # five six ok seven
    # automatic caching: the system prefix is read, the rest up to the last block written
    assert (auto.usage.cache_read_input_tokens, auto.usage.cache_creation_input_tokens) == (4, 4)
    assert auto.usage.input_tokens == 0
