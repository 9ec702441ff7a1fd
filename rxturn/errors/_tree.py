"""The classes of the error tree (the package docstring, :mod:`rxturn.errors`, draws it).

Each class is shown, pickled and documented as ``rxturn.errors.<Name>``: the tree is one
public module, split in two files only for size (the classes here, the verdicts about them in
:mod:`rxturn.errors._classify`).
"""

from __future__ import annotations

from typing import ClassVar

from .._redact import quoted, redact


class RxturnError(Exception):
    """Root of every error rxturn raises."""

    #: Default retry verdict for the class; :func:`is_retryable` reads it.
    retryable: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"

    def __reduce__(self) -> tuple[object, ...]:
        # Batch workers and Ray actors ship errors between processes, and copy.copy/deepcopy
        # go the same way. The default rebuilds with ``cls(*self.args)``, which fails (or
        # builds a wrong message) for every class whose __init__ takes other arguments than
        # its message; rebuild without calling __init__, then restore the attributes.
        return (_rebuild, (type(self), self.args), self.__dict__ or None)


def _rebuild(cls: type[RxturnError], args: tuple[object, ...]) -> RxturnError:
    """Unpickle one of the tree's errors: ``args`` as they were, attributes set after."""
    err = cls.__new__(cls)
    err.args = args
    return err


class ConfigError(RxturnError, ValueError):
    """The caller passed an invalid value (a policy field, an argument, a scenario)."""


class Cancelled(RxturnError):
    """The turn's cancel signal fired. A user stop is not a model failure: never retried."""

    def __init__(self, message: str = "cancelled") -> None:
        super().__init__(message)


class ProviderError(RxturnError):
    """Something went wrong talking to a provider."""

    retryable = True


class TransportError(ProviderError):
    """The HTTP exchange failed below the status line (DNS, TCP, TLS, a dropped connection).

    Whether another attempt can help is set per instance (``retryable``): most of these are
    transient (a reset or refused connection while a server restarts, a timeout, a TLS
    handshake cut short), but some are the same on every attempt — a certificate that does not
    verify, a server that does not speak the URL's scheme — and are not retried;
    ``docs/reliability.md`` lists which.
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable  # pyright: ignore[reportAttributeAccessIssue]


class ConnectError(TransportError):
    """Could not open a connection to the provider."""


class ReadError(TransportError):
    """The connection broke while the response was being read."""


class APIStatusError(ProviderError):
    """The provider answered with a non-2xx HTTP status.

    Attributes:
        status_code: the HTTP status, or ``None`` for an error reported inside a 200 stream.
        body: the (capped, redacted) response body text.
        retry_after: seconds the provider asked us to wait, if it said so.
        request_id: the provider's request id header, if any.
        error_type: the provider's error ``type`` string, if the body had one.
        should_retry: the ``x-should-retry`` header verdict, if the provider sent one.
    """

    retryable = False
    default_status: ClassVar[int | None] = None

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        body: str = "",
        retry_after: float | None = None,
        request_id: str | None = None,
        error_type: str | None = None,
        should_retry: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code if status_code is not None else self.default_status
        self.body = redact(body)
        self.retry_after = retry_after
        self.request_id = request_id
        self.error_type = error_type
        self.should_retry = should_retry


class BadRequestError(APIStatusError):
    """400 or 422: the request itself is wrong; retrying cannot help."""

    default_status = 400


class ContextOverflowError(BadRequestError):
    """The prompt does not fit the model's context window."""


class AuthenticationError(APIStatusError):
    """401: the API key is missing or invalid."""

    default_status = 401


class PermissionDeniedError(APIStatusError):
    """403: the key may not use this resource."""

    default_status = 403


class NotFoundError(APIStatusError):
    """404: unknown model or endpoint."""

    default_status = 404


class _NotesProgress(RxturnError):
    """What a streaming attempt had received when it failed: ``partial`` (at least one completed
    part) and ``events`` (events processed). The stream handler notes them; the message then
    ends with them, as a timeout's does."""

    partial: bool | None = None
    events: int | None = None

    def note_progress(self, *, partial: bool, events: int) -> None:
        """Record what the attempt had received; the message then says so."""
        self.partial = partial
        self.events = events

    def __str__(self) -> str:
        if self.events is None:
            return self.message
        flag = " (partial data)" if self.partial else ""
        return f"{self.message}{flag}, {self.events} events processed"


class RequestTimeoutError(_NotesProgress, APIStatusError):
    """408: the provider timed the request out (``partial`` / ``events`` as for a rate limit)."""

    retryable = True
    default_status = 408


class RateLimitError(_NotesProgress, APIStatusError):
    """429, or an in-stream ``rate_limit_error``: slow down (see ``retry_after``).

    ``partial`` and ``events`` say what the attempt had received before the rate limit (set by
    the stream handler; ``None`` before), and the message says so.
    """

    retryable = True
    default_status = 429
    kind: ClassVar[str] = "rate limit"


class OverloadedError(RateLimitError):
    """503 / 529, or an in-stream ``overloaded_error``: the provider is overloaded."""

    default_status = 529
    kind = "overloaded"


class ServerError(APIStatusError):
    """Any other 5xx."""

    retryable = True
    default_status = 500


class ProviderStreamError(ProviderError):
    """The provider sent an ``error`` event inside an otherwise healthy stream."""

    def __init__(self, message: str, *, error_type: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        if error_type in _PERMANENT_STREAM_ERROR_TYPES:
            self.retryable = False  # pyright: ignore[reportAttributeAccessIssue]


_PERMANENT_STREAM_ERROR_TYPES = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "not_found_error"}
)


class UnexpectedResponseError(ProviderError):
    """A 2xx response that is not what the request asked for.

    An HTML page (a captive portal, a proxy's login page, a wrong ``base_url``), an empty body,
    a JSON document where an event stream was asked for, an event stream where a JSON reply was,
    or a body of another content type that does not decode as the expected format. The message
    says what came back (status, content type), from which URL (no query string) and how the
    body starts (secrets removed, cut short). Whether another attempt can help depends on what
    came back, so ``retryable`` is set per instance; ``docs/reliability.md`` gives the reasons.

    Attributes:
        status_code: the HTTP status (a 2xx).
        content_type: the media type the server declared, lower-cased, without parameters
            (``""`` when it sent none).
        url: where the response came from (``scheme://host:port/path``).
        head: the start of the body as text (secrets removed, at most 160 characters).
        expected: what was asked for: ``"an event stream"`` or ``"a JSON reply"``.
    """

    def __init__(
        self,
        *,
        status_code: int,
        content_type: str,
        url: str,
        head: str,
        expected: str,
        reason: str,
        retryable: bool,
    ) -> None:
        kind = content_type or "(no content type)"
        body = f"body starts {head!r}" if head else "empty body"
        super().__init__(
            f"HTTP {status_code} {kind} from {url} instead of {expected}: {reason}; {body}"
        )
        self.status_code = status_code
        self.content_type = content_type
        self.url = url
        self.head = head
        self.expected = expected
        self.retryable = retryable  # pyright: ignore[reportAttributeAccessIssue]


class StreamProtocolError(ProviderError):
    """The stream's bytes are malformed: framing, UTF-8, JSON, event order or size limits.

    ``where`` says where (e.g. ``"line 12"``), when the decoder knows.
    """

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(f"{message} ({where})" if where else message)
        self.where = where


class TruncatedStreamError(StreamProtocolError):
    """The stream ended without the provider's terminal event: the reply is incomplete."""

    def __init__(self, events: int, where: str | None = None) -> None:
        super().__init__(
            f"stream ended without a terminal event after {events} events (truncated?)",
            where=where,
        )
        self.events = events


class DecompressionLimitError(StreamProtocolError):
    """A compressed response body inflated past a limit of the transport.

    ``limit`` names it (``"max_decompressed_bytes"`` or ``"max_expansion_ratio"``) and ``value``
    is its setting; see ``docs/reliability.md``. Never retried: another attempt asks the
    same server for the same body and would inflate it up to the limit again.
    """

    retryable = False

    def __init__(self, message: str, *, limit: str, value: float, where: str | None = None) -> None:
        super().__init__(message, where=where)
        self.limit = limit
        self.value = value


class InvalidToolInputError(StreamProtocolError):
    """A closed tool-call block's JSON arguments do not parse. ``raw`` holds them verbatim."""

    def __init__(self, detail: str, raw: str, *, where: str | None = None) -> None:
        super().__init__(f"invalid tool input JSON: {detail} (raw_len={len(raw)})", where=where)
        self.raw = raw


class StreamTimeoutError(RxturnError):
    """A stream deadline fired.

    Attributes:
        kind: ``"first_event"``, ``"idle"`` or ``"total"``.
        events: events received in the attempt (``"total"``: in the whole turn).
        partial: whether at least one completed part had been received.
        elapsed: seconds since the attempt (``"total"``: the turn) started.
    """

    retryable = True

    def __init__(
        self,
        kind: str,
        *,
        after: float,
        events: int,
        partial: bool,
        elapsed: float,
        consecutive: int = 1,
    ) -> None:
        what = {"first_event": "first-event", "idle": "idle", "total": "total"}.get(kind, kind)
        extra = f", {consecutive} consecutive" if kind != "total" and consecutive > 1 else ""
        super().__init__(
            f"{what} timeout: nothing for {after:g}s{extra} "
            f"({events} events in {elapsed:.1f}s{', partial data' if partial else ''})"
            if kind != "total"
            else f"total timeout after {elapsed:.1f}s, {events} events"
            f"{' (partial data)' if partial else ''}"
        )
        self.kind = kind
        self.after = after
        self.events = events
        self.partial = partial
        self.elapsed = elapsed
        self.consecutive = consecutive


class RateLimitEscalation(RxturnError):
    """The rate-limit ladder spent its retries: the model is saturated; let the breaker know."""

    retryable = False

    def __init__(self, attempts: int, retry_after: float | None = None) -> None:
        hint = f" (retry-after {retry_after:g}s)" if retry_after is not None else ""
        retries = "retry" if attempts == 1 else "retries"
        super().__init__(f"rate-limit escalation after {attempts} {retries}{hint}")
        self.attempts = attempts
        self.retry_after = retry_after


class RetryAfterBeyondDeadline(RateLimitEscalation):
    """The provider asked to wait longer than the turn has left: give up on this model now.

    Raised instead of waiting only when the caller asked for it (``give_up_beyond_deadline`` of
    :meth:`rxturn.StreamHandler.stream_turn_batches`, what same-turn failover does when another
    model is available). It counts as a rate-limit escalation for the model breaker.

    Attributes:
        remaining: seconds the turn had left when the wait was asked for.
    """

    def __init__(self, attempts: int, retry_after: float, remaining: float) -> None:
        super().__init__(attempts, retry_after)
        self.remaining = remaining
        self.message = (
            f"rate limited: retry-after {retry_after:g}s is beyond the turn's remaining "
            f"deadline ({max(remaining, 0.0):.1f}s)"
        )
        self.args = (self.message,)


class RescueFailed(RxturnError):
    """The stream failed and the non-streaming rescue failed as well. Both errors are kept."""

    def __init__(self, stream_error: BaseException, rescue_error: BaseException) -> None:
        # either may be a client's own exception, worded as it likes: quoted on one line,
        # without anything key-like, as rxturn's errors quote a server's words
        stream_text = quoted(stream_error)
        rescue_text = quoted(rescue_error)
        super().__init__(
            f"streaming failed ({stream_text}); the non-streaming rescue request failed too: "
            f"{rescue_text}"
        )
        self.stream_error = stream_error
        self.rescue_error = rescue_error


class RescueTimeoutError(RxturnError):
    """The non-streaming rescue did not answer within its deadline (docs/behaviour.md §2.6)."""

    def __init__(self, budget: float) -> None:
        super().__init__(
            f"the non-streaming rescue timed out (fallback request exceeded its deadline, "
            f"{budget:g}s)"
        )
        self.budget = budget


class FallbackExhausted(RxturnError):
    """Every model in the fallback chain has used up its strikes."""

    def __init__(self, primary: str | None, chain: list[str]) -> None:
        super().__init__(f"all fallback models failed (primary {primary!r}, chain {chain!r})")
        self.primary = primary
        self.chain = chain


class ToolTimeoutError(RxturnError):
    """A tool did not finish within its ``timeout``; the model is told, the run goes on.

    The agent loop never raises it: it becomes the failed tool result the model sees
    (``"ToolTimeoutError: tool 'name' did not finish within 30s"``).
    """

    def __init__(self, name: str, timeout: float) -> None:
        super().__init__(f"tool {name!r} did not finish within {timeout:g}s")
        self.name = name
        self.timeout = timeout


for _cls in (
    RxturnError,
    ConfigError,
    Cancelled,
    ProviderError,
    TransportError,
    ConnectError,
    ReadError,
    APIStatusError,
    BadRequestError,
    ContextOverflowError,
    AuthenticationError,
    PermissionDeniedError,
    NotFoundError,
    _NotesProgress,
    RequestTimeoutError,
    RateLimitError,
    OverloadedError,
    ServerError,
    ProviderStreamError,
    UnexpectedResponseError,
    StreamProtocolError,
    TruncatedStreamError,
    DecompressionLimitError,
    InvalidToolInputError,
    StreamTimeoutError,
    RateLimitEscalation,
    RetryAfterBeyondDeadline,
    RescueFailed,
    RescueTimeoutError,
    FallbackExhausted,
    ToolTimeoutError,
):
    _cls.__module__ = "rxturn.errors"
del _cls
