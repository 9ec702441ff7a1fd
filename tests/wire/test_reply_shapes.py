"""A non-streaming body that is JSON but no reply of its wire is an error, never an empty reply.

Every field of the four reply types had a default, so any JSON object parsed: ``{"ok": true}``
from a wrong base URL (a health check, another API) was an empty reply with ``end_turn``, which
``rxturn chat --no-stream`` printed as an empty line, exit 0, and which rescued a failed Ollama
stream as "rescued by the non-streaming request". The field that makes a body a reply of its
wire (Anthropic ``content``, OpenAI ``choices``, Responses ``output``, Ollama ``message``) must
be there; an empty one is still a reply.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rxturn.errors import ProviderStreamError, StreamProtocolError
from rxturn.messages import Message, StopReason
from rxturn.wire import (
    parse_anthropic_message,
    parse_ollama_chat,
    parse_openai_completion,
    parse_openai_response,
)

PARSERS: dict[str, tuple[Callable[[bytes], Message], str, str]] = {
    # wire: (parser, the body's name in errors, the field that makes it a reply)
    "anthropic": (parse_anthropic_message, "Anthropic message body", "content"),
    "openai": (parse_openai_completion, "OpenAI chat completion body", "choices"),
    "responses": (parse_openai_response, "OpenAI response body", "output"),
    "ollama": (parse_ollama_chat, "Ollama chat body", "message"),
}

#: bodies of each wire whose defining field is there but empty: replies with nothing in them
EMPTY_REPLIES = {
    "anthropic": b'{"type":"message","id":"msg_1","model":"m","content":[],'
    b'"stop_reason":"end_turn"}',
    "openai": b'{"id":"c1","object":"chat.completion","model":"m","choices":[]}',
    "responses": b'{"id":"r1","object":"response","model":"m","status":"completed","output":[]}',
    "ollama": b'{"model":"m","created_at":"t","message":{"role":"assistant","content":""},'
    b'"done":true}',
}


@pytest.mark.parametrize("wire", PARSERS)
@pytest.mark.parametrize(
    "body", [b'{"ok": true}', b"{}", b'{"id": "x", "model": "m"}'], ids=["other", "empty", "ids"]
)
def test_json_that_is_no_reply_is_a_protocol_error(wire: str, body: bytes) -> None:
    parse, what, field = PARSERS[wire]
    with pytest.raises(StreamProtocolError) as raised:
        parse(body)
    assert str(raised.value) == (
        f"unexpected JSON shape in {what}: Object missing required field `{field}`"
    )


@pytest.mark.parametrize("wire", PARSERS)
def test_an_empty_reply_is_still_a_reply(wire: str) -> None:
    parse, _, _ = PARSERS[wire]
    message = parse(EMPTY_REPLIES[wire])
    assert (message.content, message.stop_reason) == ((), StopReason.END_TURN)


@pytest.mark.parametrize(
    ("wire", "body"),
    [
        ("anthropic", b'{"type":"error","error":{"type":"api_error","message":"boom"}}'),
        ("openai", b'{"error":{"type":"server_error","message":"boom"}}'),
        ("responses", b'{"error":{"code":"server_error","message":"boom"}}'),
        ("ollama", b'{"error":"boom"}'),
    ],
)
def test_an_error_body_is_still_the_providers_error(wire: str, body: bytes) -> None:
    parse, _, _ = PARSERS[wire]
    with pytest.raises(ProviderStreamError, match="boom"):
        parse(body)
