"""The fake provider's script: which reply (or fault) each request gets.

docs/fake-provider.md documents the format for users: every key, an example per fault.

A scenario maps a model name to a list of entries. Each request takes the next entry of its
model's list; ``"*"`` serves every model that has no list of its own (it is no glob: a key
holding ``*`` among other characters is refused); once a list is used up its
last entry repeats. Cursors belong to lists, so every model served by ``"*"`` advances the
same ``"*"`` cursor. An entry scripts one reply — text, thinking, tool calls, stop reason and
usage, cut into deltas of ``chunk_chars`` characters — or one fault: an HTTP error status, a
connection dropped mid-stream, a stall, a broken JSON event, or an in-stream ``error`` event.

Scenarios come from test code and from files users write by hand, so validation is strict and
happens once, at load: an unknown key, a wrong type, a negative number or an empty list is a
:class:`~rxturn.errors.ConfigError` whose message names the field, e.g.
``models.primary[1].chunk_chars: expected int >= 1``. A server that silently ignored a typo'd
fault key would make a test pass for the wrong reason.

Defaults worth knowing (documented once, here):

* ``chunk_chars`` = 8: text, thinking and tool-input JSON are cut into pieces of at most 8
  characters, about two tokens' worth, so even short replies stream as several events.
* ``stop_reason`` absent: ``tool_call`` when the entry has tool calls, else ``end_turn``;
  ``"refusal"`` makes each wire's refusal (see :mod:`._emit`).
* ``usage`` absent: deterministic counts (see :func:`rxturn.testing._emit.default_usage`);
  ``usage: null``: the reply reports no usage at all. ``raw_usage`` (an object in the wire's
  own shape, sent as it is) replaces it.
* ``stall_seconds`` absent: the stall lasts until the client goes away or the server stops.
* ``first_content_delay_ms``: the preamble (headers, Anthropic ``message_start``, the OpenAI
  role chunk, the Responses ``response.created``/``in_progress`` events; Ollama has none) goes
  out at once, then nothing for that long before the first content event: a slow model.

One key for special cases: ``error_message`` replaces the default message of a scripted error
(status or in-stream), e.g. to script a context-overflow 400 whose text a client must recognise.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import msgspec

from .._arguments import shown
from .._media import describe_bound
from .._validate import is_utf8
from ..errors import ConfigError

__all__ = [
    "DEFAULT_CHUNK_CHARS",
    "DEFAULT_SCENARIO",
    "Entry",
    "RateLimitWindow",
    "Scenario",
    "ScenarioToolCall",
    "ScenarioUsage",
    "load_scenario",
]

#: Characters per streamed delta when an entry does not say (about two tokens).
DEFAULT_CHUNK_CHARS = 8

# Upper bounds: no test means a wait of more than a day or a billion of anything; such a
# number is a typo (or seconds written in milliseconds), and infinity would hang the server
# or write a 300-digit Retry-After. Usage counts stay unbounded: scripting a count a client
# cannot hold is a fault worth testing.
_MAX_SECONDS = 86_400.0
_MAX_MS = _MAX_SECONDS * 1000
_MAX_COUNT = 1_000_000_000

#: The most a scenario file may hold (bytes). A hand-written scenario is kilobytes, a generated
#: one a few megabytes; a path with no end (``/dev/zero``) must not take the machine's memory.
MAX_SCENARIO_BYTES = 64 * 1024 * 1024

_NonNegInt = Annotated[int, msgspec.Meta(ge=0)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=_MAX_COUNT)]
_Seconds = Annotated[float, msgspec.Meta(ge=0, le=_MAX_SECONDS)]
_Millis = Annotated[float, msgspec.Meta(ge=0, le=_MAX_MS)]

ScenarioStopReason = Literal["end_turn", "tool_call", "max_tokens", "stop_sequence", "refusal"]


class ScenarioUsage(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Token counts an entry reports, in rxturn's neutral spelling."""

    input_tokens: _NonNegInt
    output_tokens: _NonNegInt


class ScenarioToolCall(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One tool call of a scripted reply. ``id`` defaults to a per-wire, per-position id."""

    name: Annotated[str, msgspec.Meta(min_length=1)]
    input: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    id: Annotated[str, msgspec.Meta(min_length=1)] | None = None


#: The entry keys that script a reply, with the value each has when not scripted.
_REPLY_KEYS: dict[str, object] = {
    "text": "",
    "thinking": "",
    "tool_calls": (),
    "stop_reason": None,
    "usage": msgspec.UNSET,
    "raw_usage": None,
    "drop_after_events": None,
    "stall_after_events": None,
    "malformed_after_events": None,
    "error_event_after_events": None,
    "first_content_delay_ms": 0.0,
}


class Entry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One scripted reply or fault (docs/fake-provider.md has every key, with examples)."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ScenarioToolCall, ...] = ()
    stop_reason: ScenarioStopReason | None = None
    usage: ScenarioUsage | msgspec.UnsetType | None = msgspec.UNSET
    chunk_chars: Annotated[int, msgspec.Meta(ge=1, le=_MAX_COUNT)] = DEFAULT_CHUNK_CHARS
    delay_ms: _Millis = 0.0
    delay_ms_max: _Millis | None = None
    status: Annotated[int, msgspec.Meta(ge=400, le=599)] | None = None
    retry_after: _Seconds | None = None
    error_type: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    error_message: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    drop_after_events: _Count | None = None
    stall_after_events: _Count | None = None
    stall_seconds: _Seconds | None = None
    malformed_after_events: _Count | None = None
    error_event_after_events: _Count | None = None
    raw_usage: dict[str, Any] | None = None
    first_content_delay_ms: _Millis = 0.0

    def __post_init__(self) -> None:
        # msgspec turns a ValueError raised here into a ValidationError that carries the path.
        if self.raw_usage is not None and not isinstance(self.usage, msgspec.UnsetType):
            raise ValueError("raw_usage replaces usage: script one of them")
        if self.status is not None:
            # an HTTP error carries none of a reply: a reply key beside status went unused,
            # without a word (a test passing for the wrong reason)
            for name in _REPLY_KEYS:
                if getattr(self, name) != _REPLY_KEYS[name]:
                    raise ValueError(f"{name} needs a reply, not an HTTP error (status)")
        if self.retry_after is not None and self.status is None:
            raise ValueError("retry_after needs status (it is the Retry-After of an HTTP error)")
        if self.delay_ms_max is not None and self.delay_ms_max < self.delay_ms:
            raise ValueError("delay_ms_max must be at least delay_ms")
        if self.stall_seconds is not None and self.stall_after_events is None:
            raise ValueError("stall_seconds needs stall_after_events")
        for name in ("error_type", "error_message"):
            if (
                getattr(self, name) is not None
                and self.status is None
                and (self.error_event_after_events is None)
            ):
                raise ValueError(f"{name} needs status or error_event_after_events")

    @property
    def resolved_stop_reason(self) -> ScenarioStopReason:
        """The stop reason the reply reports: scripted, else by content."""
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_call" if self.tool_calls else "end_turn"


class RateLimitWindow(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """A stretch of time during which every request gets an HTTP error (a 429 storm).

    ``after_s`` counts from the first request the server received; the window lasts
    ``seconds``; ``status`` (default 429) and ``retry_after`` are the error's.
    """

    after_s: _Seconds = 0.0
    seconds: Annotated[float, msgspec.Meta(gt=0, le=_MAX_SECONDS)]
    status: Annotated[int, msgspec.Meta(ge=400, le=599)] = 429
    retry_after: _Seconds | None = None


class Scenario(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Model name (or ``"*"``) → the entries its requests take, in order; and the windows of
    time in which every request is refused (``rate_limit_windows``)."""

    models: dict[str, tuple[Entry, ...]]
    rate_limit_windows: tuple[RateLimitWindow, ...] = ()

    def window_at(self, elapsed: float) -> RateLimitWindow | None:
        """The rate-limit window ``elapsed`` seconds after the first request falls in."""
        for window in self.rate_limit_windows:
            if window.after_s <= elapsed < window.after_s + window.seconds:
                return window
        return None

    def entries_for(self, model: str) -> tuple[str, tuple[Entry, ...]] | None:
        """The list serving ``model`` and its key (``model`` itself or ``"*"``), if any."""
        entries = self.models.get(model)
        if entries is not None:
            return model, entries
        wildcard = self.models.get("*")
        if wildcard is not None:
            return "*", wildcard
        return None


_PATH_RE = re.compile(
    r"^(?P<what>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`)?$", re.DOTALL
)
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-.:/]*$")
#: the most of a name or value a message quotes (a key of a million characters is still one)
_SHOWN = 100
_TOP_KEYS = frozenset({"models", "rate_limit_windows"})


def _describe(what: str, path: str) -> str:
    """Rewrite a msgspec validation message in the words a scenario author uses."""
    # (DOTALL: a key may hold a newline, which the repr below escapes; unmatched, it went
    # into the message as is and broke it over two lines)
    if match := re.fullmatch(r"Object contains unknown field `(.+)`", what, re.DOTALL):
        return f"unknown field {shown(match.group(1), _SHOWN)}"
    if match := re.fullmatch(r"Object missing required field `(.+)`", what, re.DOTALL):
        return f"missing required field {shown(match.group(1), _SHOWN)}"
    if what == "Expected `array` of length >= 1":
        return "expected a non-empty list"
    if match := re.fullmatch(r"Invalid enum value (.+)", what):
        allowed = "end_turn, tool_call, max_tokens, stop_sequence, refusal"
        given = match.group(1)  # msgspec's repr of the value, whole
        given = given if len(given) <= _SHOWN else given[: _SHOWN - 3] + "..."
        return f"invalid value {given} (expected one of {allowed})"
    what = what.replace("`", "")
    return what[:1].lower() + what[1:]


def _model_path(model: str) -> str:
    plain = _IDENT_RE.match(model) and len(model) <= _SHOWN
    return f"models.{model}" if plain else f"models[{shown(model, _SHOWN)}]"


def _validation_error(exc: msgspec.ValidationError, prefix: str) -> ConfigError:
    match = _PATH_RE.match(str(exc))
    assert match is not None  # the pattern matches any string
    path = prefix + (match.group("path") or "")
    what = _describe(match.group("what"), path)
    if match.group("key"):  # msgspec's "- at key in `$...`": a key of that object is wrong
        what = f"a key: {what}"
    return ConfigError(f"scenario {path}: {what}")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> None:
    keys: set[str] = set()
    for key, _ in pairs:
        if key in keys:
            raise _DuplicateKey(key)
        keys.add(key)


class _DuplicateKey(Exception):
    pass


def _not_json_constant(name: str) -> Any:
    raise _NotJSON(f"{name} is not a JSON number")


class _NotJSON(ValueError):
    pass


def _lenient(data: bytes, where: str, exc: Exception) -> Any:
    """``data`` as Python's JSON parser reads it (``None`` if it cannot either), duplicate keys
    refused; ``NaN`` / ``Infinity`` (which Python would take) are named in the error."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        _no_duplicates(items)
        return dict(items)

    # (from bytes, Python's parser reads UTF-16 and UTF-32 too: a file PowerShell's > wrote
    # loaded, where msgspec and every other JSON reader refuse it)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(
            f"{where}: starts with a UTF-16 byte order mark: the file is UTF-16 text; "
            "save it as UTF-8"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as bad:
        byte = f"byte 0x{data[bad.start]:02x} at offset {bad.start}"
        raise ConfigError(f"{where}: not UTF-8 text ({byte})") from None
    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=_not_json_constant)
    except _DuplicateKey as dup:
        raise ConfigError(f"{where}: duplicate key {shown(dup.args[0], _SHOWN)}") from None
    except _NotJSON as constant:
        raise ConfigError(f"{where}: invalid JSON: {exc} ({constant})") from None
    except (RecursionError, ValueError):
        return None


#: Below this many bits an int has fewer than 4300 digits, the most Python writes by default.
_WRITTEN_BITS = 14_000


def _problem(value: object, path: str) -> str | None:
    """The first string that is not UTF-8 (a lone surrogate: no request can carry it, and
    encoding the reply failed on every request, a 500), float that is not finite (JSON has
    none; encoded as ``null``, silently), key that is not a string or value of no JSON type
    (a set, bytes, an object: a 500 on every request, or a silent array or base64 string) in
    ``value``, with its path; ``None`` if none."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        # a count no client can hold is a fault worth scripting; one Python cannot write
        # (past 4300 digits, by default) failed every request with a 500
        if value.bit_length() > _WRITTEN_BITS:
            try:
                str(value)
            except ValueError:
                most = f"{sys.get_int_max_str_digits()} digits at most"
                return f"{path}: expected an integer Python writes ({most}), got {shown(value)}"
        return None
    if isinstance(value, str):
        if not is_utf8(value):
            bad = next(char for char in value if "\ud800" <= char <= "\udfff")
            return f"{path}: not valid UTF-8 (a lone surrogate, {bad!r})"
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path}: expected a finite number, got {value!r}"
    if isinstance(value, dict):
        for key, item in cast("dict[object, object]", value).items():
            plain = isinstance(key, str) and _IDENT_RE.match(key) and len(key) <= _SHOWN
            named = f"{path}.{key}" if plain else f"{path}[{shown(key, _SHOWN)}]"
            if not isinstance(key, str):
                return f"{named}: expected a string key, got {type(key).__name__}"
            problem = _problem(key, named) or _problem(item, named)
            if problem is not None:
                return problem
    elif isinstance(value, list | tuple):
        for index, item in enumerate(cast("list[object]", value)):
            problem = _problem(item, f"{path}[{index}]")
            if problem is not None:
                return problem
    elif not isinstance(value, float):
        return f"{path}: expected a JSON value, got {type(value).__name__}"
    return None


def _as_raw(value: object) -> object:
    """A hand-built scenario in its JSON shape, Structs as objects and every other value as it
    is, for the checks to name (``msgspec.to_builtins`` raised a bare TypeError at an object
    and turned bytes into base64 without a word). A Struct left in place would skip every
    check: ``msgspec.convert`` takes an instance of the type it converts to as it is."""
    if isinstance(value, msgspec.Struct):
        fields = ((name, getattr(value, name)) for name in value.__struct_fields__)
        return {name: _as_raw(item) for name, item in fields if item is not msgspec.UNSET}
    if isinstance(value, tuple | list):
        return [_as_raw(item) for item in cast("list[object]", value)]
    if isinstance(value, dict):
        return {key: _as_raw(item) for key, item in cast("dict[object, object]", value).items()}
    return value


def _plain(value: object, where: str) -> Any:
    """:func:`_as_raw`, a value nested past the recursion limit named at ``where``."""
    try:
        return _as_raw(value)
    except RecursionError:  # a dict built by code, nested deeper than any reply
        raise ConfigError(f"scenario {where}: nested too deeply") from None


def _read_source(src: str | os.PathLike[str] | bytes | bytearray) -> Any:
    if isinstance(src, bytes | bytearray):
        data, where = bytes(src), "scenario"
    elif isinstance(src, str) and src.removeprefix("\ufeff").lstrip().startswith("{"):
        # (the text of a file saved with a byte order mark keeps it: read as a path, it was
        # "scenario file '\ufeff{...': No such file or directory")
        data, where = src.encode(), "scenario"
    else:
        if not isinstance(src, str | os.PathLike):  # pyright: ignore[reportUnnecessaryIsInstance]
            # (Path(5) was a TypeError: 'expected str, bytes or os.PathLike object')
            raise ConfigError(
                "scenario: expected a dict, JSON text or bytes, a file path or a Scenario, "
                f"got {type(src).__name__}"
            )
        if not os.fspath(src):  # Path("") is the current directory: "'.': Is a directory"
            raise ConfigError("scenario: expected a file name, got ''")
        path = Path(src)
        where = f"scenario file {shown(str(path), _SHOWN)}"
        try:
            with path.open("rb") as file:  # (a pipe is read too: --scenario <(generate))
                data = file.read(MAX_SCENARIO_BYTES + 1)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(f"{where}: {reason}") from None
        if len(data) > MAX_SCENARIO_BYTES:
            bound = describe_bound(MAX_SCENARIO_BYTES)
            raise ConfigError(f"{where}: larger than {bound}, the most a scenario file holds")
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark (editors on Windows)
    try:
        raw = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: nested too deeply
        # msgspec refuses two things JSON's grammar allows: a number beyond a float (1e400)
        # and a lone surrogate escape ("\ud800"), in words that name no field ("Number out
        # of range - at `$[...][...]`", "Input data was truncated"). Python's parser reads
        # them (as an infinity, a lone surrogate), so the checks below can name the field.
        raw = _lenient(data, where, exc)
        if raw is None:
            raise ConfigError(f"{where}: invalid JSON: {exc}") from None
        return raw
    # JSON keeps the last of two equal keys: an entry pasted over another that still holds
    # the old fault would script the wrong reply without a word. Scenarios are small: a
    # second, checking pass costs nothing that matters.
    try:
        json.loads(data, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise ConfigError(f"{where}: duplicate key {shown(exc.args[0], _SHOWN)}") from None
    except (RecursionError, ValueError) as exc:  # deeper, or a longer number, than json takes
        raise ConfigError(f"{where}: invalid JSON: {exc}") from None
    return raw


def load_scenario(
    src: Scenario | Mapping[str, object] | str | os.PathLike[str] | bytes | bytearray,
) -> Scenario:
    """Validate a scenario and return it as a :class:`Scenario`.

    Args:
        src: a ``dict`` or another mapping (the JSON shape), JSON text (``str`` starting with
            ``{``, or ``bytes``),
            a path to a JSON file (``str`` or ``os.PathLike``), or a :class:`Scenario`
            (re-validated, since a Struct built by hand skips msgspec's checks).

    Returns:
        The validated scenario.

    Raises:
        ConfigError: the file is unreadable, the JSON is malformed, or a field is wrong; the
            message names the field path (``models.primary[1].chunk_chars: expected int >= 1``).

    Examples:
        >>> load_scenario({"models": {"*": [{"text": "hi"}]}}).models["*"][0].text
        'hi'
    """
    raw: Any
    if isinstance(src, Scenario):  # (its parts are made plain one by one, below)
        raw = {"models": src.models, "rate_limit_windows": src.rate_limit_windows}
    elif isinstance(src, Mapping):
        raw = dict(src)
    else:
        raw = _read_source(src)
    built = isinstance(src, Scenario | Mapping)  # by code: it may hold Structs (not JSON)
    if not isinstance(raw, dict):
        raise ConfigError(f"scenario: expected an object, got {type(raw).__name__}")
    top = cast("dict[Any, Any]", raw)
    for key in top:
        if key not in _TOP_KEYS:
            raise ConfigError(
                f"scenario: unknown field {shown(key, _SHOWN)} (expected 'models' or "
                "'rate_limit_windows')"
            )
    if "models" not in top:
        raise ConfigError("scenario: missing required field 'models'")
    models_raw: Any = top["models"]
    if not isinstance(models_raw, dict) or not models_raw:
        raise ConfigError("scenario models: expected a non-empty object of model -> entries")
    models: dict[str, tuple[Entry, ...]] = {}
    entries_by_model = cast("dict[Any, Any]", models_raw)
    for model, entries_raw in entries_by_model.items():
        if not isinstance(model, str) or not model:
            raise ConfigError(
                "scenario models: model names must be non-empty strings, got "
                f"{shown(model, _SHOWN)}"
            )
        prefix = _model_path(model)
        if "*" in model and model != "*":
            # "claude-*" read as a glob matched nothing, without a word
            raise ConfigError(
                f"scenario {prefix}: '*' is a pattern only as a key of its own (\"*\" serves "
                "every model without a list); no other key is a pattern"
            )
        if built:  # an Entry in a dict: checked as one
            entries_raw = _plain(entries_raw, prefix)
        try:
            entries = msgspec.convert(entries_raw, tuple[Entry, ...])
        except msgspec.ValidationError as exc:
            raise _validation_error(exc, prefix) from None
        if not entries:
            raise ConfigError(f"scenario {prefix}: expected a non-empty list of entries")
        try:
            problem = _problem(model, "models") or _problem(entries_raw, prefix)
        except RecursionError:  # a dict built by code, nested deeper than any reply
            raise ConfigError(f"scenario {prefix}: nested too deeply") from None
        if problem is not None:
            raise ConfigError(f"scenario {problem}")
        models[model] = entries
    windows_raw = top.get("rate_limit_windows", ())
    if built:
        windows_raw = _plain(windows_raw, "rate_limit_windows")
    try:
        windows = msgspec.convert(windows_raw, tuple[RateLimitWindow, ...])
    except msgspec.ValidationError as exc:
        raise _validation_error(exc, "rate_limit_windows") from None
    # (msgspec takes a set for a list: a set of windows, in no order, loaded unchecked)
    problem = _problem(windows_raw, "rate_limit_windows")
    if problem is not None:
        raise ConfigError(f"scenario {problem}")
    return Scenario(models=models, rate_limit_windows=windows)


#: Served by ``rxturn fake-server`` when no ``--scenario`` is given.
DEFAULT_SCENARIO: Scenario = load_scenario(
    {"models": {"*": [{"text": "Hello from the rxturn fake provider."}]}}
)
