"""Error helpers shared by the wire decoders: in-stream error events and provider error bodies.

Providers report failures in two places: inside a 200 stream (an Anthropic ``error`` event, an
OpenAI chunk with a top-level ``error``, an Ollama ``{"error": …}`` line) and in the body of a
non-2xx response. Both are classified here, once: rate limits and overload go to the rate-limit
ladder (:class:`~rxturn.errors.RateLimitError` / :class:`~rxturn.errors.OverloadedError`, with
``status_code`` ``None`` because no HTTP status said so), anything else is a
:class:`~rxturn.errors.ProviderStreamError`. Messages read ``"<type>: <message>"`` and pass through
:func:`~rxturn.errors.redact`.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from .._redact import one_line
from ..errors import (
    InvalidToolInputError,
    OverloadedError,
    ProviderError,
    ProviderStreamError,
    RateLimitError,
    StreamProtocolError,
    redact,
)
from ._lines import without_bom

__all__ = [
    "JSON_ERRORS",
    "MAX_INDEX",
    "OUT_OF_RANGE",
    "QUOTED_CHARS",
    "bad_index",
    "bad_json",
    "cut",
    "error_from_json",
    "missing_field",
    "nesting_detail",
    "parse_error_body",
    "shown",
    "stream_error",
    "tool_arguments",
]

#: Most characters of a server's string (an event type, an id, a tool name, a count) an error
#: message quotes: a hostile server's megabyte-long name stays out of the message.
QUOTED_CHARS = 40


def cut(text: str) -> str:
    """``text`` as an error message quotes it: at most :data:`QUOTED_CHARS` characters.

    Examples:
        >>> cut("x" * 50)
        'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'
    """
    return text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 3] + "..."


def shown(value: object) -> str:
    """``repr(value)``, :func:`cut`: how an error message quotes a value a server sent."""
    return cut(repr(value))


#: What a msgspec JSON decode raises on bad input. JSON nested deeper than the interpreter's
#: recursion limit (``[[[[…`` thousands of levels) makes msgspec raise ``RecursionError``, which
#: is not a ``DecodeError``: every decode site catches both and treats them alike (malformed
#: input: the attempt fails with a typed error and the retry ladder decides).
JSON_ERRORS = (msgspec.DecodeError, RecursionError)

#: The largest block / item / part / tool-call index a stream may name. Real replies use a
#: handful; anything past it (or negative) is malformed input, refused before any state is keyed
#: on it — so a huge index never allocates anything.
MAX_INDEX = 1023
OUT_OF_RANGE = f"is out of range (0..{MAX_INDEX})"


def bad_index(what: str, index: int, rule: str, where: str | None = None) -> StreamProtocolError:
    """The error for an index a stream may not use: ``what`` names it, ``rule`` says why.

    Examples:
        >>> str(bad_index("tool call index", -1, OUT_OF_RANGE))
        'tool call index -1 is out of range (0..1023)'
    """
    return StreamProtocolError(f"{what} {index} {rule}", where=where)


_RATE_LIMIT = frozenset(
    {"rate_limit_error", "rate_limit_exceeded", "rate_limited", "too_many_requests", "429"}
)
_OVERLOADED = frozenset({"overloaded_error", "overloaded", "server_overloaded", "503", "529"})

_any_decoder = msgspec.json.Decoder()


def stream_error(error_type: str | None, message: str | None, code: object = None) -> ProviderError:
    """The typed error for an error a provider reported inside a stream (or an error body).

    Args:
        error_type: the provider's error ``type`` (``"overloaded_error"``), if any.
        message: the provider's human-readable message, if any.
        code: OpenAI-style ``code`` (``429``, ``"rate_limit_exceeded"``), if any.
    """
    code_text = None if code is None or isinstance(code, bool) else str(code)
    label = error_type or code_text or "error"
    text = one_line(redact(f"{label}: {message or 'stream failed'}"))
    keys = {error_type, code_text}
    cls: type[RateLimitError] | None = None
    if keys & _OVERLOADED:
        cls = OverloadedError
    elif keys & _RATE_LIMIT:
        cls = RateLimitError
    if cls is None:
        return ProviderStreamError(text, error_type=error_type or code_text)
    error = cls(text, error_type=error_type or code_text)
    error.status_code = None  # reported in-stream: no HTTP status said so
    return error


def error_from_json(error: object) -> ProviderError:
    """The typed error for an ``error`` member: an object (type / message / code) or a string."""
    fields = _as_dict(error)
    if fields is None:
        return stream_error(None, error if isinstance(error, str) else str(error))
    etype, message = fields.get("type"), fields.get("message")
    return stream_error(
        etype if isinstance(etype, str) else None,
        message if isinstance(message, str) else None,
        fields.get("code"),
    )


def bad_json(
    what: str, exc: msgspec.DecodeError | RecursionError, line: int | None = None
) -> StreamProtocolError:
    """A malformed payload: ``invalid JSON in …`` or ``unexpected JSON shape in …`` (+ line).

    A ``RecursionError`` (JSON nested too deep to decode) reads ``invalid JSON in …: nested too
    deeply to decode``.
    """
    kind = "unexpected JSON shape" if isinstance(exc, msgspec.ValidationError) else "invalid JSON"
    detail = nesting_detail(exc) if isinstance(exc, RecursionError) else str(exc)
    return StreamProtocolError(
        f"{kind} in {what}: {detail}", where=f"line {line}" if line is not None else None
    )


def missing_field(what: str, field: str) -> StreamProtocolError:
    """A non-streaming body that is JSON but lacks ``field``, the one that makes it a reply of
    its wire: some other document (a health check, another API at a wrong base URL), which
    would otherwise parse as an empty reply. Worded as msgspec words a missing field."""
    return StreamProtocolError(
        f"unexpected JSON shape in {what}: Object missing required field `{field}`"
    )


def nesting_detail(exc: RecursionError) -> str:
    """The one-line reason for JSON too deep to decode (``exc`` is msgspec's RecursionError)."""
    return f"nested too deeply to decode ({exc})"


def parse_error_body(body: bytes) -> tuple[str | None, str | None]:
    """Extract ``(error type, message)`` from a provider's error body.

    Understands Anthropic ``{"type": "error", "error": {"type", "message"}}``, OpenAI
    ``{"error": {"message", "type", "code"}}`` (the ``code`` stands in for a null ``type``) and
    Ollama ``{"error": "…"}``, plus a bare top-level ``message`` / ``detail`` string. Anything
    that is not JSON (an HTML page from a proxy) gives ``(None, None)``.

    Examples:
        >>> parse_error_body(b'{"type":"error","error":{"type":"overloaded_error","message":"x"}}')
        ('overloaded_error', 'x')
        >>> parse_error_body(b"<html>502 Bad Gateway</html>")
        (None, None)
    """
    try:
        doc = _as_dict(_any_decoder.decode(without_bom(body)))
    except JSON_ERRORS:
        return None, None
    if doc is None:
        return None, None
    error = doc.get("error")
    if isinstance(error, str):
        return None, error
    fields = _as_dict(error)
    if fields is not None:
        etype, code, message = fields.get("type"), fields.get("code"), fields.get("message")
        if (not isinstance(etype, str) or not etype) and not isinstance(code, bool):
            etype = str(code) if isinstance(code, (str, int)) else None
        return etype, message if isinstance(message, str) else None
    for key in ("message", "detail"):
        value = doc.get(key)
        if isinstance(value, str):
            return None, value
    return None, None


def _as_dict(value: object) -> dict[str, Any] | None:
    """``value`` as a JSON object (msgspec decodes objects to ``dict[str, Any]``), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def tool_arguments(raw: str | None, position: int, name: str, *, truncated: bool = False) -> Any:
    """A non-streaming reply's tool-call ``arguments`` string, parsed (missing or blank: ``{}``).

    ``truncated``: the reply stopped at the token limit, so the arguments may end mid-way; they are
    parsed as far as they go, as the fold parses a tool call still open at a ``max_tokens``
    stop (:func:`~rxturn.wire._partial_json.parse_partial`, the official SDK's partial mode):
    the same reply gives the same message streamed or not.

    Raises:
        InvalidToolInputError: ``raw`` is not valid JSON (with ``truncated``: not even a prefix of
            JSON); says which call (``position``, ``name``) and keeps ``raw``.
    """
    if not raw or not raw.strip():
        return {}
    try:
        return _any_decoder.decode(raw)
    except JSON_ERRORS as exc:
        detail = nesting_detail(exc) if isinstance(exc, RecursionError) else str(exc)
        if truncated:
            from ._partial_json import parse_partial

            try:
                return parse_partial(raw)
            except ValueError as partial:
                detail = str(partial)
        raise InvalidToolInputError(
            f"tool call {position} ({shown(name)}) arguments: {detail}", raw
        ) from None
