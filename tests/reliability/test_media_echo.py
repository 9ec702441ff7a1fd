"""A hostile server echoes the request in its error: no error rxturn raises, and no log line,
holds the bytes of the media the request carried.

The server (raw bytes on 127.0.0.1) answers 400 with the request body quoted in the error
message, as JSON a provider would send and as plain text, on every wire. The image's base64 is
looked for, from its start and from its middle, with :func:`rxturn.testing.assert_no_secret`
(``str``/``repr``, ``args``, attributes, the chain) and in the captured log.
"""

from __future__ import annotations

import base64
import logging

import msgspec
import pytest

from rxturn import (
    AnthropicClient,
    ImagePart,
    InlineSource,
    Message,
    OllamaClient,
    OpenAIClient,
    OpenAIResponsesClient,
    StreamHandler,
    TurnEngine,
)
from rxturn.errors import BadRequestError
from rxturn.testing import assert_no_secret

from .conftest import RawHTTPServer, RawRequest

pytestmark = pytest.mark.timeout(60)

# a PNG header and 3 KB of bytes: its base64 is one long run, as a real image's is
IMAGE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 12
ENCODED = base64.b64encode(IMAGE).decode()
PIECES = (ENCODED[:24], ENCODED[len(ENCODED) // 2 : len(ENCODED) // 2 + 24])

CLIENTS = {
    "anthropic": (AnthropicClient, ""),
    "openai": (OpenAIClient, "/v1"),
    "openai-responses": (OpenAIResponsesClient, "/v1"),
    "ollama": (OllamaClient, ""),
}


def echo_json(request: RawRequest) -> bytes:
    message = "could not process image: " + request.body.decode()
    body = msgspec.json.encode({"error": {"type": "invalid_request_error", "message": message}})
    return b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n\r\n" + body


def echo_text(request: RawRequest) -> bytes:
    return b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\r\nbad: " + request.body


@pytest.mark.parametrize("respond", [echo_json, echo_text], ids=["json", "text"])
@pytest.mark.parametrize("wire", list(CLIENTS))
async def test_an_echoed_request_leaves_no_media_bytes_in_the_error_or_the_log(
    wire: str, respond, caplog: pytest.LogCaptureFixture
) -> None:
    cls, path = CLIENTS[wire]
    prompt = Message.user("what is this?", ImagePart(InlineSource("image/png", IMAGE)))
    async with (
        RawHTTPServer(respond) as server,
        cls("m", api_key="k", base_url=server.base_url + path) as client,
    ):
        engine = TurnEngine(client, handler=StreamHandler.default())
        with caplog.at_level(logging.DEBUG), pytest.raises(BadRequestError) as caught:
            await engine.run(prompt)
    assert ENCODED[:24] in server.requests[0].body.decode()  # the image was sent, and echoed
    for piece in PIECES:
        assert_no_secret(caught.value, piece)
        assert piece not in caplog.text
    assert "[base64:" in str(caught.value) or "[base64:" in repr(vars(caught.value))
