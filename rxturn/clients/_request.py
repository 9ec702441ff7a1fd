"""What a provider request is made of: the provider-agnostic half of every client, no IO.

The provider modules build their JSON bodies from a :class:`~rxturn.messages.Request` and its
:class:`~rxturn.messages.RequestOptions` with these helpers, the same way for all of them: the
per-request model override, ``max_tokens``, ``temperature`` and the tool choice are resolved and
checked here, and the body is encoded once. The HTTP half — sending, reading, statuses into
typed errors, secrets — is :mod:`rxturn.clients._http`.

``RequestOptions`` is a msgspec Struct, whose field types are not enforced when it is built in
Python: the isinstance checks below are real (pyright, trusting the annotations, would drop them).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence

import msgspec

from .._validate import is_number, positive
from ..errors import ConfigError
from ..messages import RequestOptions, ToolSchema

__all__ = [
    "JSONBody",
    "ToolChoice",
    "check_max_tokens",
    "encode_body",
    "from_env_key",
    "resolve_max_tokens",
    "resolve_model",
    "resolve_temperature",
    "resolve_tool_choice",
]

_encoder = msgspec.json.Encoder()

#: A request body before encoding: JSON values under string keys.
JSONBody = dict[str, object]


ToolChoice = tuple[str, str | None]
"""``(mode, tool name)``: mode is ``"auto"``, ``"any"``, ``"none"`` or ``"tool"``."""


def resolve_model(options: RequestOptions, default: str) -> str:
    """The per-request override when set, else the client's model (never mutating the client)."""
    if options.model is None:
        return default
    if not isinstance(options.model, str) or not options.model.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"RequestOptions.model must be a non-empty string, got {options.model!r}")
    return options.model


def resolve_max_tokens(options: RequestOptions, default: int | None) -> int | None:
    """``options.max_tokens`` when set, else the client's; must be a positive integer."""
    value = options.max_tokens if options.max_tokens is not None else default
    if value is None:
        return None
    if not positive(value, integer=True):  # RequestOptions fields are not type-checked
        where = "RequestOptions.max_tokens" if options.max_tokens is not None else "max_tokens"
        raise ConfigError(f"{where} must be a positive integer, got {value!r}")
    return value


def resolve_temperature(options: RequestOptions) -> float | None:
    value = options.temperature
    if value is None:
        return None
    if not is_number(value) or not math.isfinite(value):  # RequestOptions is not type-checked
        raise ConfigError(f"RequestOptions.temperature must be a finite number, got {value!r}")
    return value


def resolve_tool_choice(
    options: RequestOptions, tools: Sequence[ToolSchema] | None
) -> ToolChoice | None:
    """Validate ``options.tool_choice`` against the request's tools.

    ``"auto"`` / ``"none"`` without tools are dropped (nothing to choose from); ``"any"`` (alias
    ``"required"``) or a tool name without tools, or a name that is not among them, is a
    :class:`~rxturn.errors.ConfigError` — it could never be honoured.
    """
    choice = options.tool_choice
    if choice is None:
        return None
    if not isinstance(choice, str) or not choice:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"RequestOptions.tool_choice must be a non-empty string, got {choice!r}")
    names = [tool.name for tool in tools or ()]
    mode = {"auto": "auto", "none": "none", "any": "any", "required": "any"}.get(choice, "tool")
    if not names:
        if mode in ("auto", "none"):
            return None
        raise ConfigError(
            f"RequestOptions.tool_choice={choice!r} needs tools, but the request has none"
        )
    if mode == "tool":
        if choice not in names:
            raise ConfigError(
                f"RequestOptions.tool_choice names tool {choice!r}, which is not among the "
                f"request's tools {names!r}"
            )
        return ("tool", choice)
    return (mode, None)


def encode_body(body: Mapping[str, object]) -> bytes:
    """JSON-encode a request body; a value JSON cannot carry is a ConfigError, not a crash."""
    try:
        return _encoder.encode(body)
    except (TypeError, msgspec.EncodeError, OverflowError) as exc:
        raise ConfigError(f"request body is not JSON-serializable: {exc}") from exc


def check_max_tokens(client: str, value: int | None, *, required: bool) -> None:
    """A client's ``max_tokens`` setting: a positive integer (or ``None`` when optional)."""
    if value is None and not required:
        return
    if not positive(value, integer=True):
        or_none = "" if required else " or None"
        raise ConfigError(
            f"{client}: max_tokens must be a positive integer{or_none}, got {value!r}"
        )


def from_env_key(variable: str, client: str) -> str:
    """Read an API key from the environment; a missing or empty one is a ConfigError."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ConfigError(
            f"{client}.from_env: environment variable {variable} is not set; export it or pass "
            "api_key= to the constructor"
        )
    return value
