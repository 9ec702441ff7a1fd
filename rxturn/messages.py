"""Conversation data: messages, content parts, usage, stop reasons, requests and options.

These are the provider-neutral types every layer shares. They are frozen msgspec Structs, so a
message handed to an observer can never change under another subscriber's feet, and their JSON
form (``msgspec.json.encode``) is exactly the Message JSON of docs/behaviour.md §6::

    {"id": "msg_…", "model": "…", "role": "assistant",
     "content": [{"type": "text", "text": "…"},
                 {"type": "tool_call", "id": "…", "name": "…", "input": {…}}],
     "stop_reason": "end_turn", "usage": {"input_tokens": 0, "output_tokens": 0}}

Two more part types appear in replies: :class:`RefusalPart` (an OpenAI refusal) always, and
:class:`ThinkingPart` / :class:`RedactedThinkingPart` only when the fold keeps thinking
(docs/wire-formats.md). A reply without them encodes exactly as before.
"""

from __future__ import annotations

import enum
from typing import Any, Literal, get_args

import msgspec

from ._validate import as_messages, message_content

__all__ = [
    "ContentPart",
    "Message",
    "RedactedThinkingPart",
    "RefusalPart",
    "Request",
    "RequestOptions",
    "ResponseFormat",
    "Role",
    "StopReason",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultPart",
    "ToolSchema",
    "Usage",
    "message_from_json",
    "message_to_json",
]

Role = Literal["user", "assistant"]


class StopReason(enum.StrEnum):
    """Why the model stopped. Only ``TOOL_CALL`` continues an agent loop.

    ``REFUSAL``: the model (or the provider's safety system) declined to answer; it ends the
    loop like ``END_TURN``.
    """

    END_TURN = "end_turn"
    TOOL_CALL = "tool_call"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"

    @classmethod
    def parse(cls, value: str | None) -> StopReason | None:
        """Map a provider's spelling to a stop reason; ``None`` for anything unrecognised.

        Accepts the canonical names plus ``tool_use`` / ``tool_calls`` (→ TOOL_CALL),
        ``length`` / ``max_output_tokens`` (→ MAX_TOKENS), ``stop`` (→ END_TURN) and
        ``content_filter`` (→ REFUSAL).
        """
        if value is None:
            return None
        return _STOP_ALIASES.get(value)

    @property
    def continues_loop(self) -> bool:
        """True only for ``TOOL_CALL``: the agent must run tools and call the model again."""
        return self is StopReason.TOOL_CALL


_STOP_ALIASES: dict[str, StopReason] = {
    "end_turn": StopReason.END_TURN,
    "stop": StopReason.END_TURN,
    "tool_call": StopReason.TOOL_CALL,
    "tool_use": StopReason.TOOL_CALL,
    "tool_calls": StopReason.TOOL_CALL,
    "function_call": StopReason.TOOL_CALL,
    "max_tokens": StopReason.MAX_TOKENS,
    "length": StopReason.MAX_TOKENS,
    "max_output_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
    "content_filter": StopReason.REFUSAL,
}


class Usage(msgspec.Struct, frozen=True, kw_only=True):
    """Token usage a provider reported. Optional everywhere: code against ``Usage | None``."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class TextPart(msgspec.Struct, frozen=True, tag="text"):
    """A run of assistant (or user) text."""

    text: str


class ToolCallPart(msgspec.Struct, frozen=True, tag="tool_call"):
    """The model asks for a tool to be run with ``input`` (already-parsed JSON)."""

    id: str
    name: str
    input: Any = msgspec.field(default_factory=dict[str, Any])


class ToolResultPart(msgspec.Struct, frozen=True, tag="tool_result"):
    """The result of running a tool, sent back to the model in a user message."""

    tool_call_id: str
    content: str
    is_error: bool = False


class ThinkingPart(msgspec.Struct, frozen=True, tag="thinking", omit_defaults=True):
    """Model reasoning kept for replay (only when the fold keeps thinking).

    Anthropic: a ``thinking`` block's text and ``signature``. OpenAI Responses: a reasoning
    item's summary text, its ``encrypted_content`` as ``signature`` (``None`` when the provider
    sent none) and its ``id`` (``rs_…``). Sent back unchanged in later requests.
    """

    thinking: str
    signature: str | None
    id: str = ""


class RedactedThinkingPart(msgspec.Struct, frozen=True, tag="redacted_thinking"):
    """An Anthropic ``redacted_thinking`` block: opaque ``data`` to send back unchanged."""

    data: str


class RefusalPart(msgspec.Struct, frozen=True, tag="refusal"):
    """Text with which the model refused (OpenAI ``refusal``); not part of :attr:`Message.text`."""

    text: str


ContentPart = (
    TextPart | ToolCallPart | ToolResultPart | ThinkingPart | RedactedThinkingPart | RefusalPart
)

#: Every part class of the union: what a message's content may hold (derived, never listed).
_PART_TYPES: frozenset[type] = frozenset(get_args(ContentPart))


def _text(text: object, where: str) -> TextPart:
    if not isinstance(text, str):
        from .errors import ConfigError

        raise ConfigError(f"{where}(text) takes a str, got {type(text).__name__}")
    return TextPart(text)


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One conversation message. Assistant replies also carry id, model, stop reason and usage."""

    id: str = ""
    model: str = ""
    role: Role = "assistant"
    content: tuple[ContentPart, ...] = ()
    stop_reason: StopReason | None = None
    usage: Usage | None = None

    def __post_init__(self) -> None:
        # Checked when built: the role, and content made of the union's parts. A str, a list,
        # or str / SDK-style dict parts are converted; anything else is a ConfigError here.
        converted = message_content(self.role, self.content, _PART_TYPES)
        if converted is not None:
            msgspec.structs.force_setattr(self, "content", converted)

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message holding one text part."""
        return cls(role="user", content=(_text(text, "Message.user"),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message holding one text part (handy for histories and tests)."""
        return cls(role="assistant", content=(_text(text, "Message.assistant"),))

    @property
    def text(self) -> str:
        """All text parts joined (tool calls excluded)."""
        return "".join(part.text for part in self.content if isinstance(part, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The tool calls of this message, in order."""
        return [part for part in self.content if isinstance(part, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [part for part in self.content if isinstance(part, ToolResultPart)]

    @property
    def refusal(self) -> str:
        """All refusal parts joined (``""`` when the model did not refuse in words)."""
        return "".join(part.text for part in self.content if isinstance(part, RefusalPart))


class ToolSchema(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the model may call: a name, a description and a JSON Schema for its input."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class ResponseFormat(msgspec.Struct, frozen=True, kw_only=True):
    """Ask for a reply that is JSON matching ``schema`` (OpenAI ``json_schema``)."""

    name: str
    schema: dict[str, Any]
    strict: bool = False


class RequestOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What rides alongside a request: applies to the streaming and non-streaming paths alike.

    ``model`` is a per-request override: the fallback manager writes the routed model here, and
    the shared client is never mutated. ``tool_choice`` is ``"auto"``, ``"any"`` (the model must
    call some tool), ``"none"``, or a tool name; ``strict_tools`` asks for strict schemas where
    the provider supports them.

    Reasoning knobs (docs/wire-formats.md, "Request knobs"):

    * ``thinking`` — Anthropic extended thinking: a budget in tokens (at least 1024 and below
      ``max_tokens``), sent as ``{"thinking": {"type": "enabled", "budget_tokens": N}}``
      (Ollama: ``think: true``);
    * ``reasoning_effort`` — OpenAI reasoning effort (``"minimal"``, ``"low"``, ``"medium"``,
      ``"high"``, …): chat ``reasoning_effort``, Responses ``reasoning.effort``, Ollama
      ``think``;
    * ``extra_body`` — provider-specific fields merged into the JSON body last (the escape hatch
      every SDK has); it may not set ``model`` or ``stream``, which the client owns;
    * ``keep_thinking`` — keep the reply's thinking in the message and send it back in later
      requests. ``None`` (the default) keeps it exactly when the request enables thinking and
      the provider wants it back (Anthropic ``thinking``, Responses ``reasoning_effort``); see
      :func:`rxturn.clients.keeps_thinking`.

    A value a provider cannot take is a :class:`~rxturn.errors.ConfigError` when the request is
    built, before anything is sent.
    """

    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None
    strict_tools: bool = False
    response_format: ResponseFormat | None = None
    stop_sequences: tuple[str, ...] = ()
    extra_headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    thinking: int | None = None
    reasoning_effort: str | None = None
    extra_body: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    keep_thinking: bool | None = None


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What the model is asked: messages (transients first), system prompt, tool schemas.

    ``tools`` is ``None`` when no tools are registered.
    """

    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSchema, ...] | None = None

    def __post_init__(self) -> None:
        # the last gate before a request is encoded: dicts become messages, a str is refused
        messages = self.messages
        if type(messages) is tuple:
            for message in messages:  # the hot path: a loop allocates nothing
                if type(message) is not Message:
                    break
            else:
                return
        checked = tuple(as_messages(messages, "Request.messages"))
        msgspec.structs.force_setattr(self, "messages", checked)


_message_decoder = msgspec.json.Decoder(Message)
_encoder = msgspec.json.Encoder()


def message_to_json(message: Message) -> bytes:
    """Encode a message as the Message JSON (docs/behaviour.md §6)."""
    return _encoder.encode(message)


def message_from_json(data: bytes | str) -> Message:
    """Decode the Message JSON of docs/behaviour.md §6 (raises ``msgspec.ValidationError`` on bad
    input, ``msgspec.DecodeError`` on malformed JSON, JSON nested too deeply included)."""
    try:
        return _message_decoder.decode(data)
    except RecursionError as exc:
        raise msgspec.DecodeError(f"JSON nested too deeply to decode ({exc})") from None
