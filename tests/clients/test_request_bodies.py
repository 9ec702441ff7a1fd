"""Request bodies of the Anthropic and OpenAI clients, as pure functions.

Expected bodies are written out from the providers' API documentation (docs/wire-formats.md for
the request knobs).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rxturn.clients.anthropic import build_anthropic_body
from rxturn.clients.ollama import build_ollama_body
from rxturn.clients.openai import OpenAIClient, build_openai_body, strict_schema
from rxturn.errors import ConfigError
from rxturn.messages import (
    Message,
    Request,
    RequestOptions,
    ResponseFormat,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)

WEATHER = ToolSchema(
    name="get_weather",
    description="Weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)
CLOCK = ToolSchema(name="get_time", input_schema={"type": "object", "properties": {}})

#: user asks → assistant calls two tools (with a bit of text) → user returns both results + text
CONVERSATION = (
    Message.user("Weather in Paris and the time?"),
    Message(
        role="assistant",
        content=(
            TextPart("Let me check."),
            ToolCallPart(id="call_1", name="get_weather", input={"city": "Paris"}),
            ToolCallPart(id="call_2", name="get_time", input={}),
        ),
    ),
    Message(
        role="user",
        content=(
            ToolResultPart(tool_call_id="call_1", content="18C, sunny"),
            ToolResultPart(tool_call_id="call_2", content="clock broken", is_error=True),
            TextPart("Thanks!"),
        ),
    ),
)


def request(**kw: Any) -> Request:
    return Request(messages=kw.pop("messages", (Message.user("hi"),)), **kw)


class TestAnthropic:
    def build(
        self,
        req: Request,
        opts: RequestOptions | None = None,
        *,
        stream: bool = True,
        max_tokens: int = 8192,
    ) -> dict[str, Any]:
        return build_anthropic_body(
            req, opts or RequestOptions(), model="claude-x", max_tokens=max_tokens, stream=stream
        )

    def test_minimal_body(self) -> None:
        assert self.build(request()) == {
            "model": "claude-x",
            "max_tokens": 8192,
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
        }

    def test_system_and_stream_flag(self) -> None:
        body = self.build(request(system="Be brief."), stream=False)
        assert body["system"] == "Be brief."
        assert body["stream"] is False

    def test_conversation_with_tool_calls_and_results(self) -> None:
        body = self.build(request(messages=CONVERSATION, tools=(WEATHER, CLOCK)))
        assert body["messages"] == [
            {"role": "user", "content": "Weather in Paris and the time?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": "18C, sunny"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_2",
                        "content": "clock broken",
                        "is_error": True,
                    },
                    {"type": "text", "text": "Thanks!"},
                ],
            },
        ]
        assert body["tools"] == [
            {
                "name": "get_weather",
                "description": "Weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            {"name": "get_time", "input_schema": {"type": "object", "properties": {}}},
        ]
        assert "tool_choice" not in body

    def test_tool_results_go_first_even_after_text(self) -> None:
        message = Message(
            role="user", content=(TextPart("here:"), ToolResultPart(tool_call_id="t", content="ok"))
        )
        body = self.build(request(messages=(message,), tools=(WEATHER,)))
        assert [b["type"] for b in body["messages"][0]["content"]] == ["tool_result", "text"]

    def test_an_empty_text_part_of_the_user_is_refused_not_dropped(self) -> None:
        # the API refuses an empty text block with a 400; before, the part was dropped silently
        message = Message(role="user", content=(TextPart("see"), TextPart("")))
        with pytest.raises(ConfigError, match=r"messages\[0\] \(user\) has an empty text"):
            self.build(request(messages=(message,)))

    def test_blank_text_of_an_earlier_reply_is_left_out(self) -> None:
        # the model's own blank text says nothing; refused, it would fail every later turn
        call = ToolCallPart(id="a", name="get_weather", input={"city": "x"})
        message = Message(role="assistant", content=(TextPart(""), TextPart(" \n"), call))
        body = self.build(request(messages=(Message.user("q"), message, Message.user("r"))))
        assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]

    @pytest.mark.parametrize("tools", [None, ()], ids=["none", "empty"])
    def test_tools_omitted_when_none(self, tools: tuple[ToolSchema, ...] | None) -> None:
        assert "tools" not in self.build(request(tools=tools))

    @pytest.mark.parametrize(
        ("choice", "expected"),
        [
            ("auto", {"type": "auto"}),
            ("any", {"type": "any"}),
            ("required", {"type": "any"}),
            ("none", {"type": "none"}),
            ("get_time", {"type": "tool", "name": "get_time"}),
        ],
    )
    def test_tool_choice(self, choice: str, expected: dict[str, str]) -> None:
        body = self.build(request(tools=(WEATHER, CLOCK)), RequestOptions(tool_choice=choice))
        assert body["tool_choice"] == expected

    def test_options_override_model_independent_fields(self) -> None:
        opts = RequestOptions(max_tokens=77, temperature=0.5, stop_sequences=("END",))
        body = self.build(request(), opts)
        assert (body["max_tokens"], body["temperature"], body["stop_sequences"]) == (
            77,
            0.5,
            ["END"],
        )

    @pytest.mark.parametrize("bad", [0, -5], ids=["zero", "negative"])
    def test_max_tokens_zero_is_rejected(self, bad: int) -> None:
        with pytest.raises(ConfigError, match="max_tokens must be a positive integer"):
            self.build(request(), RequestOptions(max_tokens=bad))

    def test_response_format_is_the_native_output_config_and_drops_caller_tools(self) -> None:
        fmt = ResponseFormat(
            name="answer", schema={"type": "object", "properties": {"x": {"type": "integer"}}}
        )
        body = self.build(
            request(tools=(WEATHER,)), RequestOptions(response_format=fmt, tool_choice="auto")
        )
        assert "tools" not in body and "tool_choice" not in body
        # the API demands closed objects; a non-strict format keeps its own required list
        assert body["output_config"] == {
            "format": {
                "type": "json_schema",
                "schema": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}},
                    "additionalProperties": False,
                },
            }
        }
        assert fmt.schema == {"type": "object", "properties": {"x": {"type": "integer"}}}

    def test_strict_response_format_requires_every_property(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "x": {"type": "integer"},
                "inner": {"type": "object", "properties": {"y": {"type": "string"}}},
            },
        }
        fmt = ResponseFormat(name="answer", schema=schema, strict=True)
        sent = self.build(request(), RequestOptions(response_format=fmt))["output_config"]
        assert sent["format"]["schema"] == {
            "type": "object",
            "properties": {
                "x": {"type": "integer"},
                "inner": {
                    "type": "object",
                    "properties": {"y": {"type": "string"}},
                    "additionalProperties": False,
                    "required": ["y"],
                },
            },
            "additionalProperties": False,
            "required": ["x", "inner"],
        }

    def test_response_format_combines_with_thinking(self) -> None:
        fmt = ResponseFormat(name="answer", schema={"type": "object"})
        body = self.build(request(), RequestOptions(response_format=fmt, thinking=1024))
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
        assert "output_config" in body

    def test_strict_tools_are_strict_and_tightened(self) -> None:
        body = self.build(request(tools=(WEATHER,)), RequestOptions(strict_tools=True))
        assert body["tools"] == [
            {
                "name": "get_weather",
                "description": "Weather for a city",
                "input_schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "additionalProperties": False,
                    "required": ["city"],
                },
                "strict": True,
            }
        ]
        assert "strict" not in self.build(request(tools=(WEATHER,)))["tools"][0]

    @pytest.mark.parametrize("temperature", [0.0, 0.5, 0.99])
    def test_thinking_refuses_a_temperature_other_than_1(self, temperature: float) -> None:
        with pytest.raises(ConfigError, match="temperature"):
            self.build(request(), RequestOptions(thinking=1024, temperature=temperature))
        body = self.build(request(), RequestOptions(thinking=1024, temperature=1))
        assert body["temperature"] == 1


class TestOpenAI:
    def build(
        self,
        req: Request,
        opts: RequestOptions | None = None,
        *,
        stream: bool = True,
        max_tokens: int | None = None,
        stream_usage: bool = True,
    ) -> dict[str, Any]:
        return build_openai_body(
            req,
            opts or RequestOptions(),
            model="gpt-x",
            max_tokens=max_tokens,
            stream=stream,
            stream_usage=stream_usage,
        )

    def test_system_prompt_comes_first(self) -> None:
        body = self.build(request(system="Be brief."))
        assert body["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "hi"},
        ]
        assert body["model"] == "gpt-x"

    def test_stream_options_only_when_streaming_and_enabled(self) -> None:
        assert self.build(request())["stream_options"] == {"include_usage": True}
        assert "stream_options" not in self.build(request(), stream=False)
        assert "stream_options" not in self.build(request(), stream_usage=False)

    def test_conversation_expands_tool_calls_and_results(self) -> None:
        body = self.build(request(messages=CONVERSATION))
        assert body["messages"] == [
            {"role": "user", "content": "Weather in Paris and the time?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": "{}"},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "clock broken"},
            {"role": "user", "content": "Thanks!"},
        ]

    def test_assistant_tool_call_without_text_has_null_content(self) -> None:
        message = Message(
            role="assistant", content=(ToolCallPart(id="c", name="get_time", input={}),)
        )
        body = self.build(request(messages=(Message.user("t?"), message)))
        assert body["messages"][1]["content"] is None

    @pytest.mark.parametrize("tools", [None, ()], ids=["none", "empty"])
    def test_tools_omitted_when_none(self, tools: tuple[ToolSchema, ...] | None) -> None:
        body = self.build(request(tools=tools), RequestOptions(tool_choice="auto"))
        assert "tools" not in body and "tool_choice" not in body

    def test_tools_and_tool_choice(self) -> None:
        body = self.build(request(tools=(WEATHER,)), RequestOptions(tool_choice="get_weather"))
        assert body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ]
        assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}

    @pytest.mark.parametrize(
        ("choice", "wire"), [("auto", "auto"), ("any", "required"), ("none", "none")]
    )
    def test_tool_choice_modes(self, choice: str, wire: str) -> None:
        body = self.build(request(tools=(WEATHER,)), RequestOptions(tool_choice=choice))
        assert body["tool_choice"] == wire

    def test_strict_tools_are_tightened(self) -> None:
        schema = {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "when": {"type": "object", "properties": {"day": {"type": "string"}}},
                "tags": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"k": {"type": "string"}}},
                },
            },
        }
        original = copy.deepcopy(schema)
        tool = ToolSchema(name="t", input_schema=schema)
        body = self.build(request(tools=(tool,)), RequestOptions(strict_tools=True))
        function = body["tools"][0]["function"]
        assert function["strict"] is True
        assert function["parameters"] == {
            "type": "object",
            "additionalProperties": False,
            "required": ["city", "when", "tags"],
            "properties": {
                "city": {"type": "string"},
                "when": {
                    "type": "object",
                    "properties": {"day": {"type": "string"}},
                    "additionalProperties": False,
                    "required": ["day"],
                },
                "tags": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"k": {"type": "string"}},
                        "additionalProperties": False,
                        "required": ["k"],
                    },
                },
            },
        }
        assert schema == original, "the caller's schema must not be modified"

    def test_strict_schema_keeps_an_explicit_additional_properties(self) -> None:
        schema = {"type": "object", "properties": {}, "additionalProperties": True}
        tightened = strict_schema(schema)
        assert isinstance(tightened, dict)
        assert tightened["additionalProperties"] is True

    def test_strict_schema_inlines_a_ref_that_has_keywords_beside_it(self) -> None:
        # strict mode takes no keyword beside a $ref (the API answers "$ref cannot have
        # keywords {'description'}"), and a described nested model is written that way by
        # msgspec and pydantic: the definition is inlined under the keywords, as the openai SDK's
        # to_strict_json_schema does, and tightened; a bare $ref stays a reference
        schema = {
            "type": "object",
            "properties": {
                "home": {"$ref": "#/$defs/Place", "description": "where they live"},
                "work": {"$ref": "#/$defs/Place"},
            },
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}}},
        }
        place = {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "additionalProperties": False,
            "required": ["city"],
        }
        assert strict_schema(schema) == {
            "type": "object",
            "properties": {
                "home": {**place, "description": "where they live"},
                "work": {"$ref": "#/$defs/Place"},
            },
            "$defs": {"Place": place},
            "additionalProperties": False,
            "required": ["home", "work"],
        }

    def test_response_format_suppresses_tools(self) -> None:
        fmt = ResponseFormat(name="answer", schema={"type": "object"}, strict=True)
        body = self.build(
            request(tools=(WEATHER,)), RequestOptions(response_format=fmt, tool_choice="auto")
        )
        assert "tools" not in body and "tool_choice" not in body
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "schema": {"type": "object", "additionalProperties": False},
                "strict": True,
            },
        }

    def test_optional_fields(self) -> None:
        body = self.build(
            request(), RequestOptions(temperature=0.2, stop_sequences=("a", "b")), max_tokens=64
        )
        assert (body["max_tokens"], body["temperature"], body["stop"]) == (64, 0.2, ["a", "b"])
        assert "max_tokens" not in self.build(request())
        assert self.build(request(), RequestOptions(max_tokens=5), max_tokens=64)["max_tokens"] == 5

    def test_unserialisable_tool_input_is_a_config_error(self) -> None:
        message = Message(
            role="assistant", content=(ToolCallPart(id="c", name="t", input={"x": object()}),)
        )
        with pytest.raises(ConfigError, match="not JSON-serializable"):
            self.build(request(messages=(message,)))


class TestOllama:
    def build(
        self,
        req: Request,
        opts: RequestOptions | None = None,
        *,
        stream: bool = True,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        return build_ollama_body(
            req, opts or RequestOptions(), model="llama-x", max_tokens=max_tokens, stream=stream
        )

    def test_minimal_body_always_says_stream(self) -> None:
        assert self.build(request(), stream=False) == {
            "model": "llama-x",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": False,
        }

    def test_conversation(self) -> None:
        body = self.build(request(messages=CONVERSATION, system="sys", tools=(WEATHER, CLOCK)))
        assert body["messages"] == [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "Weather in Paris and the time?"},
            {
                "role": "assistant",
                "content": "Let me check.",
                "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                    {"function": {"name": "get_time", "arguments": {}}},
                ],
            },
            {"role": "tool", "content": "18C, sunny", "tool_name": "get_weather"},
            {"role": "tool", "content": "clock broken", "tool_name": "get_time"},
            {"role": "user", "content": "Thanks!"},
        ]
        assert [tool["function"]["name"] for tool in body["tools"]] == ["get_weather", "get_time"]

    def test_model_options_and_format(self) -> None:
        fmt = ResponseFormat(name="a", schema={"type": "object"})
        body = self.build(
            request(tools=(WEATHER,)),
            RequestOptions(
                max_tokens=10, temperature=0.0, stop_sequences=("x",), response_format=fmt
            ),
        )
        assert body["options"] == {"num_predict": 10, "temperature": 0.0, "stop": ["x"]}
        assert body["format"] == {"type": "object"}
        assert "tools" not in body

    def test_tool_choice_none_sends_no_tools(self) -> None:
        assert "tools" not in self.build(
            request(tools=(WEATHER,)), RequestOptions(tool_choice="none")
        )

    @pytest.mark.parametrize("choice", ["any", "get_weather"])
    def test_forcing_a_tool_is_a_config_error(self, choice: str) -> None:
        with pytest.raises(ConfigError, match="cannot force a tool call"):
            self.build(request(tools=(WEATHER,)), RequestOptions(tool_choice=choice))


@pytest.mark.parametrize(
    ("choice", "tools", "match"),
    [
        ("any", None, "needs tools"),
        ("get_weather", None, "needs tools"),
        ("nope", (WEATHER,), "not among the request's tools"),
    ],
    ids=["any-without-tools", "named-without-tools", "unknown-name"],
)
@pytest.mark.parametrize("builder", ["anthropic", "openai"])
def test_unsatisfiable_tool_choice_is_a_config_error(
    builder: str, choice: str, tools: tuple[ToolSchema, ...] | None, match: str
) -> None:
    req, opts = request(tools=tools), RequestOptions(tool_choice=choice)
    with pytest.raises(ConfigError, match=match):
        if builder == "anthropic":
            build_anthropic_body(req, opts, model="m", max_tokens=10, stream=True)
        else:
            build_openai_body(req, opts, model="m", max_tokens=None, stream=True)


@pytest.mark.parametrize(
    "bad", [float("nan"), float("inf"), 10**400, "hot"], ids=["nan", "inf", "huge-int", "str"]
)
def test_bad_temperature_is_a_config_error(bad: Any) -> None:
    opts = RequestOptions(temperature=bad)
    with pytest.raises(ConfigError, match="temperature"):
        build_openai_body(request(), opts, model="m", max_tokens=None, stream=True)


@pytest.mark.parametrize(
    ("base_url", "field"),
    [
        (None, "max_completion_tokens"),  # OpenAI's own endpoint, the default
        ("HTTPS://API.OPENAI.COM:443/v1", "max_completion_tokens"),
        ("http://127.0.0.1:9/v1", "max_tokens"),  # a compatible server (vLLM, Ollama...)
    ],
    ids=["default", "openai-spelled-otherwise", "compatible"],
)
@pytest.mark.parametrize("cap", ["client", "options"])
def test_the_chat_output_cap_goes_in_the_field_its_endpoint_takes(
    base_url: str | None, field: str, cap: str
) -> None:
    # OpenAI's Chat Completions deprecates max_tokens for max_completion_tokens, which its
    # reasoning models require (they answer max_tokens with a 400); compatible servers take
    # max_tokens. Before, max_tokens went everywhere.
    client = (
        OpenAIClient("gpt-5", api_key="sk-test", max_tokens=7 if cap == "client" else None)
        if base_url is None
        else OpenAIClient(
            "gpt-5",
            api_key="sk-test",
            base_url=base_url,
            max_tokens=7 if cap == "client" else None,
        )
    )
    options = RequestOptions(max_tokens=7) if cap == "options" else RequestOptions()
    body = client._body(
        Request(messages=(Message.user("hi"),)), options, model="gpt-5", stream=True
    )
    other = {"max_tokens", "max_completion_tokens"} - {field}
    assert body[field] == 7 and not other & body.keys()


def test_strict_schema_leaves_a_recursive_ref_with_keywords_a_reference() -> None:
    # a tree whose children are described references to the tree itself: inlined once, the
    # inner references stay references (inlining them would never end, doubling at each level)
    schema = {
        "$ref": "#/$defs/Node",
        "description": "the root",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "left": {"$ref": "#/$defs/Node", "description": "left child"},
                    "right": {"$ref": "#/$defs/Node", "description": "right child"},
                },
            }
        },
    }
    node = {
        "type": "object",
        "properties": {
            "left": {"$ref": "#/$defs/Node", "description": "left child"},
            "right": {"$ref": "#/$defs/Node", "description": "right child"},
        },
        "additionalProperties": False,
        "required": ["left", "right"],
    }
    tightened = strict_schema(schema)
    assert isinstance(tightened, dict)
    assert tightened["description"] == "the root"
    assert tightened["properties"] == node["properties"]
    assert tightened["$defs"] == {"Node": node}
