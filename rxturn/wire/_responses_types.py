"""The OpenAI Responses API's wire Structs: every event and object the decoder reads, as msgspec
Structs that ignore unknown fields, and the one decoder over their tagged union (see
:mod:`rxturn.wire.openai_responses`)."""

from __future__ import annotations

import msgspec

__all__ = [
    "KNOWN_TYPES",
    "ArgumentsDelta",
    "Completed",
    "Created",
    "Details",
    "ErrorEvent",
    "ErrorInfo",
    "Failed",
    "InProgress",
    "Incomplete",
    "Item",
    "ItemAdded",
    "ItemContent",
    "ItemDone",
    "Part",
    "PartAdded",
    "PartDone",
    "Queued",
    "ReasoningTextDelta",
    "RefusalDelta",
    "Response",
    "Summary",
    "SummaryDelta",
    "SummaryPartAdded",
    "TextDelta",
    "TypeOnly",
    "WireEvent",
    "event_decoder",
    "type_decoder",
]

# --- wire Structs (unknown fields are ignored by msgspec) -------------------------------------


class Details(msgspec.Struct, gc=False):
    reason: str | None = None


class ErrorInfo(msgspec.Struct, gc=False):
    code: str | int | None = None
    message: str | None = None
    type: str | None = None


class Summary(msgspec.Struct, gc=False):
    type: str = ""
    text: str = ""


class ItemContent(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    refusal: str | None = None


class Item(msgspec.Struct, gc=False):
    """Any output item; only ``message``, ``function_call`` and ``reasoning`` are modelled."""

    type: str = ""
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    encrypted_content: str | None = None
    summary: list[Summary] | None = None
    content: list[ItemContent] | None = None


class Response(msgspec.Struct, gc=False):
    id: str = ""
    model: str = ""
    status: str | None = None
    usage: object = None  # as sent: mapped by ._usage
    incomplete_details: Details | None = None
    error: ErrorInfo | None = None
    output: list[Item] | None = None


class Part(msgspec.Struct, gc=False):
    type: str = ""
    text: str | None = None
    refusal: str | None = None


class TextDelta(msgspec.Struct, gc=False, tag="response.output_text.delta"):
    delta: str = ""
    output_index: int = 0
    content_index: int = 0


class RefusalDelta(msgspec.Struct, gc=False, tag="response.refusal.delta"):
    delta: str = ""
    output_index: int = 0
    content_index: int = 0


class ArgumentsDelta(msgspec.Struct, gc=False, tag="response.function_call_arguments.delta"):
    delta: str = ""
    output_index: int = 0


class SummaryDelta(msgspec.Struct, gc=False, tag="response.reasoning_summary_text.delta"):
    delta: str = ""
    output_index: int = 0


class ReasoningTextDelta(msgspec.Struct, gc=False, tag="response.reasoning_text.delta"):
    delta: str = ""
    output_index: int = 0


class SummaryPartAdded(msgspec.Struct, gc=False, tag="response.reasoning_summary_part.added"):
    output_index: int = 0
    summary_index: int = 0


class PartAdded(msgspec.Struct, gc=False, tag="response.content_part.added"):
    part: Part
    output_index: int = 0
    content_index: int = 0


class PartDone(msgspec.Struct, gc=False, tag="response.content_part.done"):
    part: Part
    output_index: int = 0
    content_index: int = 0


class ItemAdded(msgspec.Struct, gc=False, tag="response.output_item.added"):
    item: Item
    output_index: int = 0


class ItemDone(msgspec.Struct, gc=False, tag="response.output_item.done"):
    item: Item
    output_index: int = 0


class Created(msgspec.Struct, gc=False, tag="response.created"):
    response: Response


class InProgress(msgspec.Struct, gc=False, tag="response.in_progress"):
    response: Response


class Queued(msgspec.Struct, gc=False, tag="response.queued"):
    response: Response


class Completed(msgspec.Struct, gc=False, tag="response.completed"):
    response: Response


class Incomplete(msgspec.Struct, gc=False, tag="response.incomplete"):
    response: Response


class Failed(msgspec.Struct, gc=False, tag="response.failed"):
    response: Response


class ErrorEvent(msgspec.Struct, gc=False, tag="error"):
    code: str | int | None = None
    message: str | None = None
    # some servers nest it, as the chat API does
    error: ErrorInfo | None = None


WireEvent = (
    TextDelta
    | RefusalDelta
    | ArgumentsDelta
    | SummaryDelta
    | ReasoningTextDelta
    | SummaryPartAdded
    | PartAdded
    | PartDone
    | ItemAdded
    | ItemDone
    | Created
    | InProgress
    | Queued
    | Completed
    | Incomplete
    | Failed
    | ErrorEvent
)


class TypeOnly(msgspec.Struct, gc=False):
    type: str = ""


event_decoder = msgspec.json.Decoder(WireEvent)
type_decoder = msgspec.json.Decoder(TypeOnly)
KNOWN_TYPES = frozenset(
    {
        "response.output_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
        "response.reasoning_summary_part.added",
        "response.content_part.added",
        "response.content_part.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.created",
        "response.in_progress",
        "response.queued",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
    }
)
