"""rxturn: one LLM turn as a ReactiveX pipeline.

The public names, imported once each below, in the order the pipeline runs: the vocabulary,
the fold and replay, the resilience pieces, the turn, the clients. That import block is the one
table of the public surface: type checkers read it, and at run time it is read (once, on the
first public name used) to resolve each name lazily from its module. So ``import rxturn`` stays
light, and ``import rxturn.wire`` loads no asyncio, reactivex, aiohttp or tiktoken.
``__all__`` repeats the names because type checkers require it; a test keeps the two equal.

Reading order for a newcomer: :mod:`rxturn.events`, :mod:`rxturn.wire`, :mod:`rxturn.fold`,
:mod:`rxturn.operators`, :mod:`rxturn.engine.handler`, :mod:`rxturn.engine`; docs/design.md
draws the layers.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import _moved
from ._version import __version__

_moved.install()

if TYPE_CHECKING:  # the table of public names (see the module docstring)
    # -- the vocabulary: messages, stream events, one error tree
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
    from .errors import (
        APIStatusError,
        AuthenticationError,
        BadRequestError,
        Cancelled,
        ConfigError,
        ConnectError,
        ContextOverflowError,
        DecompressionLimitError,
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
        RetryAfterBeyondDeadline,
        RxturnError,
        ServerError,
        StreamProtocolError,
        StreamTimeoutError,
        ToolTimeoutError,
        TransportError,
        TruncatedStreamError,
        UnexpectedResponseError,
        is_retryable,
    )

    # -- the pure core: the fold, and replay of recorded bytes through it
    from .fold import INITIAL_STATE, TurnState, fold, fold_batch, fold_handler
    from .replay import replay, replay_batches, replay_message

    # -- resilience: policies, the limiter, the cancel token, the model breaker
    from .resilience.policies import LimiterPolicy, RateLimitPolicy, RetryPolicy, TimeoutPolicy
    from .resilience.limiter import RateLimiter
    from .resilience.cancel import CancelToken
    from .resilience.fallback import BreakerState, FailureKind, FallbackManager, FallbackPolicy

    # -- the turn: the handler, the engine, what it reports to, runs, records and counts
    from .engine.handler import StreamHandler
    from .engine import RunResult, Session, TurnEngine, TurnResult
    from .engine.observers import LoggingObserver, Observer, ObserverSet, RecordingObserver
    from .engine.tools import Tool, ToolRegistry, tool
    from .engine.audit import AuditTrail, Run, Turn
    from .engine.tokens import ContextEstimate, TiktokenCounter, TokenCounter, estimate_context
    from .engine.context import (
        Calibration,
        Compactor,
        ContextContributor,
        ContextWindow,
        MemoryProvider,
        SummarizingCompactor,
        TruncatingCompactor,
    )

    # -- the clients (aiohttp loads on first send)
    from .clients import (
        AnthropicClient,
        BatchingModelClient,
        ModelClient,
        OllamaClient,
        OpenAIClient,
        OpenAIResponsesClient,
    )


def _export_table() -> dict[str, str]:
    """Public name -> defining module, read from the ``if TYPE_CHECKING`` block above."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    table: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name):
            if node.test.id != "TYPE_CHECKING":
                continue
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module:
                    module = "rxturn." + stmt.module
                    table.update((alias.name, module) for alias in stmt.names)
    return table


_EXPORTS: dict[str, str] = {}


def __getattr__(name: str) -> Any:
    if not _EXPORTS:
        _EXPORTS.update(_export_table())
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'rxturn' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


__all__ = [
    "APIStatusError",
    "AnthropicClient",
    "AttemptReset",
    "AuditTrail",
    "AuthenticationError",
    "BadRequestError",
    "BatchingModelClient",
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
    "DecompressionLimitError",
    "Delta",
    "EventBatch",
    "FailureKind",
    "Fallback",
    "FallbackExhausted",
    "FallbackManager",
    "FallbackPolicy",
    "HandlerEvent",
    "INITIAL_STATE",
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
    "OpenAIResponsesClient",
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
    "RetryAfterBeyondDeadline",
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
    "ToolTimeoutError",
    "TransportError",
    "TruncatedStreamError",
    "TruncatingCompactor",
    "Turn",
    "TurnEngine",
    "TurnResult",
    "TurnState",
    "UnexpectedResponseError",
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
