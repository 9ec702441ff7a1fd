"""What a failure means to each part of the handler, in one table.

Theory of operation. Four places judge a failed attempt: the retry ladder (which ladder, if
any, may try again), the rescue (may a non-streaming request still save the turn), same-turn
failover (may another model of the chain take the turn) and the model breaker (how the failure
counts). Each asks :func:`classify`, which walks :data:`TABLE` top to bottom and returns the
first row whose test matches; the rows are module constants, so a lookup allocates nothing.

=========================  ==========  =========  ==========  ===========
failure                    ladder      rescuable  fails over  kind
=========================  ==========  =========  ==========  ===========
cancel (``Cancelled``)     none        no         no          (none)
configuration error        none        no         no          transient
escalation / beyond        none        no         yes         rate_limit
rescue failed              none        no         yes         transient
rate limit (429/503/529)   rate_limit  yes        yes         transient
rate limit the provider    none        no         yes         transient
says not to retry
total timeout              none        yes        yes         transient
other stream timeout       transport   yes        yes         transient
refused key (401)          none        no         no          transient
malformed request (400)    none        no         no          transient
401 / 400 the provider     transport   yes        no          transient
says to retry
other, retryable           transport   yes        yes         transient
other, permanent           none        no         yes         transient
=========================  ==========  =========  ==========  ===========

*Retryable* is :func:`rxturn.errors.is_retryable` (the provider's ``x-should-retry``, the
status, the error's own ``retryable``); the rows above it decide first. A permanent error is
never rescued (the same request would fail again) but may fail over: another model may not
know the model name that was not found, or serve the endpoint that is gone (a 501, or a
connection no retry can fix: a certificate that does not verify, a server that does not speak
the URL's scheme — the transport marks those not retryable); a context
overflow is "other": a bigger model may take the request. A refused key or a malformed
request would fail the same way on every model of the chain, so it never fails over.

A hedged first token's race (:mod:`rxturn.resilience.hedge`) reads the same table: a racer's
failure that fails over to no model ends the race (:func:`ends_race`, which adds a refused
permission, 403), a rate limit marks the primary's quota, anything else hands over to the
racers still running.
"""

from __future__ import annotations

import enum
import sys
from typing import Final, Literal, NamedTuple

from ..errors import (
    AuthenticationError,
    BadRequestError,
    Cancelled,
    ConfigError,
    ContextOverflowError,
    PermissionDeniedError,
    RateLimitError,
    RateLimitEscalation,
    RescueFailed,
    StreamTimeoutError,
    is_retryable,
)

__all__ = [
    "TABLE",
    "FailureKind",
    "Verdict",
    "classify",
    "ends_race",
    "fails_over",
    "failure_kind",
    "is_cancel",
    "is_rate_limit",
    "is_rescuable",
]


class FailureKind(enum.Enum):
    """How a failed turn counts. The two differ only while RECOVERING (docs/behaviour.md §3)."""

    #: Timeouts, 5xx, network trouble, malformed streams: everything but an escalation.
    TRANSIENT = "transient"
    #: The stream handler's rate-limit ladder gave up (:class:`~rxturn.errors.RateLimitEscalation`).
    RATE_LIMIT = "rate_limit"


class Verdict(NamedTuple):
    """One row of :data:`TABLE`."""

    #: What the row is called in the table above.
    name: str
    #: The retry ladder whose budget a retry spends; ``"none"``: no retry.
    ladder: Literal["transport", "rate_limit", "none"]
    #: Whether the non-streaming rescue may run once the ladder let the failure out.
    rescuable: bool
    #: Whether same-turn failover may move the turn to the next model.
    fails_over: bool
    #: How the breaker counts it (``None``: no model failure).
    kind: FailureKind | None


_T = FailureKind.TRANSIENT
CANCEL: Final = Verdict("cancel", "none", False, False, None)
CONFIG: Final = Verdict("configuration error", "none", False, False, _T)
ESCALATION: Final = Verdict("escalation", "none", False, True, FailureKind.RATE_LIMIT)
RESCUE_FAILED: Final = Verdict("rescue failed", "none", False, True, _T)
RATE_LIMIT: Final = Verdict("rate limit", "rate_limit", True, True, _T)
#: A 429/503/529 sent with ``x-should-retry: false``: the provider says another attempt here
#: will not do (a spent quota), as the SDKs take it; another model may still serve.
RATE_LIMIT_STOP: Final = Verdict(
    "rate limit the provider says not to retry", "none", False, True, _T
)
TOTAL_TIMEOUT: Final = Verdict("total timeout", "none", True, True, _T)
STREAM_TIMEOUT: Final = Verdict("stream timeout", "transport", True, True, _T)
REFUSED_KEY: Final = Verdict("refused key", "none", False, False, _T)
MALFORMED: Final = Verdict("malformed request", "none", False, False, _T)
SAID_RETRY: Final = Verdict("401 / 400 the provider says to retry", "transport", True, False, _T)
TRANSIENT: Final = Verdict("other, retryable", "transport", True, True, _T)
PERMANENT: Final = Verdict("other, permanent", "none", False, True, _T)

#: The table, in the order :func:`classify` reads it.
TABLE: Final = (
    CANCEL,
    CONFIG,
    ESCALATION,
    RESCUE_FAILED,
    RATE_LIMIT,
    RATE_LIMIT_STOP,
    TOTAL_TIMEOUT,
    STREAM_TIMEOUT,
    REFUSED_KEY,
    MALFORMED,
    SAID_RETRY,
    TRANSIENT,
    PERMANENT,
)


def _asyncio_cancel(error: BaseException) -> bool:
    """Whether ``error`` is asyncio's ``CancelledError``. One exists only once asyncio has been
    imported, so the table reads the class from there and imports no asyncio itself."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(error, asyncio.CancelledError)


def classify(error: BaseException) -> Verdict:
    """The row of :data:`TABLE` that ``error`` falls in (first match, top to bottom)."""
    if isinstance(error, Cancelled) or _asyncio_cancel(error):
        return CANCEL
    if isinstance(error, ConfigError):
        return CONFIG
    if isinstance(error, RateLimitEscalation):
        return ESCALATION
    if isinstance(error, RescueFailed):
        return RESCUE_FAILED
    if isinstance(error, RateLimitError):
        return RATE_LIMIT if is_retryable(error) else RATE_LIMIT_STOP
    if isinstance(error, StreamTimeoutError):
        if error.kind == "total":
            return TOTAL_TIMEOUT
        return STREAM_TIMEOUT
    if isinstance(error, AuthenticationError):
        return SAID_RETRY if is_retryable(error) else REFUSED_KEY
    if isinstance(error, BadRequestError) and not isinstance(error, ContextOverflowError):
        return SAID_RETRY if is_retryable(error) else MALFORMED
    return TRANSIENT if is_retryable(error) else PERMANENT


def is_cancel(error: BaseException) -> bool:
    """Whether ``error`` is a stop, not a failure: :class:`~rxturn.errors.Cancelled` or asyncio's
    ``CancelledError`` (the table's first row)."""
    return classify(error) is CANCEL


def is_rescuable(error: BaseException) -> bool:
    """Whether a failure that reached the rescue should get a non-streaming attempt."""
    return classify(error).rescuable


def fails_over(error: BaseException) -> bool:
    """Whether ``error`` may send the turn to the next model of the chain."""
    return classify(error).fails_over


def ends_race(error: BaseException) -> bool:
    """Whether a racer failing with ``error`` ends a hedged race: no other request would fare
    better (a cancel, a configuration error, a refused key or permission, a malformed request).
    """
    return not classify(error).fails_over or isinstance(error, PermissionDeniedError)


def is_rate_limit(error: BaseException) -> bool:
    """Whether ``error`` is the provider's rate limit (429, 503, 529): the rate-limit ladder's."""
    return classify(error) in (RATE_LIMIT, RATE_LIMIT_STOP)


def failure_kind(error: BaseException) -> FailureKind | None:
    """Classify a turn's error for the breaker; ``None`` for a cancel, which is no model failure.

    >>> failure_kind(RateLimitEscalation(4))
    <FailureKind.RATE_LIMIT: 'rate_limit'>
    """
    return classify(error).kind
