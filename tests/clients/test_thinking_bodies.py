"""Kept thinking goes back to Anthropic unchanged: the request body of a tool-loop continuation."""

from __future__ import annotations

from pathlib import Path

from rxturn import replay_message
from rxturn.clients.anthropic import build_anthropic_body
from rxturn.messages import (
    Message,
    RefusalPart,
    Request,
    RequestOptions,
    ToolResultPart,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic"


def _body(*messages: Message) -> dict[str, object]:
    return build_anthropic_body(
        Request(messages=messages), RequestOptions(), model="m", max_tokens=100, stream=True
    )


def _sse_blocks(path: Path) -> list[dict[str, object]]:
    """The blocks of the recording as the API sent them, rebuilt from its raw JSON."""
    import json

    blocks: dict[int, dict[str, object]] = {}
    for line in path.read_bytes().splitlines():
        if not line.startswith(b"data:"):
            continue
        event = json.loads(line[5:])
        if event["type"] == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
        elif event["type"] == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] = str(block["thinking"]) + delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] = str(block["text"]) + delta["text"]
    return [blocks[i] for i in sorted(blocks)]


def test_thinking_and_redacted_thinking_are_sent_back_unchanged() -> None:
    for name in ("thinking_stream.sse", "redacted_thinking_stream.sse"):
        reply = replay_message(FIXTURES / name, keep_thinking=True)
        body = _body(Message.user("q"), reply, Message.user("more"))
        sent = body["messages"][1]["content"]  # pyright: ignore[reportIndexIssue]
        assert sent == _sse_blocks(FIXTURES / name)


def test_tool_results_first_then_nothing_for_a_refusal() -> None:
    result = Message(role="user", content=(ToolResultPart("t1", "42"),))
    assert _body(result)["messages"] == [  # unchanged shape for tool results
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"}]}
    ]
    refused = Message(content=(RefusalPart("no"),))
    assert _body(refused)["messages"] == [{"role": "assistant", "content": []}]
