"""Error bodies, in-stream error events, malformed events and bodies, and where a scripted
fault fires (see :mod:`rxturn.testing._emit`)."""

from __future__ import annotations

from typing import Literal

from ._emit_base import (
    ReplyContext,
    Wire,
    encode,
    openai_head,
    sse,
)
from ._scenario import Entry

__all__ = [
    "FaultAction",
    "error_body",
    "error_event",
    "fault_plan",
    "malformed_body",
    "malformed_event",
    "route_error_body",
]


# ----------------------------------------------------------------------------- errors and faults

_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}
_MESSAGES = {
    "rate_limit_error": "Rate limit exceeded",
    "requests": "Rate limit reached for requests",
    "overloaded_error": "Overloaded",
    "not_found_error": "model not found",
    "model_not_found": "model not found",
    "server_error": "The server had an error while processing your request",
}


def _error_text(kind: str, message: str | None) -> str:
    return message or f"{_MESSAGES.get(kind, 'Scripted error')} (rxturn fake provider)"


def error_body(
    wire: Wire,
    status: int,
    error_type: str | None = None,
    message: str | None = None,
    *,
    param: str | None = None,
    code: str | None = None,
) -> bytes:
    """The JSON body a provider sends with an HTTP error ``status``.

    Anthropic ``{"type":"error","error":{"type","message"}}``; OpenAI
    ``{"error":{"message","type","param","code"}}`` (``param`` and ``code``: the request
    field at fault and why, else the status's own code); Ollama ``{"error": "message"}``.
    """
    if wire == "anthropic":
        kind = error_type or _ANTHROPIC_ERROR_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        return encode(
            {"type": "error", "error": {"type": kind, "message": _error_text(kind, message)}}
        )
    if wire in ("openai", "openai-responses"):
        default_kind, default_code = _OPENAI_ERRORS.get(
            status, ("server_error", None) if status >= 500 else ("invalid_request_error", None)
        )
        code = code or default_code
        kind = error_type or default_kind
        text = _error_text(code if code in _MESSAGES else kind, message)
        return encode({"error": {"message": text, "type": kind, "param": param, "code": code}})
    kind = error_type or ("not_found" if status == 404 else "error")
    return encode({"error": message or f"{kind}: scripted HTTP {status} (rxturn fake provider)"})


def route_error_body(wire: Wire, status: int, message: str) -> bytes:
    """The JSON body of an HTTP error the route itself answers — a path no route serves
    (404), a method the route does not take (405), a body over the size limit (413) — in
    ``wire``'s error shape; OpenAI's carries no ``param`` and no ``code``, as the API's own."""
    if wire == "anthropic":
        kind = _ANTHROPIC_ERROR_TYPES.get(status, "invalid_request_error")
        return encode({"type": "error", "error": {"type": kind, "message": message}})
    if wire in ("openai", "openai-responses"):
        error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
        return encode({"error": error})
    return encode({"error": message})


def error_event(
    wire: Wire, error_type: str | None, message: str | None = None, sequence: int = 0
) -> bytes:
    """An in-stream error event (the stream ends after it, as with the real providers).
    ``sequence``: the events written before it, the Responses ``sequence_number`` it takes."""
    if wire == "anthropic":
        kind = error_type or "overloaded_error"
        payload = {"type": "error", "error": {"type": kind, "message": _error_text(kind, message)}}
        return sse(b"error", payload)
    if wire == "openai":
        kind = error_type or "server_error"
        payload = {
            "error": {
                "message": _error_text(kind, message),
                "type": kind,
                "param": None,
                "code": None,
            }
        }
        return b"data: " + encode(payload) + b"\n\n"
    if wire == "openai-responses":
        kind = error_type or "server_error"
        payload = {
            "type": "error",
            "code": kind,
            "message": _error_text(kind, message),
            "param": None,
            "sequence_number": sequence,
        }
        return sse(b"error", payload)
    kind = error_type or "server_error"
    return encode({"error": message or f"{kind}: scripted in-stream error"}) + b"\n"


def malformed_event(wire: Wire, ctx: ReplyContext) -> bytes:
    """One event whose data is not valid JSON (an unterminated string), framing intact."""
    if wire == "anthropic":
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
            b'"delta":{"type":"text_delta","text":"unterminated\n\n'
        )
    if wire == "openai":
        return openai_head(ctx) + b'[{"index":0,"delta":{"content":"unterminated\n\n'
    if wire == "openai-responses":
        return (
            b"event: response.output_text.delta\n"
            b'data: {"type":"response.output_text.delta","delta":"unterminated\n\n'
        )
    return b'{"model":' + encode(ctx.model) + b',"message":{"role":"assistant","content":"unter\n'


def malformed_body(body: bytes) -> bytes:
    """A non-streaming body cut in half: valid framing, invalid JSON."""
    return body[: max(1, len(body) // 2)]


FaultAction = Literal["stall", "malformed", "error_event", "drop"]
_ORDER: dict[FaultAction, int] = {"stall": 0, "malformed": 1, "error_event": 2, "drop": 3}


def fault_plan(entry: Entry, n_events: int) -> list[tuple[int, FaultAction]]:
    """Where the entry's faults fire: ``(events written before it, action)``, in order.

    A position at or past the end of the stream is pulled in to just before the last event,
    so a scripted fault always happens (``drop_after_events: 99`` on a 10-event stream still
    loses the terminal event). ``error_event`` and ``drop`` end the stream.
    """
    last = max(n_events - 1, 0)
    scripted: tuple[tuple[int | None, FaultAction], ...] = (
        (entry.stall_after_events, "stall"),
        (entry.malformed_after_events, "malformed"),
        (entry.error_event_after_events, "error_event"),
        (entry.drop_after_events, "drop"),
    )
    plan: list[tuple[int, FaultAction]] = [
        (min(after, last), action) for after, action in scripted if after is not None
    ]
    plan.sort(key=lambda item: (item[0], _ORDER[item[1]]))
    return plan
