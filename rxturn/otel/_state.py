"""What :class:`~rxturn.otel.OTelObserver` keeps per turn and per run, and the small
translations it applies (error types, server address, usage attributes)."""

from __future__ import annotations

import contextvars
import time
from typing import Any, Final
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span

from ..errors import RxturnError
from ..messages import ToolResultPart, Usage
from ..resilience.verdicts import is_cancel
from . import _names as n

__all__ = [
    "Attributes",
    "RunSpans",
    "TurnSpans",
    "attach",
    "cache_usage",
    "error_type",
    "outcome_error_type",
    "server_address",
    "set_usage",
    "tool_error",
]

_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
Attributes = dict[str, Any]


def error_type(error: BaseException) -> str:
    """``error.type`` for an error: ``cancelled`` for a cancel, the class name for an rxturn
    error, the qualified class name for anything else."""
    if is_cancel(error):
        return n.CANCELLED
    cls = type(error)
    if isinstance(error, RxturnError) or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def outcome_error_type(outcome: str) -> str:
    return outcome or n.CANCELLED


def server_address(base_url: str) -> tuple[str, int | None]:
    try:
        parts = urlsplit(base_url)
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return "", None
    return parts.hostname or "", port


class TurnSpans:
    """One turn in flight: its ``chat`` span, its open attempt spans, what its metrics need."""

    __slots__ = (
        "attempts",
        "chat",
        "chat_context",
        "estimated_input",
        "first_chunk",
        "hedge_won",
        "hedges",
        "input_json",
        "last_model",
        "metric_attributes",
        "provider",
        "raced",
        "request_model",
        "started",
        "stream",
        "system_json",
    )

    def __init__(
        self,
        chat: Span,
        metric_attributes: Attributes,
        *,
        provider: str,
        request_model: str,
        stream: bool,
        estimated_input: int,
    ) -> None:
        self.chat = chat
        self.chat_context = trace.set_span_in_context(chat)
        self.attempts: dict[int, Span] = {}
        self.metric_attributes = metric_attributes
        self.provider = provider
        self.request_model = request_model
        self.stream = stream
        self.estimated_input = estimated_input
        self.started = time.monotonic()
        self.first_chunk: float | None = None
        self.last_model: str | None = None
        self.hedges = 0  # hedges sent (a hedged first token)
        self.hedge_won = False
        self.raced: frozenset[str] = frozenset()  # the race's models: no failover between them
        self.input_json: str | None = None
        self.system_json: str | None = None


class RunSpans:
    """One ``engine.run`` in flight: its span, its context token, its open tool spans."""

    __slots__ = ("last_error", "previous", "span", "token", "tools")

    def __init__(self, span: Span, token: object, previous: contextvars.Token[Any]) -> None:
        self.span = span
        self.token = token
        self.previous = previous
        self.tools: dict[str, tuple[Span, object]] = {}
        self.last_error: str | None = None


def attach(span: Span) -> None:
    otel_context.attach(trace.set_span_in_context(span))


def set_usage(span: Span, input_key: str, output_key: str, usage: Any) -> None:
    if usage is not None:
        span.set_attribute(input_key, int(usage.input_tokens))
        span.set_attribute(output_key, int(usage.output_tokens))


def cache_usage(attributes: Attributes, usage: Usage) -> None:
    """The cache and reasoning counts the provider reported (none when it did not)."""
    if usage.cache_read_tokens is not None:
        attributes[n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read_tokens
    if usage.cache_write_tokens is not None:
        attributes[n.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_write_tokens
    if usage.output_reasoning_tokens is not None:
        attributes[n.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS] = usage.output_reasoning_tokens


def tool_error(result: ToolResultPart) -> str:
    head = result.text.split(":", 1)[0].strip()
    return head if head.isidentifier() else "tool_error"
