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
from collections.abc import Iterable
from typing import Any, Literal

import msgspec

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
    "sum_usage",
    "usage_to_json",
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


class Usage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, repr_omit_defaults=True):
    """Token usage a provider reported. Optional everywhere: code against ``Usage | None``.

    ``input_tokens`` is the **total** input on every wire (Anthropic's uncached input plus its
    cache writes and reads; OpenAI and Ollama report it that way), ``output_tokens`` the total
    output (reasoning included). The other counts say what part of those totals was what, and
    are ``None`` when the provider did not report them (``0``: reported as zero):

    * ``cache_read_tokens`` / ``cache_write_tokens``: input read from / written to the prompt
      cache; ``cache_write_5m_tokens`` / ``cache_write_1h_tokens`` split the writes by TTL
      (Anthropic; only when the split adds up to ``cache_write_tokens``);
    * ``output_reasoning_tokens``: output spent on reasoning (thinking);
    * ``input_audio_tokens`` / ``output_audio_tokens``: audio in and out;
    * ``details``: any other whole-number counts, under the provider's own dotted names
      (``server_tool_use.web_search_requests``); ``None`` when there are none;
    * ``provider_cost``: what the provider itself said the call cost, in USD, when it says so
      (OpenRouter's ``usage.cost``).

    The JSON form carries ``input_tokens`` and ``output_tokens`` always and the rest only when
    reported (:func:`usage_to_json`). ``a + b`` sums two usages (a count reported by either is
    reported in the sum); docs/usage-and-cost.md has the per-wire mapping.
    """

    input_tokens: int = msgspec.field(default_factory=int)  # a factory: always encoded, even 0
    output_tokens: int = msgspec.field(default_factory=int)
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cache_write_5m_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    output_reasoning_tokens: int | None = None
    input_audio_tokens: int | None = None
    output_audio_tokens: int | None = None
    details: dict[str, int] | None = None
    provider_cost: float | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        write_5m = _add(self.cache_write_5m_tokens, other.cache_write_5m_tokens)
        write_1h = _add(self.cache_write_1h_tokens, other.cache_write_1h_tokens)
        writes = _add(self.cache_write_tokens, other.cache_write_tokens)
        if (write_5m is not None or write_1h is not None) and (
            writes is None or (write_5m or 0) + (write_1h or 0) != writes
        ):
            write_5m = write_1h = None  # a split that no longer adds up says nothing
        details = self.details
        if other.details:
            details = dict(details) if details else {}
            for key, value in other.details.items():
                details[key] = details.get(key, 0) + value
        cost = self.provider_cost
        if other.provider_cost is not None:
            cost = other.provider_cost if cost is None else cost + other.provider_cost
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=_add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=writes,
            cache_write_5m_tokens=write_5m,
            cache_write_1h_tokens=write_1h,
            output_reasoning_tokens=_add(
                self.output_reasoning_tokens, other.output_reasoning_tokens
            ),
            input_audio_tokens=_add(self.input_audio_tokens, other.input_audio_tokens),
            output_audio_tokens=_add(self.output_audio_tokens, other.output_audio_tokens),
            details=details,
            provider_cost=cost,
        )


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else a + b


def sum_usage(usages: Iterable[Usage | None]) -> Usage | None:
    """The sum of the usages that were reported (``None`` when none was)."""
    total: Usage | None = None
    for usage in usages:
        if usage is not None:
            total = usage if total is None else total + usage
    return total


def usage_to_json(usage: Usage | None) -> dict[str, object] | None:
    """A usage as its JSON object (``None`` stays ``None``): ``input_tokens`` and
    ``output_tokens`` always, every other count only when it was reported. The one place that
    shapes usage for the CLI, the audit lines, batch output and telemetry."""
    if usage is None:
        return None
    return msgspec.to_builtins(usage)


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


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One conversation message. Assistant replies also carry id, model, stop reason and usage."""

    id: str = ""
    model: str = ""
    role: Role = "assistant"
    content: tuple[ContentPart, ...] = ()
    stop_reason: StopReason | None = None
    usage: Usage | None = None

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message holding one text part."""
        return cls(role="user", content=(TextPart(text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message holding one text part (handy for histories and tests)."""
        return cls(role="assistant", content=(TextPart(text),))

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
