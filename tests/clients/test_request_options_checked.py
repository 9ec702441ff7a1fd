"""Every ``RequestOptions`` field is checked for type and range on every wire: a wrong value is
a ConfigError naming the field before anything is sent (msgspec Structs built in Python do not
check their annotations)."""

from __future__ import annotations

from typing import Any

import pytest

import rxturn
from rxturn import OpenAIClient, TurnEngine
from rxturn.clients.anthropic import build_anthropic_body
from rxturn.clients.ollama import build_ollama_body
from rxturn.clients.openai import build_openai_body
from rxturn.clients.openai_responses import build_responses_body
from rxturn.errors import ConfigError
from rxturn.messages import Message, Request, RequestOptions, ResponseFormat

HI = Request(messages=(Message.user("hi"),))
BUILDERS = {
    "anthropic": lambda o: build_anthropic_body(HI, o, model="c", max_tokens=8192, stream=True),
    "openai": lambda o: build_openai_body(HI, o, model="g", max_tokens=None, stream=True),
    "openai-responses": lambda o: build_responses_body(
        HI, o, model="r", max_tokens=None, stream=True
    ),
    "ollama": lambda o: build_ollama_body(HI, o, model="l", max_tokens=None, stream=True),
}
BAD: list[tuple[str, Any]] = [
    ("model", 3),
    ("model", "  "),
    ("max_tokens", 0),
    ("max_tokens", "100"),
    ("max_tokens", True),
    ("max_tokens", False),
    # before, sent as it was (a 400-digit number in the body), refused by the provider after
    ("max_tokens", 2**31),
    ("max_tokens", 10**400),
    ("temperature", False),
    ("extra_body", None),
    ("temperature", -0.5),
    ("temperature", float("inf")),
    ("temperature", 10**400),  # an int past any float
    ("temperature", "0.2"),
    ("tool_choice", 1),
    ("strict_tools", "yes"),
    ("strict_tools", None),
    ("response_format", {"name": "x", "schema": {}}),
    ("stop_sequences", "STOP"),
    ("stop_sequences", ("ok", "")),
    ("extra_headers", [("a", "b")]),
    ("extra_headers", {"a": 1}),
    ("reasoning_effort", "max"),
    ("extra_body", "x"),
    ("keep_thinking", "auto"),
    ("cache_system", "forever"),
    ("cache_tools", 1),
    ("cache_messages", "10m"),
    ("prompt_cache_key", ""),
    ("prompt_cache_options", "explicit"),
    ("tool_media_in_user", "yes"),
    # before, an empty tuple or dict was taken for an empty default and never checked, in any
    # field: each was sent as if it were unset
    ("stop_sequences", {}),
    ("extra_headers", ()),
    ("extra_body", ()),
    ("cache_system", {}),
    ("prompt_cache_key", ()),
]
BAD_FORMATS = [
    ResponseFormat(name="", schema={"type": "object"}),
    ResponseFormat(name="has space", schema={"type": "object"}),
    ResponseFormat(name="x" * 65, schema={"type": "object"}),
    ResponseFormat(name="ok", schema={"type": "array"}),
    ResponseFormat(name="ok", schema="{}"),  # pyright: ignore[reportArgumentType]
    ResponseFormat(name="ok", schema={"type": "object"}, strict="yes"),  # pyright: ignore[reportArgumentType]
]


@pytest.mark.parametrize("wire", BUILDERS)
@pytest.mark.parametrize(("field", "bad"), BAD, ids=[f"{f}={v!r}"[:40] for f, v in BAD])
def test_a_wrong_field_is_refused_on_every_wire(wire: str, field: str, bad: Any) -> None:
    options = RequestOptions(**{field: bad})
    with pytest.raises(ConfigError, match=f"RequestOptions.{field}"):
        BUILDERS[wire](options)


@pytest.mark.parametrize("wire", BUILDERS)
@pytest.mark.parametrize("fmt", BAD_FORMATS, ids=range(len(BAD_FORMATS)))
def test_a_wrong_response_format_is_refused_on_every_wire(wire: str, fmt: ResponseFormat) -> None:
    with pytest.raises(ConfigError, match=r"RequestOptions\.response_format"):
        BUILDERS[wire](RequestOptions(response_format=fmt))


@pytest.mark.parametrize("wire", BUILDERS)
def test_good_values_pass(wire: str) -> None:
    fmt = ResponseFormat(name="answer_1", schema={"type": "object", "properties": {}})
    BUILDERS[wire](RequestOptions(max_tokens=100, temperature=0, response_format=fmt))


@pytest.mark.parametrize("wire", BUILDERS)
@pytest.mark.parametrize("choice", ["any", "required", "get_weather"])
def test_a_forced_tool_choice_cannot_act_with_a_response_format(wire: str, choice: str) -> None:
    fmt = ResponseFormat(name="answer", schema={"type": "object"})
    with pytest.raises(ConfigError, match=r"tool_choice=.* cannot act with a response_format"):
        BUILDERS[wire](RequestOptions(response_format=fmt, tool_choice=choice))
    for harmless in ("auto", "none", None):
        BUILDERS[wire](RequestOptions(response_format=fmt, tool_choice=harmless))


@pytest.mark.parametrize("wire", list(BUILDERS))
def test_options_equal_to_the_defaults_are_taken_and_a_changed_one_is_checked(wire: str) -> None:
    # options with every field at its default need no check (compared by value, each time):
    # one whose dict was filled in after it was built is no longer the defaults, and is checked
    BUILDERS[wire](RequestOptions())
    changed = RequestOptions()
    changed.extra_headers["x-count"] = 1  # pyright: ignore[reportArgumentType]  # a wrong value, set late
    with pytest.raises(ConfigError, match="extra_headers"):
        BUILDERS[wire](changed)
    assert RequestOptions().extra_headers == {}  # the defaults' own dict is never shared


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_options_with_only_a_model_and_a_cap_still_send_a_knob_set_later(wire: str) -> None:
    # the same options object twice: sent once with no knob set, then its extra_body filled in
    # (frozen options still hold dicts): the second body carries the field
    options = RequestOptions(model="routed", max_tokens=77)
    first = BUILDERS[wire](options)
    assert first["max_tokens"] == 77 and "seed" not in first
    options.extra_body["seed"] = 5
    second = BUILDERS[wire](options)
    assert second["seed"] == 5 and second["max_tokens"] == 77


@pytest.mark.parametrize("wire", ["anthropic", "openai"])
def test_a_knob_next_to_a_model_is_sent(wire: str) -> None:
    body = BUILDERS[wire](RequestOptions(model="routed", max_tokens=77, temperature=0.25))
    assert body["temperature"] == 0.25 and body["max_tokens"] == 77


def test_a_credential_in_extra_headers_is_masked_in_the_repr() -> None:
    # a gateway's key rides in extra_headers; before, repr(options) (a log line, a traceback's
    # locals, a notebook cell) showed it whole, where a client shows its api_key as '***'
    key = "sk-gateway-0123456789abcdef"
    options = RequestOptions(
        max_tokens=5,
        extra_headers={
            "Authorization": f"Bearer {key}",
            "Helicone-Auth": f"Bearer {key}",
            "x-trace-id": "t-1",
        },
    )
    for shown in (repr(options), str(options), f"{options}", repr([options])):
        assert key not in shown
    assert "'x-trace-id': 't-1'" in repr(options) and "max_tokens=5" in repr(options)
    assert options.extra_headers["Authorization"] == f"Bearer {key}"  # still sent as given


# A token count no API takes: past int32 (what the servers parse max_tokens into), past 64 bits,
# past what Python will print (4300 digits). Each went into the body as written before.
HUGE = [2**31, 2**64, 10**400, 10**5000]


@pytest.mark.parametrize("wire", BUILDERS)
@pytest.mark.parametrize("field", ["max_tokens", "thinking"])
@pytest.mark.parametrize("value", HUGE, ids=["2**31", "2**64", "10**400", "10**5000"])
def test_a_token_count_past_int32_is_refused_in_one_line(wire: str, field: str, value: int) -> None:
    options = (
        RequestOptions(max_tokens=value)
        if field == "max_tokens"
        else RequestOptions(thinking=value)
    )
    with pytest.raises(ConfigError) as info:
        BUILDERS[wire](options)
    said = str(info.value)
    assert said.startswith(f"RequestOptions.{field} must be at most 2147483647 ")
    assert "\n" not in said and len(said) < 200


def test_the_largest_token_count_is_sent() -> None:
    body = BUILDERS["openai"](RequestOptions(max_tokens=2**31 - 1))
    assert body["max_tokens"] == 2147483647


def test_an_engine_refuses_a_huge_cap_when_it_is_built() -> None:
    client = OpenAIClient("g", api_key="k")  # never asked: the engine refuses first
    with pytest.raises(ConfigError, match=r"^RequestOptions\.max_tokens must be at most"):
        TurnEngine(client, request_options=RequestOptions(max_tokens=10**400))


@pytest.mark.parametrize("client", ["AnthropicClient", "OpenAIClient", "OllamaClient"])
@pytest.mark.parametrize("value", HUGE, ids=["2**31", "2**64", "10**400", "10**5000"])
def test_a_clients_huge_default_cap_is_refused_in_one_line(client: str, value: int) -> None:
    with pytest.raises(ConfigError) as info:
        getattr(rxturn, client)("m", api_key="k", max_tokens=value)
    said = str(info.value)
    assert said.startswith(f"{client}: max_tokens must be at most 2147483647 ")
    assert "\n" not in said and len(said) < 200
