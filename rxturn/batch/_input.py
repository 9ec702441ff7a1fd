"""Batch input: the row shapes, decoded with msgspec, and the one scan before any request.

A row is one JSON object per line, in one of four shapes:

* native prompt: ``{"id", "prompt", "system"?, "model"?, "options"?}``;
* native messages: ``{"id", "messages": [Message JSON…], "system"?, "model"?, "options"?}``
  (``options`` holds :class:`~rxturn.messages.RequestOptions` fields);
* an OpenAI Batch line: ``{"custom_id", "method", "url", "body": {"model", "messages", …}}``;
* an Anthropic Message Batches request: ``{"custom_id", "params": {"model", "messages", …}}``.

Messages go through the package's one converter (:func:`~rxturn.messages.as_message`), so a
row's media parts, tool calls and tool results become the parts a conversation would get; what
is batch-specific here is the row shapes, the ``system`` role lifted into the system prompt, and
each field of a provider line's body: mapped onto a request option, sent as written to the API
the line was made for (and refused for another provider), or refused when no output line can
hold what it asks (:func:`_split_body`; docs/batch.md, "Provider lines, field by field").

The key of a row is its ``id`` / ``custom_id``; a native row without one is keyed by its line
number and content. :func:`decode_row` is the one place that knows the shapes; the scan, the
runner and the workers all call it. :func:`input_sha` is the sha256 of a row's canonical JSON
(sorted keys, no whitespace), which tells an edited row from the one an output line answered.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, cast

import msgspec

from .._arguments import check_callable, described, shown
from .._validate import CONTROL_IN_NAME, PARTICIPANT_NAME, has_control
from ..clients._request import (
    check_options,
    merge_extra_body,
    resolve_thinking,
    resolve_tool_choice,
)
from ..errors import ConfigError
from ..messages import Message, RequestOptions, TextPart, as_message
from ._checks import MAX_LINE_BYTES, duplicate_key, json_problem, too_long
from ._errors import BatchInputError

__all__ = [
    "BatchRow",
    "InputIndex",
    "Spool",
    "check_row_options",
    "check_turn",
    "checked_sha",
    "decode_row",
    "input_sha",
    "is_stream",
    "iter_lines",
    "scan_input",
    "spool_input",
]

#: The request fields a row may set, beside its messages and system prompt.
_OPTION_FIELDS = frozenset(RequestOptions.__struct_fields__) - {"extra_headers"}
_NATIVE_KEYS = frozenset({"id", "prompt", "messages", "system", "model", "options"})
_canonical = msgspec.json.Encoder(order="sorted")
_decode_any = msgspec.json.Decoder()


class BatchRow(msgspec.Struct, frozen=True, kw_only=True):
    """One decoded row: what one turn asks.

    Attributes:
        key: the row's key (``id`` / ``custom_id``; line number and content when it has none).
        messages: the conversation the turn answers (ends with a user message).
        system: the row's own system prompt (``None``: the run's).
        model: the row's own model (``None``: the run's ``--model``).
        options: the row's request options (``max_tokens``, ``temperature``…), ``None`` when
            the row sets none.
    """

    key: str
    messages: tuple[Message, ...]
    system: str | None = None
    model: str | None = None
    options: dict[str, Any] | None = None


def input_sha(obj: object) -> str:
    """sha256 (hex) of ``obj``'s canonical JSON: keys sorted, no whitespace.

    Raises:
        BatchInputError: ``obj`` is no JSON data (see :func:`checked_sha`).
    """
    return hashlib.sha256(_canonical_json(obj, "input_sha", None)).hexdigest()


def _unspellable(obj: object) -> bool:
    """Whether ``obj`` holds a float that is NaN or infinite (JSON has neither)."""
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return True
        elif isinstance(value, Mapping):
            stack.extend(cast("Mapping[object, object]", value).values())
        elif isinstance(value, list | tuple):
            stack.extend(cast("Sequence[object]", value))
        elif isinstance(value, msgspec.Struct):
            stack.extend(msgspec.structs.astuple(value))
    return False


def checked_sha(obj: object, number: int) -> str:
    """:func:`input_sha` of a row made in Python (the API's rows, a Ray batch's), which can
    hold what no JSON line can.

    Raises:
        BatchInputError: the row is no JSON data (a value of a type JSON does not have, a
            number that is NaN or infinite, a key that is not a string, nesting too deep to
            encode, a string with a lone surrogate);
            the message names row ``number``.
    """
    text = _canonical_json(obj, f"row {number}", number)
    if b"null" in text and _unspellable(obj):  # msgspec writes NaN and infinities as null
        raise BatchInputError(
            f"row {number}: not JSON data: a number is NaN or infinite, which JSON has no "
            "spelling for",
            line=number,
        )
    return hashlib.sha256(text).hexdigest()


def _canonical_json(obj: object, where: str, line: int | None) -> bytes:
    """``obj``'s canonical JSON, or a BatchInputError naming ``where`` when it is no JSON data
    (a row made in Python may hold what no JSON line can)."""
    try:
        return _canonical.encode(obj)
    except TypeError as exc:
        reason = str(exc)
        if "str keys" in reason:
            reason = "an object's keys must be strings"
    except RecursionError:
        reason = "nested too deeply"
    except UnicodeEncodeError as exc:  # a Python str may hold what no UTF-8 text can
        pair = f"\\u{ord(exc.object[exc.start]):04x} without its pair"
        reason = f"a string holds a lone UTF-16 surrogate ({pair}), which is not text"
    except ValueError:  # (msgspec writes a huge int through str(), which Python refuses)
        reason = "an integer has more digits than Python writes"
    raise BatchInputError(f"{where}: not JSON data: {reason}", line=line)


def _fail(line: int, what: str) -> BatchInputError:
    return BatchInputError(f"line {line}: {what}", line=line)


def _twice(line: int, key: str) -> BatchInputError:
    return _fail(line, f"the key {shown(key, 100)} appears twice in one object")


def _text(value: object, line: int, where: str) -> str:
    if not isinstance(value, str):
        raise _fail(line, f"{where} must be a string, got {type(value).__name__}")
    return value


def _model(value: object, line: int, where: str) -> str | None:
    """A row's own model (``None``: absent or ``""``, the run's ``--model``). One its request
    would refuse (blank) is refused here, naming the line, before any row is sent."""
    if value is None:
        return None
    model = _text(value, line, where) or None
    if model is not None:
        if model.strip() and has_control(model):  # --model's rule (a blank one: below)
            raise _fail(line, f"{where} {CONTROL_IN_NAME}")
        check_row_options({"model": model}, line, where)
    return model


def _key(value: object, line: int, field: str) -> str:
    if type(value) is str:  # (most keys: the checks below, but for the empty one, pass)
        key = value
    elif isinstance(value, bool) or not isinstance(value, str | int):
        raise _fail(line, f"{field} must be a string or an integer")
    else:
        key = str(value)
    if not key.strip():
        raise _fail(line, f"{field} must not be empty")
    return key


def check_row_options(raw: object, line: int, where: str) -> dict[str, Any] | None:
    """A row's ``options`` (known ``RequestOptions`` fields, valid values), ``None`` for none.

    Raises:
        BatchInputError: an unknown field or a bad value; the message names ``line``.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _fail(line, f"{where} must be an object")
    options = cast("dict[str, Any]", raw)
    for name in options:
        if name not in _OPTION_FIELDS:
            raise _fail(line, f"{where}: unknown request option {shown(name, 100)}")
    try:
        # the types, then the values (a max_tokens of 0 is refused here, before any request,
        # not by each row's request when it runs)
        checked = check_options(msgspec.convert(options, RequestOptions))
        if checked.model is not None and has_control(checked.model):  # --model's rule too
            raise ConfigError(f"model {CONTROL_IN_NAME}")
        # and what every wire's request refuses too, whatever the provider: a thinking budget
        # below the floor (or not below the row's own max_tokens), a tool_choice that needs
        # tools (a row has none), an extra_body setting the client's model or stream (looked
        # at only when one is set: a provider line's options are mostly max_tokens alone)
        if checked.thinking is not None or checked.tool_choice is not None or checked.extra_body:
            resolve_thinking(checked, checked.max_tokens)
            resolve_tool_choice(checked, None)
            merge_extra_body({}, checked)
    except (msgspec.ValidationError, ConfigError) as exc:
        raise _fail(line, f"{where}: {exc}") from None
    return options or None


def _system_text(content: object, line: int, where: str) -> str:
    """A system prompt given as a message's or a body's content: a string, or text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for i, block in enumerate(cast("list[Any]", content)):
            entry = cast("dict[str, Any]", block) if isinstance(block, dict) else {}
            text = entry.get("text")
            if entry.get("type") not in ("text", "input_text") or not isinstance(text, str):
                raise _fail(line, f"{where}[{i}]: a system prompt holds text blocks only")
            texts.append(text)
        return "".join(texts)
    raise _fail(line, f"{where} must be a string or a list of text blocks")


def _messages(
    raw: object, line: int, where: str, *, system_role: bool
) -> tuple[tuple[Message, ...], str | None]:
    """``messages`` of any shape, through the package's one converter
    (:func:`~rxturn.messages.as_message`: Message JSON, the Anthropic and OpenAI shapes, media
    parts, tool calls and results); with ``system_role``, ``system``/``developer`` messages
    become the system prompt (OpenAI's way of sending it)."""
    if isinstance(raw, str):  # (a dataset column of JSON text, say)
        raise _fail(
            line,
            f"{where} must be a non-empty list, got a string (JSON text must be decoded "
            "into the list first)",
        )
    if not isinstance(raw, list) or not raw:
        raise _fail(line, f"{where} must be a non-empty list")
    messages: list[Message] = []
    system: list[str] = []
    items: list[object] = cast("list[object]", raw)
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        entry: dict[str, object] = cast("dict[str, object]", item) if type(item) is dict else {}
        if system_role and entry.get("role") in ("system", "developer"):
            if messages:  # lifted to the top, it would be asked before what it follows
                raise _fail(
                    line,
                    f"{at}: a {entry['role']} message after the conversation's first message "
                    "(rxturn sends one system prompt, before the conversation: move it to the "
                    "start)",
                )
            if entry.get("name") is not None:  # (as any other message's: not dropped)
                raise _fail(line, f"{at}: {PARTICIPANT_NAME}")
            system.append(_system_text(entry.get("content"), line, f"{at}.content"))
            continue
        try:
            messages.append(as_message(cast(object, item), at))
        except ConfigError as exc:
            raise _fail(line, str(exc)) from None
    return tuple(messages), ("\n\n".join(system) if system else None)


def check_turn(messages: tuple[Message, ...], line: int) -> tuple[Message, ...]:
    """``messages``, if they end with a user message that asks something.

    Raises:
        BatchInputError: no messages, a last message not the user's, or an empty one.
    """
    if not messages or messages[-1].role != "user":
        raise _fail(line, "the conversation must end with a user message")
    last = messages[-1]
    for part in last.content:  # (a loop, not all() over a generator: twice a row)
        if not isinstance(part, TextPart):
            return messages  # a message with media asks about them
    if not last.text.strip():
        # as an empty prompt is: a request with nothing to answer, refused before any is sent
        raise _fail(line, "the last user message is empty")
    return messages


def _native(obj: dict[str, Any], line: int, raw: bytes) -> BatchRow:
    if not _NATIVE_KEYS.issuperset(obj):
        for name in obj:
            if name not in _NATIVE_KEYS:
                raise _fail(
                    line, f"unknown field {shown(name, 100)} in a row with 'prompt' or 'messages'"
                )
    if "prompt" in obj and "messages" in obj:
        raise _fail(line, "a row has either 'prompt' or 'messages', not both")
    prompted = "prompt" in obj
    if prompted:
        prompt = _text(obj["prompt"], line, "prompt")
        if not prompt.strip():
            raise _fail(line, "prompt is empty")
        messages: tuple[Message, ...] = (Message.user(prompt),)
    else:
        messages, _ = _messages(obj["messages"], line, "messages", system_role=False)
    system = obj.get("system")
    model = _model(obj.get("model"), line, "model")
    key = (
        _key(obj["id"], line, "id")
        if "id" in obj
        else f"line-{line}-{hashlib.sha256(raw.strip()).hexdigest()[:16]}"
    )
    options = check_row_options(obj.get("options"), line, "options")
    if options is not None and "model" in options:
        # a RequestOptions field, but the runner sets each request's model from the row's:
        # taken as the row's model rather than dropped
        options = dict(options)
        named = options.pop("model")
        if named is not None:
            if model is not None and named != model:
                raise _fail(
                    line,
                    f"'model' and options.model differ ({shown(model, 100)}, {shown(named, 100)})",
                )
            model = named or None
        options = options or None
    return BatchRow(
        key=key,
        # (a prompt is a turn already: one user message, not empty)
        messages=messages if prompted else check_turn(messages, line),
        system=None if system is None else _text(system, line, "system"),
        model=model,
        options=options,
    )


#: The API each provider shape's body is written for: the ``--provider`` that takes what is not
#: mapped (sent as written, ``RequestOptions.extra_body``).
_APIS = {
    "openai": "OpenAI Chat Completions",
    "openai-responses": "the OpenAI Responses API",
    "anthropic": "the Anthropic Messages API",
}
#: The output caps of the three bodies, each the row's ``max_tokens``.
_CAPS = ("max_tokens", "max_completion_tokens", "max_output_tokens")
#: Body fields mapped onto the request option of the same meaning, which every wire spells.
_MAPPED = {
    "temperature": "temperature",
    "stop": "stop_sequences",
    "stop_sequences": "stop_sequences",
    "reasoning_effort": "reasoning_effort",
}
#: OpenAI's prompt-cache fields, which are request options of the same names: their explicit
#: mode is what sends a message part's ``prompt_cache_breakpoint`` (a CachePoint) back.
_OPENAI_CACHE = ("prompt_cache_options", "prompt_cache_key")
#: The options mapped from one API's own fields, sent to that API alone.
_TIED = ("thinking", *_OPENAI_CACHE)
_LOGPROBS = "asks for log probabilities, which a batch output line does not hold"
_AUDIO = "asks for an audio reply, which a batch output line does not hold (its text does)"


def _refused(api: str, name: str, value: object) -> str | None:
    """Why a provider body's field cannot be run as written (``None``: it can), from the
    official SDKs' request types: what it asks for has no place in the output line, or it is
    no body field of the API a row's request goes to."""
    if value is None:  # (every such field is optional: null is the API's default)
        return None
    if api == "openai":
        if name == "n" and value != 1:
            return (
                "asks for several replies (choices), and a batch output line holds one: "
                "make each its own row"
            )
        if (name == "logprobs" and value is not False) or (name == "top_logprobs" and value):
            return _LOGPROBS
        if name == "audio" or (
            name == "modalities" and isinstance(value, list) and "audio" in value
        ):
            return _AUDIO
    elif api == "openai-responses":
        if (name == "top_logprobs" and value) or (
            name == "include"
            and isinstance(value, list)
            and "message.output_text.logprobs" in value
        ):
            return _LOGPROBS
    elif name in ("workspace_id", "user_profile_id"):
        header = "anthropic-" + name.replace("_", "-")
        return (
            f"is sent by the Messages API's clients as the {header} header, which a batch "
            "row does not set: leave it out"
        )
    return None


def _anthropic_thinking(value: object, options: dict[str, Any], extra: dict[str, Any]) -> None:
    """``params.thinking``: ``{"type": "enabled", "budget_tokens": N}`` is the ``thinking``
    option (the same field on the wire, and the scan checks its budget); another value
    (``adaptive``…) goes as written. Either way the reply's thinking stays in the output line,
    as a native row's does (a disabled one has none)."""
    fields = cast("dict[str, object]", value) if type(value) is dict else {}
    budget = fields.get("budget_tokens")
    if fields.keys() == {"type", "budget_tokens"} and fields["type"] == "enabled":
        options["thinking"] = budget  # (its type and range: check_row_options)
        return
    extra["thinking"] = value
    if fields.get("type") != "disabled":
        options["keep_thinking"] = True


def _split_body(
    body: dict[str, Any],
    line: int,
    where: str,
    skip: frozenset[str],
    api: str,
    provider: str | None,
    verbatim: dict[str, Any] | None = None,
) -> Any:
    """A provider body's request fields as the row's options: the output cap, temperature,
    stop sequences and reasoning effort mapped onto their ``RequestOptions``; every other field
    sent as written (``extra_body``, with ``verbatim``; a ``null`` left out, as the API's
    default), which only ``api`` reads: with another
    ``provider`` such a field is refused rather than sent in the wrong API's spelling (or
    dropped by a server that ignores what it does not know). So is a field no output line can
    answer (``_refused``), and two output caps at once."""
    options: dict[str, Any] = {}
    extra: dict[str, Any] = dict(verbatim) if verbatim else {}
    caps = [name for name in _CAPS if body.get(name) is not None]
    if len(caps) > 1:
        raise _fail(
            line,
            f"{where} sets both {caps[0]} and {caps[1]}: give the reply's cap once",
        )
    for name, value in body.items():
        if name in skip:
            continue
        reason = _refused(api, name, value)
        if reason is not None:
            raise _fail(line, f"{where}.{name} {reason}")
        if name in _CAPS:
            if value is not None:
                options["max_tokens"] = value
        elif name in _MAPPED:
            if value is not None:
                option = _MAPPED[name]
                options[option] = [value] if name == "stop" and isinstance(value, str) else value
        elif value is None:
            pass  # the API's default, which leaving it out asks on every wire
        elif name == "thinking" and api == "anthropic":
            _anthropic_thinking(value, options, extra)
        elif name in _OPENAI_CACHE and api != "anthropic":
            options[name] = value  # (the client's explicit mode marks the CachePoints)
        else:
            extra[name] = value
    if provider is not None and provider != api:
        # what goes as written, and the options of one API's own (another has no such knob)
        foreign = [*extra, *(name for name in _TIED if name in options)]
        if foreign:
            name = foreign[0]
            portable = (
                " (a string, or one text block alone, goes to every provider)"
                if name == "system"
                else ""
            )
            raise _fail(
                line,
                f"{where}.{name} is a field of {_APIS[api]}, sent as written to that API alone "
                f"(provider {api}), not to provider {provider}{portable}: run the line with "
                f"provider {api}, or leave the field out",
            )
    if extra:
        options["extra_body"] = extra
    return check_row_options(options, line, where)


#: the OpenAI Batch endpoints whose bodies are a chat: Chat Completions and Responses
_CHAT_URLS = frozenset({"/v1/chat/completions", "/chat/completions"})
_RESPONSES_URLS = frozenset({"/v1/responses", "/responses"})


def _openai(obj: dict[str, Any], line: int, provider: str | None) -> BatchRow:
    body = obj.get("body")
    if not isinstance(body, dict):
        raise _fail(line, "an OpenAI Batch line needs a 'body' object")
    body = cast("dict[str, Any]", body)
    method = obj.get("method", "POST")
    if method != "POST":
        raise _fail(line, f"method must be POST, got {shown(method, 100)}")
    url = obj.get("url")
    if url is not None and not isinstance(url, str):
        raise _fail(line, f"url must be a string, got {type(url).__name__}")
    if url in _RESPONSES_URLS or (url is None and "input" in body and "messages" not in body):
        return _openai_responses(obj, body, line, provider)
    if url is not None and url.split("?")[0] not in _CHAT_URLS:
        raise _fail(
            line,
            f"an OpenAI Batch line for {shown(url, 100)} is not a chat request (rxturn runs "
            "/v1/chat/completions and /v1/responses lines)",
        )
    messages, system = _messages(body.get("messages"), line, "body.messages", system_role=True)
    return _openai_row(obj, body, line, (messages, system), _CHAT_BODY_FIELDS, provider)


def _message_item(item: object) -> dict[str, Any] | None:
    """A Responses input item ``{"type": "message", "role", "content"}`` as a plain message
    (the explicit type is what a message of the other shapes lacks); ``None`` otherwise."""
    if type(item) is not dict:
        return None
    entry = cast("dict[str, Any]", item)
    if entry.get("type") != "message":
        return None
    return {k: v for k, v in entry.items() if k != "type"}


def _openai_responses(
    obj: dict[str, Any], body: dict[str, Any], line: int, provider: str | None
) -> BatchRow:
    """An OpenAI Batch line for the Responses API: ``input`` (a string, or message items) and
    ``instructions`` (the system prompt)."""
    raw_input = body.get("input")
    if isinstance(raw_input, str):
        if not raw_input.strip():
            raise _fail(line, "body.input is empty")
        messages: tuple[Message, ...] = (Message.user(raw_input),)
        system = None
    elif isinstance(raw_input, list) and raw_input:
        items: list[object] = []
        listed: list[object] = cast("list[object]", raw_input)
        for item in listed:
            entry = _message_item(item)
            items.append(entry if entry is not None else item)
        messages, system = _messages(items, line, "body.input", system_role=True)
    else:
        raise _fail(line, "a /v1/responses body needs 'input' (a string or a list of messages)")
    instructions = body.get("instructions")
    if instructions is not None:
        text = _text(instructions, line, "body.instructions")
        system = text if system is None else f"{text}\n\n{system}"
    return _openai_row(obj, body, line, (messages, system), _RESPONSES_BODY_FIELDS, provider)


#: The body fields an OpenAI Batch line's row takes itself; the rest are request options.
_CHAT_BODY_FIELDS = frozenset({"model", "messages", "stream", "stream_options"})
_RESPONSES_BODY_FIELDS = frozenset({"model", "input", "instructions", "stream", "stream_options"})


def _openai_row(
    obj: dict[str, Any],
    body: dict[str, Any],
    line: int,
    turn: tuple[tuple[Message, ...], str | None],
    taken: frozenset[str],
    provider: str | None,
) -> BatchRow:
    """The row of an OpenAI Batch line whose messages and system prompt (``turn``) are read:
    its key, its model, and the body's other fields as options."""
    messages, system = turn
    api = "openai-responses" if taken is _RESPONSES_BODY_FIELDS else "openai"
    return BatchRow(
        key=_key(obj["custom_id"], line, "custom_id"),
        messages=check_turn(messages, line),
        system=system,
        model=_model(body.get("model"), line, "body.model"),
        options=_split_body(body, line, "body", taken, api, provider),
    )


def _anthropic_system(raw: object, line: int) -> tuple[str | None, dict[str, Any] | None]:
    """``params.system``: its text, and the field to send as written when text alone would
    lose something (several blocks, or a block's ``cache_control`` or ``citations``), which
    only the Messages API reads."""
    if raw is None:
        return None, None
    text = _system_text(raw, line, "params.system")
    if isinstance(raw, list):
        blocks = cast("list[dict[str, Any]]", raw)
        if len(blocks) > 1 or (blocks and not blocks[0].keys() <= {"type", "text"}):
            return text, {"system": raw}
    return text, None


def _anthropic(obj: dict[str, Any], line: int, provider: str | None) -> BatchRow:
    params = obj.get("params")
    if not isinstance(params, dict):
        raise _fail(line, "an Anthropic batch request needs a 'params' object")
    params = cast("dict[str, Any]", params)
    messages, _ = _messages(params.get("messages"), line, "params.messages", system_role=False)
    system, verbatim = _anthropic_system(params.get("system"), line)
    model = params.get("model")
    skip = frozenset({"model", "messages", "system", "stream"})
    return BatchRow(
        key=_key(obj["custom_id"], line, "custom_id"),
        messages=check_turn(messages, line),
        system=system,
        model=_model(model, line, "params.model"),
        options=_split_body(params, line, "params", skip, "anthropic", provider, verbatim),
    )


def parse_row(raw: bytes, line: int, provider: str | None = None) -> tuple[BatchRow, Any]:
    """Decode one input line: the row and the decoded JSON object (for :func:`input_sha`);
    ``provider`` as for :func:`decode_row`.

    Raises:
        BatchInputError: not JSON, not an object, or no known shape; the message names ``line``.
    """
    try:
        obj: Any = _decode_any.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _fail(line, json_problem(raw, str(exc))) from None
    return decode_row(obj, line, raw, provider=provider), obj


#: the fields of the provider shapes' lines (their request is in ``params`` / ``body``)
_ANTHROPIC_KEYS = frozenset({"custom_id", "params"})
_OPENAI_KEYS = frozenset({"custom_id", "method", "url", "body"})


def _own_fields(obj: Mapping[str, object], known: frozenset[str], line: int, shape: str) -> None:
    """Refuse a field the shape does not have, as a native row's is refused: a line with
    ``body`` and ``params`` (or a ``prompt``) would otherwise run one of them, silently."""
    for name in obj:
        if name not in known:
            fields = ", ".join(sorted(known))
            raise _fail(line, f"unknown field {shown(name, 100)} in {shape} (its fields: {fields})")


def decode_row(
    row: Mapping[str, object], line: int, raw: bytes = b"", *, provider: str | None = None
) -> BatchRow:
    """One row object in any of the four shapes, as a :class:`BatchRow`.

    Args:
        row: the row object.
        line: its line (or row) number, for errors.
        raw: the line's bytes (the key of a native row without an ``id``).
        provider: the run's provider (``None``: not known here). A provider line's fields
            that are sent as written (not mapped onto request options) go only to the API
            the line was made for; with another provider they are refused.

    Raises:
        BatchInputError: a row that is no object, of no known shape or with a bad field;
            names ``line``.
    """
    # (a JSON line's array or number, or anything a caller of this public function gives)
    # (a dict asked first: the fast path of every row)
    if type(row) is not dict and not isinstance(row, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise _fail(line, f"expected a JSON object, got {type(row).__name__}")
    obj = cast("dict[str, Any]", row)
    if "custom_id" in obj and "params" in obj:
        _own_fields(obj, _ANTHROPIC_KEYS, line, "an Anthropic batch request")
        return _anthropic(obj, line, provider)
    if "custom_id" in obj and "body" in obj:
        _own_fields(obj, _OPENAI_KEYS, line, "an OpenAI Batch line")
        return _openai(obj, line, provider)
    if "prompt" in obj or "messages" in obj:
        return _native(obj, line, raw or _canonical_json(obj, f"line {line}", line))
    fields = ", ".join(sorted(obj)[:6]) or "none"
    raise _fail(
        line,
        f"a row of no known shape (fields: {fields}); expected 'prompt' or 'messages', an "
        "OpenAI Batch line (custom_id, body) or an Anthropic batch request (custom_id, params)",
    )


def iter_lines(file: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """``(line number from 1, line bytes)`` for every non-blank line, read lazily.

    Raises:
        BatchInputError: a line longer than ``MAX_LINE_BYTES`` (read no further than that).
    """
    limit = MAX_LINE_BYTES
    for number, raw in enumerate(iter(partial(file.readline, limit + 1), b""), start=1):
        if len(raw) > limit and (problem := too_long(raw, limit)):
            raise _fail(number, problem)
        if raw.strip():
            yield number, raw


#: what the scan of an input without a row ends in, for ``batch run`` as for ``status --input``
#: and ``export`` (an empty pipe read as no rows would be "0 rows" and an empty export)
NO_ROWS = "has no rows (it is empty, or only blank lines)"


class InputIndex:
    """What the scan keeps: every key (in input order) and its line number, nothing else."""

    __slots__ = ("keys", "lines")

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}  # key -> line number; dicts keep input order
        self.lines = 0

    @property
    def total(self) -> int:
        return len(self.keys)


def scan_input(
    path: str | os.PathLike[str],
    check: Callable[[str, object, int], None] | None = None,
    *,
    provider: str | None = None,
) -> InputIndex:
    """Validate every line of ``path`` once, keeping keys and line numbers only.

    Args:
        path: the input file (``"-"``: stdin, read once).
        check: called with ``(key, decoded object, line)`` for each row (the resume check).
        provider: the run's provider, to which every row must be sendable as written (see
            :func:`decode_row`; ``None``: not checked).

    Raises:
        BatchInputError: unreadable, not UTF-8 JSON, a duplicate key, a row of no known shape.
    """
    if not isinstance(path, str | os.PathLike):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(f"scan_input(path=...) must be a str or a Path, got {described(path)}")
    check_callable(check, "scan_input(check=...)", "a callable", optional=True)
    index = InputIndex()
    stdin = os.fspath(path) == "-"
    try:
        opened = (
            contextlib.nullcontext(cast("BinaryIO", sys.stdin.buffer))
            if stdin
            else open(path, "rb")  # noqa: SIM115 - closed by the with below
        )
        with opened as file:
            for line, raw in iter_lines(file):
                try:
                    row, obj = parse_row(raw, line, provider)
                except BatchInputError:
                    twice = duplicate_key(raw)  # a key given twice explains a bad shape best
                    if twice is None:
                        raise
                    raise _twice(line, twice) from None
                twice = duplicate_key(raw, obj)
                if twice is not None:
                    raise _twice(line, twice)
                first = index.keys.setdefault(row.key, line)
                if first != line:
                    raise _fail(
                        line, f"duplicate key {shown(row.key, 100)} (first on line {first})"
                    )
                if check is not None:
                    check(row.key, obj, line)
                index.lines = line
    except OSError as exc:
        where = "stdin" if stdin else repr(os.fspath(path))
        raise BatchInputError(f"cannot read {where}: {exc.strerror or exc}") from None
    except UnicodeEncodeError:  # a lone surrogate no file name can hold (os.fsencode refuses)
        raise BatchInputError(
            f"cannot read {os.fspath(path)!r}: not a file name the file system can encode"
        ) from None
    return index


class Spool:
    """A copy of an input that can be read only once: ``path`` reads it, as often as needed,
    until :meth:`close`.

    Where the system lets a process reopen its own open files by path (Linux's
    ``/proc/self/fd``), the copy has no name in the file system at all: a process killed with
    ``kill -9`` leaves no copy of its input behind, as a named file would (one each time).
    Elsewhere it is a named temporary file that :meth:`close` removes.
    """

    __slots__ = ("_file", "_named", "path")

    def __init__(self, directory: str | None) -> None:
        fds = Path("/proc/self/fd")
        self._named = not fds.is_dir()
        if self._named:
            self._file: BinaryIO = cast(
                "BinaryIO",
                tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed by close()
                    prefix="rxturn-batch-", suffix=".jsonl", dir=directory, delete=False
                ),
            )
            self.path = Path(self._file.name)
        else:  # unnamed from the start (O_TMPFILE, or unlinked as it is made)
            self._file = cast(
                "BinaryIO",
                tempfile.TemporaryFile(prefix="rxturn-batch-", suffix=".jsonl", dir=directory),  # noqa: SIM115
            )
            self.path = fds / str(self._file.fileno())

    def write(self, data: bytes) -> None:
        self._file.write(data)

    def ready(self) -> Spool:
        """Flush what was written, so that ``path`` reads all of it."""
        self._file.flush()
        return self

    def close(self) -> None:
        """Let the copy go (idempotent)."""
        self._file.close()
        if self._named:
            self.path.unlink(missing_ok=True)


def spool_input(source: BinaryIO | None = None, directory: str | None = None) -> Spool:
    """Copy all of ``source`` (default: stdin) to a temporary file: the scan and the run each
    read the input once, and a pipe can be read only once. The caller closes the
    :class:`Spool`.

    Copied line by line with the scan's bound on a line, so an endless line (``< /dev/zero``)
    is refused at once instead of filling the disk.

    Raises:
        BatchInputError: a line longer than ``MAX_LINE_BYTES`` (nothing is left behind).
        OSError: the temporary file cannot be written (nothing is left behind).
    """
    spool = Spool(directory)
    try:
        if source is None:
            source = cast("BinaryIO | None", getattr(sys.stdin, "buffer", None))
        if source is None:  # a text-only stdin (replaced by a caller)
            spool.write(sys.stdin.read().encode())
        else:
            limit = MAX_LINE_BYTES
            read = partial(source.readline, limit + 1)
            for number, raw in enumerate(iter(read, b""), start=1):
                if len(raw) > limit and (problem := too_long(raw, limit)):
                    raise _fail(number, problem)
                spool.write(raw)
        return spool.ready()
    except BaseException:  # a full disk, an interrupt: leave no temporary file behind
        spool.close()
        raise


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names something that can be read only once (a pipe, ``/dev/stdin`` on
    one, a device, a socket) rather than a regular file or a directory."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # missing or unreadable: the scan says so
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
