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
    "FallbackExhausted": "rxturn.errors",
    "is_retryable": "rxturn.errors",
    # client seam
    "ModelClient": "rxturn.clients._base",
}

__all__ = sorted([*_EXPORTS, "__version__"])


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
    from .cancel import CancelToken
    from .clients._base import ModelClient
    from .errors import *  # noqa: F403
    from .events import *  # noqa: F403
    from .messages import *  # noqa: F403
