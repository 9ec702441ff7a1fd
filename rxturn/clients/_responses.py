"""Reading what came back: error bodies read up to a cap and summarised on one line, header
verdicts, and what a 2xx that is not the asked-for body most likely is.

Functions over an :class:`~rxturn.transport.HttpResponse` and its bytes, and the typed errors
built from them (:func:`status_error_of`, :func:`unexpected`, :func:`json_instead_of_stream`),
which the client in :mod:`rxturn.clients._http` raises.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from .._headers import header
from .._redact import one_line, without_base64
from ..errors import (
    APIStatusError,
    DecompressionLimitError,
    ProviderError,
    StreamProtocolError,
    TransportError,
    UnexpectedResponseError,
    redact,
    status_error,
)
from ..resilience.backoff import parse_retry_after

if TYPE_CHECKING:
    from ..transport import HttpResponse

__all__ = [
    "ERROR_BODY_LIMIT",
    "HEAD_BYTES",
    "HTML_TYPES",
    "ErrorContext",
    "is_json_type",
    "json_instead_of_stream",
    "judge",
    "looks_html",
    "media_type",
    "parse_should_retry",
    "preview",
    "read_error_body",
    "read_head",
    "readable",
    "status_error_of",
    "unexpected",
]

#: Error bodies are read up to this many bytes (docs/reliability.md).
ERROR_BODY_LIMIT = 8 * 1024


# --- header parsing (pure, unit-tested) -------------------------------------------------------


def parse_should_retry(value: str | None) -> bool | None:
    """The ``x-should-retry`` header verdict: ``"true"`` / ``"false"``, else ``None``."""
    if value is None:
        return None
    lowered = value.strip().lower()
    return True if lowered == "true" else False if lowered == "false" else None


# --- error bodies -----------------------------------------------------------------------------

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_SCRIPT = re.compile(r"<(script|style)[^>]*>.*?</\1>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")


def readable(raw: bytes, content_type: str) -> str:
    """A one-line summary of a non-JSON error body (an HTML page from a proxy, plain text)."""
    text = raw.decode("utf-8", "replace").strip()
    is_html = "html" in content_type.lower() or text[:1] == "<"
    if is_html:
        title = _TITLE.search(raw)
        if title:
            summary = _SPACE.sub(" ", html.unescape(title.group(1).decode("utf-8", "replace")))
        else:
            summary = _SPACE.sub(" ", html.unescape(_TAG.sub(" ", _SCRIPT.sub(" ", text))))
        summary = summary.strip()
        return f"{summary[:200]} (HTML error page)" if summary else "(HTML error page)"
    return without_base64(_SPACE.sub(" ", text))[:300]


async def read_error_body(response: HttpResponse) -> tuple[bytes, str]:
    """At most :data:`ERROR_BODY_LIMIT` bytes of an error body, and a note if reading failed.

    The rest of a longer body is never read: closing the response drops the connection.
    """
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            parts.append(chunk)
            size += len(chunk)
            if size >= ERROR_BODY_LIMIT:
                return b"".join(parts)[:ERROR_BODY_LIMIT], ""
    except (TransportError, DecompressionLimitError) as exc:  # the status still says what failed
        return b"".join(parts), f" [error body unreadable: {exc}]"
    return b"".join(parts), ""


# --- 2xx responses that are not what was asked for ------------------------------------------

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: Bytes of a body kept to show how it starts (more than the preview, so that a key cut by the
#: preview's end is still whole when it is scrubbed).
HEAD_BYTES = 1024
_PREVIEW_CHARS = 160


def media_type(headers: Mapping[str, str]) -> str:
    """The declared media type, lower-cased, without parameters (``""`` when none)."""
    content_type = header(headers, "content-type") or ""
    return content_type.split(";", 1)[0].strip().lower()


def is_json_type(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def looks_html(head: bytes) -> bool:
    return head.lstrip()[:1] == b"<"


def preview(head: bytes, secrets: tuple[str, ...]) -> str:
    """How a body starts, on one line: secrets removed, whitespace collapsed, cut short."""
    text = redact(head[: HEAD_BYTES * 4].decode("utf-8", "replace"), secrets)
    text = one_line(text)
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS] + "…"


async def read_head(response: HttpResponse) -> bytes:
    """The start of a body that will not be used (at most :data:`ERROR_BODY_LIMIT` bytes)."""
    raw, _ = await read_error_body(response)
    return raw


def judge(
    status: int, media: str, head: bytes, stream: bool, failure: StreamProtocolError | None
) -> tuple[str, bool]:
    """What a 2xx that is not the asked-for body most likely is, and whether a retry can help.

    The rule of thumb: retry when something between us and the provider may have spoiled this
    one response; do not when the response shows the request reached the wrong thing, which
    answers the same way every time (``docs/reliability.md`` has the table).
    """
    if not head.strip():
        if status in (204, 205):
            # The server said on purpose that it has nothing for this request: the same request
            # gets the same answer (a wrong endpoint that accepts any POST).
            return "the server answered with no content", False
        # An upstream or a proxy closed before writing anything; the same as a stream cut off
        # before its first event, which the ladder retries.
        return "the body is empty", True
    if media in HTML_TYPES or looks_html(head):
        # A web page for people: a captive portal, a proxy's login page, a wrong base_url. It
        # will be the same page on the next attempt; retrying would only delay a clear error.
        title = _TITLE.search(head)
        named = ""
        if title:
            named = _SPACE.sub(" ", html.unescape(title.group(1).decode("utf-8", "replace")))
            named = f" ({named.strip()[:80]!r})" if named.strip() else ""
        return (
            f"an HTML page{named}: a captive portal, a proxy's login page or a wrong base_url?",
            False,
        )
    if stream and media == "application/json":
        # A JSON document without an error object: the server ignores "stream": true, and will
        # keep ignoring it.
        return 'a JSON document: does the server ignore "stream": true?', False
    if not stream and media == "text/event-stream":
        # The mirror case: the server streams although "stream" was false; it always will.
        return 'an event stream: does the server ignore "stream": false?', False
    # Another content type (or none) whose body does not decode: a misrouted request or an
    # intermediary's one-off answer; which one cannot be told, so a few quick retries decide.
    if failure is not None:
        return f"it does not decode ({failure})", True
    return "not a single event in it", True


# -- the typed errors -------------------------------------------------------------------------


class ErrorContext(NamedTuple):
    """What an error about a response says besides the response: where it came from (shown
    without secrets), the secrets to remove, and whether the stream asked for was NDJSON."""

    url: str
    secrets: tuple[str, ...]
    ndjson: bool


async def status_error_of(response: HttpResponse, secrets: tuple[str, ...]) -> APIStatusError:
    """The typed error for a non-2xx response: its body read up to a cap, the provider's own
    error type and message when it sent them, its Retry-After and x-should-retry; a redirect
    (a 3xx with a ``Location``) says it was not followed. ``secrets`` never reach the message
    or the body."""
    from ..wire import parse_error_body

    headers = response.headers
    status = response.status
    raw, note = await read_error_body(response)
    error_type, error_message = parse_error_body(raw)
    location = header(headers, "location") if 300 <= status < 400 else None
    if location:  # a 3xx without one (304 Not Modified, 300) is no redirect: its body says more
        detail = (
            f"redirect to {redact(location, secrets)} not followed (rxturn never follows "
            "redirects, so an API key is never sent to another host; fix base_url)"
        )
    elif error_message is not None:
        detail = f"{error_type}: {error_message}" if error_type else error_message
    else:
        detail = readable(raw, header(headers, "content-type") or "")
    text = raw.decode("utf-8", "replace")
    return status_error(
        status,
        redact(text + note, secrets),
        retry_after=parse_retry_after(headers),
        request_id=header(headers, "request-id") or header(headers, "x-request-id"),
        error_type=error_type,
        error_message=redact(detail, secrets) if detail else None,
        should_retry=parse_should_retry(header(headers, "x-should-retry")),
    )


def unexpected(
    response: HttpResponse,
    media: str,
    head: bytes,
    stream: bool,
    context: ErrorContext,
    failure: StreamProtocolError | None = None,
) -> UnexpectedResponseError:
    """The error for a 2xx whose body is not what was asked for; see :func:`judge`."""
    status = response.status
    expected = (
        ("an NDJSON stream" if context.ndjson else "an event stream") if stream else "a JSON reply"
    )
    reason, retryable = judge(status, media, head, stream, failure)
    return UnexpectedResponseError(
        status_code=status,
        # (lower-cased: a secret echoed in the header is looked for lower-cased too)
        content_type=redact(media, tuple(secret.lower() for secret in context.secrets)),
        url=context.url,
        head=preview(head, context.secrets),
        expected=expected,
        reason=redact(reason, context.secrets),
        retryable=retryable,
    )


async def json_instead_of_stream(response: HttpResponse, context: ErrorContext) -> ProviderError:
    """A 2xx JSON body where an event stream was asked for: usually an error in disguise.

    An error object keeps the provider's own classification (an overload still goes to the
    rate-limit ladder), its message saying where it came from; any other JSON document is an
    :class:`~rxturn.errors.UnexpectedResponseError`.
    """
    from ..wire import parse_error_body
    from ..wire._errors import stream_error

    raw, _ = await read_error_body(response)
    error_type, error_message = parse_error_body(raw)
    if error_type is None and error_message is None:
        return unexpected(response, "application/json", raw, True, context)
    error = stream_error(error_type, error_message)
    error.message = (
        f"{error.message} (HTTP {response.status} application/json from {context.url} "
        "instead of an event stream)"
    )
    error.args = (error.message,)
    return error
