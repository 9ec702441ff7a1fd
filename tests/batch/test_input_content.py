"""Rows with more than text: media parts, tool calls and tool results, in the Anthropic and
OpenAI shapes, convert to the same parts a conversation gets; bad content is refused in the
scan (exit 2, naming the line) before anything is sent."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cli._support import fake_server, received

from rxturn.batch import BatchInputError, decode_row, scan_input
from rxturn.messages import (
    AudioPart,
    DocumentPart,
    FileIdSource,
    ImagePart,
    InlineSource,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UrlSource,
)

from ._support import lines, run_batch, write_rows

#: a 1x1 PNG
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a2b6c0e00000000049454e44ae426082"
)
PNG64 = base64.b64encode(PNG).decode()
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
PDF64 = base64.b64encode(PDF).decode()
WAV = b"RIFF$\x00\x00\x00WAVEfmt " + bytes(28)
WAV64 = base64.b64encode(WAV).decode()


def _anthropic(content: list[dict[str, Any]], *more: dict[str, Any]) -> dict[str, Any]:
    messages = [*more, {"role": "user", "content": content}]
    return {"custom_id": "a", "params": {"model": "m", "max_tokens": 9, "messages": messages}}


def _openai(*messages: dict[str, Any]) -> dict[str, Any]:
    body = {"model": "m", "messages": list(messages)}
    return {"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": body}


def test_anthropic_media_blocks_become_media_parts() -> None:
    row = decode_row(
        _anthropic(
            [
                {"type": "text", "text": "compare"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                             "data": PNG64}},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
                {"type": "document", "title": "T", "citations": {"enabled": True},
                 "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                "data": "plain words"}},
                {"type": "document", "source": {"type": "file", "file_id": "file_1"}},
            ]
        ),
        1,
    )  # fmt: skip
    assert row.messages[-1].content == (
        TextPart("compare"),
        ImagePart(InlineSource("image/png", PNG)),
        ImagePart(UrlSource("https://x.test/a.png")),
        DocumentPart(InlineSource("application/pdf", PDF), title="T", citations=True),
        DocumentPart(InlineSource("text/plain", b"plain words")),
        DocumentPart(FileIdSource("file_1", "anthropic")),
    )


def test_openai_media_parts_become_media_parts() -> None:
    row = decode_row(
        _openai(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "compare"},
                    {"type": "image_url",
                     "image_url": {"url": f"data:image/png;base64,{PNG64}", "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}},
                    {"type": "file", "file": {"filename": "a.pdf",
                                              "file_data": f"data:application/pdf;base64,{PDF64}"}},
                    {"type": "file", "file": {"file_id": "file-9"}},
                    {"type": "input_audio", "input_audio": {"data": WAV64, "format": "wav"}},
                ],
            }
        ),
        1,
    )  # fmt: skip
    assert row.messages[-1].content == (
        TextPart("compare"),
        ImagePart(InlineSource("image/png", PNG), "low"),
        ImagePart(UrlSource("https://x.test/a.png")),
        DocumentPart(InlineSource("application/pdf", PDF), filename="a.pdf"),
        DocumentPart(FileIdSource("file-9", "openai")),
        AudioPart(InlineSource("audio/wav", WAV)),
    )


def test_tool_calls_and_results_in_both_shapes() -> None:
    anthropic = decode_row(
        _anthropic(
            [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}],
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}
            ]},
        ),
        1,
    )  # fmt: skip
    openai = decode_row(
        _openai(
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "t1", "type": "function",
                 "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
            ]},
            {"role": "tool", "tool_call_id": "t1", "content": "sunny"},
        ),
        1,
    )  # fmt: skip
    for row in (anthropic, openai):
        assert [m.role for m in row.messages] == ["user", "assistant", "user"]
        assert row.messages[1].content == (ToolCallPart("t1", "weather", {"city": "Oslo"}),)
        assert row.messages[2].content == (ToolResultPart("t1", "sunny"),)


def test_native_messages_take_the_sdk_shapes_too() -> None:
    row = decode_row(
        {"id": "a", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}}
        ]}]},
        1,
    )  # fmt: skip
    assert row.messages[0].content == (ImagePart(InlineSource("image/png", PNG)),)


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ([{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                       "data": "not base64!"}}], "not valid base64"),
        ([{"type": "image", "source": {"type": "base64", "media_type": "application/pdf",
                                       "data": PDF64}}], "ImagePart takes image media"),
        ([{"type": "image_url", "image_url": {"url": "data:image/png,raw"}}], "data URL"),
        ([{"type": "video", "url": "x"}], "content block of type 'video'"),
        ([{"type": "tool_use", "name": "f", "input": "x"}], "needs 'id'"),
        ([{"type": "text"}], "needs 'text'"),
    ],
)  # fmt: skip
def test_bad_content_is_a_line_error(tmp_path: Path, content: object, words: str) -> None:
    path = tmp_path / "in.jsonl"
    row: dict[str, Any] = {
        "custom_id": "a",
        "params": {"model": "m", "messages": [{"role": "user", "content": content}]},
    }
    path.write_text('{"id": "ok", "prompt": "fine"}\n' + json.dumps(row) + "\n")
    with pytest.raises(BatchInputError) as caught:
        scan_input(path)
    assert caught.value.line == 2
    assert str(caught.value).startswith("line 2: params.messages[0]")
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.slow  # subprocesses: the fake server and rxturn batch run, twice
def test_an_image_row_reaches_the_provider_and_bad_content_sends_nothing(
    tmp_path: Path,
) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": PNG64}}  # fmt: skip
    good = write_rows(
        tmp_path / "good.jsonl", [_anthropic([{"type": "text", "text": "hi"}, image])]
    )
    bad_row = _anthropic([{"type": "image", "source": {"type": "base64"}}])
    bad = write_rows(tmp_path / "bad.jsonl", [{"id": "x", "prompt": "fine"}, bad_row])
    with fake_server({"models": {"*": [{"text": "a pixel"}]}}, tmp_path) as url:
        refused = run_batch(bad, tmp_path / "bad-out.jsonl", url)
        sent_before = len(received(url))
        done = run_batch(good, tmp_path / "out.jsonl", url)
        bodies = received(url)
    assert refused.returncode == 2
    assert refused.stderr.startswith("rxturn batch: error: line 2: params.messages[0]")
    assert len(refused.stderr.strip().splitlines()) == 1
    assert sent_before == 0
    assert done.returncode == 0, done.stderr
    assert lines(tmp_path / "out.jsonl")[0]["status"] == "ok"
    sent = bodies[-1]["messages"][-1]["content"]
    assert sent[1] == image  # the wire's own image block, bytes intact
