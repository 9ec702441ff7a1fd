"""Python functions as tools the model can call.

A :class:`Tool` pairs a :class:`~rxturn.messages.ToolSchema` with a Python callable (sync or
async). The JSON Schema is derived from the signature with msgspec (``msgspec.json.schema`` of
each annotation), and the model's arguments are converted with ``msgspec.convert`` against the
same annotations, so what the model is told and what the function receives can never disagree.

Running a call never raises: a bad argument, an unknown tool or an exception inside the tool
becomes an error result (``is_error=True``) that goes back to the model, which can then fix
its call. An exception inside the tool is also logged, with its traceback, at WARNING on the
``rxturn.engine`` logger: it is a bug of yours more often than the model's. Only cancellation
propagates.

Tools never hold the event loop: an ``async`` tool runs on the loop, a plain function in a thread
of its own (a daemon thread per call, the caller's context variables copied, as
``asyncio.to_thread`` does), so deadlines, cancellation, other turns and the text streamer stay
live while it works. Not the loop's default executor: a thread cannot be stopped, so a tool past
its timeout (or cancelled) runs on until it returns, and a few that never return would hold
every worker of that shared pool, stalling everything else the process runs there (the
tokenizer, the price data, your own ``to_thread`` calls), and its exit.

The agent loop races each call against the engine's cancel signal (a cancel ends the run at
once: an async tool is cancelled, a thread's late result is dropped) and against the tool's
optional ``timeout`` (seconds on the engine's clock), which becomes a
:class:`ToolTimeoutError` reported to the model as a failed tool result.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import math
import re
import threading
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    ItemsView,
    Iterable,
    Iterator,
    KeysView,
    Mapping,
    ValuesView,
)
from typing import Any, cast, get_args, get_type_hints, overload

import msgspec

from ..._arguments import check_callable, check_instance, check_items, described, shown
from ..._validate import (
    NON_FINITE,
    NOT_UTF8,
    as_float,
    is_utf8,
    json_problem,
    object_schema_problem,
    positive,
)
from ...errors import ConfigError, ToolTimeoutError
from ...messages import (
    ContentPart,
    TextPart,
    ToolCallPart,
    ToolResultContent,
    ToolResultPart,
    ToolSchema,
)

__all__ = ["Tool", "ToolRegistry", "ToolTimeoutError", "tool"]

log = logging.getLogger("rxturn.engine")

# what the OpenAI APIs take as a function name (Anthropic's rule is the same, to 128 characters)
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def tool_error_result(call: ToolCallPart, error: BaseException) -> ToolResultPart:
    """``error`` as the failed tool result the model sees (``"ErrorClass: message"``; an error
    whose ``str()`` itself raises reads as the traceback module writes it)."""
    try:
        message = str(error)
    except Exception:
        message = "<exception str() failed>"
    return ToolResultPart(call.id, f"{type(error).__name__}: {message}", is_error=True)


ToolFunction = Callable[..., Any] | Callable[..., Awaitable[Any]]


class Tool:
    """A callable the model may invoke, with its schema."""

    __slots__ = ("_is_async", "_keywords", "_positional", "_types", "function", "schema", "timeout")

    def __init__(
        self,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, object] | None = None,
        timeout: float | None = None,
    ) -> None:
        if timeout is not None and not positive(timeout):
            raise ConfigError(
                f"tool timeout must be a positive number of seconds, got {shown(timeout)}"
            )
        check_callable(function, "Tool(function=...)", "a function (sync or async)", awaited=True)
        if inspect.isgeneratorfunction(function) or inspect.isasyncgenfunction(function):
            raise ConfigError(
                f"Tool(function=...) must return its result, got the generator function "
                f"{shown(getattr(function, '__qualname__', function), 100)}, whose call only "
                "makes a "
                "generator object (the model would get its repr): return a list instead"
            )
        check_instance(name, str, "Tool(name=...)", "a str", optional=True)
        check_instance(description, str, "Tool(description=...)", "a str", optional=True)
        if description is not None and not is_utf8(description):
            raise ConfigError(f"Tool(description=...) is not JSON text: {NOT_UTF8}")
        check_instance(
            input_schema, Mapping, "Tool(input_schema=...)", "a JSON Schema dict", optional=True
        )
        if input_schema is not None and (problem := json_problem(input_schema)) is not None:
            raise ConfigError(f"Tool(input_schema=...) must be JSON: {problem}")
        if input_schema is not None and (problem := object_schema_problem(dict(input_schema))):
            # a tool takes named arguments: every provider refuses another schema (a 400)
            raise ConfigError(f"Tool(input_schema=...) {problem}")
        self.function = function
        self.timeout = None if timeout is None else as_float(timeout)  # (a huge int: inf)
        self._is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - an async callable object
        )
        tool_name = getattr(function, "__name__", "") if name is None else name
        if _TOOL_NAME.fullmatch(tool_name) is None:
            named = "" if name is not None else " (pass name=...)"
            raise ConfigError(
                f"tool name {shown(tool_name, 100)} must be 1 to 64 ASCII letters, digits, '_' "
                "or '-', "
                f"as the APIs require{named}"
            )
        doc = inspect.getdoc(function) or ""
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):  # a builtin such as ``max`` has none to read
            raise ConfigError(
                f"tool {tool_name!r}: its signature cannot be read, so its parameters are "
                "unknown; wrap it in a def with named, annotated parameters"
            ) from None
        # (with a schema of the caller's own, a type that cannot be known converts nothing)
        self._types = _parameter_types(function, signature, tool_name, strict=input_schema is None)
        parameters = signature.parameters.values()
        # a ``**kwargs`` function takes what its input_schema names besides its parameters
        self._keywords = any(p.kind is p.VAR_KEYWORD for p in parameters)
        # positional-only parameters (``len(obj, /)``) are passed by position, in order
        self._positional = tuple([p.name for p in parameters if p.kind is p.POSITIONAL_ONLY])
        schema = (
            dict(input_schema) if input_schema is not None else _schema_for(self._types, tool_name)
        )
        self.schema = ToolSchema(
            name=tool_name,
            description=description if description is not None else doc.split("\n\n")[0],
            input_schema=schema,
        )

    @property
    def name(self) -> str:
        return self.schema.name

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    async def call(self, arguments: object) -> str | tuple[ToolResultContent, ...]:
        """Convert ``arguments``, run the function (awaiting it if needed), render the result."""
        return await self.invoke(self.convert(arguments))

    def convert(self, arguments: object) -> dict[str, object]:
        """The model's ``arguments`` as the function's keyword arguments.

        Raises:
            ConfigError: not a JSON object, an unknown or a missing argument.
            msgspec.ValidationError: a value of the wrong type.
        """
        if not isinstance(arguments, dict):
            raise ConfigError(f"arguments must be a JSON object, got {_json_kind(arguments)}")
        # a decoded JSON object: its keys are strings
        return _convert_arguments(
            self._types, cast("dict[str, Any]", arguments), keywords=self._keywords
        )

    async def invoke(self, kwargs: dict[str, object]) -> str | tuple[ToolResultContent, ...]:
        """Run the function with converted arguments (awaiting it if needed); render the result."""
        args: list[object] = []
        for name in self._positional:  # the leading ones given (kwargs is the call's own)
            if name not in kwargs:
                break
            args.append(kwargs.pop(name))
        if self._is_async:
            result = self.function(*args, **kwargs)
        else:  # a plain function runs in a thread of its own: the loop stays live
            result = await _in_own_thread(self.function, args, kwargs, self.name)
        if inspect.isawaitable(result):
            result = await result
        return _render(result)


@overload
def tool(
    function: ToolFunction,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool: ...


@overload
def tool(
    function: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    function: ToolFunction | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Decorator turning a function into a :class:`Tool` (``@tool`` or ``@tool(name=...)``)."""

    def wrap(fn: ToolFunction) -> Tool:
        return Tool(fn, name=name, description=description, timeout=timeout)

    return wrap(function) if function is not None else wrap


class ToolRegistry:
    """Tools by name, in registration order."""

    def __init__(self, tools: Iterable[Tool | ToolFunction] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in check_items(tools, "tools", "Tool objects or functions"):
            self.register(cast("Tool | ToolFunction", item))  # register checks it

    def register(self, item: Tool | ToolFunction) -> Tool:
        if not isinstance(item, Tool) and not callable(item):
            raise ConfigError(f"tools must be Tool objects or functions, got {described(item)}")
        registered = item if isinstance(item, Tool) else Tool(item)
        if registered.name in self._tools:
            raise ConfigError(f"a tool named {registered.name!r} is already registered")
        self._tools[registered.name] = registered
        return registered

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, if registered.

        Raises:
            ConfigError: ``name`` is not a str.
        """
        if type(name) is not str:
            check_instance(name, str, "ToolRegistry.get(name=...)", "a str")
        return self._tools.get(name)

    def schemas(self) -> tuple[ToolSchema, ...] | None:
        """The schemas to send, or ``None`` (the request has no tools) when none is registered."""
        tools = self._tools
        return tuple([t.schema for t in tools.values()]) if tools else None

    async def run(self, call: ToolCallPart) -> ToolResultPart:
        """Run one call. Every failure becomes an error result for the model.

        Raises:
            ConfigError: ``call`` is not a :class:`~rxturn.messages.ToolCallPart` (the
                caller's mistake, not the model's).
        """
        if type(call) is not ToolCallPart:
            check_instance(call, ToolCallPart, "ToolRegistry.run(call=...)", "a ToolCallPart")
        found = self._tools.get(call.name)
        if found is None:
            known = ", ".join(self._tools) or "none"
            return ToolResultPart(
                call.id, f"unknown tool {shown(call.name, 100)} (available: {known})", is_error=True
            )
        try:
            kwargs = found.convert(call.input)
        except (msgspec.ValidationError, ConfigError, TypeError) as exc:
            return ToolResultPart(call.id, f"invalid arguments for {call.name}: {exc}", True)
        try:
            return ToolResultPart(call.id, await found.invoke(kwargs))
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # the call was cancelled (the turn's cancel, the tool's timeout)
            return _failed(call, exc)  # the tool's own code raised it: nothing cancelled us
        except Exception as exc:  # the tool's own failure goes back to the model, and the log
            return _failed(call, exc)


async def _in_own_thread(
    function: Callable[..., Any], args: list[object], kwargs: dict[str, object], name: str
) -> Any:
    """``function(*args, **kwargs)`` in a new daemon thread, awaited (see the module docstring).

    Cancelling the wait leaves the thread to finish; its late outcome is dropped.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if done.done():  # the wait was cancelled (the turn's cancel, the tool's timeout)
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)

    def work() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = context.run(_call_in_thread, function, args, kwargs)
        except BaseException as exc:  # (handed to the waiter, as asyncio.to_thread does)
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name=f"rxturn-tool-{name}", daemon=True).start()
    return await done


def _call_in_thread(
    function: Callable[..., Any], args: list[object], kwargs: dict[str, object]
) -> Any:
    """``function(*args, **kwargs)`` in a worker thread, a ``StopIteration`` it raises turned into a
    ``RuntimeError`` (as PEP 479 does in a coroutine): asyncio cannot set a ``StopIteration``
    on the future that awaits the thread, and that future would never settle (a hang)."""
    try:
        return function(*args, **kwargs)
    except StopIteration as exc:
        raise RuntimeError(f"the tool raised StopIteration: {exc}") from exc


def _failed(call: ToolCallPart, error: BaseException) -> ToolResultPart:
    """A tool's own failure: logged (with its traceback), and the model's error result."""
    log.warning(
        "tool %r raised %s (call id %s); the model gets it as an error result",
        call.name,
        type(error).__name__,
        call.id,
        exc_info=error,
    )
    return tool_error_result(call, error)


def _parameter_types(
    function: ToolFunction, signature: inspect.Signature, tool_name: str, *, strict: bool
) -> dict[str, tuple[Any, bool]]:
    """name -> (annotation, required) for every named parameter of ``function``.

    Raises:
        ConfigError: with ``strict`` (the schema comes from these types), an annotation
            written as a string (``from __future__ import annotations``) names something the
            function's module does not define, such as a class made inside a function: the
            parameter's type cannot be known. Without ``strict`` it is taken as ``Any``.
    """
    try:
        # with its extras: Annotated[int, Meta(ge=1, description=...)] tells the model the
        # bounds and the meaning, and the conversion holds the model's value to them
        hints: dict[str, Any] | None = get_type_hints(function, include_extras=True)
    except Exception:  # a partial or a callable object, or a name that cannot be resolved
        hints = None
    types: dict[str, tuple[Any, bool]] = {}
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if hints is not None:
            annotation = hints.get(parameter.name, Any)
        else:  # each parameter on its own: one unresolved name must not untype them all
            annotation = _annotation(function, parameter, tool_name, strict=strict)
        types[parameter.name] = (annotation, parameter.default is inspect.Parameter.empty)
    return types


def _annotation(
    function: ToolFunction, parameter: inspect.Parameter, tool_name: str, *, strict: bool
) -> Any:
    """``parameter``'s annotation, a string one evaluated in the module of the function
    (the function a ``functools.partial`` wraps); ``Any`` when it has none."""
    annotation = parameter.annotation
    if annotation is inspect.Parameter.empty:
        return Any
    if not isinstance(annotation, str):
        return annotation
    inner: object = function
    while isinstance(inner, functools.partial):
        inner = cast("functools.partial[Any]", inner).func
    namespace = getattr(inspect.unwrap(cast("Callable[..., Any]", inner)), "__globals__", None)
    if not isinstance(namespace, dict):
        namespace = getattr(inspect.getmodule(inner), "__dict__", {})
    try:
        return eval(annotation, dict(cast("dict[str, Any]", namespace)))
    except Exception as exc:
        if not strict:
            return Any
        raise ConfigError(
            f"tool {tool_name!r}: the annotation {shown(annotation, 100)} of parameter "
            f"{parameter.name!r} cannot be resolved ({type(exc).__name__}: {exc}); define the "
            "type at module level or pass input_schema=..."
        ) from None


def _schema_for(types: Mapping[str, tuple[Any, bool]], tool_name: str) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    if types:
        annotations = [annotation for annotation, _ in types.values()]
        try:
            schemas, components = msgspec.json.schema_components(
                annotations, ref_template="#/$defs/{name}"
            )
        except (TypeError, ValueError):  # msgspec's own message spans several lines
            raise ConfigError(_schema_problem(types, tool_name)) from None
        for (param, (_, is_required)), schema in zip(types.items(), schemas, strict=True):
            properties[param] = schema
            if is_required:
                required.append(param)
    else:
        components = {}
    result: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        result["required"] = required
    if components:
        result["$defs"] = dict(components)
    return result


def _schema_problem(types: Mapping[str, tuple[Any, bool]], tool_name: str) -> str:
    """The one-line error for a signature msgspec cannot describe, naming the parameter."""
    for param, (annotation, _) in types.items():
        try:
            msgspec.json.schema(annotation)
        except (TypeError, ValueError):
            return (
                f"tool {tool_name!r}: parameter {param!r} is annotated {shown(annotation, 100)}, "
                "which has "
                "no JSON Schema; annotate it with a JSON type (str, int, float, bool, list, dict, "
                "a msgspec Struct...) or pass input_schema=..."
            )
    return f"tool {tool_name!r}: its parameters have no JSON Schema; pass input_schema=..."


def _convert_arguments(
    types: Mapping[str, tuple[Any, bool]], arguments: Mapping[str, Any], *, keywords: bool
) -> dict[str, Any]:
    """``arguments`` converted to ``types``; others kept as they are when ``keywords`` (the
    function takes ``**kwargs``), else refused."""
    unknown = set(arguments) - set(types)
    if unknown and not keywords:
        raise ConfigError(f"unexpected argument(s): {', '.join(sorted(unknown))}")
    missing = [name for name, (_, required) in types.items() if required and name not in arguments]
    if missing:
        raise ConfigError(f"missing required argument(s): {', '.join(missing)}")
    return {
        name: _convert_one(name, value, types[name][0]) if name in types else value
        for name, value in arguments.items()
    }


def _json_kind(value: object) -> str:
    """What ``value``, decoded JSON, was in JSON's words (the model wrote JSON, not Python)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return f"a {type(value).__name__}"


def _convert_one(name: str, value: object, annotation: Any) -> object:
    """``value`` converted to ``annotation``; a failure names where it is from the arguments'
    root (msgspec's path starts at the one argument it was given: ``$.y`` for the ``y`` of
    argument ``b``, nothing at all for the argument itself), so the model can fix its call.

    Raises:
        msgspec.ValidationError: the value does not fit, its path starting at ``$.name``.
    """
    try:
        return msgspec.convert(value, annotation, strict=False)
    except msgspec.ValidationError as exc:
        message = str(exc)
        head, found, inner = message.rpartition(" - at `$")
        if found:  # inner is the rest of msgspec's path: ".y`", "[1]`"
            raise msgspec.ValidationError(f"{head} - at `$.{name}{inner}") from None
        raise msgspec.ValidationError(f"{message} - at `$.{name}`") from None


#: What a tool result carries besides a string (ToolResultPart.content).
_CARRIED: tuple[type, ...] = get_args(ToolResultContent)
#: Every part class of a message: one a tool returns is a part, never data to JSON-encode.
_PARTS: tuple[type, ...] = get_args(ContentPart)


def _render(result: Any) -> str | tuple[ToolResultContent, ...]:
    """A tool's return value as a result's content: a str as is, ``None`` as ``""``, bytes
    that are UTF-8 as their text (``subprocess.check_output``'s), text, image and document
    parts (alone, or a tuple / list of them, strs among them as text) as parts, any other value
    as its JSON, with the bytes inside it as their text too.

    Raises:
        ConfigError: the value is (or holds) bytes that are not UTF-8 text: JSON would send
            them to the model as a base64 string it cannot read (an image or a PDF goes as a part:
            ``ImagePart.from_bytes(data)``, ``DocumentPart.from_bytes(data)``).
        ConfigError: the value holds a part no tool result carries (an ``AudioPart``, a
            ``CachePoint``…), or parts mixed with other values: JSON of it would send the
            media's bytes to the model as base64 text; or it holds a float that is NaN or
            infinite, which JSON has no spelling for (msgspec writes it as ``null``: the model
            would read a successful ``null`` where the tool computed no number).
    """
    if isinstance(result, str):
        return result
    if result is None:
        return ""
    if isinstance(result, bytes | bytearray | memoryview):
        return _text_of(bytes(cast("bytes", result)))
    if isinstance(result, _CARRIED):  # a screenshot, a report
        return (result,)
    if isinstance(result, _PARTS):
        raise ConfigError(f"the tool returned a part of type {type(result).__name__}; {_CARRIES}")
    if isinstance(result, tuple | list):
        items: list[object] = list(result)  # pyright: ignore[reportUnknownArgumentType]
        if any(isinstance(item, _PARTS) for item in items):
            return tuple(_carried(item, index) for index, item in enumerate(items))
    # bytes inside the value follow the rule of bytes returned alone (msgspec would write them
    # as base64, which the model cannot read): to_builtins keeps them, _json_ready decodes them
    # and, in the same walk, refuses a NaN or an infinity (msgspec would write a plain null)
    value: object = msgspec.to_builtins(result, builtin_types=_BYTES, enc_hook=_builtin)
    kind = type(value)
    try:
        if kind in _NESTED:
            value = _json_ready(value)
        elif kind is float and not math.isfinite(cast(float, value)):
            raise ConfigError(f"the tool returned a value that is not JSON: {NON_FINITE}")
    except _NotText as exc:
        at = "".join(f"[{shown(key, 100)}]" for key in reversed(exc.path))
        _text_of(exc.raw, f" at {at}")  # raises, naming where
    return msgspec.json.encode(value).decode()


_BYTES = (bytes, bytearray, memoryview)
#: Containers JSON has no type for whose items are at hand: sent as an array of them.
_LISTED = (range, KeysView, ValuesView, ItemsView)


def _builtin(value: object) -> object:
    """A value msgspec has no JSON for, as JSON can hold it: a range or a dict view as the
    list of its items, anything else as its ``str()``.

    Raises:
        ConfigError: the value is an iterator (a generator, ``map(...)``…): its ``str()`` is
            ``<map object at 0x…>``, and reading it here would run the tool's code on the
            event loop.
    """
    if isinstance(value, _LISTED):
        return list(cast("Iterable[object]", value))
    if isinstance(value, Iterator | AsyncIterator):
        kind: type = type(cast("object", value))
        raise ConfigError(
            f"the tool returned a {kind.__name__} object, an iterator the model would "
            "get as its repr; return a list (list(...))"
        )
    return str(value)


class _NotText(Exception):
    """Bytes that are not UTF-8 inside a returned value; ``path`` collects the keys to them
    (innermost first) as the walk unwinds."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.path: list[object] = []


def _json_ready(value: object) -> object:
    """``value``, a container or a bytes-like of what ``to_builtins`` made (bytes kept), with
    every bytes-like in it decoded as UTF-8 text (:class:`_NotText` when one is not); a float
    in it that is NaN or infinite is a ConfigError. Its dicts and lists are fresh copies,
    changed in place; a tuple is made anew."""
    kind = type(value)
    if kind is dict or kind is list or kind is tuple:
        items = cast("dict[object, object] | list[object] | tuple[object, ...]", value)
        if kind is tuple:
            items = list(items)
        pairs = items.items() if isinstance(items, dict) else enumerate(items)
        for key, item in pairs:
            of = type(item)
            if of in _NESTED:
                try:
                    items[key] = _json_ready(item)  # pyright: ignore[reportArgumentType, reportCallIssue, reportIndexIssue]
                except _NotText as exc:
                    exc.path.append(key)
                    raise
            elif of is float and not math.isfinite(cast(float, item)):
                raise ConfigError(f"the tool returned a value that is not JSON: {NON_FINITE}")
        return tuple(items) if kind is tuple else value
    raw = bytes(cast("bytes", value))
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise _NotText(raw) from None


#: What :func:`_json_ready` looks into (anything else in a builtins tree is a JSON scalar).
_NESTED = frozenset({dict, list, tuple, *_BYTES})


def _text_of(raw: bytes, at: str = "") -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise ConfigError(
            f"the tool returned {len(raw)} bytes that are not UTF-8 text{at} (the model would "
            "get them as base64); return a str, or ImagePart.from_bytes(data) / "
            "DocumentPart.from_bytes(data) for an image or a PDF"
        ) from None


_CARRIES = (
    "a tool result carries a str, or TextPart, ImagePart and DocumentPart parts (strs among "
    "them are text)"
)


def _carried(item: object, index: int) -> ToolResultContent:
    if isinstance(item, str):
        return TextPart(item)
    if not isinstance(item, _CARRIED):
        raise ConfigError(
            f"the tool returned parts with a value of type {type(item).__name__} among them "
            f"(item {index}); "
            f"{_CARRIES}"
        )
    return cast(ToolResultContent, item)
