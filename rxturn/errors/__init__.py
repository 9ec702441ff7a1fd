"""One error tree for everything rxturn raises.

Every failure a caller can see is an instance of :class:`RxturnError`, with a message that says
what went wrong and where. The tree, drawn the way httpx draws its own::

    RxturnError
    ├── ConfigError                  caller misuse: invalid policy values, bad arguments
    ├── Cancelled                    the turn's cancel signal fired (never retried, never rescued)
    ├── ProviderError                anything that came back from (or failed to reach) a provider
    │   ├── TransportError           the HTTP exchange itself failed
    │   │   ├── ConnectError         could not connect
    │   │   └── ReadError            the connection broke mid-response
    │   ├── APIStatusError           a non-2xx HTTP status (carries status_code, body, retry_after)
    │   │   ├── BadRequestError      400 / 422
    │   │   │   └── ContextOverflowError   the prompt does not fit the model's window
    │   │   ├── AuthenticationError  401
    │   │   ├── PermissionDeniedError 403
    │   │   ├── NotFoundError        404
    │   │   ├── RequestTimeoutError  408
    │   │   ├── RateLimitError       429 (also in-stream ``rate_limit_error``)
    │   │   │   └── OverloadedError  503 / 529 (also in-stream ``overloaded_error``)
    │   │   └── ServerError          other 5xx (501/505/506/508/510/511: never retried)
    │   ├── ProviderStreamError      an in-stream ``error`` event that is not a rate limit
    │   ├── UnexpectedResponseError  a 2xx that is not what was asked for: an HTML page, an empty
    │   │                            body, JSON instead of an event stream, another content type
    │   └── StreamProtocolError      malformed stream bytes: framing, UTF-8, JSON, ordering, size
    │       ├── TruncatedStreamError the stream ended without its terminal event
    │       ├── DecompressionLimitError a compressed body inflated past a limit (never retried)
    │       └── InvalidToolInputError a closed tool block whose JSON does not parse
    ├── StreamTimeoutError           a stream deadline fired (``kind``: first_event, idle, total)
    ├── RateLimitEscalation          the rate-limit ladder gave up (feeds the model breaker)
    │   └── RetryAfterBeyondDeadline a Retry-After longer than the turn has left (failover)
    ├── RescueFailed                 the stream failed and the non-streaming rescue failed too
    ├── RescueTimeoutError           the rescue request did not finish within its deadline
    ├── FallbackExhausted            every model of the fallback chain has failed
    └── ToolTimeoutError             a tool outlived its timeout (told to the model, not raised)

Whether an error is worth another attempt is decided in one place, :func:`is_retryable`;
``docs/reliability.md`` lists every failure, the error it becomes and whether it is retried.

Secrets: no error here ever stores request headers. Messages carry response bodies (capped),
status codes and counts, never an API key; :func:`redact` is applied to every body we keep, and
the clients pass every error they raise through :func:`scrub_secrets` with their own key, which
also drops chained third-party exceptions (they may hold the request and its headers).
"""

from __future__ import annotations

from .._redact import redact
from ._classify import (
    PERMANENT_SERVER_STATUSES,
    is_rate_limit,
    is_retryable,
    scrub_secrets,
    status_error,
)
from ._tree import (
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
)

__all__ = [
    "PERMANENT_SERVER_STATUSES",
    "APIStatusError",
    "AuthenticationError",
    "BadRequestError",
    "Cancelled",
    "ConfigError",
    "ConnectError",
    "ContextOverflowError",
    "DecompressionLimitError",
    "FallbackExhausted",
    "InvalidToolInputError",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "ProviderError",
    "ProviderStreamError",
    "RateLimitError",
    "RateLimitEscalation",
    "ReadError",
    "RequestTimeoutError",
    "RescueFailed",
    "RescueTimeoutError",
    "RetryAfterBeyondDeadline",
    "RxturnError",
    "ServerError",
    "StreamProtocolError",
    "StreamTimeoutError",
    "ToolTimeoutError",
    "TransportError",
    "TruncatedStreamError",
    "UnexpectedResponseError",
    "is_rate_limit",
    "is_retryable",
    "redact",
    "scrub_secrets",
    "status_error",
]
