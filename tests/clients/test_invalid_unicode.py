"""Text that is not valid Unicode (a lone surrogate: what Python makes of bytes that are not
UTF-8) cannot go into a JSON body: every client refuses it with a ConfigError naming the field,
before anything is sent, and the engine does not retry it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _client_support import run_stream

from rxturn import TurnEngine
from rxturn.clients import AnthropicClient, OllamaClient, OpenAIClient, OpenAIResponsesClient
from rxturn.clients._http import HttpClient
from rxturn.errors import ConfigError
from rxturn.messages import Message, Request, ToolCallPart
from rxturn.resilience.verdicts import CONFIG, classify
from rxturn.testing import MockResponse, MockTransport

BAD = "caf\udce9"  # b"caf\xe9" (Latin-1) decoded as UTF-8 with surrogateescape

CLIENTS: dict[str, Callable[[MockTransport], HttpClient]] = {
    "anthropic": lambda t: AnthropicClient(
        "m", api_key="k", base_url="http://x.invalid", transport=t
    ),
    "openai": lambda t: OpenAIClient("m", api_key="k", base_url="http://x.invalid", transport=t),
    "responses": lambda t: OpenAIResponsesClient(
        "m", api_key="k", base_url="http://x.invalid", transport=t
    ),
    "ollama": lambda t: OllamaClient("m", base_url="http://x.invalid", transport=t),
}


def transport() -> MockTransport:
    return MockTransport(MockResponse(status=500))


@pytest.fixture(params=sorted(CLIENTS))
def make(request: pytest.FixtureRequest) -> Callable[[MockTransport], HttpClient]:
    return CLIENTS[request.param]


def _checked(error: BaseException | None, field: str) -> None:
    assert isinstance(error, ConfigError), repr(error)
    text = str(error)
    assert "not valid Unicode" in text and "lone surrogate" in text and field in text, text
    assert "\n" not in text and BAD not in text


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (Request(messages=(Message.user(BAD),)), "[0]"),
        (Request(messages=(Message.user("hi"),), system=BAD), "'\\udce9'"),
        (
            Request(
                messages=(
                    Message.user("hi"),
                    Message(
                        role="assistant",
                        content=(ToolCallPart(id="c", name="t", input={"city": BAD}),),
                    ),
                )
            ),
            "not valid Unicode",
        ),
    ],
    ids=["message", "system", "tool-input"],
)
async def test_streaming_refuses_before_sending(
    make: Callable[[MockTransport], HttpClient], request_: Request, field: str
) -> None:
    sent = transport()
    async with make(sent) as client:
        _, error = await run_stream(client.stream_batches(request_))
    _checked(error, field)
    assert sent.requests == []


async def test_non_streaming_refuses_before_sending(
    make: Callable[[MockTransport], HttpClient],
) -> None:
    sent = transport()
    async with make(sent) as client:
        with pytest.raises(ConfigError) as caught:
            await client.create(Request(messages=(Message.user(BAD),)))
    _checked(caught.value, "[0]")
    assert sent.requests == []


async def test_a_turn_ends_in_one_config_error_not_retried(
    make: Callable[[MockTransport], HttpClient],
) -> None:
    sent = transport()
    async with make(sent) as client:
        with pytest.raises(ConfigError) as caught:
            await TurnEngine(client).run(BAD)
    _checked(caught.value, "not valid Unicode")
    assert classify(caught.value) is CONFIG  # the engine's verdict: fail now, no retry
    assert sent.requests == []


def test_a_key_and_a_nested_value_are_located() -> None:
    from rxturn.clients._request import encode_body

    with pytest.raises(ConfigError, match=r"at a key in tools\[0\] "):
        encode_body({"tools": [{"x\udcff": 1}]})
    with pytest.raises(ConfigError, match=r"at messages\[1\]\.content\[0\]\.text "):
        encode_body({"messages": [{}, {"content": [{"text": "\ud800"}]}]})
    assert encode_body({"a": "é😀"}) == '{"a":"é😀"}'.encode()


async def test_the_audit_of_such_a_turn_is_still_written(
    make: Callable[[MockTransport], HttpClient],
) -> None:
    import json

    from rxturn.engine.records.audit import AuditTrail

    async with make(transport()) as client:
        engine = TurnEngine(client)
        with pytest.raises(ConfigError):
            await engine.run(BAD)
    text = engine.session.audit.to_jsonl()  # a lone surrogate cannot be UTF-8: shown as U+FFFD
    (record,) = [json.loads(line) for line in text.splitlines()]
    assert "caf\ufffd" in json.dumps(record, ensure_ascii=False)
    assert "\udce9" not in text
    assert len(AuditTrail.from_jsonl(text).all_turns()) == 1


def test_an_otel_content_attribute_of_such_text_is_still_written() -> None:
    from rxturn.otel._content import to_json

    assert to_json([BAD, {"k" + BAD: [BAD]}]) == '["caf\ufffd",{"kcaf\ufffd":["caf\ufffd"]}]'


@pytest.mark.parametrize("field", ["model", "system", "fallback"])
def test_a_batch_config_with_such_text_is_refused(field: str) -> None:
    from rxturn.batch import BatchConfig

    value: object = (BAD,) if field == "fallback" else BAD
    with pytest.raises(ConfigError, match=f"^{field} is not valid UTF-8 text$"):
        BatchConfig(provider="anthropic", **{"model": "m", field: value}).check()  # type: ignore[arg-type]
