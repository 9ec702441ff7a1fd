"""Ollama ``/api/chat`` over raw HTTP: NDJSON lines shaped as the Ollama API docs show.

Documented shape (ollama/docs/api.md, "Generate a chat completion"): streaming is the default;
each line is ``{"model", "created_at", "message": {"role": "assistant", "content"}, "done":
false}``; the final line has ``"done": true``, ``done_reason`` and the statistics
``prompt_eval_count`` / ``eval_count`` (plus durations); tool calls arrive as
``message.tool_calls: [{"function": {"name", "arguments": {…}}}]`` with arguments an object;
thinking models put their reasoning in ``message.thinking``. Errors are ``{"error": "…"}``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from rxturn.testing import FakeProvider

Serve = Callable[[Any], Awaitable[FakeProvider]]

MESSAGES = [{"role": "user", "content": "why is the sky blue"}]  # 5 words


async def _lines(
    http: aiohttp.ClientSession, fake: FakeProvider, body: dict[str, Any]
) -> tuple[aiohttp.ClientResponse, list[dict[str, Any]]]:
    async with http.post(fake.base_url + "/api/chat", json=body) as resp:
        raw = await resp.read()
    if body.get("stream", True):
        assert raw.endswith(b"\n")  # NDJSON: every line is terminated
    return resp, [json.loads(line) for line in raw.split(b"\n") if line]


async def test_stream_is_the_default_and_lines_follow_the_docs(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve(
        {
            "models": {
                "*": [
                    {
                        "text": "Rayleigh scattering.",
                        "chunk_chars": 6,
                        "usage": {"input_tokens": 26, "output_tokens": 4},
                    }
                ]
            }
        }
    )
    resp, lines = await _lines(http, fake, {"model": "llama3.2", "messages": MESSAGES})
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("application/x-ndjson")
    *deltas, final = lines
    assert len(deltas) == 4  # 20 chars / 6
    for line in deltas:
        assert line["model"] == "llama3.2"
        assert isinstance(line["created_at"], str)
        assert line["message"]["role"] == "assistant"
        assert line["done"] is False
    assert "".join(line["message"]["content"] for line in deltas) == "Rayleigh scattering."
    assert final["done"] is True
    assert final["done_reason"] == "stop"
    assert final["message"] == {"role": "assistant", "content": ""}
    assert (final["prompt_eval_count"], final["eval_count"]) == (26, 4)
    for key in ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration"):
        assert isinstance(final[key], int)


async def test_thinking_and_tool_calls_stream(serve: Serve, http: aiohttp.ClientSession) -> None:
    entry = {
        "thinking": "need the weather tool",
        "tool_calls": [
            {
                "id": "call_w",
                "name": "get_current_weather",
                "input": {"location": "Paris, FR", "format": "celsius"},
            }
        ],
        "chunk_chars": 7,
    }
    fake = await serve({"models": {"*": [entry]}})
    _, lines = await _lines(http, fake, {"model": "qwen3", "messages": MESSAGES, "stream": True})
    thinking = "".join(line["message"].get("thinking", "") for line in lines)
    assert thinking == "need the weather tool"
    tool_lines = [line for line in lines if "tool_calls" in line["message"]]
    assert len(tool_lines) == 1  # Ollama sends tool calls whole, in one line
    (call,) = tool_lines[0]["message"]["tool_calls"]
    assert call["function"]["name"] == "get_current_weather"
    assert call["function"]["arguments"] == {"location": "Paris, FR", "format": "celsius"}
    assert call["id"] == "call_w"
    final = lines[-1]
    assert final["done"] is True and final["done_reason"] == "stop"
    # default usage: 5 prompt words; 3 thinking deltas + 1 tool call
    assert (final["prompt_eval_count"], final["eval_count"]) == (5, 4)


async def test_non_streaming_is_one_object(serve: Serve, http: aiohttp.ClientSession) -> None:
    entry = {
        "text": "Hello! How are you today?",
        "thinking": "greet",
        "tool_calls": [{"name": "wave", "input": {"hand": "left"}}],
    }
    fake = await serve({"models": {"*": [entry]}})
    async with http.post(
        fake.base_url + "/api/chat",
        json={"model": "llama3.2", "messages": MESSAGES, "stream": False},
    ) as resp:
        assert resp.headers["Content-Type"].startswith("application/json")
        body = await resp.json()
    assert body["done"] is True and body["done_reason"] == "stop"
    assert body["message"]["role"] == "assistant"
    assert body["message"]["content"] == "Hello! How are you today?"
    assert body["message"]["thinking"] == "greet"
    assert body["message"]["tool_calls"][0]["function"] == {
        "index": 0,
        "name": "wave",
        "arguments": {"hand": "left"},
    }
    assert body["prompt_eval_count"] == 5


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
async def test_max_tokens_is_done_reason_length(
    serve: Serve, http: aiohttp.ClientSession, stream: bool
) -> None:
    fake = await serve({"models": {"*": [{"text": "cut", "stop_reason": "max_tokens"}]}})
    _, lines = await _lines(http, fake, {"model": "m", "messages": MESSAGES, "stream": stream})
    assert lines[-1]["done_reason"] == "length"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "create"])
async def test_null_usage_omits_the_counters(
    serve: Serve, http: aiohttp.ClientSession, stream: bool
) -> None:
    fake = await serve({"models": {"*": [{"text": "x", "usage": None}]}})
    _, lines = await _lines(http, fake, {"model": "m", "messages": MESSAGES, "stream": stream})
    assert "prompt_eval_count" not in lines[-1] and "eval_count" not in lines[-1]
    assert lines[-1]["done"] is True


async def test_unknown_model_is_a_404_with_an_error_string(
    serve: Serve, http: aiohttp.ClientSession
) -> None:
    fake = await serve({"models": {"llama3.2": [{"text": "x"}]}})
    async with http.post(
        fake.base_url + "/api/chat", json={"model": "mistral", "messages": MESSAGES}
    ) as resp:
        assert resp.status == 404
        body = await resp.json()
    assert isinstance(body["error"], str) and "mistral" in body["error"]
