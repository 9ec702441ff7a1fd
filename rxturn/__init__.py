"""rxturn: one LLM turn as a ReactiveX pipeline.

``import rxturn`` stays light: names are resolved lazily from their modules on first use, so
neither aiohttp nor tiktoken is imported until a client or a token counter is actually used.

Reading order for a newcomer: :mod:`rxturn.events`, :mod:`rxturn.wire`, :mod:`rxturn.fold`,
:mod:`rxturn.operators`, :mod:`rxturn.handler`, :mod:`rxturn.engine`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # data
    "Message": "rxturn.messages",
    "TextPart": "rxturn.messages",
    "ToolCallPart": "rxturn.messages",
    "ToolResultPart": "rxturn.messages",
    "ToolSchema": "rxturn.messages",
    "Request": "rxturn.messages",
    "RequestOptions": "rxturn.messages",
    "ResponseFormat": "rxturn.messages",
    "StopReason": "rxturn.messages",
    "Usage": "rxturn.messages",
    # events
    "StreamEvent": "rxturn.events",
    "HandlerEvent": "rxturn.events",
    "EventBatch": "rxturn.events",
    "MessageStart": "rxturn.events",
    "PartStart": "rxturn.events",
    "Delta": "rxturn.events",
    "PartStop": "rxturn.events",
    "MessageDelta": "rxturn.events",
    "MessageStop": "rxturn.events",
    "Ping": "rxturn.events",
    "AttemptReset": "rxturn.events",
    "Fallback": "rxturn.events",
    # cancellation
    "CancelToken": "rxturn.cancel",
    # errors
    "RxturnError": "rxturn.errors",
    "ConfigError": "rxturn.errors",
    "Cancelled": "rxturn.errors",
    "ProviderError": "rxturn.errors",
    "TransportError": "rxturn.errors",
    "ConnectError": "rxturn.errors",
    "ReadError": "rxturn.errors",
    "APIStatusError": "rxturn.errors",
    "BadRequestError": "rxturn.errors",
    "ContextOverflowError": "rxturn.errors",
    "AuthenticationError": "rxturn.errors",
    "PermissionDeniedError": "rxturn.errors",
    "NotFoundError": "rxturn.errors",
    "RequestTimeoutError": "rxturn.errors",
    "RateLimitError": "rxturn.errors",
    "OverloadedError": "rxturn.errors",
    "ServerError": "rxturn.errors",
    "ProviderStreamError": "rxturn.errors",
    "StreamProtocolError": "rxturn.errors",
    "TruncatedStreamError": "rxturn.errors",
    "InvalidToolInputError": "rxturn.errors",
    "StreamTimeoutError": "rxturn.errors",
    "RateLimitEscalation": "rxturn.errors",
    "RescueFailed": "rxturn.errors",
    "RescueTimeoutError": "rxturn.errors",
    "FallbackExhausted": "rxturn.errors",
    "is_retryable": "rxturn.errors",
    # client seam and clients (aiohttp loads only when a client is used)
    "ModelClient": "rxturn.clients._base",
    "AnthropicClient": "rxturn.clients",
    "OpenAIClient": "rxturn.clients",
    "OllamaClient": "rxturn.clients",
    # decoding and folding
    "replay": "rxturn.replay",
    "replay_message": "rxturn.replay",
    "replay_batches": "rxturn.replay",
    "fold": "rxturn.fold",
    "fold_handler": "rxturn.fold",
    "fold_batch": "rxturn.fold",
    "TurnState": "rxturn.fold",
    # the stream handler
    "StreamHandler": "rxturn.handler",
    "TimeoutPolicy": "rxturn.policies",
    "RetryPolicy": "rxturn.policies",
    "RateLimitPolicy": "rxturn.policies",
    "LimiterPolicy": "rxturn.policies",
    "RateLimiter": "rxturn.limiter",
    # the turn
    "TurnEngine": "rxturn.engine",
    "Session": "rxturn.engine",
    "TurnResult": "rxturn.engine",
    "RunResult": "rxturn.engine",
    "Tool": "rxturn.tools",
    "ToolRegistry": "rxturn.tools",
    "tool": "rxturn.tools",
    # the model breaker, observers, audit
    "FallbackManager": "rxturn.fallback",
    "FallbackPolicy": "rxturn.fallback",
    "BreakerState": "rxturn.fallback",
    "FailureKind": "rxturn.fallback",
    "Observer": "rxturn.observers",
    "ObserverSet": "rxturn.observers",
    "RecordingObserver": "rxturn.observers",
    "LoggingObserver": "rxturn.observers",
    "AuditTrail": "rxturn.audit",
    "Turn": "rxturn.audit",
    "Run": "rxturn.audit",
    # context accounting (tiktoken loads only when counting)
    "TokenCounter": "rxturn.tokens",
    "TiktokenCounter": "rxturn.tokens",
    "ContextEstimate": "rxturn.tokens",
    "estimate_context": "rxturn.tokens",
    "ContextContributor": "rxturn.context",
    "MemoryProvider": "rxturn.context",
    "ContextWindow": "rxturn.context",
    "Compactor": "rxturn.context",
    "TruncatingCompactor": "rxturn.context",
    "SummarizingCompactor": "rxturn.context",
    "Calibration": "rxturn.context",
}

# spelled out (not derived from _EXPORTS) so type checkers see the public names
__all__ = [
    "APIStatusError",
    "AnthropicClient",
    "AttemptReset",
    "AuditTrail",
    "AuthenticationError",
    "BadRequestError",
    "BreakerState",
    "Calibration",
    "CancelToken",
    "Cancelled",
    "Compactor",
    "ConfigError",
    "ConnectError",
    "ContextContributor",
    "ContextEstimate",
    "ContextOverflowError",
    "ContextWindow",
    "Delta",
    "EventBatch",
    "FailureKind",
    "Fallback",
    "FallbackExhausted",
    "FallbackManager",
    "FallbackPolicy",
    "HandlerEvent",
    "InvalidToolInputError",
    "LimiterPolicy",
    "LoggingObserver",
    "MemoryProvider",
    "Message",
    "MessageDelta",
    "MessageStart",
    "MessageStop",
    "ModelClient",
    "NotFoundError",
    "Observer",
    "ObserverSet",
    "OllamaClient",
    "OpenAIClient",
    "OverloadedError",
    "PartStart",
    "PartStop",
    "PermissionDeniedError",
    "Ping",
    "ProviderError",
    "ProviderStreamError",
    "RateLimitError",
    "RateLimitEscalation",
    "RateLimitPolicy",
    "RateLimiter",
    "ReadError",
    "RecordingObserver",
    "Request",
    "RequestOptions",
    "RequestTimeoutError",
    "RescueFailed",
    "RescueTimeoutError",
    "ResponseFormat",
    "RetryPolicy",
    "Run",
    "RunResult",
    "RxturnError",
    "ServerError",
    "Session",
    "StopReason",
    "StreamEvent",
    "StreamHandler",
    "StreamProtocolError",
    "StreamTimeoutError",
    "SummarizingCompactor",
    "TextPart",
    "TiktokenCounter",
    "TimeoutPolicy",
    "TokenCounter",
    "Tool",
    "ToolCallPart",
    "ToolRegistry",
    "ToolResultPart",
    "ToolSchema",
    "TransportError",
    "TruncatedStreamError",
    "TruncatingCompactor",
    "Turn",
    "TurnEngine",
    "TurnResult",
    "TurnState",
    "Usage",
    "__version__",
    "estimate_context",
    "fold",
    "fold_batch",
    "fold_handler",
    "is_retryable",
    "replay",
    "replay_batches",
    "replay_message",
    "tool",
]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'rxturn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from .audit import AuditTrail, Run, Turn
    from .cancel import CancelToken
    from .clients import AnthropicClient, OllamaClient, OpenAIClient
    from .clients._base import ModelClient
    from .context import (
        Calibration,
        Compactor,
        ContextContributor,
        ContextWindow,
        MemoryProvider,
        SummarizingCompactor,
        TruncatingCompactor,
    )
    from .engine import RunResult, Session, TurnEngine, TurnResult
    from .errors import (
        APIStatusError,
        AuthenticationError,
        BadRequestError,
        Cancelled,
        ConfigError,
        ConnectError,
        ContextOverflowError,
        FallbackExhausted,
        InvalidToolInputError,
        NotFoundError,
        OverloadedError,
        PermissionDeniedError,
        ProviderError,
        ProviderStreamError,
        RateLimitError,
        RateLimitEscalation,
        ReadError,
        RequestTimeoutError,
        RescueFailed,
        RescueTimeoutError,
        RxturnError,
        ServerError,
        StreamProtocolError,
        StreamTimeoutError,
        TransportError,
        TruncatedStreamError,
        is_retryable,
    )
    from .events import (
        AttemptReset,
        Delta,
        EventBatch,
        Fallback,
        HandlerEvent,
        MessageDelta,
        MessageStart,
        MessageStop,
        PartStart,
        PartStop,
        Ping,
        StreamEvent,
    )
    from .fallback import BreakerState, FailureKind, FallbackManager, FallbackPolicy
    from .fold import TurnState, fold, fold_batch, fold_handler
    from .handler import StreamHandler
    from .limiter import RateLimiter
    from .messages import (
        Message,
        Request,
        RequestOptions,
        ResponseFormat,
        StopReason,
        TextPart,
        ToolCallPart,
        ToolResultPart,
        ToolSchema,
        Usage,
    )
    from .observers import LoggingObserver, Observer, ObserverSet, RecordingObserver
    from .policies import LimiterPolicy, RateLimitPolicy, RetryPolicy, TimeoutPolicy
    from .replay import replay, replay_batches, replay_message
    from .tokens import ContextEstimate, TiktokenCounter, TokenCounter, estimate_context
    from .tools import Tool, ToolRegistry, tool
