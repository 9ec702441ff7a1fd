"""Media in OpenTelemetry content capture: placeholders with type and size, never the bytes;
nothing at all without capture."""

from __future__ import annotations

import base64
import json
from typing import Any

from rxturn import (
    AnthropicClient,
    CachePoint,
    ImagePart,
    InlineSource,
    Message,
    TurnEngine,
    UrlSource,
)
from rxturn.messages import TextPart
from rxturn.testing import FakeProvider, assert_no_secret

from .conftest import Telemetry

PIXELS = b"\x89PNG\r\n\x1a\n" + b"PRIVATE-PIXELS-" * 64
ENCODED = base64.b64encode(PIXELS).decode()


def screenshot() -> tuple[Any, ...]:
    """Take a screenshot."""
    return (TextPart("the screen"), ImagePart(InlineSource("image/png", PIXELS)))


SCRIPT = {"models": {"*": [{"tool_calls": [{"id": "c1", "name": "screenshot"}]}, {"text": "ok"}]}}


async def _run(telemetry: Telemetry, capture: Any) -> TurnEngine:
    observer = telemetry.observer(capture_content=capture)
    prompt = Message.user(
        "what is this?",
        ImagePart(InlineSource("image/png", PIXELS)),
        ImagePart(UrlSource("https://example.com/a.png")),
        CachePoint(),
    )
    async with (
        FakeProvider(SCRIPT) as fake,
        AnthropicClient("primary", api_key="k", base_url=fake.base_url) as client,
    ):
        engine = TurnEngine(client, observers=[observer], tools=[screenshot])
        await engine.run(prompt)
    return engine


async def test_captured_media_is_a_placeholder(telemetry: Telemetry) -> None:
    engine = await _run(telemetry, "SPAN_AND_EVENT")
    chats = sorted(telemetry.named("chat "), key=lambda s: s.start_time or 0)
    raw = dict(chats[1].attributes or {})["gen_ai.input.messages"]
    assert isinstance(raw, str)
    messages = json.loads(raw)
    assert messages[0]["parts"] == [
        {"type": "text", "content": "what is this?"},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "size": len(PIXELS)},
        {"type": "uri", "modality": "image", "uri": "https://example.com/a.png"},
    ]
    assert messages[2]["parts"] == [
        {
            "type": "tool_call_response",
            "id": "c1",
            "response": [
                {"type": "text", "content": "the screen"},
                {
                    "type": "blob",
                    "modality": "image",
                    "mime_type": "image/png",
                    "size": len(PIXELS),
                },
            ],
        }
    ]
    tool = dict(telemetry.named("execute_tool")[0].attributes or {})
    assert tool["gen_ai.tool.call.result"] == "the screen [image: image/png, 968 bytes]"
    for secret in ("PRIVATE-PIXELS", ENCODED[:40]):
        assert_no_secret(telemetry.spans(), secret)
        assert_no_secret(telemetry.logs(), secret)
    # the audit's input text names the image, not its bytes
    assert engine.session.runs[0].turns[0].input == (
        "what is this? [image: image/png, 968 bytes] [image: https://example.com/a.png]"
    )


async def test_without_capture_no_content_at_all(telemetry: Telemetry) -> None:
    await _run(telemetry, None)
    for span in telemetry.spans():
        keys = set(span.attributes or {})
        assert not keys & {"gen_ai.input.messages", "gen_ai.tool.call.result"}
    assert_no_secret(telemetry.spans(), "PRIVATE-PIXELS")
