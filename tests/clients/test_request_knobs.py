"""The reasoning knobs and the escape hatch, in every client's request body.

``thinking`` (Anthropic's budget), ``reasoning_effort`` (OpenAI's), ``extra_body`` and
``keep_thinking``: expected bodies are written from the providers' API references; a value a
provider cannot take is a ConfigError before anything is sent. Also: refusal and thinking parts
in history, as each chat API takes them back.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxturn.clients import (
    AnthropicClient,
    OllamaClient,
    OpenAIClient,
    OpenAIResponsesClient,
    keeps_thinking,
)
from rxturn.clients.anthropic import build_anthropic_body
from rxturn.clients.ollama import build_ollama_body
from rxturn.clients.openai import build_openai_body
from rxturn.clients.openai_responses import build_responses_body
from rxturn.errors import ConfigError
from rxturn.messages import (
    Message,
    RedactedThinkingPart,
    RefusalPart,
    Request,
    RequestOptions,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolSchema,
)
from rxturn.testing import FakeProvider

HI = Request(messages=(Message.user("hi"),))
TOOL = ToolSchema(name="get_weather", input_schema={"type": "object", "properties": {}})


def anthropic(opts: RequestOptions, req: Request = HI, max_tokens: int = 8192) -> dict[str, Any]:
    return build_anthropic_body(req, opts, model="c", max_tokens=max_tokens, stream=True)


def chat(opts: RequestOptions, req: Request = HI) -> dict[str, Any]:
    return build_openai_body(req, opts, model="g", max_tokens=None, stream=False)


def ollama(opts: RequestOptions, req: Request = HI) -> dict[str, Any]:
    return build_ollama_body(req, opts, model="l", max_tokens=None, stream=True)


def responses(opts: RequestOptions, req: Request = HI, **kw: Any) -> dict[str, Any]:
    return build_responses_body(req, opts, model="r", max_tokens=None, stream=True, **kw)


# --- thinking -------------------------------------------------------------------------------


def test_anthropic_thinking_budget() -> None:
    body = anthropic(RequestOptions(thinking=2048))
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 8192
    assert "thinking" not in anthropic(RequestOptions())


@pytest.mark.parametrize("budget", [0, 1023, -5, 2.5, True, "2048"])
def test_anthropic_thinking_budget_must_be_an_int_of_at_least_1024(budget: Any) -> None:
    with pytest.raises(ConfigError, match=r"RequestOptions.thinking .*>= 1024"):
        anthropic(RequestOptions(thinking=budget))


def test_anthropic_thinking_budget_must_be_below_max_tokens() -> None:
    with pytest.raises(ConfigError, match="thinking=4096 must be below max_tokens=4096"):
        anthropic(RequestOptions(thinking=4096), max_tokens=4096)
    with pytest.raises(ConfigError, match="below max_tokens=2000"):
        anthropic(RequestOptions(thinking=3000, max_tokens=2000))
    body = anthropic(RequestOptions(thinking=3000, max_tokens=5000), max_tokens=2000)
    assert (body["max_tokens"], body["thinking"]["budget_tokens"]) == (5000, 3000)


@pytest.mark.parametrize(
    "opts",
    [
        RequestOptions(thinking=2048, tool_choice="any"),
        RequestOptions(thinking=2048, tool_choice="get_weather"),
    ],
)
def test_anthropic_thinking_with_a_forced_tool_is_refused(opts: RequestOptions) -> None:
    req = Request(messages=(Message.user("hi"),), tools=(TOOL,))
    with pytest.raises(ConfigError, match="forced tool call"):
        anthropic(opts, req)


def test_anthropic_thinking_with_auto_tools_is_fine() -> None:
    req = Request(messages=(Message.user("hi"),), tools=(TOOL,))
    body = anthropic(RequestOptions(thinking=2048, tool_choice="auto"), req)
    assert body["tool_choice"] == {"type": "auto"}
    assert body["thinking"]["type"] == "enabled"


def test_thinking_budget_elsewhere_is_an_error_not_a_no_op() -> None:
    with pytest.raises(ConfigError, match="Chat Completions has no such field"):
        chat(RequestOptions(thinking=2048))
    with pytest.raises(ConfigError, match="Responses API has no such field"):
        responses(RequestOptions(thinking=2048))


def test_ollama_think() -> None:
    assert ollama(RequestOptions(thinking=2048))["think"] is True
    assert ollama(RequestOptions(reasoning_effort="high"))["think"] == "high"
    assert ollama(RequestOptions(reasoning_effort="none"))["think"] is False
    assert "think" not in ollama(RequestOptions())
    with pytest.raises(ConfigError, match="Ollama's think takes"):
        ollama(RequestOptions(reasoning_effort="minimal"))


# --- reasoning effort -----------------------------------------------------------------------


def test_reasoning_effort_on_openai_wires() -> None:
    assert chat(RequestOptions(reasoning_effort="low"))["reasoning_effort"] == "low"
    assert responses(RequestOptions(reasoning_effort="minimal"))["reasoning"] == {
        "effort": "minimal"
    }
    assert "reasoning_effort" not in chat(RequestOptions())
    assert "reasoning" not in responses(RequestOptions())


@pytest.mark.parametrize("effort", ["extreme", "", "LOW", 3])
def test_bad_reasoning_effort(effort: Any) -> None:
    for build in (chat, responses, ollama):
        with pytest.raises(ConfigError, match="reasoning_effort must be one of"):
            build(RequestOptions(reasoning_effort=effort))


def test_reasoning_effort_is_refused_by_anthropic() -> None:
    with pytest.raises(ConfigError, match="use thinking=<budget>"):
        anthropic(RequestOptions(reasoning_effort="high"))


# --- extra_body -----------------------------------------------------------------------------


def test_extra_body_is_merged_last_in_every_client() -> None:
    extra = {"top_k": 5, "metadata": {"user_id": "u1"}, "temperature": 0.1}
    opts = RequestOptions(temperature=0.9, extra_body=extra)
    for build in (anthropic, chat, responses, ollama):
        body = build(opts)
        assert body["top_k"] == 5
        assert body["metadata"] == {"user_id": "u1"}
        assert body["temperature"] == 0.1  # the escape hatch wins, as in the SDKs
    # it can replace a knob's field whole (e.g. ask for reasoning summaries)
    opts = RequestOptions(
        reasoning_effort="low", extra_body={"reasoning": {"effort": "high", "summary": "auto"}}
    )
    assert responses(opts)["reasoning"] == {"effort": "high", "summary": "auto"}


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"model": "x"}, "may not set 'model'"),
        ({"stream": False}, "may not set 'stream'"),
        ({"": 1}, "non-empty strings"),
        ({1: 1}, "non-empty strings"),
        ([("a", 1)], "must be a dict"),
        # before, msgspec wrote these as null: a silently other request
        ({"top_p": float("nan")}, "extra_body must be JSON: a number is NaN or infinite"),
        ({"x": {"y": [1.0, float("-inf")]}}, "extra_body must be JSON: a number is NaN"),
    ],
)
def test_bad_extra_body(extra: Any, match: str) -> None:
    for build in (anthropic, chat, responses, ollama):
        with pytest.raises(ConfigError, match=match):
            build(RequestOptions(extra_body=extra))


INTERLEAVED = {
    "anthropic-beta": "fine-grained-tool-streaming-2025-05-14, interleaved-thinking-2025-05-14"
}


async def test_interleaved_thinking_takes_a_budget_over_max_tokens() -> None:
    """Anthropic documents that with interleaved thinking the budget may exceed max_tokens (it
    covers every thinking block of the assistant turn): not refused then, on the client's
    headers or the request's; without the beta it still is."""
    over = RequestOptions(thinking=16000)
    with pytest.raises(ConfigError, match="must be below max_tokens=8192"):
        anthropic(over)
    with_header = RequestOptions(
        thinking=16000, extra_headers={"Anthropic-Beta": INTERLEAVED["anthropic-beta"]}
    )
    assert anthropic(with_header)["thinking"] == {"type": "enabled", "budget_tokens": 16000}
    async with (
        FakeProvider({"models": {"*": [{"text": "ok"}]}}) as fake,
        AnthropicClient("c", base_url=fake.base_url, extra_headers=INTERLEAVED) as client,
    ):
        reply = await client.create(HI, over)
    assert reply.content == (TextPart("ok"),)
    assert fake.requests[0]["thinking"]["budget_tokens"] == 16000
    assert fake.requests[0]["max_tokens"] == 8192
    plain = AnthropicClient("c", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="must be below max_tokens=8192"):
        await plain.create(HI, over)


@pytest.mark.parametrize(
    "value", [object(), 10**5000], ids=["object", "int-of-more-digits-than-python-writes"]
)
async def test_extra_body_that_json_cannot_carry_is_a_config_error(value: object) -> None:
    # (the int: before, msgspec's ValueError from str() reached the caller)
    client = OpenAIClient("g", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match="not JSON-serializable"):
        await client.create(HI, RequestOptions(extra_body={"x": value}))


async def test_an_int_past_what_python_will_write_in_extra_body_is_a_config_error() -> None:
    # before, Python's own ValueError ("Exceeds the limit (4300 digits) for integer string
    # conversion") came out of the body's encoding; nothing is sent (port 9: nobody listens)
    client = OpenAIClient("g", base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError, match=r"^request body is not JSON-serializable: Exceeds"):
        await client.create(HI, RequestOptions(extra_body={"seed": 10**5000}))


# --- keep_thinking --------------------------------------------------------------------------


def test_keeps_thinking_follows_the_request_and_the_provider() -> None:
    a = AnthropicClient(base_url="http://127.0.0.1:9")
    r = OpenAIResponsesClient(base_url="http://127.0.0.1:9")
    o = OpenAIClient(base_url="http://127.0.0.1:9")
    n = OllamaClient(base_url="http://127.0.0.1:9")
    assert [keeps_thinking(c, RequestOptions()) for c in (a, r, o, n)] == [False] * 4
    assert keeps_thinking(a, RequestOptions(thinking=2048))
    assert keeps_thinking(r, RequestOptions(reasoning_effort="low"))
    assert not keeps_thinking(r, RequestOptions(reasoning_effort="none"))
    # thinking asked for through extra_body (its fields win: it is merged last)
    assert keeps_thinking(a, RequestOptions(extra_body={"thinking": {"type": "adaptive"}}))
    on = {"type": "enabled", "budget_tokens": 2048}
    assert keeps_thinking(a, RequestOptions(extra_body={"thinking": on}))
    assert not keeps_thinking(a, RequestOptions(extra_body={"thinking": {"type": "disabled"}}))
    summaries = {"reasoning": {"effort": "high", "summary": "auto"}}
    assert keeps_thinking(r, RequestOptions(extra_body=summaries))
    assert not keeps_thinking(r, RequestOptions(extra_body={"reasoning": {"effort": "none"}}))
    assert not keeps_thinking(o, RequestOptions(extra_body={"thinking": on}))
    # chat completions and Ollama take no thinking back: nothing to keep it for
    assert not keeps_thinking(o, RequestOptions(reasoning_effort="low"))
    assert not keeps_thinking(n, RequestOptions(thinking=2048))
    # the explicit option wins both ways
    assert keeps_thinking(o, RequestOptions(keep_thinking=True))
    assert not keeps_thinking(a, RequestOptions(thinking=2048, keep_thinking=False))
    with pytest.raises(ConfigError, match="keep_thinking must be a bool or None"):
        keeps_thinking(a, RequestOptions(keep_thinking="yes"))  # pyright: ignore[reportArgumentType]


# --- history: refusal and thinking parts ----------------------------------------------------

THOUGHT = ThinkingPart("hmm", "sig-1")
REASONED = ThinkingPart("summary", "enc-1", id="rs_1")
CALL = ToolCallPart("call_1", "get_weather", {"city": "Paris"})


def test_chat_sends_a_refusal_back_in_the_refusal_field_and_drops_thinking() -> None:
    history = (
        Message.user("q"),
        Message(content=(THOUGHT, RefusalPart("I can't."))),
        Message.user("why?"),
        Message(content=(REASONED, TextPart("Because."), RedactedThinkingPart("opaque"))),
    )
    messages = chat(RequestOptions(), Request(messages=history))["messages"]
    assert messages == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "refusal": "I can't."},
        {"role": "user", "content": "why?"},
        {"role": "assistant", "content": "Because."},
    ]


def test_ollama_sends_a_refusal_back_as_text_and_drops_thinking() -> None:
    history = (
        Message.user("q"),
        Message(content=(THOUGHT, TextPart("Well. "), RefusalPart("I can't."))),
    )
    messages = ollama(RequestOptions(), Request(messages=history))["messages"]
    assert messages[1] == {"role": "assistant", "content": "Well. I can't."}
