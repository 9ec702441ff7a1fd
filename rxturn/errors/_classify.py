"""What the error tree says about a failure: the typed error for an HTTP status, whether
another attempt could succeed, whether it is a rate limit, and the secrets scrub (exported from
:mod:`rxturn.errors`; docs/reliability.md lists every failure and its verdict)."""

from __future__ import annotations

from http import HTTPStatus

from .._redact import one_line, redact, scrub_exception
from ._tree import (
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ContextOverflowError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    RequestTimeoutError,
    RxturnError,
    ServerError,
)

__all__ = [
    "NEVER_RETRIED_STATUSES",
    "PERMANENT_SERVER_STATUSES",
    "is_rate_limit",
    "is_retryable",
    "scrub_secrets",
    "status_error",
]

_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: RequestTimeoutError,
    422: BadRequestError,
    429: RateLimitError,
    503: OverloadedError,
    529: OverloadedError,
}

#: 5xx statuses that say the server cannot serve this request at all, so no retry can help:
#: 501 Not Implemented (the method or endpoint does not exist there), 505 HTTP Version Not
#: Supported, 506 Variant Also Negotiates and 508 Loop Detected (server misconfiguration),
#: 510 Not Extended (the server wants a different request), 511 Network Authentication
#: Required (a captive portal wants a login first). Retrying spends the ladder's budget and the
#: user's time on an answer that will not change; x-should-retry still wins when sent.
PERMANENT_SERVER_STATUSES = frozenset({501, 505, 506, 508, 510, 511})

#: Statuses never retried, whatever the provider's ``x-should-retry`` says: the request, the
#: key or the model is wrong (400/401/403/404/422, a context overflow among them), or the
#: endpoint cannot serve it (501/505/511). A ``true`` there would spend the ladder's budget on
#: an answer that cannot change; a ``false`` still stops the retries of any other status.
NEVER_RETRIED_STATUSES = frozenset({400, 401, 403, 404, 422, 501, 505, 511})

_CONTEXT_WORDS = (
    "context length",
    "context window",
    "too many tokens",
    "prompt is too long",
    "maximum context",
    "context_length_exceeded",
    "exceeds maximum",
)


def status_error(
    status: int,
    body: str,
    *,
    retry_after: float | None = None,
    request_id: str | None = None,
    error_type: str | None = None,
    error_message: str | None = None,
    should_retry: bool | None = None,
) -> APIStatusError:
    """The typed error for an HTTP status (docs/behaviour.md §2.9), message ``"HTTP s: …"``."""
    cls: type[APIStatusError]
    if status in _STATUS_CLASSES:
        cls = _STATUS_CLASSES[status]
    elif 500 <= status <= 599:
        cls = ServerError
    else:
        cls = APIStatusError
    detail = error_message or body.strip() or "(empty body)"
    lowered = detail.lower()
    if cls is BadRequestError and any(word in lowered for word in _CONTEXT_WORDS):
        cls = ContextOverflowError
    message = f"HTTP {status}: {one_line(redact(_without_status(detail, status)))}"
    if len(message) > 500:
        message = message[:500] + "…"
    error = cls(
        message,
        status_code=status,
        body=body,
        retry_after=retry_after,
        request_id=request_id,
        error_type=error_type,
        should_retry=should_retry,
    )
    if status in PERMANENT_SERVER_STATUSES:
        error.retryable = False  # pyright: ignore[reportAttributeAccessIssue]  # see PERMANENT_SERVER_STATUSES
    return error


def _without_status(detail: str, status: int) -> str:
    """``detail`` without a leading repeat of the status the message already starts with: a
    server's default text (aiohttp's ``404: Not Found``, nginx's ``404 Not Found`` page) would
    read ``HTTP 404: 404: Not Found``. Only ``<status>:`` or ``<status> <its reason phrase>`` is
    dropped, so a body whose text merely starts with the same number keeps every word."""
    code = str(status)
    if not detail.startswith(code):
        return detail
    rest = detail[len(code) :]
    if rest.startswith(":"):
        rest = rest[1:].strip()
    elif rest[:1] == " ":
        rest = rest.strip()
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            return detail
        if not rest.lower().startswith(phrase.lower()):
            return detail
    else:
        return detail
    return rest or detail


def scrub_secrets(exc: BaseException, secrets: tuple[str, ...]) -> None:
    """Make ``exc`` safe to hand out: no secret anywhere in it, no third-party exception behind.

    In place, for ``exc`` and every rxturn error it reaches (attributes, ``__cause__``,
    ``__context__``): the message, ``args``, ``__notes__`` and every string or bytes attribute
    (the body, the provider's error type and request id, a tool call's raw arguments …) lose
    each secret and every key-looking token; a chained exception that is not an rxturn error is
    dropped, because third-party errors may hold the request (aiohttp's ``ClientResponseError``
    keeps ``request_info`` with the request headers) — the rxturn error's message already says
    what it was. This is the boundary where the clients hand errors to their callers.
    """
    scrub_exception(exc, secrets, RxturnError)


def is_retryable(exc: BaseException) -> bool:
    """Whether another attempt could succeed, decided in one place (docs/reliability.md).

    ``x-should-retry`` wins when the provider sent it, but for the
    :data:`NEVER_RETRIED_STATUSES`, which no header makes retryable; cancellation, config
    errors and 4xx statuses other than 408/409/429 are permanent; transport trouble, 5xx,
    timeouts and malformed streams are transient. Foreign exceptions are judged by their
    ``__cause__``.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, APIStatusError):
            if current.should_retry is not None:
                return current.should_retry and current.status_code not in NEVER_RETRIED_STATUSES
            if current.status_code == 409:
                return True
            return current.retryable
        if isinstance(current, RxturnError):
            return current.retryable
        current = getattr(current, "__cause__", None)  # (not an exception at all: no)
    return False


def is_rate_limit(exc: BaseException) -> bool:
    """Whether ``exc`` belongs on the rate-limit ladder (429 / 503 / 529 or in-stream)."""
    return isinstance(exc, RateLimitError)
