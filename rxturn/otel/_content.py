"""Content capture: the switch, and messages in the GenAI conventions' JSON shapes.

Content (prompts, replies, tool arguments and results) is recorded only when asked, by the
``capture_content`` argument or the ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
variable (docs/observability.md). The shapes are the conventions' message schemas::

    gen_ai.input.messages       [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    gen_ai.output.messages      [{"role": "assistant", "parts": [...], "finish_reason": "end_turn"}]
    gen_ai.system_instructions  [{"type": "text", "content": "You are terse."}]

Parts: ``text`` (``content``), ``tool_call`` (``id``, ``name``, ``arguments``),
``tool_call_response`` (``id``, ``response``: a string, or a list of parts), and for media
``blob`` (``modality``, ``mime_type`` and ``size`` — never the bytes), ``uri`` or ``file``
(``file_id``), thinking as ``reasoning`` (``content``, never the signature); cache markers are
left out. A user message made only of tool results has the role ``tool``. Any other part
is kept as ``{"type": name}`` under its Message JSON name (``refusal``, ``redacted_thinking``)
with its ``text`` when it has one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

import msgspec

from .._arguments import shown
from .._validate import mend_text
from ..errors import ConfigError
from ..messages import (
    AudioPart,
    CachePoint,
    DocumentPart,
    ImagePart,
    InlineSource,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UrlSource,
    content_text,
)

__all__ = ["CaptureMode", "capture_mode", "input_messages", "output_messages", "to_json"]

CaptureMode = Literal["NO_CONTENT", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT"]

#: The environment variable the conventions name for content capture.
CAPTURE_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_MODES: Final[tuple[CaptureMode, ...]] = ("NO_CONTENT", "SPAN_ONLY", "EVENT_ONLY", "SPAN_AND_EVENT")
_encoder = msgspec.json.Encoder()


def capture_mode(value: str | bool | None) -> CaptureMode:
    """The capture mode from an argument, or from the environment when it is ``None``.

    ``True`` is ``SPAN_AND_EVENT``, ``False`` is ``NO_CONTENT``; strings are one of the four
    modes, case-insensitive (blank: ``NO_CONTENT``).

    Raises:
        ConfigError: an unknown mode (the message names where it came from).
    """
    where = "capture_content"
    if value is None:
        value = os.environ.get(CAPTURE_ENV, "")
        where = CAPTURE_ENV
    if isinstance(value, bool):
        return "SPAN_AND_EVENT" if value else "NO_CONTENT"
    if not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"{where} must be a string or a bool, got {type(value).__name__}")
    text = value.strip().upper()
    if not text:
        return "NO_CONTENT"
    for mode in _MODES:
        if text == mode:
            return mode
    raise ConfigError(f"{where} must be one of {', '.join(_MODES)}, got {shown(value, 100)}")


def _part(part: object) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.input}
    if isinstance(part, ToolResultPart):
        content = part.content
        response = content if isinstance(content, str) else [_part(p) for p in content]
        return {"type": "tool_call_response", "id": part.tool_call_id, "response": response}
    if isinstance(part, ImagePart | DocumentPart | AudioPart):
        return _media(part)
    if isinstance(part, ThinkingPart):  # the conventions' reasoning part (never the signature)
        return {"type": "reasoning", "content": part.thinking}
    # any other part under its Message JSON type (``refusal``, ``redacted_thinking``: its
    # encrypted data is no content anyone can read, and stays out)
    tag = getattr(getattr(type(part), "__struct_config__", None), "tag", None)
    name = tag if isinstance(tag, str) else type(part).__name__.removesuffix("Part").lower()
    shape: dict[str, Any] = {"type": name}
    text = getattr(part, "text", None)
    if isinstance(text, str):
        shape["content"] = text
    return shape


def _media(part: ImagePart | DocumentPart | AudioPart) -> dict[str, Any]:
    """A media part as the conventions' ``blob`` / ``uri`` / ``file`` part; an inline one
    without its bytes (``size`` in their place: spans are no place for a screenshot)."""
    modality = part.__struct_config__.tag
    source = part.source
    if isinstance(source, InlineSource):
        return {
            "type": "blob",
            "modality": modality,
            "mime_type": source.media_type,
            "size": len(source.data),
        }
    if isinstance(source, UrlSource):
        return {"type": "uri", "modality": modality, "uri": source.url}
    return {"type": "file", "modality": modality, "file_id": source.file_id}


def tool_result_text(result: ToolResultPart) -> str:
    """A tool result as one attribute value: its text, media as placeholders."""
    content = result.content
    return content if isinstance(content, str) else content_text(content)


def _message(message: Message) -> dict[str, Any]:
    content = message.content
    role: str = message.role
    if role == "user" and content and all(isinstance(p, ToolResultPart) for p in content):
        role = "tool"
    return {"role": role, "parts": [_part(p) for p in content if not isinstance(p, CachePoint)]}


def input_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The request's messages in the conventions' input shape."""
    return [_message(m) for m in messages]


def output_messages(message: Message, finish_reason: str) -> list[dict[str, Any]]:
    """The committed reply in the conventions' output shape."""
    shaped = _message(message)
    shaped["finish_reason"] = finish_reason
    return [shaped]


def system_instructions(system: str | None) -> list[dict[str, Any]] | None:
    return None if not system else [{"type": "text", "content": system}]


def to_json(value: Sequence[Any]) -> str:
    """JSON text for an attribute (values JSON cannot carry are shown as strings)."""
    try:
        return _encoder.encode(value).decode()
    except (TypeError, msgspec.EncodeError, OverflowError, UnicodeEncodeError):
        builtins = msgspec.to_builtins(value, enc_hook=repr)
        return msgspec.json.encode(mend_text(builtins)).decode()
