"""rxturn: one LLM turn as a ReactiveX pipeline.

The public names, imported once each below, in the order the pipeline runs: the vocabulary,
the fold and replay, the resilience pieces, the turn, the clients. That import block is the one
table of the public surface: type checkers read it, and at run time it is read (once, on the
first public name used) to resolve each name lazily from its module. So ``import rxturn`` stays
light, and ``import rxturn.wire`` loads no asyncio, reactivex, aiohttp or tiktoken.
Each name is imported in the explicit re-export form ``from .x import A as A``, which type
checkers take as the public surface; ``__all__`` is built from the same table at run time, on
first use (``from rxturn import *``, ``dir(rxturn)``), so every name is spelled once.

Reading order for a newcomer: :mod:`rxturn.events`, :mod:`rxturn.wire`, :mod:`rxturn.fold`,
:mod:`rxturn.operators`, :mod:`rxturn.engine.handler`, :mod:`rxturn.engine`; docs/design.md
draws the layers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _moved
from ._lazy import LazyExports
from ._version import __version__ as __version__

_moved.install()

if TYPE_CHECKING:  # the table of public names (see the module docstring)
    # -- the vocabulary: messages, stream events, one error tree
    from .messages import (
        Message as Message,
        Request as Request,
        RequestOptions as RequestOptions,
        ResponseFormat as ResponseFormat,
        StopReason as StopReason,
        TextPart as TextPart,
        ToolCallPart as ToolCallPart,
        ToolResultPart as ToolResultPart,
        ToolSchema as ToolSchema,
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
        fold as fold,
        fold_batch as fold_batch,
        fold_handler as fold_handler,
    )
    from .replay import (
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
    from .engine.observers import (
        LoggingObserver as LoggingObserver,
        Observer as Observer,
        ObserverSet as ObserverSet,
        RecordingObserver as RecordingObserver,
    )
    from .engine.tools import Tool as Tool, ToolRegistry as ToolRegistry, tool as tool
    from .engine.audit import AuditTrail as AuditTrail, Run as Run, Turn as Turn
    from .engine.tokens import (
        ContextEstimate as ContextEstimate,
        TiktokenCounter as TiktokenCounter,
        TokenCounter as TokenCounter,
        estimate_context as estimate_context,
    )
    from .engine.context import (
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


_exports = LazyExports(globals(), eager=("__version__",))
_export_table = _exports.table
__getattr__ = _exports.resolve
__dir__ = _exports.names
