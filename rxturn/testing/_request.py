"""What the fake provider reads from a request body, checked as the real APIs check it.

One typed msgspec decode per wire both checks a body's structure and hands the server the few
fields it acts on (``stream``, whether usage is asked for, whether thinking or a structured
format is requested), so the server walks the body's dict only for what a request actually
uses. The rule, the same on every wire (docs/fake-provider.md):

* what a wire's API requires must be there with its JSON type — ``messages`` (Anthropic, OpenAI
  Chat) is a list of objects, each with a string ``role`` and a ``content`` that is a string or
  a list of objects (OpenAI Chat also ``null``; Ollama a string or ``null``);
* what the fake reads or a wire defines as a number, flag, list or object has that type when
  present: ``max_tokens`` an integer, ``stream`` a boolean, ``system`` a string or a list of
  objects, ``tools`` a list of objects, the structured-output field an object, and so on;
* the values the APIs bound are within their bounds: Anthropic requires ``max_tokens``, a token
  cap is 1 to 2**31 - 1, ``temperature`` 0 to 1 (Anthropic) or 0 to 2 (OpenAI), a message's
  ``role`` one the API knows (Anthropic ``user``/``assistant``; Ollama takes any);
* every other field is allowed and not looked at (providers add fields; clients send them).

A body that breaks the rule gets a 400 in its wire's error shape, naming the field the way that
API does: Anthropic ``messages.0.content: Input should be a valid list``; OpenAI ``Invalid type
for 'messages[0]': expected an object, but got an integer instead.`` with ``param`` and
``code`` (``invalid_type``, ``missing_required_parameter``); Ollama ``{"error": "..."}``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal, cast

import msgspec
from msgspec import UNSET, Struct, UnsetType

from ._emit_base import Wire

__all__ = ["BodyFields", "BodyProblem", "read_body"]

_Object = dict[str, Any]
#: a reply's token cap: what the providers accept (and rxturn's own ``max_tokens`` rule)
_Tokens = Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
#: sampling temperature: Anthropic's range, and OpenAI's (Chat and Responses)
_AnthropicTemperature = Annotated[float, msgspec.Meta(ge=0, le=1)]
_OpenAITemperature = Annotated[float, msgspec.Meta(ge=0, le=2)]
#: the roles a message may have: the Anthropic API's, and OpenAI Chat's
_ANTHROPIC_ROLES: Final = ("user", "assistant")
_OPENAI_ROLES: Final = ("system", "assistant", "user", "function", "tool", "developer")


class BodyFields(Struct, frozen=True, kw_only=True):
    """The fields of a request the server acts on (the body itself stays a dict for the
    records).

    Attributes:
        stream: the reply streams: ``stream`` is true (Ollama: or absent, its default).
        include_usage: OpenAI Chat ``stream_options.include_usage`` is true.
        encrypted_reasoning: Responses ``include`` names ``reasoning.encrypted_content``.
        thinking: Anthropic ``thinking`` is present (its rule needs a look at the history).
        formatted: the wire's structured-output field is present.
        cached: Anthropic: some ``cache_control`` may be present (tools, system, or the body).
    """

    stream: bool = False
    include_usage: bool = False
    encrypted_reasoning: bool = False
    thinking: bool = False
    formatted: bool = False
    cached: bool = False


class BodyProblem(Struct, frozen=True, kw_only=True):
    """Why a body is refused: the 400's message, and for OpenAI its ``param`` and ``code``."""

    message: str
    param: str | None = None
    code: str | None = None


# ----------------------------------------------------------------------------- the wire types


class _AnthropicMessage(Struct):
    role: Literal["user", "assistant"]
    content: str | list[_Object]


class _Anthropic(Struct, frozen=True):
    messages: list[_AnthropicMessage]
    max_tokens: _Tokens
    stream: bool | None = None
    temperature: _AnthropicTemperature | None = None
    system: str | list[_Object] | None = None
    tools: list[_Object] | UnsetType | None = UNSET
    thinking: _Object | UnsetType | None = UNSET
    output_config: _Object | UnsetType | None = UNSET
    cache_control: _Object | UnsetType | None = UNSET


class _StreamOptions(Struct):
    include_usage: bool | None = None


class _OpenAIMessage(Struct):
    role: Literal["system", "assistant", "user", "function", "tool", "developer"]
    content: str | list[_Object] | None = None


class _OpenAI(Struct, frozen=True):
    messages: list[_OpenAIMessage]
    max_tokens: _Tokens | None = None
    max_completion_tokens: _Tokens | None = None
    stream: bool | None = None
    temperature: _OpenAITemperature | None = None
    stream_options: _StreamOptions | None = None
    tools: list[_Object] | None = None
    response_format: _Object | None = None


class _Responses(Struct, frozen=True):
    input: str | list[_Object] | None = None
    instructions: str | None = None
    max_output_tokens: _Tokens | None = None
    stream: bool | None = None
    temperature: _OpenAITemperature | None = None
    include: list[str] | None = None
    tools: list[_Object] | None = None
    text: _Object | None = None


class _OllamaMessage(Struct):
    role: str
    content: str | None = None  # Ollama (Go) reads a null string as empty


class _Ollama(Struct, frozen=True):
    messages: list[_OllamaMessage] | None = None
    stream: bool | UnsetType | None = UNSET
    tools: list[_Object] | None = None
    format: str | _Object | None = None
    options: _Object | None = None


_DECODERS: Final[dict[Wire, msgspec.json.Decoder[Any]]] = {
    "anthropic": msgspec.json.Decoder(_Anthropic),
    "openai": msgspec.json.Decoder(_OpenAI),
    "openai-responses": msgspec.json.Decoder(_Responses),
    "ollama": msgspec.json.Decoder(_Ollama),
}


def read_body(raw: bytes, wire: Wire, body: object = None) -> BodyFields | BodyProblem:
    """Check ``raw`` (a JSON object, already known to decode; ``body``, its decoded value,
    names a refused value in OpenAI's words) against ``wire``'s request structure: the fields
    the server acts on, or why the API would refuse it."""
    try:
        typed: Any = _DECODERS[wire].decode(raw)
    except msgspec.ValidationError as exc:
        return _problem(str(exc), wire, body)
    if isinstance(typed, _Anthropic):
        system = typed.system
        return BodyFields(
            stream=typed.stream is True,
            thinking=not isinstance(typed.thinking, UnsetType),
            formatted=not isinstance(typed.output_config, UnsetType),
            cached=not isinstance(typed.cache_control, UnsetType)
            or not isinstance(typed.tools, UnsetType)
            or isinstance(system, list)
            or any(not isinstance(message.content, str) for message in typed.messages),
        )
    if isinstance(typed, _OpenAI):
        options = typed.stream_options
        return BodyFields(
            stream=typed.stream is True,
            include_usage=options is not None and options.include_usage is True,
            formatted=typed.response_format is not None,
        )
    if isinstance(typed, _Responses):
        include = typed.include
        return BodyFields(
            stream=typed.stream is True,
            encrypted_reasoning=include is not None and "reasoning.encrypted_content" in include,
            formatted=typed.text is not None,
        )
    assert isinstance(typed, _Ollama)
    # Ollama streams unless told not to
    stream = typed.stream is True or isinstance(typed.stream, UnsetType)
    return BodyFields(stream=stream, formatted=typed.format is not None)


# ----------------------------------------------------------------------------- the 400's words

_ERROR = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_EXPECTED = re.compile(r"Expected `(?P<want>[^`]*)`, got `(?P<got>[^`]*)`")
_MISSING = re.compile(r"Object missing required field `(?P<name>[^`]*)`")
_BOUND = re.compile(r"Expected `(?P<kind>int|float)` (?P<op>[<>]=) (?P<limit>[^ ]+)")
_ENUM = re.compile(r"Invalid enum value (?P<value>.*)")

#: msgspec's type names → how the APIs say them: Anthropic (pydantic) and OpenAI
_ANTHROPIC_TYPE = {
    "array": "a valid list",
    "object": "a valid dictionary",
    "str": "a valid string",
    "int": "a valid integer",
    "float": "a valid number",
    "bool": "a valid boolean",
    "null": "None",
}
_OPENAI_TYPE = {
    "array": "an array",
    "object": "an object",
    "str": "a string",
    "int": "an integer",
    "bool": "a boolean",
    "float": "a number",
    "null": "null",
}


def _problem(error: str, wire: Wire, body: object = None) -> BodyProblem:
    match = _ERROR.match(error)
    assert match is not None  # the pattern matches any string
    what, path = match.group("what"), match.group("path") or ""
    steps = re.findall(r"\.([^.\[]+)|\[(\d+)\]", path)
    parts: list[str] = [name or index for name, index in steps]
    missing = _MISSING.fullmatch(what)
    if missing is not None:
        parts.append(missing.group("name"))
    expected = _EXPECTED.fullmatch(what)
    bound = _BOUND.fullmatch(what)
    enum = _ENUM.fullmatch(what)
    # (an int bound reads "1", a float one "1.0": both are said plainly)
    limit = _number(bound.group("limit")) if bound is not None else ""
    below = bound is not None and bound.group("op") == ">="
    if wire == "anthropic":
        where = ".".join(parts) or "body"
        if missing is not None:
            return BodyProblem(message=f"{where}: Field required")
        if bound is not None:
            side = "greater" if below else "less"
            return BodyProblem(message=f"{where}: Input should be {side} than or equal to {limit}")
        if enum is not None:
            allowed = " or ".join(repr(role) for role in _ANTHROPIC_ROLES)
            return BodyProblem(message=f"{where}: Input should be {allowed}")
        if expected is not None:
            wanted = " or ".join(_ANTHROPIC_TYPE.get(t, t) for t in _kinds(expected))
            return BodyProblem(message=f"{where}: Input should be {wanted}")
        return BodyProblem(message=f"{where}: {what}")
    param = _openai_param(parts)
    if missing is not None:
        if wire == "ollama":
            return BodyProblem(message=f"missing required field {param!r}")
        text = f"Missing required parameter: {param!r}."
        return BodyProblem(message=text, param=param, code="missing_required_parameter")
    if expected is not None:
        wanted = " or ".join(_OPENAI_TYPE.get(t, t) for t in _kinds(expected))
        got = _OPENAI_TYPE.get(expected.group("got"), expected.group("got"))
        if wire == "ollama":
            return BodyProblem(message=f"invalid type for {param!r}: expected {wanted}, got {got}")
        text = f"Invalid type for {param!r}: expected {wanted}, but got {got} instead."
        return BodyProblem(message=text, param=param, code="invalid_type")
    if bound is not None:
        kind = "integer" if bound.group("kind") == "int" else "decimal"
        side = "below minimum" if below else "above maximum"
        code = f"{kind}_{'below_min' if below else 'above_max'}_value"
        got_value = _at(body, parts)
        but = (
            ""
            if got_value is None
            else f", but got {msgspec.json.encode(got_value).decode()} instead"
        )
        text = (
            f"Invalid {param!r}: {kind} {side} value. "
            f"Expected a value {bound.group('op')} {limit}{but}."
        )
        return BodyProblem(message=text, param=param, code=code)
    if enum is not None:
        allowed = ", ".join(repr(role) for role in _OPENAI_ROLES[:-1])
        text = (
            f"Invalid value: {enum.group('value')}. Supported values are: {allowed}, "
            f"and {_OPENAI_ROLES[-1]!r}."
        )
        return BodyProblem(message=text, param=param, code="invalid_value")
    return BodyProblem(message=f"{param}: {what}", param=param, code="invalid_value")


def _at(body: object, parts: list[str]) -> object:
    """The value at ``parts`` (names and list indexes) in ``body``; ``None`` if there is none."""
    for part in parts:
        if isinstance(body, dict):
            body = cast("dict[str, object]", body).get(part)
            continue
        items = cast("list[object]", body) if isinstance(body, list) else None
        if items is None or not part.isdigit() or int(part) >= len(items):
            return None
        body = items[int(part)]
    return body


def _number(text: str) -> str:
    """``"1.0"`` → ``"1"``, ``"2147483647"`` as it is."""
    return text[:-2] if text.endswith(".0") else text


def _kinds(expected: re.Match[str]) -> list[str]:
    return [kind.strip() for kind in expected.group("want").split("|")]


def _openai_param(parts: list[str]) -> str:
    """``["messages", "0", "content"]`` → ``messages[0].content``."""
    text = ""
    for part in parts:
        text += f"[{part}]" if part.isdigit() else f".{part}" if text else part
    return text or "body"
