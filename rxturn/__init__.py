"""rxturn: one LLM turn as a ReactiveX pipeline.

The public names, in the order the pipeline runs: the vocabulary, the fold and replay, the
resilience pieces, the turn, the clients. Type checkers read them from the ``if TYPE_CHECKING:``
imports below; at run time ``_HOMES`` maps each to its module, which is imported when the name is
first used (PEP 562, :func:`rxturn._exports.lazy_exports`). So ``import rxturn`` stays light, and
``import rxturn.wire`` loads no asyncio, reactivex, aiohttp or tiktoken.

The fold itself is :func:`rxturn.fold.fold`: ``rxturn.fold`` is its module.

Reading order for a newcomer: :mod:`rxturn.events`, :mod:`rxturn.wire`, :mod:`rxturn.fold`,
:mod:`rxturn.operators`, :mod:`rxturn.engine.handler`, :mod:`rxturn.engine`; docs/design.md
draws the layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._exports import lazy_exports
from ._version import __version__ as __version__

if TYPE_CHECKING:  # what type checkers read; at run time, _HOMES below
    # -- the vocabulary: messages, stream events, one error tree
    from .messages import (
        AudioPart as AudioPart,
        CachePoint as CachePoint,
        DocumentPart as DocumentPart,
        FileIdSource as FileIdSource,
        ImagePart as ImagePart,
        InlineSource as InlineSource,
        Message as Message,
        Request as Request,
        RequestOptions as RequestOptions,
        ResponseFormat as ResponseFormat,
        StopReason as StopReason,
        TextPart as TextPart,
        ToolCallPart as ToolCallPart,
        ToolResultPart as ToolResultPart,
        ToolSchema as ToolSchema,
        UrlSource as UrlSource,
        Usage as Usage,
    )
    from .events import (
        AttemptReset as AttemptReset,
        Delta as Delta,
        EventBatch as EventBatch,
        Fallback as Fallback,
        HandlerEvent as HandlerEvent,
        MessageDelta as MessageDelta,
        MessageStart as MessageStart,
        MessageStop as MessageStop,
        PartStart as PartStart,
        PartStop as PartStop,
        Ping as Ping,
        StreamEvent as StreamEvent,
    )
    from .errors import (
        APIStatusError as APIStatusError,
        AuthenticationError as AuthenticationError,
        BadRequestError as BadRequestError,
        Cancelled as Cancelled,
        ConfigError as ConfigError,
        ConnectError as ConnectError,
        ContextOverflowError as ContextOverflowError,
        DecompressionLimitError as DecompressionLimitError,
        FallbackExhausted as FallbackExhausted,
        InvalidToolInputError as InvalidToolInputError,
        NotFoundError as NotFoundError,
        OverloadedError as OverloadedError,
        PermissionDeniedError as PermissionDeniedError,
        ProviderError as ProviderError,
        ProviderStreamError as ProviderStreamError,
        RateLimitError as RateLimitError,
        RateLimitEscalation as RateLimitEscalation,
        ReadError as ReadError,
        RequestTimeoutError as RequestTimeoutError,
        RescueFailed as RescueFailed,
        RescueTimeoutError as RescueTimeoutError,
        RetryAfterBeyondDeadline as RetryAfterBeyondDeadline,
        RxturnError as RxturnError,
        ServerError as ServerError,
        StreamProtocolError as StreamProtocolError,
        StreamTimeoutError as StreamTimeoutError,
        ToolTimeoutError as ToolTimeoutError,
        TransportError as TransportError,
        TruncatedStreamError as TruncatedStreamError,
        UnexpectedResponseError as UnexpectedResponseError,
        is_retryable as is_retryable,
    )

    # -- the pure core: the fold, and replay of recorded bytes through it
    from .fold import (
        INITIAL_STATE as INITIAL_STATE,
        TurnState as TurnState,
        fold_batch as fold_batch,
        fold_handler as fold_handler,
    )
    from ._replay import (
        replay as replay,
        replay_batches as replay_batches,
        replay_message as replay_message,
    )

    # -- resilience: policies, the limiter, the cancel token, the model breaker, the hedge
    from .resilience.policies import (
        LimiterPolicy as LimiterPolicy,
        RateLimitPolicy as RateLimitPolicy,
        RetryPolicy as RetryPolicy,
        TimeoutPolicy as TimeoutPolicy,
    )
    from .resilience.limiter import RateLimiter as RateLimiter
    from .resilience.cancel import CancelToken as CancelToken
    from .resilience.fallback import (
        BreakerState as BreakerState,
        FailureKind as FailureKind,
        FallbackManager as FallbackManager,
        FallbackPolicy as FallbackPolicy,
    )
    from .resilience.hedge import (
        HedgePolicy as HedgePolicy,
        HedgeTarget as HedgeTarget,
    )

    # -- the turn: the handler, the engine, what it reports to, runs, records and counts
    from .engine.handler import StreamHandler as StreamHandler
    from .engine import (
        RunResult as RunResult,
        Session as Session,
        TurnEngine as TurnEngine,
        TurnResult as TurnResult,
    )
    from .engine.observation.observers import (
        LoggingObserver as LoggingObserver,
        Observer as Observer,
        ObserverSet as ObserverSet,
        RecordingObserver as RecordingObserver,
    )
    from .engine.agent.tools import Tool as Tool, ToolRegistry as ToolRegistry, tool as tool
    from .engine.records.audit import AuditTrail as AuditTrail, Run as Run, Turn as Turn
    from .cost import Cost as Cost  # priced with the rxturn[cost] extra
    from .engine.context.tokens import (
        ContextEstimate as ContextEstimate,
        TiktokenCounter as TiktokenCounter,
        TokenCounter as TokenCounter,
        estimate_context as estimate_context,
    )
    from .engine.context.window import (
        Calibration as Calibration,
        Compactor as Compactor,
        ContextContributor as ContextContributor,
        ContextWindow as ContextWindow,
        MemoryProvider as MemoryProvider,
        SummarizingCompactor as SummarizingCompactor,
        TruncatingCompactor as TruncatingCompactor,
    )

    # -- the clients (aiohttp loads on first send)
    from .clients import (
        AnthropicClient as AnthropicClient,
        BatchingModelClient as BatchingModelClient,
        ModelClient as ModelClient,
        OllamaClient as OllamaClient,
        OpenAIClient as OpenAIClient,
        OpenAIResponsesClient as OpenAIResponsesClient,
    )

#: Each public name and its module, imported on first use of the name (PEP 562).
_HOMES: dict[str, str] = {
    "Message": ".messages",
    "AudioPart": ".messages",
    "CachePoint": ".messages",
    "DocumentPart": ".messages",
    "FileIdSource": ".messages",
    "ImagePart": ".messages",
    "InlineSource": ".messages",
    "UrlSource": ".messages",
    "Request": ".messages",
    "RequestOptions": ".messages",
    "ResponseFormat": ".messages",
    "StopReason": ".messages",
    "TextPart": ".messages",
    "ToolCallPart": ".messages",
    "ToolResultPart": ".messages",
    "ToolSchema": ".messages",
    "Usage": ".messages",
    "AttemptReset": ".events",
    "Delta": ".events",
    "EventBatch": ".events",
    "Fallback": ".events",
    "HandlerEvent": ".events",
    "MessageDelta": ".events",
    "MessageStart": ".events",
    "MessageStop": ".events",
    "PartStart": ".events",
    "PartStop": ".events",
    "Ping": ".events",
    "StreamEvent": ".events",
    "APIStatusError": ".errors",
    "AuthenticationError": ".errors",
    "BadRequestError": ".errors",
    "Cancelled": ".errors",
    "ConfigError": ".errors",
    "ConnectError": ".errors",
    "ContextOverflowError": ".errors",
    "DecompressionLimitError": ".errors",
    "FallbackExhausted": ".errors",
    "InvalidToolInputError": ".errors",
    "NotFoundError": ".errors",
    "OverloadedError": ".errors",
    "PermissionDeniedError": ".errors",
    "ProviderError": ".errors",
    "ProviderStreamError": ".errors",
    "RateLimitError": ".errors",
    "RateLimitEscalation": ".errors",
    "ReadError": ".errors",
    "RequestTimeoutError": ".errors",
    "RescueFailed": ".errors",
    "RescueTimeoutError": ".errors",
    "RetryAfterBeyondDeadline": ".errors",
    "RxturnError": ".errors",
    "ServerError": ".errors",
    "StreamProtocolError": ".errors",
    "StreamTimeoutError": ".errors",
    "ToolTimeoutError": ".errors",
    "TransportError": ".errors",
    "TruncatedStreamError": ".errors",
    "UnexpectedResponseError": ".errors",
    "is_retryable": ".errors",
    "INITIAL_STATE": ".fold",
    "TurnState": ".fold",
    "fold_batch": ".fold",
    "fold_handler": ".fold",
    "replay": "._replay",
    "replay_batches": "._replay",
    "replay_message": "._replay",
    "LimiterPolicy": ".resilience.policies",
    "RateLimitPolicy": ".resilience.policies",
    "RetryPolicy": ".resilience.policies",
    "TimeoutPolicy": ".resilience.policies",
    "RateLimiter": ".resilience.limiter",
    "CancelToken": ".resilience.cancel",
    "BreakerState": ".resilience.fallback",
    "FailureKind": ".resilience.fallback",
    "FallbackManager": ".resilience.fallback",
    "FallbackPolicy": ".resilience.fallback",
    "HedgePolicy": ".resilience.hedge",
    "HedgeTarget": ".resilience.hedge",
    "StreamHandler": ".engine.handler",
    "RunResult": ".engine",
    "Session": ".engine",
    "TurnEngine": ".engine",
    "TurnResult": ".engine",
    "LoggingObserver": ".engine.observation.observers",
    "Observer": ".engine.observation.observers",
    "ObserverSet": ".engine.observation.observers",
    "RecordingObserver": ".engine.observation.observers",
    "Tool": ".engine.agent.tools",
    "ToolRegistry": ".engine.agent.tools",
    "tool": ".engine.agent.tools",
    "AuditTrail": ".engine.records.audit",
    "Run": ".engine.records.audit",
    "Turn": ".engine.records.audit",
    "Cost": ".cost",
    "ContextEstimate": ".engine.context.tokens",
    "TiktokenCounter": ".engine.context.tokens",
    "TokenCounter": ".engine.context.tokens",
    "estimate_context": ".engine.context.tokens",
    "Calibration": ".engine.context.window",
    "Compactor": ".engine.context.window",
    "ContextContributor": ".engine.context.window",
    "ContextWindow": ".engine.context.window",
    "MemoryProvider": ".engine.context.window",
    "SummarizingCompactor": ".engine.context.window",
    "TruncatingCompactor": ".engine.context.window",
    "AnthropicClient": ".clients",
    "BatchingModelClient": ".clients",
    "ModelClient": ".clients",
    "OllamaClient": ".clients",
    "OpenAIClient": ".clients",
    "OpenAIResponsesClient": ".clients",
}

if not TYPE_CHECKING:  # type checkers take the public names from the imports above
    __all__ = sorted([*_HOMES, "__version__"])
    # hidden from type checkers too: a name that is not public is then an error there
    __getattr__, __dir__ = lazy_exports(globals(), _HOMES)
