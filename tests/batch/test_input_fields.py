"""Every field of a provider line, as the official request types allow it: sent as the file
says (mapped onto a request option, or as written), or refused in the scan naming the line and
the field. A row never runs other than its line says without a word: the request bodies the
fake provider received are the oracle, written out by hand from the APIs' documentation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli._support import ThreadedFake

from rxturn.batch import (
    BatchConfig,
    BatchInputError,
    RowOk,
    RowResult,
    decode_row,
    run_batch,
    scan_input,
)
from rxturn.cli import main
from rxturn.messages import CachePoint, Message, TextPart
from rxturn.testing import FakeProvider

USER = [{"role": "user", "content": "hi"}]


def _chat(url: str = "/v1/chat/completions", **body: Any) -> dict[str, Any]:
    return {"custom_id": "a", "method": "POST", "url": url, "body": {"model": "m", **body}}


def _params(**params: Any) -> dict[str, Any]:
    return {"custom_id": "a", "params": {"model": "m", "max_tokens": 64, **params}}


async def _sent(provider: str, line: dict[str, Any]) -> tuple[list[RowResult], Any]:
    """Run one line against the fake; the results and the one request body it received."""
    results: list[RowResult] = []
    async with FakeProvider({"models": {"*": [{"text": "fine"}]}}) as fake:
        url = fake.openai_base_url if provider.startswith("openai") else fake.base_url
        config = BatchConfig(provider=provider, model="m", base_url=url, concurrency=1)  # pyright: ignore[reportArgumentType]
        await run_batch([line], config, on_result=results.append, progress=False)
        (body,) = fake.requests
    return results, body


async def test_an_anthropic_line_reaches_the_messages_api_as_written() -> None:
    """System blocks (several, one with a 1-hour breakpoint), a breakpoint on a message
    block, and the fields no request option spells: the body sent is the params, with the
    stream flag a streamed request carries."""
    params: dict[str, Any] = {
        "model": "m",
        "max_tokens": 4000,
        "system": [
            {"type": "text", "text": "You read contracts."},
            {"type": "text", "text": "<contract…>",
             "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        ],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "Clause 4?", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Be brief."},
        ]}],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "top_k": 5,
        "metadata": {"user_id": "u-1"},
        "service_tier": "standard_only",
        "tools": [{"name": "lookup", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "cache_control": {"type": "ephemeral"},
        "stop_sequences": ["END"],
    }  # fmt: skip
    results, body = await _sent("anthropic", {"custom_id": "a", "params": params})
    assert [r.status for r in results] == ["ok"]
    assert body == {**params, "stream": True}


async def test_an_openai_chat_line_reaches_chat_completions_as_written() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "developer", "content": "Answer in JSON."}, *USER],
        "seed": 7,
        "top_p": 0.5,
        "frequency_penalty": 0.1,
        "logit_bias": {"50256": -100},
        "response_format": {"type": "json_object"},
        "tools": [{"type": "function",
                   "function": {"name": "f", "parameters": {"type": "object"}}}],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "user": "u-1",
        "metadata": {"k": "v"},
        "service_tier": "flex",
        "n": 1,
        "logprobs": False,
        "stop": "END",
        "max_completion_tokens": 50,
        "temperature": 0.2,
    }  # fmt: skip
    results, sent = await _sent("openai", _chat(**body))
    assert [r.status for r in results] == ["ok"]
    # on a server other than OpenAI's own the cap goes as max_tokens; `stop` as a list
    want = {key: value for key, value in body.items() if key != "max_completion_tokens"}
    want.update(
        messages=[{"role": "system", "content": "Answer in JSON."}, *USER],
        stop=["END"],
        max_tokens=50,
        stream=True,
        stream_options={"include_usage": True},
    )
    assert sent == want


@pytest.mark.parametrize(
    "thinking",
    [{"type": "enabled", "budget_tokens": 1024}, {"type": "adaptive"}],
    ids=["enabled", "adaptive"],
)
async def test_an_anthropic_lines_thinking_stays_in_its_output_line(
    thinking: dict[str, Any],
) -> None:
    # (the reply's thinking was dropped from the line, where a native row's stays)
    results: list[RowResult] = []
    line = _params(messages=USER, max_tokens=2000, thinking=thinking)
    async with FakeProvider({"models": {"*": [{"thinking": "hmm", "text": "ok"}]}}) as fake:
        config = BatchConfig(provider="anthropic", model="m", base_url=fake.base_url)
        await run_batch([line], config, on_result=results.append, progress=False)
        assert fake.requests[0]["thinking"] == thinking
    (result,) = results
    assert isinstance(result, RowOk)
    assert [type(part).__name__ for part in result.message.content] == ["ThinkingPart", "TextPart"]


@pytest.mark.parametrize("url", ["/v1/chat/completions", "/v1/responses"])
async def test_an_openai_lines_explicit_cache_breakpoints_are_sent_as_written(url: str) -> None:
    # (the breakpoint was dropped, and Chat then ran the two parts into one string, while
    # prompt_cache_options went through: explicit mode with no breakpoint caches nothing)
    kind = "text" if url == "/v1/chat/completions" else "input_text"
    content = [
        {"type": kind, "text": "<the contract>", "prompt_cache_breakpoint": {"mode": "explicit"}},
        {"type": kind, "text": "Clause 4?"},
    ]
    cache = {"prompt_cache_options": {"mode": "explicit", "ttl": "12h"}, "prompt_cache_key": "c"}
    messages = [{"role": "user", "content": content}]
    provider = "openai" if kind == "text" else "openai-responses"
    line = _chat(
        url, **cache, **({"messages": messages} if kind == "text" else {"input": messages})
    )
    _, body = await _sent(provider, line)
    assert body["messages" if kind == "text" else "input"] == messages
    assert {key: body[key] for key in cache} == cache


def test_an_anthropic_message_blocks_breakpoint_is_kept_as_a_cache_point() -> None:
    block = {"type": "text", "text": "long", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    row = decode_row(_params(messages=[{"role": "user", "content": [block]}]), 1)
    assert row.messages == (Message(role="user", content=(TextPart("long"), CachePoint("1h"))),)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (_chat(messages=USER, n=2), "body.n asks for several replies"),
        (_chat(messages=USER, logprobs=True), "body.logprobs asks for log probabilities"),
        (_chat(messages=USER, top_logprobs=3), "body.top_logprobs asks for log probabilities"),
        (
            _chat(messages=USER, modalities=["text", "audio"]),
            "body.modalities asks for an audio reply",
        ),
        (_chat(messages=USER, audio={"voice": "alloy"}), "body.audio asks for an audio reply"),
        (
            _chat("/v1/responses", input="hi", top_logprobs=2),
            "body.top_logprobs asks for log probabilities",
        ),
        (
            _chat("/v1/responses", input="hi", include=["message.output_text.logprobs"]),
            "body.include asks for log probabilities",
        ),
        (
            _params(messages=USER, workspace_id="wrkspc_1"),
            "params.workspace_id is sent by the Messages API's clients as the "
            "anthropic-workspace-id header",
        ),
        (
            _chat(messages=USER, max_tokens=10, max_completion_tokens=20),
            "body sets both max_tokens and max_completion_tokens",
        ),
        (
            _chat(
                messages=[
                    *USER,
                    {"role": "assistant", "content": "yo"},
                    {"role": "system", "content": "now be rude"},
                    {"role": "user", "content": "again"},
                ],
            ),
            "body.messages[2]: a system message after the conversation's first message",
        ),
        (
            _chat(messages=[{"role": "user", "content": "hi", "name": "bob"}]),
            "body.messages[0]: 'name' (OpenAI's name of the participant",
        ),
        (
            _chat(messages=[{"role": "system", "content": "s", "name": "x"}, *USER]),
            "body.messages[0]: 'name' (OpenAI's name of the participant",
        ),
    ],
    ids=[
        "n",
        "logprobs",
        "top_logprobs",
        "modalities",
        "audio",
        "responses-top_logprobs",
        "responses-include-logprobs",
        "workspace_id",
        "two-caps",
        "late-system",
        "user-name",
        "system-name",
    ],
)
def test_a_field_the_run_cannot_honour_is_refused_naming_it(
    line: dict[str, Any], words: str
) -> None:
    with pytest.raises(BatchInputError) as caught:
        decode_row(line, 5)
    assert str(caught.value).startswith(f"line 5: {words}"), str(caught.value)
    assert caught.value.line == 5


@pytest.mark.parametrize(
    ("line", "provider", "words"),
    [
        (
            _chat(messages=USER, tools=[]),
            "anthropic",
            "body.tools is a field of OpenAI Chat Completions, sent as written to that API "
            "alone (provider openai), not to provider anthropic",
        ),
        (_chat(messages=USER, seed=1), "ollama", "body.seed is a field of OpenAI Chat"),
        (
            _chat(messages=USER, response_format={"type": "json_object"}),
            "openai-responses",
            "body.response_format is a field of OpenAI Chat",
        ),
        (
            _chat("/v1/responses", input="hi", text={"format": {"type": "text"}}),
            "openai",
            "body.text is a field of the OpenAI Responses API",
        ),
        (_params(messages=USER, top_k=5), "openai", "params.top_k is a field of the Anthropic"),
        (
            _params(
                messages=USER, system=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
            ),
            "openai",
            "params.system is a field of the Anthropic Messages API",
        ),
        (
            _params(
                messages=USER, max_tokens=2000, thinking={"type": "enabled", "budget_tokens": 1024}
            ),
            "ollama",
            "params.thinking is a field of the Anthropic Messages API",
        ),
        (
            _chat(messages=USER, prompt_cache_key="k"),
            "anthropic",
            "body.prompt_cache_key is a field of OpenAI Chat Completions",
        ),
    ],
    ids=[
        "tools",
        "seed",
        "response_format",
        "responses-text",
        "top_k",
        "system-blocks",
        "thinking",
        "prompt_cache_key",
    ],
)
def test_a_field_of_another_api_than_the_runs_is_refused(
    line: dict[str, Any], provider: str, words: str
) -> None:
    decode_row(line, 2)  # (no provider: nothing to send it to yet)
    with pytest.raises(BatchInputError) as caught:
        decode_row(line, 2, provider=provider)
    assert str(caught.value).startswith(f"line 2: {words}"), str(caught.value)


def test_the_mapped_fields_and_nulls_go_to_any_provider() -> None:
    line = _chat(
        messages=[{"role": "system", "content": "be brief"}, *USER],
        max_tokens=9,
        temperature=0.5,
        stop=["x"],
        stream=True,
        stream_options={"include_usage": True},
        n=None,
        seed=None,
        top_p=None,
    )
    for provider in ("anthropic", "ollama", "openai-responses"):
        row = decode_row(line, 1, provider=provider)
        assert row.system == "be brief"
        assert row.options == {"max_tokens": 9, "temperature": 0.5, "stop_sequences": ["x"]}
        # the runner decodes each line again without the provider (the scan checked it): a
        # null of a field sent as written went into the other API's body there
        assert decode_row(line, 1) == row
    one_block = _params(messages=USER, system=[{"type": "text", "text": "be brief"}], stop=None)
    row = decode_row(one_block, 1, provider="openai")
    assert (row.system, row.options) == ("be brief", {"max_tokens": 64})
    no_block = decode_row(_params(messages=USER, system=[]), 1, provider="openai")
    assert (no_block.system, no_block.options) == ("", {"max_tokens": 64})


def test_the_scan_refuses_another_apis_field_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [_params(messages=USER), _chat(messages=USER, response_format={"type": "json_object"})]
    rows[1]["custom_id"] = "b"
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(BatchInputError, match=r"^line 2: body\.response_format "):
        scan_input(source, provider="anthropic")
    assert scan_input(source).total == 2  # (status and export read it without a provider)
    out = tmp_path / "out.jsonl"
    with ThreadedFake({"models": {"*": [{"text": "ok"}]}}) as fake:
        args = ["batch", "run", str(source), "-o", str(out), "--provider", "anthropic"]
        code = main([*args, "--model", "m", "--base-url", fake.base_url, "--progress", "none"])
        assert fake.requests == []
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("rxturn batch: error: line 2: body.response_format is a field of ")
    assert len(err.splitlines()) == 1


def test_a_cache_control_no_api_takes_is_refused_naming_the_block() -> None:
    block = {"type": "text", "text": "long", "cache_control": {"type": "persistent"}}
    with pytest.raises(BatchInputError) as caught:
        decode_row(_params(messages=[{"role": "user", "content": ["hi", block]}]), 3)
    assert str(caught.value).startswith(
        "line 3: params.messages[0].content[1].cache_control must be {'type': 'ephemeral'}"
    ), str(caught.value)


def test_a_responses_item_that_is_no_message_is_named_by_its_type() -> None:
    # (it was "a message dict needs a 'role'", of an item that is not meant to have one)
    items = [{"type": "item_reference", "id": "msg_1"}, {"role": "user", "content": "hi"}]
    with pytest.raises(BatchInputError) as caught:
        decode_row(_chat("/v1/responses", input=items), 4)
    assert str(caught.value).startswith(
        "line 4: body.input[0]: cannot convert an item of type 'item_reference'"
    ), str(caught.value)
