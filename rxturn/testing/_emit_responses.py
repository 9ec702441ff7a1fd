"""The OpenAI Responses wire's reply: the ``response`` object and its numbered event stream
(see :mod:`rxturn.testing._emit` for the shapes)."""

from __future__ import annotations

from typing import Any

from ._emit_base import (
    ReplyContext,
    default_usage,
    delta_events,
    encode,
    n_pieces,
    refusal_text,
    sse,
    thinking_signature,
    tool_id,
)
from ._scenario import Entry

__all__ = [
    "responses_events",
    "responses_object",
    "responses_output",
]


# ----------------------------------------------------------------------------- OpenAI Responses


def _responses_ids(ctx: ReplyContext) -> tuple[str, str, str]:
    """``(response id, reasoning item id, message item id)`` of a reply."""
    return (
        f"resp_fake{ctx.seq:06d}",
        f"rs_fake{ctx.seq:06d}",
        f"msg_fake{ctx.seq:06d}",
    )


def _responses_reasoning(entry: Entry, ctx: ReplyContext) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": _responses_ids(ctx)[1],
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": entry.thinking}],
    }
    if ctx.encrypted_reasoning:
        item["encrypted_content"] = thinking_signature(entry.thinking, kind="openai-responses")
    return item


def _responses_part(entry: Entry) -> dict[str, Any]:
    if entry.resolved_stop_reason == "refusal":
        return {"type": "refusal", "refusal": refusal_text(entry)}
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": entry.text}


def _responses_message(entry: Entry, ctx: ReplyContext, status: str) -> dict[str, Any]:
    return {
        "id": _responses_ids(ctx)[2],
        "type": "message",
        "status": status,
        "content": [_responses_part(entry)],
        "role": "assistant",
    }


def _responses_call(entry: Entry, ctx: ReplyContext, index: int, status: str) -> dict[str, Any]:
    call = entry.tool_calls[index]
    return {
        "id": f"fc_fake{ctx.seq:06d}_{index}",
        "type": "function_call",
        "status": status,
        "arguments": encode(call.input).decode(),
        "call_id": tool_id("openai-responses", ctx, index, call.id),
        "name": call.name,
    }


def _has_message(entry: Entry) -> bool:
    return bool(entry.text) or entry.resolved_stop_reason == "refusal"


def responses_output(entry: Entry, ctx: ReplyContext) -> list[dict[str, Any]]:
    """The finished output items: reasoning, message, function calls (those scripted)."""
    status = "incomplete" if entry.resolved_stop_reason == "max_tokens" else "completed"
    output: list[dict[str, Any]] = []
    if entry.thinking:
        output.append(_responses_reasoning(entry, ctx))
    if _has_message(entry):
        output.append(_responses_message(entry, ctx, status))
    output += [
        _responses_call(entry, ctx, index, "completed") for index in range(len(entry.tool_calls))
    ]
    return output


def responses_object(
    entry: Entry,
    ctx: ReplyContext,
    output: list[dict[str, Any]],
    usage: tuple[int, int] | None,
    *,
    final: bool = True,
) -> dict[str, Any]:
    """A Responses ``response`` object: in progress (``final`` false) or finished."""
    incomplete = final and entry.resolved_stop_reason == "max_tokens"
    status = "in_progress" if not final else "incomplete" if incomplete else "completed"
    usage_object: dict[str, Any] | None = None
    if final and usage is not None:
        prompt, completion = usage
        usage_object = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {
                "reasoning_tokens": n_pieces(entry.thinking, entry.chunk_chars)
            },
            "total_tokens": prompt + completion,
        }
    if final and entry.raw_usage is not None:
        usage_object = entry.raw_usage
    return {
        "id": _responses_ids(ctx)[0],
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": not ctx.encrypted_reasoning,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage_object,
        "user": None,
        "metadata": {},
    }


class _ResponsesWriter:
    """Numbers the events of one Responses stream (every event has a ``sequence_number``)."""

    __slots__ = ("events", "seq")

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.seq = 0

    def event(self, kind: str, payload: dict[str, Any]) -> None:
        body = {"type": kind, "sequence_number": self.seq, **payload}
        self.events.append(sse(kind.encode(), body))
        self.seq += 1

    def deltas(self, kind: str, head: dict[str, Any], text: str, size: int, tail: bytes) -> None:
        """One ``kind`` event per piece of ``text``: ``{...head, "delta": piece}`` + ``tail``."""
        prefix = encode({"type": kind, **head})[:-1]
        name = b"event: " + kind.encode() + b"\ndata: "
        for piece in delta_events(b"", b"", text, size):
            self.events.append(
                name
                + prefix
                + b',"sequence_number":%d,"delta":' % self.seq
                + piece
                + tail
                + b"}\n\n"
            )
            self.seq += 1


def responses_events(entry: Entry, ctx: ReplyContext) -> list[bytes]:
    size = entry.chunk_chars
    out = _ResponsesWriter()
    pending = responses_object(entry, ctx, [], None, final=False)
    out.event("response.created", {"response": pending})
    out.event("response.in_progress", {"response": pending})
    output_index = 0
    _, reasoning_id, message_id = _responses_ids(ctx)
    if entry.thinking:
        where = {"item_id": reasoning_id, "output_index": output_index}
        added: dict[str, Any] = {"id": reasoning_id, "type": "reasoning", "summary": []}
        out.event("response.output_item.added", {"output_index": output_index, "item": added})
        part: dict[str, Any] = {"type": "summary_text", "text": ""}
        out.event(
            "response.reasoning_summary_part.added", {**where, "summary_index": 0, "part": part}
        )
        out.deltas(
            "response.reasoning_summary_text.delta",
            {**where, "summary_index": 0},
            entry.thinking,
            size,
            b"",
        )
        done = {**where, "summary_index": 0}
        out.event("response.reasoning_summary_text.done", {**done, "text": entry.thinking})
        part = {"type": "summary_text", "text": entry.thinking}
        out.event("response.reasoning_summary_part.done", {**done, "part": part})
        item = _responses_reasoning(entry, ctx)
        out.event("response.output_item.done", {"output_index": output_index, "item": item})
        output_index += 1
    if _has_message(entry):
        where = {"item_id": message_id, "output_index": output_index, "content_index": 0}
        added = {
            "id": message_id,
            "type": "message",
            "status": "in_progress",
            "content": [],
            "role": "assistant",
        }
        out.event("response.output_item.added", {"output_index": output_index, "item": added})
        final_part = _responses_part(entry)
        if final_part["type"] == "refusal":
            empty: dict[str, Any] = {"type": "refusal", "refusal": ""}
            out.event("response.content_part.added", {**where, "part": empty})
            text = final_part["refusal"]
            out.deltas("response.refusal.delta", where, text, size, b"")
            out.event("response.refusal.done", {**where, "refusal": text})
        else:
            empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            out.event("response.content_part.added", {**where, "part": empty})
            out.deltas("response.output_text.delta", where, entry.text, size, b',"logprobs":[]')
            out.event("response.output_text.done", {**where, "text": entry.text, "logprobs": []})
        out.event("response.content_part.done", {**where, "part": final_part})
        status = "incomplete" if entry.resolved_stop_reason == "max_tokens" else "completed"
        item = _responses_message(entry, ctx, status)
        out.event("response.output_item.done", {"output_index": output_index, "item": item})
        output_index += 1
    for index in range(len(entry.tool_calls)):
        call = _responses_call(entry, ctx, index, "in_progress")
        where = {"item_id": call["id"], "output_index": output_index}
        out.event(
            "response.output_item.added",
            {"output_index": output_index, "item": {**call, "arguments": ""}},
        )
        out.deltas("response.function_call_arguments.delta", where, call["arguments"], size, b"")
        out.event(
            "response.function_call_arguments.done",
            {**where, "name": call["name"], "arguments": call["arguments"]},
        )
        item = {**call, "status": "completed"}
        out.event("response.output_item.done", {"output_index": output_index, "item": item})
        output_index += 1
    final = responses_object(entry, ctx, responses_output(entry, ctx), default_usage(entry, ctx))
    terminal = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    out.event(terminal, {"response": final})
    return out.events
