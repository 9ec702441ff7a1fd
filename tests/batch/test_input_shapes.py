"""Rows whose fields say something the runner would otherwise drop without a word: a model
given in a native row's ``options``, an OpenAI Batch line for an endpoint that is not a chat
(embeddings, completions) or with a method that is not POST, and OpenAI Batch lines for the
Responses API (``/v1/responses``: ``input`` and ``instructions``, not ``messages``); a blank
model, refused in the scan like any bad option."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli._support import ThreadedFake

from rxturn.batch import BatchInputError, decode_row
from rxturn.cli import main
from rxturn.messages import Message


def test_a_model_in_a_native_rows_options_is_the_rows_model() -> None:
    row = decode_row({"id": "a", "prompt": "hi", "options": {"model": "other", "max_tokens": 9}}, 1)
    assert row.model == "other"
    assert row.options == {"max_tokens": 9}


def test_a_model_in_options_beside_another_model_is_refused() -> None:
    with pytest.raises(BatchInputError, match=r"^line 4: .*'model' and options\.model differ"):
        decode_row({"id": "a", "prompt": "hi", "model": "one", "options": {"model": "two"}}, 4)


def test_the_same_model_in_both_places_is_taken() -> None:
    row = decode_row({"id": "a", "prompt": "hi", "model": "one", "options": {"model": "one"}}, 1)
    assert row.model == "one"
    assert row.options is None


def _openai(url: Any = "/v1/chat/completions", method: Any = "POST", **body: Any) -> dict[str, Any]:
    return {"custom_id": "a", "method": method, "url": url, "body": body}


CHAT = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (
            _openai("/v1/embeddings", model="e", input="hi"),
            "line 2: an OpenAI Batch line for '/v1/embeddings' is not a chat request",
        ),
        (
            _openai("/v1/completions", model="c", prompt="hi"),
            "line 2: an OpenAI Batch line for '/v1/completions' is not a chat request",
        ),
        (_openai(method="GET", messages=CHAT), "line 2: method must be POST, got 'GET'"),
        (_openai(url=5, messages=CHAT), "line 2: url must be a string, got int"),
        (
            _openai("/v1/responses", model="r"),
            "line 2: a /v1/responses body needs 'input' (a string or a list of messages)",
        ),
    ],
)
def test_an_openai_batch_line_that_is_no_chat_request_is_refused(
    line: dict[str, Any], words: str
) -> None:
    with pytest.raises(BatchInputError) as caught:
        decode_row(line, 2)
    assert str(caught.value).startswith(words), str(caught.value)
    assert caught.value.line == 2


def test_a_responses_batch_line_with_a_string_input_is_one_user_message() -> None:
    row = decode_row(
        _openai(
            "/v1/responses",
            model="gpt-r",
            input="hi",
            instructions="be brief",
            max_output_tokens=30,
            temperature=0.2,
        ),
        1,
    )
    assert row.key == "a"
    assert row.model == "gpt-r"
    assert row.messages == (Message.user("hi"),)
    assert row.system == "be brief"
    assert row.options == {"max_tokens": 30, "temperature": 0.2}


def test_a_responses_batch_line_with_message_items_is_that_conversation() -> None:
    row = decode_row(
        _openai(
            "/v1/responses",
            input=[
                {"role": "developer", "content": "terse"},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "hello"}]},
                {"type": "message", "role": "user", "content": "again"},
            ],
        ),
        1,
    )
    assert row.system == "terse"
    assert [m.role for m in row.messages] == ["user", "assistant", "user"]
    assert [m.text for m in row.messages] == ["hi", "hello", "again"]


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ({"id": "a", "prompt": "hi", "model": "  "}, "line 3: model: "),
        (_openai(model=" ", messages=CHAT), "line 3: body.model: "),
        (
            {"custom_id": "a", "params": {"model": "\t", "messages": CHAT, "max_tokens": 5}},
            "line 3: params.model: ",
        ),
    ],
    ids=["native", "openai-batch", "anthropic-batch"],
)
def test_a_blank_model_is_refused_with_its_line(line: dict[str, Any], words: str) -> None:
    # a blank model passed the scan, then failed the whole run at its row (exit 2, no line
    # number), after the rows before it were sent and with their lines never written
    with pytest.raises(BatchInputError, match="non-empty string") as caught:
        decode_row(line, 3)
    assert str(caught.value).startswith(words)


def test_an_empty_model_is_the_runs_model() -> None:
    assert decode_row({"id": "a", "prompt": "hi", "model": ""}, 1).model is None


def test_a_blank_model_exits_2_before_any_row_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{"id": "a", "prompt": "hi"}, {"id": "b", "prompt": "hi", "model": "  "}]
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out.jsonl"
    with ThreadedFake({"models": {"*": [{"text": "ok"}]}}) as fake:
        args = ["batch", "run", str(source), "-o", str(out), "--provider", "ollama"]
        code = main([*args, "--model", "m", "--base-url", fake.base_url, "--progress", "none"])
        assert fake.requests == []
    assert code == 2
    assert capsys.readouterr().err.startswith("rxturn batch: error: line 2: model: ")
