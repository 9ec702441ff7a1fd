"""The checks every constructor makes on the numbers it is given, written once.

Users build policies, clients, transports and engines from Python, where nothing enforces the
annotations (msgspec Structs built in Python are not type-checked either), so each of them
checks its numbers at construction and raises :class:`~rxturn.errors.ConfigError` with a
message naming the argument. The *checks* live here; each caller keeps its own message, which
names where the value came from.

``bool`` is never a number here, although Python treats ``True`` as ``1``: a flag passed where a
count belongs is a mistake worth reporting.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, SupportsIndex, TypeGuard

import msgspec

from .errors import ConfigError

if TYPE_CHECKING:
    from .messages import ContentPart, Message, TextPart

__all__ = [
    "MessageList",
    "as_message",
    "as_messages",
    "is_int",
    "is_number",
    "message_content",
    "part_from_dict",
    "positive",
    "seconds_problem",
]


def is_number(value: object) -> TypeGuard[int | float]:
    """An ``int`` or a ``float`` (NaN and infinities included), never a ``bool``."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_int(value: object) -> TypeGuard[int]:
    """An ``int``, never a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def positive(
    value: object, *, integer: bool = False, allow_zero: bool = False, finite: bool = False
) -> bool:
    """Whether ``value`` is a number ``> 0`` (``>= 0`` with ``allow_zero``).

    NaN never passes. Infinity passes unless ``finite``; ``integer`` asks for an ``int``.

    Examples:
        >>> positive(0.5), positive(0), positive(0, allow_zero=True), positive(float("nan"))
        (True, False, True, False)
        >>> positive(True), positive(2.0, integer=True), positive(float("inf"), finite=True)
        (False, False, False)
    """
    if not is_number(value) or (integer and not isinstance(value, int)):
        return False
    if finite and not math.isfinite(value):
        return False
    return value >= 0 if allow_zero else value > 0


def seconds_problem(value: object, *, allow_zero: bool = False) -> str | None:
    """Why ``value`` is not a usable finite number of seconds, or ``None`` if it is.

    The phrase completes a sentence that starts with the argument's name, e.g.
    ``f"TimeoutPolicy.total {problem}"``.

    Examples:
        >>> seconds_problem(1.5) is None
        True
        >>> seconds_problem(0)
        'must be > 0 seconds, got 0'
        >>> seconds_problem(float("inf"))
        'must be finite, got inf'
    """
    if not is_number(value):
        return f"must be a number of seconds, got {value!r}"
    if math.isnan(value):
        return "must be a number of seconds, got nan"
    if math.isinf(value):
        return f"must be finite, got {value!r}"
    if not positive(value, allow_zero=allow_zero):
        return f"must be {'>= 0' if allow_zero else '> 0'} seconds, got {value!r}"
    return None


# -- messages ---------------------------------------------------------------------------------
#
# A message is checked when it is built (``Message.__post_init__`` calls
# :func:`message_content`) and wherever one enters an engine (:func:`as_message`), so a wrong
# role, a ``str`` where parts belong or an SDK-style dict is settled at the caller's line, never
# as an ``AttributeError`` inside the token counter. The accepted forms are listed in
# docs/messages.md.

_ROLES = ("user", "assistant")
_SYSTEM_HINT = "pass the system prompt as TurnEngine(system=...) (or Request(system=...))"


def _role_problem(role: object) -> str | None:
    if role in _ROLES:
        return None
    if role in ("system", "developer"):
        return f"a {role!r} message is not part of the conversation: {_SYSTEM_HINT}"
    return f"role must be 'user' or 'assistant', got {role!r}"


def message_content(
    role: object, content: object, part_types: frozenset[type]
) -> tuple[ContentPart, ...] | None:
    """Check a message's role and content; the content converted, or ``None`` when it is fine.

    ``part_types`` is the set of part classes the message union allows. A tuple of those parts
    is returned as ``None`` (nothing to convert, nothing allocated); a ``str`` becomes one text
    part, a list becomes a tuple, and a ``str`` or an SDK-style ``dict`` among the parts is
    converted (:func:`part_from_dict`). Anything else is a :class:`~rxturn.errors.ConfigError`.

    Examples:
        >>> from rxturn.messages import TextPart
        >>> message_content("user", (TextPart("hi"),), frozenset({TextPart})) is None
        True
        >>> message_content("user", "hi", frozenset({TextPart}))
        (TextPart(text='hi'),)
    """
    if role != "user" and role != "assistant":
        raise ConfigError(f"Message: {_role_problem(role)}")
    if type(content) is tuple:
        items: tuple[object, ...] = content  # pyright: ignore[reportUnknownVariableType]
        for part in items:  # the hot path: a loop allocates nothing
            if type(part) not in part_types:
                break
        else:
            return None
    elif isinstance(content, str):
        return (_text_part(content),)
    elif isinstance(content, list | tuple):
        items = tuple(content)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    else:
        raise ConfigError(
            f"Message.content must be a tuple of parts or a str, got {type(content).__name__}"
        )
    return tuple(_as_part(part, index, part_types) for index, part in enumerate(items))


def _text_part(text: str) -> TextPart:
    from .messages import TextPart

    return TextPart(text)


def _as_part(part: object, index: int, part_types: frozenset[type]) -> ContentPart:
    if type(part) in part_types:
        return part  # type: ignore[return-value]
    if isinstance(part, str):
        return _text_part(part)
    if isinstance(part, dict):
        return part_from_dict(part, f"Message.content[{index}]")  # pyright: ignore[reportUnknownArgumentType]
    names = ", ".join(sorted(cls.__name__ for cls in part_types))
    raise ConfigError(
        f"Message.content[{index}] is a {type(part).__name__}; a part is one of {names}, "
        "a str (text) or an SDK-style dict (docs/messages.md)"
    )


def _field(block: Mapping[str, object], key: str, where: str, kind: type = str) -> Any:
    value = block.get(key)
    if not isinstance(value, kind):
        raise ConfigError(
            f"{where}: a {block.get('type')!r} block needs {key!r} as a {kind.__name__}, "
            f"got {type(value).__name__}"
        )
    return value


def _json_arguments(raw: object, where: str) -> object:
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    try:
        return json.loads(raw) if raw else {}
    except ValueError:
        raise ConfigError(f"{where}: tool call arguments are not valid JSON") from None


def _result_text(content: object, where: str) -> str:
    """A tool result's content: a str, or a list of text blocks joined (Anthropic's form)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for block in content:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(block, dict) and isinstance(block.get("text"), str):  # pyright: ignore[reportUnknownMemberType]
                texts.append(block["text"])  # pyright: ignore[reportUnknownArgumentType]
            else:
                raise ConfigError(f"{where}: a tool result's content blocks must be text blocks")
        return "".join(texts)
    raise ConfigError(f"{where}: a tool result's content must be a str or a list of text blocks")


def part_from_dict(block: Mapping[str, object], where: str) -> ContentPart:
    """One content part from a dict: rxturn's Message JSON form, or an Anthropic/OpenAI block.

    rxturn's own part JSON (``{"type": "tool_call", ...}``, every part type of the union) is
    decoded as is; the SDK shapes are mapped: ``text`` / ``input_text`` / ``output_text``,
    ``tool_use``, ``function_call``, ``tool_result`` (``tool_use_id``; content a str or text
    blocks), ``function_call_output``, ``refusal`` (``{"refusal": ...}``). Anything else is a
    :class:`~rxturn.errors.ConfigError` naming the block's type.
    """
    from .messages import (
        ContentPart,
        RefusalPart,
        TextPart,
        ToolCallPart,
        ToolResultPart,
    )

    try:
        return msgspec.convert(block, ContentPart)
    except msgspec.ValidationError:
        pass
    kind = block.get("type")
    if kind in ("text", "input_text", "output_text"):
        return TextPart(_field(block, "text", where))
    if kind == "tool_use":
        raw_input = block.get("input", {})
        return ToolCallPart(_field(block, "id", where), _field(block, "name", where), raw_input)
    if kind == "function_call":
        arguments = _json_arguments(block.get("arguments"), where)
        return ToolCallPart(
            _field(block, "call_id", where), _field(block, "name", where), arguments
        )
    if kind == "tool_result":
        is_error = bool(block.get("is_error", False))
        content = _result_text(block.get("content", ""), where)
        return ToolResultPart(_field(block, "tool_use_id", where), content, is_error)
    if kind == "function_call_output":
        output = _result_text(block.get("output", ""), where)
        return ToolResultPart(_field(block, "call_id", where), output)
    if kind == "refusal" and isinstance(block.get("refusal"), str):
        return RefusalPart(_field(block, "refusal", where))
    raise ConfigError(
        f"{where}: cannot convert a content block of type {kind!r}; build the part from "
        "rxturn.messages (docs/messages.md lists the dict forms accepted)"
    )


def as_message(item: object, where: str) -> Message:
    """``item`` as a :class:`~rxturn.messages.Message`: a Message as is, a dict converted.

    Accepted dicts: rxturn's Message JSON; ``{"role": "user" | "assistant", "content": str |
    [blocks]}`` in the Anthropic and OpenAI shapes (an OpenAI assistant's ``tool_calls`` become
    tool-call parts); an OpenAI ``{"role": "tool", "tool_call_id": ..., "content": ...}`` becomes
    a user message with a tool result; the Responses ``function_call`` /
    ``function_call_output`` items likewise. A ``system`` message, a bare ``str`` and anything
    else are a :class:`~rxturn.errors.ConfigError` that says what to do instead.
    """
    from .messages import Message, ToolCallPart, ToolResultPart

    if type(item) is Message:
        return item
    if isinstance(item, str):
        raise ConfigError(
            f"{where} is a str, where a Message belongs: use Message.user(text) "
            "(or Message.assistant(text))"
        )
    if not isinstance(item, dict):
        raise ConfigError(
            f"{where} is a {type(item).__name__}, where a Message (or an SDK-style message "
            "dict) belongs"
        )
    data: dict[str, object] = item  # pyright: ignore[reportUnknownVariableType]
    if "role" in data and data.get("content") is None and not data.get("tool_calls"):
        raise ConfigError(f"{where}: a message dict needs 'content' (a str or a list of blocks)")
    role = data.get("role")
    kind = data.get("type")
    if role is None:
        if kind in ("function_call", "function_call_output"):
            part = part_from_dict(data, where)
            role = "assistant" if kind == "function_call" else "user"
            return Message(role=role, content=(part,))
        raise ConfigError(f"{where}: a message dict needs a 'role' ('user' or 'assistant')")
    try:
        return msgspec.convert(data, Message)
    except msgspec.ValidationError:
        pass
    if role == "tool":
        content = _result_text(data.get("content", ""), where)
        call_id = _field(data, "tool_call_id", where)
        return Message(role="user", content=(ToolResultPart(call_id, content),))
    problem = _role_problem(role)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    content = data.get("content")
    parts: list[ContentPart] = []
    if isinstance(content, str):
        if content:
            parts.append(_text_part(content))
    elif isinstance(content, list):
        blocks: list[object] = content  # pyright: ignore[reportUnknownVariableType]
        for index, block in enumerate(blocks):
            if isinstance(block, str):
                parts.append(_text_part(block))
            elif isinstance(block, dict):
                parts.append(part_from_dict(block, f"{where}.content[{index}]"))  # pyright: ignore[reportUnknownArgumentType]
            else:
                raise ConfigError(
                    f"{where}.content[{index}] is a {type(block).__name__}; expected a block dict"
                )
    elif content is not None:
        raise ConfigError(
            f"{where}: 'content' must be a str or a list of blocks, got {type(content).__name__}"
        )
    calls: object = data.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ConfigError(f"{where}: 'tool_calls' must be a list")
    call_list: list[object] = calls  # pyright: ignore[reportUnknownVariableType]
    for call in call_list:
        call_map: dict[str, object] = call if isinstance(call, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        function = call_map.get("function")
        if not isinstance(function, dict):
            raise ConfigError(f"{where}: a tool call needs a 'function' object")
        fn: dict[str, object] = function  # pyright: ignore[reportUnknownVariableType]
        arguments = _json_arguments(fn.get("arguments"), where)
        parts.append(
            ToolCallPart(_field(call_map, "id", where), _field(fn, "name", where), arguments)
        )
    return Message(role=role, content=tuple(parts))  # pyright: ignore[reportArgumentType]


def as_messages(items: object, where: str) -> list[Message]:
    """Every item of ``items`` through :func:`as_message` (a ``str`` or a non-iterable refused)."""
    kind = type(items).__name__
    if isinstance(items, str | bytes | dict) or not isinstance(items, Iterable):
        raise ConfigError(f"{where} must be a sequence of Message, got {kind}")
    sequence: Iterable[object] = items  # pyright: ignore[reportUnknownVariableType]
    return [as_message(item, f"{where}[{index}]") for index, item in enumerate(sequence)]


def _message_class() -> type[Message]:
    from .messages import Message

    return Message


class MessageList(list["Message"]):
    """A conversation's history: a list that checks (and converts) what is put into it.

    ``append``, ``extend``, ``insert``, ``+=`` and item assignment run :func:`as_message`, so a
    dict or a ``str`` added to ``engine.history`` is converted or refused at that line, not
    when the next turn reads it. Reading costs what a list costs.
    """

    __slots__ = ()

    def __init__(self, items: Iterable[object] = (), where: str = "history") -> None:
        super().__init__(as_messages(items, where))

    def append(self, item: object, /) -> None:
        if type(item) is not _message_class():  # a reply joining the history: nothing to do
            item = as_message(item, f"history[{len(self)}]")
        super().append(item)  # pyright: ignore[reportArgumentType]

    def extend(self, items: Iterable[object], /) -> None:
        super().extend(as_messages(items, "history.extend(...)"))

    def insert(self, index: SupportsIndex, item: object, /) -> None:
        super().insert(index, as_message(item, "history.insert(...)"))

    def __iadd__(self, items: Iterable[object]) -> MessageList:  # type: ignore[override]
        self.extend(items)
        return self

    def __setitem__(self, index: SupportsIndex | slice, value: Any) -> None:  # type: ignore[override]
        if isinstance(index, slice):
            super().__setitem__(index, as_messages(value, "history[...]"))
        else:
            super().__setitem__(index, as_message(value, f"history[{index}]"))
