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

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import msgspec

from .._arguments import shown
from .._validate import (
    MAX_TOKENS,
    NON_FINITE,
    finite,
    holds_non_finite,
    json_problem,
    max_tokens_problem,
    object_schema_problem,
)
from ..errors import ConfigError
from ..messages import RequestOptions, ResponseFormat, ToolSchema

__all__ = [
    "NO_MESSAGE",
    "REASONING_EFFORTS",
    "THINKING_MIN_BUDGET",
    "JSONBody",
    "ToolChoice",
    "check_max_tokens",
    "check_options",
    "encode_body",
    "encode_tool_arguments",
    "from_env_key",
    "interleaved_thinking",
    "merge_extra_body",
    "put_sampling",
    "reject_reasoning_effort",
    "reject_thinking",
    "requested_max_tokens",
    "resolve_max_tokens",
    "resolve_model",
    "resolve_reasoning_effort",
    "resolve_temperature",
    "resolve_thinking",
    "resolve_tool_choice",
    "response_schema",
    "strict_schema",
]

_encoder = msgspec.json.Encoder()

#: The error of a request with no message for a wire whose API refuses one (``{api}``: its name)
NO_MESSAGE = (
    "{api} needs at least one message and this request has none (the history is empty): "
    "start with engine.run(prompt), or put a user message in the history first"
)

#: A request body before encoding: JSON values under string keys.
JSONBody = dict[str, object]


ToolChoice = tuple[str, str | None]
"""``(mode, tool name)``: mode is ``"auto"``, ``"any"``, ``"none"`` or ``"tool"``."""


def resolve_model(options: RequestOptions, default: str) -> str:
    """The per-request override when set, else the client's model (never mutating the client)."""
    if options.model is None:
        return default
    if not isinstance(options.model, str) or not options.model.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            f"RequestOptions.model must be a non-empty string, got {shown(options.model, 100)}"
        )
    return options.model


def resolve_max_tokens(options: RequestOptions, default: int | None) -> int | None:
    """``options.max_tokens`` when set, else the client's; an integer from 1 to
    :data:`MAX_TOKENS`."""
    value = options.max_tokens if options.max_tokens is not None else default
    if value is None:
        return None
    if type(value) is int and 0 < value <= MAX_TOKENS:  # the usual case, cheaply
        return value
    problem = max_tokens_problem(value)  # RequestOptions fields are not type-checked
    if problem is not None:
        where = "RequestOptions.max_tokens" if options.max_tokens is not None else "max_tokens"
        raise ConfigError(f"{where} {problem}, got {shown(value)}")
    return value


def requested_max_tokens(client: object, options: RequestOptions) -> int | None:
    """The ``max_tokens`` a request of ``client`` carries, as :func:`resolve_max_tokens` picks
    it (the client's default is its ``max_tokens`` attribute), for telling observers; ``None``
    when neither sets one, or the value is one the request refuses (its own error says so)."""
    try:
        return resolve_max_tokens(options, getattr(client, "max_tokens", None))
    except ConfigError:
        return None


def resolve_temperature(options: RequestOptions) -> float | None:
    value = options.temperature
    if value is None:
        return None
    if not finite(value):  # RequestOptions is not type-checked
        raise ConfigError(
            f"RequestOptions.temperature must be a finite number, got {shown(value, 100)}"
        )
    return value


def put_sampling(
    target: dict[str, Any],
    options: RequestOptions,
    *,
    max_tokens: int | None = None,
    tokens_key: str | None = None,
    stop_key: str | None = None,
) -> int | None:
    """Write the output cap (under ``tokens_key``, the client's ``max_tokens`` unless the options
    override it), the temperature and the stop sequences (under ``stop_key``) into ``target``,
    each only when set: every provider sends the same three, under its own names. Returns the
    output cap written (``None``: none)."""
    tokens = None
    if tokens_key is not None:
        tokens = resolve_max_tokens(options, max_tokens)
        if tokens is not None:
            target[tokens_key] = tokens
    temperature = resolve_temperature(options)
    if temperature is not None:
        target["temperature"] = temperature
    if stop_key is not None and options.stop_sequences:
        target[stop_key] = list(options.stop_sequences)
    return tokens


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
        raise ConfigError(
            f"RequestOptions.tool_choice must be a non-empty string, got {shown(choice, 100)}"
        )
    names = [tool.name for tool in tools or ()]
    mode = {"auto": "auto", "none": "none", "any": "any", "required": "any"}.get(choice, "tool")
    if not names:
        if mode in ("auto", "none"):
            return None
        raise ConfigError(
            f"RequestOptions.tool_choice={shown(choice, 100)} needs tools, but the request has none"
        )
    if mode == "tool":
        if choice not in names:
            raise ConfigError(
                f"RequestOptions.tool_choice names tool {shown(choice, 100)}, which is not among "
                "the "
                f"request's tools {shown(names, 200)}"
            )
        return ("tool", choice)
    return (mode, None)


#: The reasoning efforts OpenAI accepts (the official SDK's ``ReasoningEffort``).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
#: The smallest Anthropic extended-thinking budget the API accepts.
THINKING_MIN_BUDGET = 1024
#: Body fields ``extra_body`` may not set: the client decides them per request and path.
_CLIENT_OWNED = ("model", "stream")


def interleaved_thinking(*headers: Mapping[str, str] | None) -> bool:
    """Whether an ``anthropic-beta`` header among ``headers`` turns on interleaved thinking
    (``interleaved-thinking-2025-05-14``), under which Anthropic documents that the thinking
    budget may exceed ``max_tokens``: it covers every thinking block of the assistant turn."""
    for mapping in headers:
        for name, value in (mapping or {}).items():
            if name.lower() == "anthropic-beta" and any(
                beta.strip().startswith("interleaved-thinking-") for beta in value.split(",")
            ):
                return True
    return False


def resolve_thinking(
    options: RequestOptions, max_tokens: int | None, *, interleaved: bool = False
) -> int | None:
    """``options.thinking``, checked: an integer budget from 1024 to :data:`MAX_TOKENS`
    and below ``max_tokens`` — unless thinking is ``interleaved`` (:func:`interleaved_thinking`),
    where the API lets the budget exceed ``max_tokens``."""
    value = options.thinking
    if value is None:
        return None
    if max_tokens_problem(value) is not None or value < THINKING_MIN_BUDGET:
        raise ConfigError(
            f"RequestOptions.thinking must be a thinking budget in tokens, an integer >= "
            f"{THINKING_MIN_BUDGET} and <= {MAX_TOKENS}, got {shown(value)}"
        )
    if max_tokens is not None and value >= max_tokens and not interleaved:
        raise ConfigError(
            f"RequestOptions.thinking={shown(value)} must be below max_tokens={max_tokens} (the "
            "thinking budget is part of the output); raise max_tokens"
        )
    return value


def resolve_reasoning_effort(options: RequestOptions) -> str | None:
    """``options.reasoning_effort``, checked against :data:`REASONING_EFFORTS`."""
    value = options.reasoning_effort
    if value is None:
        return None
    if value not in REASONING_EFFORTS:
        allowed = ", ".join(REASONING_EFFORTS)
        raise ConfigError(
            f"RequestOptions.reasoning_effort must be one of {allowed}, got {shown(value, 100)}"
        )
    return value


def reject_thinking(options: RequestOptions, provider: str, instead: str) -> None:
    """A ``thinking`` budget is Anthropic's knob: elsewhere it is an error, not a silent no-op."""
    if options.thinking is not None:
        raise ConfigError(
            f"RequestOptions.thinking is Anthropic's extended-thinking budget; {provider} has "
            f"no such field ({instead})"
        )


def reject_reasoning_effort(options: RequestOptions, provider: str, instead: str) -> None:
    """``reasoning_effort`` is OpenAI's knob: elsewhere it is an error, not a silent no-op."""
    if options.reasoning_effort is not None:
        raise ConfigError(
            f"RequestOptions.reasoning_effort is OpenAI's reasoning knob; {provider} has no "
            f"such field ({instead})"
        )


def merge_extra_body(body: dict[str, Any], options: RequestOptions) -> dict[str, Any]:
    """Merge ``options.extra_body`` into ``body`` (top level, last: its values win).

    ``model`` and ``stream`` belong to the client (the routed model, the path's stream flag)
    and are refused, as is anything that is not a dict with string keys.
    """
    extra = options.extra_body
    if not extra:
        return body
    if not isinstance(extra, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"RequestOptions.extra_body must be a dict, got {type(extra).__name__}")
    for key in extra:
        if not isinstance(key, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"RequestOptions.extra_body keys must be non-empty strings, got {shown(key, 100)}"
            )
        if key in _CLIENT_OWNED:
            hint = "set RequestOptions.model" if key == "model" else "the client sets it per path"
            raise ConfigError(f"RequestOptions.extra_body may not set {key!r} ({hint})")
    body.update(extra)
    return body


def strict_schema(schema: object, *, require_all: bool = True) -> object:
    """A copy of a JSON Schema tightened for strict mode, the same on every wire.

    Every object schema gets ``additionalProperties: false`` (unless it says otherwise) and,
    with ``require_all`` (the default), lists all of its properties as ``required``; nested
    schemas (properties, items, ``anyOf`` …, ``$defs``) are tightened too. A ``$ref`` with
    keywords beside it (``{"$ref": "#/$defs/Place", "description": ...}``, how msgspec and
    pydantic describe a nested model), which strict mode refuses, is replaced by the definition
    it points at under those keywords, as the openai SDK's ``to_strict_json_schema`` does.
    ``require_all=False`` only closes the objects (what Anthropic's structured output demands
    of every schema). The caller's dict is never modified.

    Examples:
        >>> strict_schema({"type": "object", "properties": {"a": {"type": "string"}}})
        {'type': 'object', 'properties': {'a': {'type': 'string'}}, \
'additionalProperties': False, 'required': ['a']}
    """
    return _tightened(schema, require_all, schema, frozenset())


def _tightened(schema: object, require_all: bool, root: object, inlined: frozenset[str]) -> object:
    """:func:`strict_schema` of ``schema``, a part of ``root`` (where ``$ref`` s point), inside
    the ``inlined`` references. A reference met again inside its own inlining (a recursive
    definition) stays a reference: inlined, it would never end (or, with two such
    children, double at every level)."""
    if isinstance(schema, list):
        items: list[object] = schema  # pyright: ignore[reportUnknownVariableType] - user JSON
        return [_tightened(item, require_all, root, inlined) for item in items]
    if not isinstance(schema, dict):
        return schema
    source: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
    ref = source.get("$ref")
    if len(source) > 1 and isinstance(ref, str) and ref not in inlined:
        target = _resolved(root, ref)
        if target is not None:  # the definition, under the keywords beside the reference
            merged = {**target, **{k: v for k, v in source.items() if k != "$ref"}}
            return _tightened(merged, require_all, root, inlined | {ref})
    out: dict[str, Any] = {}
    for key, value in source.items():
        if key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(
            value, dict
        ):
            nested: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            out[key] = {
                name: _tightened(sub, require_all, root, inlined) for name, sub in nested.items()
            }
        elif key in ("items", "anyOf", "allOf", "oneOf", "prefixItems", "not", "additionalItems"):
            out[key] = _tightened(value, require_all, root, inlined)
        else:
            out[key] = value
    is_object = (
        source.get("type") == "object"
        or (isinstance(source.get("type"), list) and "object" in source["type"])
        or "properties" in source
    )
    if is_object:
        out.setdefault("additionalProperties", False)
        properties: Any = out.get("properties")
        if require_all and isinstance(properties, dict):
            out["required"] = list(properties)  # pyright: ignore[reportUnknownArgumentType]
    return out


def _resolved(root: object, ref: str) -> dict[str, Any] | None:
    """The object schema a local ``$ref`` (``#/$defs/Name``) points at in ``root``, or ``None``
    (a remote reference, or one that points at nothing: left for the API to judge)."""
    if not ref.startswith("#/"):
        return None
    found = root
    for key in ref[2:].split("/"):
        key = key.replace("~1", "/").replace("~0", "~")  # JSON Pointer escapes
        if not isinstance(found, dict) or key not in found:
            return None
        found = cast("dict[str, object]", found)[key]
    return cast("dict[str, Any]", found) if isinstance(found, dict) else None


def response_schema(fmt: ResponseFormat, *, close_objects: bool = False) -> dict[str, Any]:
    """The schema a response format sends: tightened by :func:`strict_schema` when the format
    is ``strict`` (as ``strict_tools`` tightens tools), its objects closed when the wire demands
    it (``close_objects``), else the caller's schema unchanged."""
    if fmt.strict:
        return cast("dict[str, Any]", strict_schema(fmt.schema))
    if close_objects:
        return cast("dict[str, Any]", strict_schema(fmt.schema, require_all=False))
    return fmt.schema


_FORMAT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _problem(name: str, value: object) -> str | None:
    """Why ``RequestOptions.<name>`` = ``value`` has the wrong type or range (``None``: fine)."""
    if value is None and name not in _NEVER_NONE:
        return None
    if name in ("model", "tool_choice"):
        if not isinstance(value, str) or not value.strip():
            return "must be a non-empty string"
    elif name == "reasoning_effort":
        if value not in REASONING_EFFORTS:
            return f"must be one of {', '.join(REASONING_EFFORTS)}"
    elif name == "max_tokens":
        return max_tokens_problem(value)
    elif name == "thinking":  # its type and floor: each wire's own rule (resolve_thinking)
        if type(value) is int and value > MAX_TOKENS:
            return max_tokens_problem(value)
    elif name == "temperature":
        if not finite(value) or value < 0:
            return "must be a finite number >= 0"
    elif name in ("strict_tools", "keep_thinking"):
        if not isinstance(value, bool):
            return "must be a bool" + (" or None" if name == "keep_thinking" else "")
    elif name == "response_format":
        return _format_problem(value)
    elif name == "stop_sequences":
        if not isinstance(value, tuple | list) or not all(
            isinstance(item, str) and item
            for item in cast("tuple[object, ...]", value)  # checked just above
        ):
            return "must be a tuple of non-empty strings"
    elif name in ("cache_system", "cache_tools", "cache_messages"):
        if not isinstance(value, bool) and value not in ("5m", "1h"):
            return "must be True, False, '5m' or '1h'"
    elif name == "tool_media_in_user":
        if not isinstance(value, bool):
            return "must be a bool"
    elif name == "prompt_cache_key":
        if not isinstance(value, str) or not value:
            return "must be a non-empty string"
    elif name in ("extra_headers", "extra_body", "prompt_cache_options"):
        if not isinstance(value, dict):
            return "must be a dict"
        if not all(isinstance(key, str) and key for key in cast("dict[object, object]", value)):
            return "keys must be non-empty strings"
        if name == "extra_headers" and not all(
            isinstance(item, str) for item in cast("dict[str, object]", value).values()
        ):
            return "must map header names to strings"
        if name != "extra_headers" and holds_non_finite(cast("dict[str, object]", value)):
            return f"must be JSON: {NON_FINITE}"
    return None


def _format_problem(value: object) -> str | None:
    if not isinstance(value, ResponseFormat):
        return "must be a ResponseFormat(name=..., schema={...})"
    if not isinstance(value.name, str) or not _FORMAT_NAME.match(value.name):  # pyright: ignore[reportUnnecessaryIsInstance]
        return (
            "name must be 1-64 letters, digits, '_' or '-' (the providers' rule), "
            f"got {shown(value.name)}"
        )
    if (problem := object_schema_problem(value.schema)) is not None:
        return f"schema {problem}"
    if not isinstance(value.strict, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"strict must be a bool, got {shown(value.strict)}"
    if (problem := json_problem(value.schema)) is not None:
        return f"schema must be JSON: {problem}"
    return None


def check_options(options: object) -> RequestOptions:
    """``options`` when it is a :class:`RequestOptions` whose every field has a usable type and
    range; else a :class:`ConfigError` naming the field (``RequestOptions.<field> ...``).

    The wire-specific rules (a knob one provider lacks, a thinking budget's floor) stay with
    each wire's body builder; this is what holds on every wire.
    """
    if not isinstance(options, RequestOptions):
        raise ConfigError(f"request_options must be a RequestOptions, got {type(options).__name__}")
    if options is _checked[0]:  # the same (frozen) options as the last request: checked
        return options
    if options == _DEFAULT:  # every field its default (compared by value): nothing to check
        return options
    for name in options.__struct_fields__:
        value = getattr(options, name)
        if value is None and name not in _NEVER_NONE:
            continue
        if not value and type(value) is _EMPTY_DEFAULTS.get(name):  # an empty default
            continue
        problem = _problem(name, value)
        if problem is not None:
            if name == "response_format" and isinstance(value, ResponseFormat):
                raise ConfigError(f"RequestOptions.response_format: {problem}")
            raise ConfigError(f"RequestOptions.{name} {problem}, got {shown(value)}")
    if options.response_format is not None and options.tool_choice not in (None, "auto", "none"):
        raise ConfigError(
            f"RequestOptions.tool_choice={shown(options.tool_choice, 100)} cannot act with a "
            "response_format: a structured-output request sends no tools (the reply is the "
            "JSON); leave tool_choice unset"
        )
    _checked[0] = options
    return options


def plain_options(options: object) -> bool:
    """:func:`check_options`, and whether ``options`` sets no knob: every field but ``model``
    and ``max_tokens`` (which every request resolves anyway) at its default.

    A body builder asks it once per request: plain options (what an engine sends when it was
    given none, or only a model and a cap) leave nothing to resolve, so the builder skips the
    per-field steps (each of which would find its field unset and do nothing)."""
    if type(options) is RequestOptions:
        # the same object as the last plain one: frozen, so only its two dicts can have changed
        if options is _plain[0] and not options.extra_headers and not options.extra_body:
            return True
        if options == _DEFAULT:  # (compared by value: a dict may have been filled since)
            return True
    checked = check_options(options)
    if checked.model is None and checked.max_tokens is None:  # not the defaults: a knob is set
        return False
    if msgspec.structs.replace(checked, model=None, max_tokens=None) != _DEFAULT:
        return False
    _plain[0] = checked
    return True


#: The last options :func:`check_options` passed (an engine sends the same object every turn).
_checked: list[RequestOptions | None] = [None]
#: The last options :func:`plain_options` found plain with a model or a cap set.
_plain: list[object] = [None]
_NEVER_NONE = frozenset({"strict_tools", "stop_sequences", "extra_headers", "extra_body"})
#: The options an engine sends when it was given none (each engine its own object).
_DEFAULT = RequestOptions()
#: The type of each field whose default is an empty tuple or dict (an empty one of the same
#: type needs no check; ``{}`` given for ``max_tokens`` or ``stop_sequences`` does).
_EMPTY_DEFAULTS: dict[str, type] = {
    name: type(default)
    for name in _DEFAULT.__struct_fields__
    if type(default := getattr(_DEFAULT, name)) in (tuple, dict) and not default
}


#: What msgspec's encoder raises for a value JSON cannot carry (a UnicodeEncodeError, a
#: ValueError too, is caught first and named by where it is).
_NOT_JSON = (TypeError, ValueError, msgspec.EncodeError, OverflowError, RecursionError)


def encode_body(body: Mapping[str, object]) -> bytes:
    """JSON-encode a request body; a value JSON cannot carry is a ConfigError, not a crash.

    Text that is not valid Unicode (a lone surrogate, which is what Python makes of bytes that
    are not UTF-8 when it decodes them with ``surrogateescape``) cannot be UTF-8 encoded: the
    encoder's ``UnicodeEncodeError`` becomes a ConfigError naming the field. Only that failure
    walks the body to find the field, so valid text costs nothing extra.
    """
    try:
        return _encoder.encode(body)
    except UnicodeEncodeError:
        raise ConfigError(_not_unicode("request body", body)) from None
    except _NOT_JSON as exc:  # ValueError: an int past the 4300 digits Python will write
        raise ConfigError(f"request body is not JSON-serializable: {exc}") from exc


def _not_unicode(what: str, value: object) -> str:
    """The one line for a value whose text is not valid Unicode: where it is, and which code
    point (escaped, never the text itself)."""
    found = _find_surrogate(value, "")
    if found is None:  # pragma: no cover - the encoder only fails on a surrogate
        return f"{what} holds text that is not valid Unicode (a lone surrogate)"
    where, char = found
    at = f" at {where}" if where else ""
    return (
        f"{what} holds text that is not valid Unicode{at} (a lone surrogate {char!a}, which is "
        "what Python makes of bytes that are not UTF-8); decode the input as UTF-8 or with "
        "errors='replace'"
    )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _find_surrogate(value: object, path: str) -> tuple[str, str] | None:
    """The path (``messages[0].content``) and the first lone surrogate in ``value``, if any."""
    if isinstance(value, str):
        match = _SURROGATE.search(value)
        return (path, match.group()) if match else None
    if isinstance(value, Mapping):
        for key, item in cast("Mapping[object, object]", value).items():
            if isinstance(key, str) and (match := _SURROGATE.search(key)):
                return (f"a key in {path}" if path else "a top-level key", match.group())
            name = f"{path}.{key}" if path else str(key)
            if (found := _find_surrogate(item, name)) is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        for index, item in enumerate(cast("Sequence[object]", value)):
            if (found := _find_surrogate(item, f"{path}[{index}]")) is not None:
                return found
    return None


def encode_tool_arguments(value: object) -> str:
    """A tool call's input as the JSON text OpenAI's APIs carry in ``arguments``."""
    try:
        return _encoder.encode(value).decode()
    except UnicodeEncodeError:
        raise ConfigError(_not_unicode("tool call input", value)) from None
    except _NOT_JSON as exc:
        raise ConfigError(f"tool call input is not JSON-serializable: {exc}") from exc


def check_max_tokens(client: str, value: int | None, *, required: bool) -> None:
    """A client's ``max_tokens`` setting: a positive integer (or ``None`` when optional)."""
    if value is None and not required:
        return
    problem = max_tokens_problem(value)
    if problem is not None:
        or_none = "" if required or "positive" not in problem else " or None"
        raise ConfigError(f"{client}: max_tokens {problem}{or_none}, got {shown(value)}")


def from_env_key(variable: str, client: str) -> str:
    """Read an API key from the environment; a missing or empty one is a ConfigError."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise ConfigError(
            f"{client}.from_env: environment variable {variable} is not set; export it or pass "
            "api_key= to the constructor"
        )
    return value
