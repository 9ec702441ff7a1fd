"""Tool call ids in the request bodies: each wire sends an id in a form its API takes.

An OpenAI-compatible server that names no call gives an empty id, which every API refuses
("expected a string with minimum length 1"); it went out as it was. The call and the result
that answers it must carry the same id, and two ids must not become one.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from rxturn.clients.anthropic import build_anthropic_body
from rxturn.clients.openai import build_openai_body
from rxturn.clients.openai_responses import build_responses_body
from rxturn.messages import (
    Message,
    Request,
    RequestOptions,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
)

TOOL = ToolSchema(name="f", description="d", input_schema={"type": "object"})


def _request(*ids: str) -> Request:
    return Request(
        messages=(
            Message.user("go"),
            Message(role="assistant", content=tuple(ToolCallPart(i, "f", {}) for i in ids)),
            Message(role="user", content=tuple(ToolResultPart(i, "ok") for i in ids)),
        ),
        tools=(TOOL,),
    )


def _anthropic(request: Request) -> tuple[list[str], list[str]]:
    body: Any = build_anthropic_body(
        request, RequestOptions(), model="m", max_tokens=100, stream=False
    )
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    return (
        [b["id"] for b in blocks if b["type"] == "tool_use"],
        [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"],
    )


def _chat(request: Request) -> tuple[list[str], list[str]]:
    body: Any = build_openai_body(
        request, RequestOptions(), model="m", max_tokens=None, stream=False
    )
    return (
        [c["id"] for m in body["messages"] for c in m.get("tool_calls", ())],
        [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"],
    )


def _responses(request: Request) -> tuple[list[str], list[str]]:
    body: Any = build_responses_body(
        request, RequestOptions(), model="m", max_tokens=None, stream=False
    )
    items = body["input"]
    return (
        [i["call_id"] for i in items if i.get("type") == "function_call"],
        [i["call_id"] for i in items if i.get("type") == "function_call_output"],
    )


WIRES = [
    (_anthropic, lambda i: re.fullmatch(r"[a-zA-Z0-9_-]+", i) is not None),
    (_chat, lambda i: 0 < len(i) <= 40),
    (_responses, lambda i: 0 < len(i) <= 64),
]


@pytest.mark.parametrize(("sent", "takes"), WIRES)
def test_an_empty_id_goes_out_as_one_the_api_takes(sent: Any, takes: Any) -> None:
    (call,), (result,) = sent(_request(""))
    assert takes(call), call
    assert result == call


@pytest.mark.parametrize(("sent", "takes"), WIRES)
def test_ids_that_do_not_fit_stay_paired_and_distinct(sent: Any, takes: Any) -> None:
    ids = ("a.b:" + "x" * 70, "a.b:" + "x" * 70 + "y", "a/b", "a:b", "plain_id")
    calls, results = sent(_request(*ids))
    assert all(takes(i) for i in calls), calls
    assert results == calls
    assert len(set(calls)) == len(ids)
    assert "plain_id" in calls  # an id every wire takes goes out as it is
