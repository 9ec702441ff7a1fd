"""Conversation data: messages, content parts, usage, stop reasons, requests and options.

These are the provider-neutral types every layer shares. They are frozen msgspec Structs, so a
message handed to an observer can never change under another subscriber's feet, and their JSON
form (``msgspec.json.encode``) is exactly the Message JSON of docs/behaviour.md §6::

    {"id": "msg_…", "model": "…", "role": "assistant",
     "content": [{"type": "text", "text": "…"},
                 {"type": "tool_call", "id": "…", "name": "…", "input": {…}}],
     "stop_reason": "end_turn", "usage": {"input_tokens": 0, "output_tokens": 0}}

Two more part types appear in replies: :class:`RefusalPart` (an OpenAI refusal) always, and
:class:`ThinkingPart` / :class:`RedactedThinkingPart` only when the fold keeps thinking
(docs/wire-formats.md). A reply without them encodes exactly as before.
"""

from __future__ import annotations

import base64
import binascii
import enum
import errno
import json
import os
import stat
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self, SupportsIndex, cast, get_args
from urllib.parse import urlsplit

import msgspec

from . import _media
from ._arguments import described, shown, type_named
from ._redact import is_credential_header
from ._validate import PARTICIPANT_NAME
from .errors import ConfigError

__all__ = [
    "MAX_MEDIA_FILE_BYTES",
    "AudioPart",
    "CachePoint",
    "CacheTTL",
    "ContentPart",
    "DocumentPart",
    "FileIdSource",
    "ImagePart",
    "InlineSource",
    "MediaPart",
    "MediaSource",
    "Message",
    "RedactedThinkingPart",
    "RefusalPart",
    "Request",
    "RequestOptions",
    "ResponseFormat",
    "Role",
    "StopReason",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultContent",
    "ToolResultPart",
    "ToolSchema",
    "UrlSource",
    "Usage",
    "content_text",
    "describe_part",
    "media_from_path",
    "message_from_json",
    "message_to_json",
    "sum_usage",
    "usage_to_json",
]

Role = Literal["user", "assistant"]


class StopReason(enum.StrEnum):
    """Why the model stopped. Only ``TOOL_CALL`` continues an agent loop.

    ``REFUSAL``: the model (or the provider's safety system) declined to answer; it ends the
    loop like ``END_TURN``.
    """

    END_TURN = "end_turn"
    TOOL_CALL = "tool_call"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"

    @classmethod
    def parse(cls, value: str | None) -> StopReason | None:
        """Map a provider's spelling to a stop reason; ``None`` for anything unrecognised.

        Accepts the canonical names plus ``tool_use`` / ``tool_calls`` (→ TOOL_CALL),
        ``length`` / ``max_output_tokens`` (→ MAX_TOKENS), ``stop`` (→ END_TURN) and
        ``content_filter`` (→ REFUSAL).
        """
        if value is None:
            return None
        return _STOP_ALIASES.get(value)

    @property
    def continues_loop(self) -> bool:
        """True only for ``TOOL_CALL``: the agent must run tools and call the model again."""
        return self is StopReason.TOOL_CALL


_STOP_ALIASES: dict[str, StopReason] = {
    "end_turn": StopReason.END_TURN,
    "stop": StopReason.END_TURN,
    "tool_call": StopReason.TOOL_CALL,
    "tool_use": StopReason.TOOL_CALL,
    "tool_calls": StopReason.TOOL_CALL,
    "function_call": StopReason.TOOL_CALL,
    "max_tokens": StopReason.MAX_TOKENS,
    "length": StopReason.MAX_TOKENS,
    "max_output_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
    "content_filter": StopReason.REFUSAL,
}


# a token count read from JSON: a negative one is refused where it is decoded, naming the field
_Count = Annotated[int, msgspec.Meta(ge=0)]


class Usage(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, repr_omit_defaults=True):
    """Token usage a provider reported. Optional everywhere: code against ``Usage | None``.

    ``input_tokens`` is the **total** input on every wire (Anthropic's uncached input plus its
    cache writes and reads; OpenAI and Ollama report it that way), ``output_tokens`` the total
    output (reasoning included). The other counts say what part of those totals was what, and
    are ``None`` when the provider did not report them (``0``: reported as zero):

    * ``cache_read_tokens`` / ``cache_write_tokens``: input read from / written to the prompt
      cache; ``cache_write_5m_tokens`` / ``cache_write_1h_tokens`` split the writes by TTL
      (Anthropic; only when the split adds up to ``cache_write_tokens``);
    * ``output_reasoning_tokens``: output spent on reasoning (thinking);
    * ``input_audio_tokens`` / ``output_audio_tokens``: audio in and out;
    * ``details``: any other whole-number counts, under the provider's own dotted names
      (``server_tool_use.web_search_requests``); ``None`` when there are none;
    * ``provider_cost``: what the provider itself said the call cost, in USD, when it says so
      (OpenRouter's ``usage.cost``, xAI's ``usage.cost_in_usd_ticks``).

    The JSON form carries ``input_tokens`` and ``output_tokens`` always and the rest only when
    reported (:func:`usage_to_json`). ``a + b`` sums two usages (a count reported by either is
    reported in the sum); docs/usage-and-cost.md has the per-wire mapping.
    """

    input_tokens: _Count = msgspec.field(default_factory=int)  # a factory: always encoded, even 0
    output_tokens: _Count = msgspec.field(default_factory=int)
    cache_read_tokens: _Count | None = None
    cache_write_tokens: _Count | None = None
    cache_write_5m_tokens: _Count | None = None
    cache_write_1h_tokens: _Count | None = None
    output_reasoning_tokens: _Count | None = None
    input_audio_tokens: _Count | None = None
    output_audio_tokens: _Count | None = None
    details: dict[str, _Count] | None = None
    provider_cost: Annotated[float, msgspec.Meta(ge=0)] | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        write_5m = _add(self.cache_write_5m_tokens, other.cache_write_5m_tokens)
        write_1h = _add(self.cache_write_1h_tokens, other.cache_write_1h_tokens)
        writes = _add(self.cache_write_tokens, other.cache_write_tokens)
        if (write_5m is not None or write_1h is not None) and (
            writes is None or (write_5m or 0) + (write_1h or 0) != writes
        ):
            write_5m = write_1h = None  # a split that no longer adds up says nothing
        details = self.details
        if other.details:
            details = dict(details) if details else {}
            for key, value in other.details.items():
                details[key] = details.get(key, 0) + value
        cost = self.provider_cost
        if other.provider_cost is not None:
            cost = other.provider_cost if cost is None else _add_costs(cost, other.provider_cost)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=_add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=writes,
            cache_write_5m_tokens=write_5m,
            cache_write_1h_tokens=write_1h,
            output_reasoning_tokens=_add(
                self.output_reasoning_tokens, other.output_reasoning_tokens
            ),
            input_audio_tokens=_add(self.input_audio_tokens, other.input_audio_tokens),
            output_audio_tokens=_add(self.output_audio_tokens, other.output_audio_tokens),
            details=details,
            provider_cost=cost,
        )


def _add_costs(a: float, b: float) -> float:
    """Two provider costs summed as the decimals they were sent as (their shortest reprs),
    as :mod:`rxturn.cost` sums them: ``0.1 + 0.2`` is ``0.3``, not float addition's
    ``0.30000000000000004``, so a billed usage and the turn's cost say the same."""
    return float(Decimal(repr(a)) + Decimal(repr(b)))


def _add(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else a + b


def sum_usage(usages: Iterable[Usage | None]) -> Usage | None:
    """The sum of the usages that were reported (``None`` when none was)."""
    total: Usage | None = None
    for usage in usages:
        if usage is not None:
            total = usage if total is None else total + usage
    return total


def usage_to_json(usage: Usage | None) -> dict[str, object] | None:
    """A usage as its JSON object (``None`` stays ``None``): ``input_tokens`` and
    ``output_tokens`` always, every other count only when it was reported. The one place that
    shapes usage for the CLI, the audit lines, batch output and telemetry."""
    if usage is None:
        return None
    return msgspec.to_builtins(usage)


class TextPart(msgspec.Struct, frozen=True, tag="text"):
    """A run of assistant (or user) text."""

    text: str

    def __post_init__(self) -> None:
        # checked when built, as the other parts are: a None or an int reached the request's
        # text join as a TypeError ('sequence item 1: expected str instance') inside the turn
        if type(self.text) is not str:
            raise ConfigError(f"TextPart.text must be a str, got {described(self.text)}")


class ToolCallPart(msgspec.Struct, frozen=True, tag="tool_call"):
    """The model asks for a tool to be run with ``input`` (already-parsed JSON)."""

    id: str
    name: str
    input: Any = msgspec.field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        # a non-str id or name went out as a JSON number or null, which every provider refuses
        for field in ("id", "name"):
            value = getattr(self, field)
            if type(value) is not str:
                raise ConfigError(f"ToolCallPart.{field} must be a str, got {described(value)}")


# --- media: images, documents, audio, and where their bytes come from -------------------------


class InlineSource(msgspec.Struct, frozen=True, tag="inline"):
    """Media sent inside the request: the bytes and their media type.

    In the Message JSON ``data`` is base64 (msgspec encodes ``bytes`` so). Its repr shows the
    media type and the length, never the bytes. Build one with :meth:`from_path` or
    :meth:`from_bytes`, which infer the media type.
    """

    media_type: str
    data: bytes

    def __post_init__(self) -> None:
        _check_str(self.media_type, "InlineSource.media_type")
        spelled = _media.canonical(self.media_type)  # 'IMAGE/PNG', 'image/jpg': the wires' own
        if spelled != self.media_type:
            msgspec.structs.force_setattr(self, "media_type", spelled)
        data: object = self.data
        if isinstance(data, bytearray | memoryview) and data:  # bytes in all but type
            data = bytes(data)
            msgspec.structs.force_setattr(self, "data", data)
        if not isinstance(data, bytes) or not data:  # pyright: ignore[reportUnnecessaryIsInstance]
            # said by type and length: the value is media (a base64 str, a bytearray), which
            # no error message shows
            got = (
                f"{type(data).__name__} of length {len(data)}" if _sized(data) else described(data)
            )
            hint = " (base64 text? pass base64.b64decode(text))" if isinstance(data, str) else ""
            raise ConfigError(f"InlineSource.data must be non-empty bytes, got {got}{hint}")
        # a label its bytes contradict (a PNG as 'image/jpeg', as Message JSON or by hand) went
        # out as labelled, and the provider refused the request with a 400
        problem = _media.mismatch(spelled, data)
        if problem is not None:
            raise ConfigError(
                f"InlineSource: media_type {spelled!r}, but {problem} ({len(data)} bytes; the "
                "provider would refuse it; InlineSource.from_bytes infers the type)"
            )

    def __repr__(self) -> str:
        return f"InlineSource(media_type={self.media_type!r}, data=<{len(self.data)} bytes>)"

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str | None = None, *, name: str = "") -> Self:
        """Inline ``data``; its media type is ``media_type`` or inferred (magic bytes, then the
        extension of ``name``).

        Raises:
            ConfigError: empty data, or a media type that is not known or cannot be inferred.
        """
        if not isinstance(data, bytes | bytearray | memoryview):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"media data must be bytes, got {type(data).__name__}")
        if not isinstance(name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"InlineSource.from_bytes: name must be a str, got {described(name)}")
        what = repr(name) if name else "the media data"
        return cls._checked(bytes(data), media_type, what, name)

    @classmethod
    def from_path(cls, path: str | Path, media_type: str | None = None) -> Self:
        """Inline the file at ``path`` (read now), its media type inferred unless given.

        Raises:
            ConfigError: the file cannot be read, is empty, or is of no known media type;
                the message names the path.
        """
        where = _media_path(path)
        return cls._checked(
            _read_media(where), media_type, f"media file {shown(str(where))}", where.name
        )

    @classmethod
    def _checked(cls, raw: bytes, media_type: str | None, what: str, name: str = "") -> Self:
        if media_type is not None and not isinstance(media_type, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"media_type must be a str or None, got {described(media_type)}")
        if not raw:
            raise ConfigError(f"{what} is empty")
        known = ", ".join(_media.MEDIA_TYPES)
        if media_type is not None:
            found = _media.canonical(media_type)
            if _media.kind_of(found) is None:
                raise ConfigError(
                    f"{what}: unknown media type {shown(media_type, 100)} (known: {known})"
                )
            problem = _media.mismatch(found, raw)  # what the bytes' own header says against it
            if problem is None and found == "text/plain" and (magic := _media.sniff(raw)):
                problem = f"its bytes are {magic}"
            if problem is not None:
                raise ConfigError(
                    f"{what}: media_type {media_type!r}, but {problem} (the provider would "
                    "refuse the mismatch; leave media_type out to infer it)"
                )
            if found == "text/plain" and not _is_utf8(raw):
                raise ConfigError(f"{what}: text/plain, but its bytes are not UTF-8")
            return cls(found, raw)
        sniffed = _media.sniff(raw, name)
        claimed = _media.by_extension(name) if sniffed is None else None
        if claimed is not None:  # the name says a type its bytes are not
            why = (
                "its bytes are not UTF-8 (save it as UTF-8)"
                if claimed == "text/plain"
                else _media.mismatch(claimed, raw) or f"its bytes have no {claimed} header"
            )
            raise ConfigError(
                f"{what}: cannot tell its media type: its name says {claimed}, but {why}"
            )
        if sniffed is None:
            raise ConfigError(
                f"{what}: cannot tell its media type ({len(raw)} bytes, not one of {known}); "
                "pass media_type="
            )
        return cls(sniffed, raw)


class UrlSource(msgspec.Struct, frozen=True, tag="url"):
    """Media the provider fetches itself from ``url`` (an ``https://`` URL).

    Not every wire fetches URLs for every kind of part: one that needs the bytes refuses a URL
    with a :class:`~rxturn.errors.ConfigError` before anything is sent. A ``data:`` URL is
    refused here: it is the bytes themselves, which belong in an :class:`InlineSource` (whose
    size the wires check, and whose bytes no repr, record or error shows).
    """

    url: str

    def __post_init__(self) -> None:
        _check_str(self.url, "UrlSource.url")
        if _is_data_url(self.url):
            raise ConfigError(
                f"UrlSource.url is a data: URL ({len(self.url)} characters), the bytes "
                "themselves: use an InlineSource (InlineSource.from_bytes, "
                "ImagePart.from_bytes, ...)"
            )
        scheme, colon, rest = self.url.partition(":")
        if not colon or scheme.lower() not in ("http", "https") or not rest.startswith("//"):
            # a bare host or a file: URL went out as it was, for the provider to refuse
            raise ConfigError(
                f"UrlSource.url must be an http:// or https:// URL the provider can fetch, "
                f"got {self.url[:80]!r}"
            )
        if any(char <= " " or char == "\x7f" for char in self.url):
            raise ConfigError(
                f"UrlSource.url holds a space or a control character: {self.url[:80]!r}"
            )
        try:
            host = urlsplit(self.url).hostname
        except ValueError:  # an unclosed IPv6 bracket, a port that is not a number
            host = None
        if not host:  # 'https://', 'https:///a.png': nothing for the provider to fetch from
            raise ConfigError(f"UrlSource.url names no host to fetch from: {self.url[:80]!r}")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _is_data_url(url: str) -> bool:
    return url[:5].lower() == "data:"


class FileIdSource(msgspec.Struct, frozen=True, tag="file_id"):
    """Media already uploaded to a provider's file store: its id there, and which provider
    (``"anthropic"``, ``"openai"``) the id belongs to — ids do not travel between providers."""

    file_id: str
    provider: str

    def __post_init__(self) -> None:
        _check_str(self.file_id, "FileIdSource.file_id")
        _check_str(self.provider, "FileIdSource.provider")
        provider = self.provider.lower()
        if provider not in _FILE_STORES:
            # no wire sends another's ids; a capitalised name was refused as another
            # provider's id ('upload the file to openai'), which misled
            raise ConfigError(
                f"FileIdSource.provider must be one of {', '.join(map(repr, _FILE_STORES))} "
                f"(the providers with a file store), got {shown(self.provider, 100)}"
            )
        if provider != self.provider:
            msgspec.structs.force_setattr(self, "provider", provider)


#: The providers whose file ids a wire sends (Anthropic's Files API, OpenAI's files).
_FILE_STORES = ("anthropic", "openai")


MediaSource = InlineSource | UrlSource | FileIdSource

ImageDetail = Literal["auto", "low", "high", "original"]


_DETAILS: tuple[str | None, ...] = (None, *get_args(ImageDetail))


def _sized(value: object) -> bool:
    return isinstance(value, str | bytes | bytearray | memoryview | list | tuple)


def _check_str(value: object, where: str) -> None:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where} must be a non-empty str, got {described(value)}")


def _check_source(source: object, part: str) -> None:
    if not isinstance(source, InlineSource | UrlSource | FileIdSource):
        raise ConfigError(
            f"{part}.source must be an InlineSource, UrlSource or FileIdSource (or use "
            f"{part}.from_path / from_bytes), got {described(source)}"
        )


class _FromSource:
    """``from_path`` / ``from_bytes`` for the media parts: inline the bytes, check the kind."""

    _kind: ClassVar[str]

    @classmethod
    def check_kind(cls, source: MediaSource) -> MediaSource:
        """``source`` if it is not inline, or inline bytes of this part's kind of media."""
        return cls._inline(source) if isinstance(source, InlineSource) else source

    @classmethod
    def _inline(cls, source: InlineSource) -> InlineSource:
        kind = _media.kind_of(source.media_type)
        if kind != cls._kind:
            raise ConfigError(
                f"{cls.__name__} takes {cls._kind} media, got {source.media_type} "
                f"({len(source.data)} bytes)"
            )
        return source


class ImagePart(_FromSource, msgspec.Struct, frozen=True, tag="image", omit_defaults=True):
    """An image in a user message or a tool result (PNG, JPEG, GIF or WebP).

    ``detail`` is OpenAI's image detail (``auto``, ``low``, ``high``, ``original``); ``None``
    lets the wire decide (the Responses API always gets one: ``auto``). Other wires ignore it.
    """

    _kind: ClassVar[str] = "image"

    source: MediaSource
    detail: ImageDetail | None = None

    def __post_init__(self) -> None:
        _check_source(self.source, "ImagePart")
        if self.detail not in _DETAILS:
            raise ConfigError(
                f"ImagePart.detail must be one of {', '.join(map(repr, _DETAILS))}, "
                f"got {described(self.detail)}"
            )

    @classmethod
    def from_path(cls, path: str | Path, *, detail: ImageDetail | None = None) -> ImagePart:
        """An inline image read from ``path`` (media type inferred).

        Raises:
            ConfigError: unreadable, empty, unknown, or not an image.
        """
        return cls(cls._inline(InlineSource.from_path(path)), detail)

    @classmethod
    def from_bytes(
        cls, data: bytes, media_type: str | None = None, *, detail: ImageDetail | None = None
    ) -> ImagePart:
        """An inline image from ``data`` (media type inferred unless given)."""
        return cls(cls._inline(InlineSource.from_bytes(data, media_type)), detail)


class DocumentPart(_FromSource, msgspec.Struct, frozen=True, tag="document", omit_defaults=True):
    """A document: a PDF, or plain text (``text/plain``, UTF-8).

    ``title``, ``context`` and ``citations`` go where Anthropic takes them (a ``document``
    block); ``filename`` is what OpenAI's ``file`` parts carry (``from_path`` sets it).
    """

    _kind: ClassVar[str] = "document"

    source: MediaSource
    title: str | None = None
    context: str | None = None
    citations: bool = False
    filename: str | None = None

    def __post_init__(self) -> None:
        _check_source(self.source, "DocumentPart")
        for name in ("title", "context", "filename"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigError(
                    f"DocumentPart.{name} must be a str or None, got {described(value)}"
                )
        if not isinstance(self.citations, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"DocumentPart.citations must be True or False, got {described(self.citations)}"
            )

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        *,
        title: str | None = None,
        context: str | None = None,
        citations: bool = False,
    ) -> DocumentPart:
        """An inline document read from ``path``; ``filename`` is the path's name.

        Raises:
            ConfigError: unreadable, empty, unknown, or not a PDF or text file.
        """
        source = cls._inline(InlineSource.from_path(path))
        return cls(source, title, context, citations, _file_name(path))

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        media_type: str | None = None,
        *,
        title: str | None = None,
        context: str | None = None,
        citations: bool = False,
        filename: str | None = None,
    ) -> DocumentPart:
        """An inline document from ``data`` (media type inferred unless given)."""
        if filename is not None and not isinstance(filename, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"DocumentPart.filename must be a str or None, got {described(filename)}"
            )
        source = cls._inline(InlineSource.from_bytes(data, media_type, name=filename or ""))
        return cls(source, title, context, citations, filename)

    @classmethod
    def from_text(cls, text: str, *, title: str | None = None) -> DocumentPart:
        """A plain-text document.

        Raises:
            ConfigError: ``text`` is not a str, is empty, or holds a lone UTF-16 surrogate
                (no UTF-8 can carry it).
        """
        if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"DocumentPart.from_text takes a str, got {described(text)}")
        if not text:
            raise ConfigError("DocumentPart.from_text: the text is empty")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ConfigError(
                f"DocumentPart.from_text: the text holds a lone UTF-16 surrogate at index "
                f"{exc.start}, which no UTF-8 document can carry"
            ) from None
        return cls(InlineSource("text/plain", data), title)


class AudioPart(_FromSource, msgspec.Struct, frozen=True, tag="audio"):
    """Audio in a user message (WAV or MP3); only OpenAI Chat takes it (``input_audio``)."""

    _kind: ClassVar[str] = "audio"

    source: MediaSource

    def __post_init__(self) -> None:
        _check_source(self.source, "AudioPart")

    @classmethod
    def from_path(cls, path: str | Path) -> AudioPart:
        """Inline audio read from ``path`` (media type inferred)."""
        return cls(cls._inline(InlineSource.from_path(path)))

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str | None = None) -> AudioPart:
        """Inline audio from ``data`` (media type inferred unless given)."""
        return cls(cls._inline(InlineSource.from_bytes(data, media_type)))


MediaPart = ImagePart | DocumentPart | AudioPart

#: The largest media file the ``from_path`` constructors read: 64 MiB, above every provider's
#: cap on inline media (tens of MB), so a bigger file could never be sent anyway.
MAX_MEDIA_FILE_BYTES = 64 * 1024 * 1024


def _media_path(path: object) -> Path:
    """``path`` as a :class:`~pathlib.Path`: a ``str`` or a path-like object, else a
    ConfigError (a ``bytes`` path included: the error messages name paths as text)."""
    if path == "":  # Path("") is the current directory: say what was given instead
        raise ConfigError("a media path is empty")
    if isinstance(path, str | os.PathLike) and not isinstance(path, bytes):
        try:
            return Path(path)  # pyright: ignore[reportUnknownArgumentType]
        except TypeError:  # a PathLike whose __fspath__ gives bytes
            pass
    named = described(path)  # pyright: ignore[reportUnknownArgumentType]
    raise ConfigError(f"a media path must be a str or a pathlib.Path, got {named}")


def _file_name(path: object) -> str:
    """The path's file name as text a request can carry: a name whose bytes are not UTF-8
    (which Python holds as lone surrogates) has them replaced with U+FFFD, where it made the
    OpenAI wires refuse the request body ('not valid Unicode at ...filename')."""
    name = _media_path(path).name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _read_media(where: Path) -> bytes:
    """The bytes of the regular file at ``where``, at most :data:`MAX_MEDIA_FILE_BYTES`.

    A device (``/dev/zero``), a pipe or a socket may never end, so only a regular file is read;
    it is opened without blocking (opening a named pipe waits for a writer) and checked once
    open. The size is checked before reading, and the read stops one byte past the bound (a
    file may grow, and some report a size of 0).
    """
    bound = MAX_MEDIA_FILE_BYTES
    named = f"media file {shown(str(where))}"
    if "\0" in str(where):  # (os.open would raise a bare ValueError)
        raise ConfigError(f"cannot read {named}: the path holds a NUL character")
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            if not stat.S_ISREG(info.st_mode):
                raise ConfigError(
                    f"{named} is not a regular file (a device, pipe or socket may never end)"
                )
            raw = b"" if info.st_size > bound else file.read(bound + 1)
            if info.st_size > bound or len(raw) > bound:
                raise ConfigError(
                    f"{named} is larger than {_media.describe_bound(bound)}, more than any "
                    "provider takes inline"
                )
            return raw
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot read {named}: {reason}") from None
    except UnicodeEncodeError:  # a lone surrogate no file name can hold (os.fsencode refuses)
        raise ConfigError(
            f"cannot read {named}: the path is not text the file system can encode"
        ) from None


def media_from_path(path: str | Path) -> MediaPart:
    """The media part for the file at ``path``, by its media type: an image, a document (PDF,
    plain text) or audio.

    Raises:
        ConfigError: the file cannot be read, is empty, or is of no known media type.
    """
    source = InlineSource.from_path(path)
    kind = _media.kind_of(source.media_type)
    if kind == "image":
        return ImagePart(source)
    if kind == "audio":
        return AudioPart(source)
    return DocumentPart(source, filename=_file_name(path))


CacheTTL = Literal["5m", "1h"]


class CachePoint(msgspec.Struct, frozen=True, tag="cache_point"):
    """A prompt-cache breakpoint: everything before it is a prefix worth caching.

    Anthropic puts ``cache_control`` on the block before the marker (``ttl`` ``"5m"`` or
    ``"1h"``; ``None`` is the API's default, 5 minutes); OpenAI sends it as an explicit
    breakpoint only when ``RequestOptions.prompt_cache_options`` asks for explicit mode;
    Ollama ignores it. Markers stay in the history, so every round of a tool loop reads the
    cached prefix (docs/content.md).
    """

    ttl: CacheTTL | None = None

    def __post_init__(self) -> None:
        if self.ttl not in (None, "5m", "1h"):
            raise ConfigError(
                f"CachePoint.ttl must be None, '5m' or '1h', got {described(self.ttl)}"
            )


def content_text(parts: tuple[object, ...] | list[object]) -> str:
    """Parts as one line of text for records and spans: text joined, each media part as its
    placeholder (:func:`describe_part`), a tool result's content likewise; no bytes ever.

    Examples:
        >>> content_text((TextPart("What is this?"), ImagePart(UrlSource("https://x.test/a.png"))))
        'What is this? [image: https://x.test/a.png]'
    """
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ToolResultPart):
            content = part.content
            pieces.append(content if isinstance(content, str) else content_text(content))
        else:
            placeholder = describe_part(part)
            if placeholder:
                sep = " " if pieces and pieces[-1] and not pieces[-1].endswith((" ", "\n")) else ""
                pieces.append(sep + placeholder)
    return "".join(pieces)


def describe_part(part: object) -> str:
    """A media part as a short placeholder, ``[image: image/png, 1234 bytes]``, never its
    bytes; other parts as ``""`` (for audit input text, logs and spans).

    Examples:
        >>> describe_part(ImagePart(UrlSource("https://example.com/cat.png")))
        '[image: https://example.com/cat.png]'
    """
    if not isinstance(part, ImagePart | DocumentPart | AudioPart):
        return ""
    kind = part.__struct_config__.tag
    source = part.source
    if isinstance(source, InlineSource):
        return f"[{kind}: {source.media_type}, {_media.describe_size(len(source.data))}]"
    if isinstance(source, UrlSource):
        return f"[{kind}: {source.url}]"
    return f"[{kind}: {source.provider} file {source.file_id}]"


ToolResultContent = TextPart | ImagePart | DocumentPart
_RESULT_PART_TYPES: frozenset[type] = frozenset(get_args(ToolResultContent))


class ToolResultPart(msgspec.Struct, frozen=True, tag="tool_result"):
    """The result of running a tool, sent back to the model in a user message.

    ``content`` is a string, or a tuple of text, image and document parts (a tool that returns
    a screenshot); :attr:`text` is its text either way.
    """

    tool_call_id: str
    content: str | tuple[ToolResultContent, ...]
    is_error: bool = False

    def __post_init__(self) -> None:
        # checked when built, as a message's parts are: a wrong content reached each wire's
        # encoder as a TypeError ('int' object is not iterable) or an AttributeError (a
        # CachePoint has no source), and a non-str id went out as a JSON number
        if type(self.tool_call_id) is not str:
            raise ConfigError(
                f"ToolResultPart.tool_call_id must be a str, got {described(self.tool_call_id)}"
            )
        if type(self.is_error) is not bool:
            raise ConfigError(
                f"ToolResultPart.is_error must be True or False, got {described(self.is_error)}"
            )
        content = self.content
        if type(content) is str:
            return
        if not isinstance(content, tuple | list):
            raise ConfigError(
                "ToolResultPart.content must be a str or a tuple of TextPart, ImagePart and "
                f"DocumentPart, got {described(content)}"
            )
        for index, item in enumerate(content):
            if type(item) not in _RESULT_PART_TYPES:
                raise ConfigError(
                    f"ToolResultPart.content[{index}] is of type {type(item).__name__}; a tool "
                    "result holds TextPart, ImagePart and DocumentPart (audio and cache "
                    "markers go in the message itself)"
                )
        if type(content) is not tuple:
            msgspec.structs.force_setattr(self, "content", tuple(content))

    @property
    def text(self) -> str:
        """The content's text: the string, or the text parts joined (media left out)."""
        content = self.content
        if isinstance(content, str):
            return content
        return "".join(part.text for part in content if isinstance(part, TextPart))

    @property
    def media(self) -> tuple[ImagePart | DocumentPart, ...]:
        """The content's media parts (``()`` for a string)."""
        content = self.content
        if isinstance(content, str):
            return ()
        return tuple(part for part in content if not isinstance(part, TextPart))


class ThinkingPart(msgspec.Struct, frozen=True, tag="thinking", omit_defaults=True):
    """Model reasoning kept for replay (only when the fold keeps thinking).

    Anthropic: a ``thinking`` block's text and ``signature``. OpenAI Responses: a reasoning
    item's summary text, its ``encrypted_content`` as ``signature`` (``None`` when the provider
    sent none) and its ``id`` (``rs_…``). Sent back unchanged in later requests.
    """

    thinking: str
    signature: str | None
    id: str = ""


class RedactedThinkingPart(msgspec.Struct, frozen=True, tag="redacted_thinking"):
    """An Anthropic ``redacted_thinking`` block: opaque ``data`` to send back unchanged."""

    data: str


class RefusalPart(msgspec.Struct, frozen=True, tag="refusal"):
    """Text with which the model refused (OpenAI ``refusal``); not part of :attr:`Message.text`."""

    text: str


ContentPart = (
    TextPart
    | ToolCallPart
    | ToolResultPart
    | ThinkingPart
    | RedactedThinkingPart
    | RefusalPart
    | ImagePart
    | DocumentPart
    | AudioPart
    | CachePoint
)

#: Every part class of the union: what a message's content may hold (derived, never listed).
_PART_TYPES: frozenset[type] = frozenset(get_args(ContentPart))


def _text(text: object, where: str) -> TextPart:
    if not isinstance(text, str):
        from .errors import ConfigError

        raise ConfigError(f"{where}(text) takes a str, got {type(text).__name__}")
    return TextPart(text)


class Message(msgspec.Struct, frozen=True, kw_only=True):
    """One conversation message. Assistant replies also carry id, model, stop reason and usage."""

    id: str = ""
    model: str = ""
    role: Role = "assistant"
    content: tuple[ContentPart, ...] = ()
    stop_reason: StopReason | None = None
    usage: Usage | None = None

    def __post_init__(self) -> None:
        # Checked when built: the role, and content made of the union's parts. A str, a list,
        # or str / SDK-style dict parts are converted; anything else is a ConfigError here.
        converted = message_content(self.role, self.content, _PART_TYPES)
        if converted is not None:
            msgspec.structs.force_setattr(self, "content", converted)

    @classmethod
    def user(cls, text: str, *attachments: ContentPart) -> Message:
        """A user message holding one text part, then any ``attachments`` (images,
        documents, a :class:`CachePoint`…) in order."""
        return cls(role="user", content=(_text(text, "Message.user"), *attachments))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message holding one text part (handy for histories and tests)."""
        return cls(role="assistant", content=(_text(text, "Message.assistant"),))

    # (``text`` and ``tool_calls`` are read every turn: plain loops, where a comprehension is a
    # function call of its own on Python 3.11, about twice the instructions for a message's few
    # parts)

    @property
    def text(self) -> str:
        """All text parts joined (tool calls excluded)."""
        texts: list[str] = []
        for part in self.content:
            if isinstance(part, TextPart):
                texts.append(part.text)
        return "".join(texts)

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The tool calls of this message, in order."""
        calls: list[ToolCallPart] = []
        for part in self.content:
            if isinstance(part, ToolCallPart):
                calls.append(part)
        return calls

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [part for part in self.content if isinstance(part, ToolResultPart)]

    @property
    def refusal(self) -> str:
        """All refusal parts joined (``""`` when the model did not refuse in words)."""
        return "".join(part.text for part in self.content if isinstance(part, RefusalPart))


class ToolSchema(msgspec.Struct, frozen=True, kw_only=True):
    """A tool the model may call: a name, a description and a JSON Schema for its input."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def __post_init__(self) -> None:
        # built in Python, not type-checked: a name of 5 went out as a JSON number
        if type(self.name) is not str or not self.name:
            raise ConfigError(
                f"ToolSchema.name must be a non-empty str, got {described(self.name)}"
            )
        if type(self.description) is not str:
            raise ConfigError(
                f"ToolSchema.description must be a str, got {described(self.description)}"
            )
        if not isinstance(self.input_schema, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                "ToolSchema.input_schema must be a JSON Schema dict, got "
                f"{described(self.input_schema)}"
            )


class ResponseFormat(msgspec.Struct, frozen=True, kw_only=True):
    """Ask for a reply that is JSON matching ``schema`` (OpenAI ``json_schema``)."""

    name: str
    schema: dict[str, Any]
    strict: bool = False


class RequestOptions(msgspec.Struct, frozen=True, kw_only=True):
    """What rides alongside a request: applies to the streaming and non-streaming paths alike.

    ``model`` is a per-request override: the fallback manager writes the routed model here, and
    the shared client is never mutated. ``tool_choice`` is ``"auto"``, ``"any"`` (the model must
    call some tool), ``"none"``, or a tool name; ``strict_tools`` asks for strict schemas where
    the provider supports them.

    Reasoning knobs (docs/wire-formats.md, "Request knobs"):

    * ``thinking`` — Anthropic extended thinking: a budget in tokens (at least 1024 and below
      ``max_tokens``), sent as ``{"thinking": {"type": "enabled", "budget_tokens": N}}``
      (Ollama: ``think: true``);
    * ``reasoning_effort`` — OpenAI reasoning effort (``"minimal"``, ``"low"``, ``"medium"``,
      ``"high"``, …): chat ``reasoning_effort``, Responses ``reasoning.effort``, Ollama
      ``think``;
    * ``extra_body`` — provider-specific fields merged into the JSON body last (the escape hatch
      every SDK has); it may not set ``model`` or ``stream``, which the client owns;
    * ``keep_thinking`` — keep the reply's thinking in the message and send it back in later
      requests. ``None`` (the default) keeps it exactly when the request enables thinking and
      the provider wants it back (Anthropic ``thinking``, Responses ``reasoning_effort``); see
      :func:`rxturn.clients.keeps_thinking`.

    Prompt caching and media (docs/content.md):

    * ``cache_system`` / ``cache_tools`` — a cache breakpoint on the system prompt / the last
      tool (Anthropic ``cache_control``); ``True`` or a ttl (``"5m"``, ``"1h"``);
    * ``cache_messages`` — cache the rolling conversation (Anthropic's top-level
      ``cache_control``: the API puts the breakpoint on the last cacheable block), ``True`` or
      a ttl; it counts toward Anthropic's 4 breakpoints;
    * ``prompt_cache_key`` — OpenAI's cache routing key, passed through (Chat and Responses);
    * ``prompt_cache_options`` — OpenAI's ``prompt_cache_options`` object, passed through;
      with ``{"mode": "explicit"}`` :class:`CachePoint` markers, ``cache_system`` and
      ``cache_messages`` become explicit ``prompt_cache_breakpoint`` s and ``cache_tools`` is
      refused (a tool takes none); else OpenAI caches implicitly and markers and switches are
      dropped;
    * ``tool_media_in_user`` — OpenAI Chat only: a ``tool`` message carries text only, so a
      tool result's images and documents are refused unless this moves them into a user
      message right after the tool messages.

    A value a provider cannot take is a :class:`~rxturn.errors.ConfigError` when the request is
    built, before anything is sent.
    """

    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None
    strict_tools: bool = False
    response_format: ResponseFormat | None = None
    stop_sequences: tuple[str, ...] = ()
    extra_headers: dict[str, str] = msgspec.field(default_factory=dict[str, str])
    thinking: int | None = None
    reasoning_effort: str | None = None
    extra_body: dict[str, Any] = msgspec.field(default_factory=dict[str, Any])
    keep_thinking: bool | None = None
    cache_system: bool | CacheTTL = False
    cache_tools: bool | CacheTTL = False
    cache_messages: bool | CacheTTL = False
    prompt_cache_key: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    tool_media_in_user: bool = False

    def __repr__(self) -> str:
        # a gateway's key rides in extra_headers ('Authorization', 'Helicone-Auth'): shown
        # masked, as a client shows its api_key, so printing or logging options leaks no key
        headers = self.extra_headers  # (not type-checked when built: any object)
        if not isinstance(headers, dict) or not any(  # pyright: ignore[reportUnnecessaryIsInstance]
            is_credential_header(str(name)) for name in headers
        ):
            return msgspec.Struct.__repr__(self)
        masked = {
            name: "***" if is_credential_header(str(name)) else value
            for name, value in headers.items()
        }
        return msgspec.Struct.__repr__(msgspec.structs.replace(self, extra_headers=masked))


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What the model is asked: messages (transients first), system prompt, tool schemas.

    ``tools`` is ``None`` when no tools are registered.
    """

    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolSchema, ...] | None = None

    def __post_init__(self) -> None:
        # the last gate before a request is encoded: dicts become messages, a str is refused
        system, tools = self.system, self.tools
        if system is not None and type(system) is not str:
            raise ConfigError(f"Request.system must be a str or None, got {described(system)}")
        if tools is not None:
            _check_schemas(tools)
        messages = self.messages
        if type(messages) is tuple:
            for message in messages:  # the hot path: a loop allocates nothing
                if type(message) is not Message:
                    break
            else:
                return
        checked = tuple(as_messages(messages, "Request.messages"))
        msgspec.structs.force_setattr(self, "messages", checked)


def _check_schemas(tools: object) -> None:
    if type(tools) is not tuple and type(tools) is not list:
        raise ConfigError(
            f"Request.tools must be a tuple of ToolSchema or None, got {described(tools)}"
        )
    for index, schema in enumerate(cast("tuple[object, ...]", tools)):
        if type(schema) is not ToolSchema:
            raise ConfigError(
                f"Request.tools[{index}] must be a ToolSchema, got {described(schema)}"
            )


_message_decoder = msgspec.json.Decoder(Message)
_encoder = msgspec.json.Encoder()


def message_to_json(message: Message) -> bytes:
    """Encode a message as the Message JSON (docs/behaviour.md §6).

    Raises:
        ConfigError: a text holds a lone surrogate (how Python holds bytes that were not
            UTF-8), which no JSON text can carry, or a tool call's ``input`` holds a value
            JSON has no form for.
    """
    try:
        return _encoder.encode(message)
    except UnicodeEncodeError:
        raise ConfigError(
            "message_to_json: the message holds text that is not valid UTF-8 (a lone "
            "surrogate such as '\\ud800'), which JSON cannot carry; decode its source with "
            "errors='replace'"
        ) from None
    except (TypeError, OverflowError, msgspec.EncodeError) as exc:  # a tool call's input
        raise ConfigError(f"message_to_json: the message is not JSON: {exc}") from None


class _UsageKeys(msgspec.Struct):
    """The keys of a Message JSON's usage object (decoded only to tell a 0 from an absence)."""

    usage: dict[str, msgspec.Raw] | None = None


_usage_keys_decoder = msgspec.json.Decoder(_UsageKeys)


def _missing_usage_count(keys: Iterable[str]) -> str | None:
    """The count a usage object must hold but lacks: the Message JSON always carries
    ``input_tokens`` and ``output_tokens``, so ``{}`` is not a usage of zero tokens."""
    present = set(keys)
    for key in ("input_tokens", "output_tokens"):
        if key not in present:
            return key
    return None


def message_from_json(data: bytes | str) -> Message:
    """Decode the Message JSON of docs/behaviour.md §6 (raises ``msgspec.ValidationError`` on bad
    input, a negative token count or a usage without ``input_tokens`` / ``output_tokens``
    included, ``msgspec.DecodeError`` on malformed JSON, JSON nested too deeply included)."""
    try:
        message = _message_decoder.decode(data)
    except RecursionError as exc:
        raise msgspec.DecodeError(f"JSON nested too deeply to decode ({exc})") from None
    except UnicodeEncodeError:  # a str holding a lone surrogate: not text JSON can be
        raise msgspec.DecodeError("the JSON text is not valid UTF-8 (a lone surrogate)") from None
    usage = message.usage
    if usage is not None and not (usage.input_tokens and usage.output_tokens):
        # a 0 may be a count that was absent: read the keys (rare, so the common path decodes once)
        keys = _usage_keys_decoder.decode(data).usage or {}
        missing = _missing_usage_count(keys)
        if missing is not None:
            raise msgspec.ValidationError(
                f"Object missing required field `{missing}` - at `$.usage`"
            )
    return message


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
    return f"role must be 'user' or 'assistant', got {shown(role)}"


def message_content(
    role: object, content: object, part_types: frozenset[type]
) -> tuple[ContentPart, ...] | None:
    """Check a message's role and content; the content converted, or ``None`` when it is fine.

    ``part_types`` is the set of part classes the message union allows. A tuple of those parts
    is returned as ``None`` (nothing to convert, nothing allocated); a list becomes a tuple, and
    an SDK-style ``dict`` among the parts is converted (:func:`part_from_dict`). A ``str`` where
    parts belong (the content, or one of its parts) is a :class:`~rxturn.errors.ConfigError`
    naming the fix, as is anything else: iterated, it would be its characters.

    Examples:
        >>> from rxturn.messages import TextPart
        >>> message_content("user", (TextPart("hi"),), frozenset({TextPart})) is None
        True
        >>> message_content("user", [TextPart("hi")], frozenset({TextPart}))
        (TextPart(text='hi'),)
        >>> message_content("user", "hi", frozenset({TextPart}))
        Traceback (most recent call last):
        ...
        rxturn.errors.ConfigError: Message.content is a str, where a tuple of parts belongs: ...
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
        raise ConfigError(
            "Message.content is a str, where a tuple of parts belongs: pass "
            "(TextPart(text),), or build it with Message.user(text) / Message.assistant(text)"
        )
    elif isinstance(content, list | tuple):
        items = tuple(content)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    else:
        raise ConfigError(f"Message.content must be a tuple of parts, got {type(content).__name__}")
    return tuple(_as_part(part, index, part_types) for index, part in enumerate(items))


def _text_part(text: str) -> TextPart:

    return TextPart(text)


def _as_part(part: object, index: int, part_types: frozenset[type]) -> ContentPart:
    if type(part) in part_types:
        return part  # pyright: ignore[reportReturnType]
    if isinstance(part, dict):
        return part_from_dict(part, f"Message.content[{index}]")  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(part, str):
        raise ConfigError(
            f"Message.content[{index}] is a str, where a part belongs: wrap it, TextPart(text)"
        )
    names = ", ".join(sorted(cls.__name__ for cls in part_types))
    raise ConfigError(
        f"Message.content[{index}] is {type_named(part)}; a part is one of {names}, "
        "or an SDK-style dict (docs/messages.md)"
    )


def _field(block: Mapping[str, object], key: str, where: str, kind: type = str) -> Any:
    value = block.get(key)
    if not isinstance(value, kind):
        raise ConfigError(
            f"{where}: a {shown(block.get('type'), 100)} block needs {key!r} as a {kind.__name__}, "
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


def _result_content(content: object, where: str) -> str | tuple[ToolResultContent, ...]:
    """A tool result's content: a str, or a list of blocks (Anthropic's ``tool_result``,
    Responses' ``function_call_output``): text blocks alone are joined into a str, text with
    image and document blocks become parts (a screenshot tool's result)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ConfigError(
            f"{where}: a tool result's content must be a str or a list of content blocks"
        )
    parts: list[ToolResultContent] = []
    for index, block in enumerate(cast("list[object]", content)):
        if not isinstance(block, dict):
            raise ConfigError(
                f"{where}: a tool result's content[{index}] is {type_named(block)}, not "
                "a content block"
            )
        part = part_from_dict(cast("dict[str, object]", block), f"{where}: content[{index}]")
        if not isinstance(part, TextPart | ImagePart | DocumentPart):
            raise ConfigError(
                f"{where}: a tool result's content blocks are text, image and document "
                f"blocks; content[{index}] is {type_named(part)}"
            )
        parts.append(part)
    if all(isinstance(part, TextPart) for part in parts):
        return "".join(cast(TextPart, part).text for part in parts)
    return tuple(parts)


def part_from_dict(block: Mapping[str, object], where: str) -> ContentPart:
    """One content part from a dict: rxturn's Message JSON form, or an Anthropic/OpenAI block.

    rxturn's own part JSON (``{"type": "tool_call", ...}``, every part type of the union) is
    decoded as is; the SDK shapes are mapped: ``text`` / ``input_text`` / ``output_text``,
    ``tool_use``, ``function_call``, ``tool_result`` (``tool_use_id``; content a str or text,
    image and document blocks), ``function_call_output``, ``refusal`` (``{"refusal": ...}``).
    Anything else is a :class:`~rxturn.errors.ConfigError` naming the block's type.
    """

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
        content = _result_content(block.get("content", ""), where)
        return ToolResultPart(_field(block, "tool_use_id", where), content, is_error)
    if kind == "function_call_output":
        output = _result_content(block.get("output", ""), where)
        return ToolResultPart(_field(block, "call_id", where), output)
    if kind == "refusal" and isinstance(block.get("refusal"), str):
        return RefusalPart(_field(block, "refusal", where))
    try:
        media = _media_from_dict(block, kind, where)
    except ConfigError as exc:  # a media part's own check: say where the block sat
        if str(exc).startswith(where):
            raise
        raise ConfigError(f"{where}: {exc}") from None
    if media is not None:
        return media
    raise ConfigError(
        f"{where}: cannot convert a content block of type {shown(kind)}; build the part from "
        "rxturn.messages (docs/messages.md lists the dict forms accepted)"
    )


def _base64(data: object, where: str) -> bytes:
    if not isinstance(data, str) or not data:
        raise ConfigError(f"{where}: media data must be a non-empty base64 str")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigError(f"{where}: media data is not valid base64") from None


def _inner(fields: Mapping[str, object], key: str, where: str, holder: str) -> str:
    """A str field of a block's nested object (``image_url.url``, ``source.media_type``)."""
    value = fields.get(key)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: needs '{holder}.{key}' as a str, got {type(value).__name__}")
    return value


def _data_url(url: str, where: str) -> InlineSource | None:
    """A ``data:<type>;base64,<data>`` URL's bytes (``None``: not a data URL)."""
    if not _is_data_url(url):
        return None
    head, comma, data = url[5:].partition(",")
    media_type, _, encoding = head.partition(";")
    if not comma or encoding != "base64" or not media_type:
        raise ConfigError(f"{where}: a data URL must be data:<media type>;base64,<data>")
    return _labelled(_base64(data, where), media_type)


def _labelled(data: bytes, media_type: str) -> InlineSource:
    """Inline bytes from an SDK-style block: labelled by their own header when they have one
    (a history that an API took with a loose label, a PNG sent as ``image/jpeg``, converts),
    else by the block's label."""
    return InlineSource.from_bytes(data, None if _media.sniff(data) else media_type)


def _anthropic_source(raw: object, where: str) -> MediaSource:
    """An Anthropic block's ``source``: ``base64``, ``text`` (documents), ``url`` or ``file``."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a media block needs a 'source' object")
    source: dict[str, object] = raw  # pyright: ignore[reportUnknownVariableType]
    kind = source.get("type")
    if kind == "base64":
        media_type = _inner(source, "media_type", where, "source")
        return _labelled(_base64(source.get("data"), where), media_type)
    if kind == "text":
        text = _inner(source, "data", where, "source")
        return InlineSource.from_bytes(text.encode(), "text/plain")
    if kind == "url":
        return UrlSource(_inner(source, "url", where, "source"))
    if kind == "file":
        return FileIdSource(_inner(source, "file_id", where, "source"), "anthropic")
    raise ConfigError(f"{where}: unknown media source type {shown(kind, 100)}")


def _url_source(url: str, where: str) -> MediaSource:
    inline = _data_url(url, where)
    return inline if inline is not None else UrlSource(url)


def _media_from_dict(block: Mapping[str, object], kind: object, where: str) -> ContentPart | None:
    """The Anthropic and OpenAI (Chat, Responses) media blocks as media parts; ``None`` for a
    block of another type."""
    if kind == "image":  # Anthropic
        return ImagePart(ImagePart.check_kind(_anthropic_source(block.get("source"), where)))
    if kind == "document":  # Anthropic
        citations = block.get("citations")
        enabled = isinstance(citations, dict) and bool(
            cast("dict[str, object]", citations).get("enabled")
        )
        return DocumentPart(
            DocumentPart.check_kind(_anthropic_source(block.get("source"), where)),
            title=block.get("title"),  # pyright: ignore[reportArgumentType]
            context=block.get("context"),  # pyright: ignore[reportArgumentType]
            citations=enabled,
        )
    if kind == "image_url":  # OpenAI Chat
        image = block.get("image_url")
        if isinstance(image, str):
            image = {"url": image}
        if not isinstance(image, dict):
            raise ConfigError(f"{where}: an 'image_url' block needs an 'image_url' object")
        fields = cast("dict[str, object]", image)
        source = _url_source(_inner(fields, "url", where, "image_url"), where)
        return ImagePart(ImagePart.check_kind(source), fields.get("detail"))  # pyright: ignore[reportArgumentType]
    if kind == "input_image":  # Responses
        file_id = block.get("file_id")
        source = (
            FileIdSource(file_id, "openai")
            if isinstance(file_id, str)
            else _url_source(_field(block, "image_url", where), where)
        )
        return ImagePart(ImagePart.check_kind(source), block.get("detail"))  # pyright: ignore[reportArgumentType]
    if kind in ("file", "input_file"):  # OpenAI Chat (fields under "file"), Responses (flat)
        raw = block.get("file") if kind == "file" else block
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: a 'file' block needs a 'file' object")
        file: dict[str, object] = raw  # pyright: ignore[reportUnknownVariableType]
        filename = file.get("filename")
        file_id = file.get("file_id")
        file_url = file.get("file_url") if kind == "input_file" else None
        if isinstance(file_id, str):
            source = FileIdSource(file_id, "openai")
        elif isinstance(file_url, str):  # Responses only: Chat's file part takes no URL
            source = _url_source(file_url, where)
        else:
            data = (
                _inner(file, "file_data", where, "file")
                if kind == "file"
                else _field(file, "file_data", where)
            )
            inline = _data_url(data, where)
            if inline is None:
                name = filename if isinstance(filename, str) else ""
                inline = InlineSource.from_bytes(_base64(data, where), name=name)
            source = inline
        return DocumentPart(
            DocumentPart.check_kind(source),
            filename=filename,  # pyright: ignore[reportArgumentType]
        )
    if kind == "input_audio":  # OpenAI Chat
        raw = block.get("input_audio")
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: an 'input_audio' block needs an 'input_audio' object")
        audio: dict[str, object] = raw  # pyright: ignore[reportUnknownVariableType]
        form = _inner(audio, "format", where, "input_audio")
        data = _base64(audio.get("data"), where)
        media_type = {"wav": "audio/wav", "mp3": "audio/mpeg"}.get(form, f"audio/{form}")
        return AudioPart(AudioPart.check_kind(_labelled(data, media_type)))
    return None


def as_message(item: object, where: str) -> Message:
    """``item`` as a :class:`~rxturn.messages.Message`: a Message as is, a dict converted.

    Accepted dicts: rxturn's Message JSON; ``{"role": "user" | "assistant", "content": str |
    [blocks]}`` in the Anthropic and OpenAI shapes (an OpenAI assistant's ``tool_calls`` become
    tool-call parts, its ``refusal`` a refusal part); an OpenAI ``{"role": "tool",
    "tool_call_id": ..., "content": ...}`` becomes a user message with a tool result; the
    Responses ``function_call`` / ``function_call_output`` items likewise. A ``system`` message,
    a bare ``str`` and anything else are a :class:`~rxturn.errors.ConfigError` that says what
    to do instead.
    """

    try:
        return _as_message(item, where)
    except UnicodeEncodeError as error:  # msgspec's conversion, on a lone surrogate
        char = error.object[error.start : error.start + 1]
        raise ConfigError(
            f"{where} holds text that is not valid Unicode (a lone surrogate {char!a}, which is "
            "what Python makes of bytes that are not UTF-8); decode the input as UTF-8 or with "
            "errors='replace'"
        ) from None


def _as_message(item: object, where: str) -> Message:
    if type(item) is Message:
        return item
    if isinstance(item, str):
        raise ConfigError(
            f"{where} is a str, where a Message belongs: use Message.user(text) "
            "(or Message.assistant(text))"
        )
    if not isinstance(item, dict):
        raise ConfigError(
            f"{where} is {type_named(item)}, where a Message (or an SDK-style message dict) belongs"
        )
    data: dict[str, object] = item  # pyright: ignore[reportUnknownVariableType]
    # an OpenAI Chat assistant's own fields, which the Message JSON never has: with either, the
    # dict is the SDK's (as Message JSON its list content converted, and they were dropped)
    openai_fields = bool(data.get("tool_calls")) or data.get("refusal") is not None
    if "role" in data and data.get("content") is None and not openai_fields:
        raise ConfigError(f"{where}: a message dict needs 'content' (a str or a list of blocks)")
    role = data.get("role")
    kind = data.get("type")
    if role is None:
        if kind in ("function_call", "function_call_output"):
            part = part_from_dict(data, where)
            role = "assistant" if kind == "function_call" else "user"
            return Message(role=role, content=(part,))
        if isinstance(kind, str) and kind:  # a Responses input item of another type
            raise ConfigError(
                f"{where}: cannot convert an item of type {shown(kind, 100)}: a message dict "
                "needs a 'role' ('user' or 'assistant'; of the Responses items, 'message', "
                "'function_call' and 'function_call_output' convert)"
            )
        raise ConfigError(f"{where}: a message dict needs a 'role' ('user' or 'assistant')")
    usage = data.get("usage")
    if usage is not None:  # checked first: a usage msgspec refuses must not pass as an SDK dict
        _check_usage(usage, f"{where}.usage")
    if data.keys() <= _MESSAGE_KEYS and not _cache_controlled(data.get("content")):
        # the Message JSON (a key it lacks: an SDK's dict, whose tool_calls msgspec would drop
        # as an unknown field, leaving an empty message; so would it a block's cache_control)
        try:
            return msgspec.convert(data, Message)
        except msgspec.ValidationError:
            pass
    if role == "tool":
        content = _result_content(data.get("content", ""), where)
        call_id = data.get("tool_call_id")
        if not isinstance(call_id, str):  # (_field would call the message "a None block")
            raise ConfigError(
                f"{where}: a 'tool' message needs 'tool_call_id' (the id of the tool call it "
                f"answers) as a str, got {type(call_id).__name__}"
            )
        return Message(role="user", content=(ToolResultPart(call_id, content),))
    problem = _role_problem(role)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    if data.get("name") is not None:  # dropped, it would have asked another question
        raise ConfigError(f"{where}: {PARTICIPANT_NAME}")
    for key, what in _UNCARRIED.items():  # an OpenAI assistant's, no part carries it either
        if data.get(key) is not None:
            raise ConfigError(f"{where}: {key!r} ({what}) has no place in a Message")
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
                at = f"{where}.content[{index}]"
                parts.append(part_from_dict(block, at))  # pyright: ignore[reportUnknownArgumentType]
                entry: dict[str, object] = block  # pyright: ignore[reportUnknownVariableType]
                if not entry.keys().isdisjoint(_BREAKPOINTS):  # a breakpoint: the marker after
                    point = _cache_point(entry, at)
                    if point is not None:
                        parts.append(point)
            else:
                raise ConfigError(
                    f"{where}.content[{index}] is {type_named(block)}; expected a block dict"
                )
    elif content is not None:
        raise ConfigError(
            f"{where}: 'content' must be a str or a list of blocks, got {type(content).__name__}"
        )
    refusal = data.get("refusal")
    if refusal is not None:  # an OpenAI Chat assistant's refusal, as the API returns it
        if role != "assistant" or not isinstance(refusal, str):
            raise ConfigError(
                f"{where}: 'refusal' is an OpenAI assistant message's refusal text (a str), "
                f"got {type_named(refusal)} on a {shown(role, 100)} message"
            )
        if refusal:
            parts.append(RefusalPart(refusal))
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


def _cache_controlled(content: object) -> bool:
    """Whether a message's content has a block with a cache breakpoint (:data:`_BREAKPOINTS`)."""
    if type(content) is not list:
        return False
    blocks: list[object] = content  # pyright: ignore[reportUnknownVariableType]
    return any(
        type(block) is dict and not block.keys().isdisjoint(_BREAKPOINTS) for block in blocks
    )


def _cache_point(block: dict[str, object], where: str) -> CachePoint | None:
    """A block's cache breakpoint as the :class:`CachePoint` after it, which each wire turns
    back into the same breakpoint on that block: Anthropic's ``cache_control``
    (``{"type": "ephemeral", "ttl"?: "5m" | "1h"}``), OpenAI's ``prompt_cache_breakpoint``
    (``{"mode": "explicit"}``, sent in explicit mode, whose ttl is the request's). ``None``
    when both are ``null``."""
    point: CachePoint | None = None
    for key in _BREAKPOINTS:
        control = block.get(key)
        if control is None:
            continue
        given = shown(control, 100)
        fields = cast("dict[str, object]", control) if type(control) is dict else {}
        ttl = fields.get("ttl")
        if key == "cache_control":
            if (
                fields.get("type") == "ephemeral"
                and fields.keys() <= {"type", "ttl"}
                and ttl in _CACHE_TTLS
            ):
                point = CachePoint(ttl)
                continue
            rule = "{'type': 'ephemeral'} with an optional 'ttl' of '5m' or '1h'"
        else:
            if fields == {"mode": "explicit"}:
                point = CachePoint()
                continue
            rule = (
                "{'mode': 'explicit'} (a breakpoint of its own ttl has no CachePoint to carry "
                "it: the request's prompt_cache_options ttl is every breakpoint's)"
            )
        raise ConfigError(f"{where}.{key} must be {rule}, got {given}")
    return point


#: An OpenAI assistant message's fields no part carries, refused rather than dropped.
_UNCARRIED = {
    "function_call": "the deprecated function call, which has no id to make a tool call of: "
    "send it as tool_calls",
    "audio": "the id of an earlier audio reply",
}

#: The content block fields that mark a cache breakpoint after the block.
_BREAKPOINTS = ("cache_control", "prompt_cache_breakpoint")
_CACHE_TTLS = (None, "5m", "1h")


#: The keys of the Message JSON (docs/behaviour.md §6).
_MESSAGE_KEYS = frozenset(Message.__struct_fields__)


def _check_usage(usage: object, where: str) -> None:
    """A message dict's ``usage``: the Message JSON's usage object, or a ConfigError naming
    the field (a negative count, a count that is not an int, ``input_tokens`` missing…)."""
    if not isinstance(usage, dict):
        raise ConfigError(f"{where} must be an object or null, got {type_named(usage)}")
    try:
        msgspec.convert(usage, Usage)
    except msgspec.ValidationError as exc:  # "Expected `int` >= 0 - at `$.input_tokens`"
        problem, _, path = str(exc).partition(" - at `$")
        raise ConfigError(f"{where}{path.rstrip('`')}: {problem}") from None
    missing = _missing_usage_count(cast("dict[str, object]", usage))
    if missing is not None:
        raise ConfigError(
            f"{where} needs {missing!r} (a token count; the usage object carries "
            "input_tokens and output_tokens always)"
        )


def as_messages(items: object, where: str) -> list[Message]:
    """Every item of ``items`` through :func:`as_message` (a ``str`` or a non-iterable refused)."""
    kind = type(items)
    # a tuple or a list (the usual history) needs neither test: the ABC one is costly
    if (
        kind is not tuple
        and kind is not list
        and (isinstance(items, str | bytes | dict) or not isinstance(items, Iterable))
    ):
        raise ConfigError(f"{where} must be a sequence of Message, got {kind.__name__}")
    sequence: Iterable[object] = items  # pyright: ignore[reportAssignmentType, reportUnknownVariableType]
    # a Message is taken as it is: its place is named only for an item to convert or refuse
    # (a loop: a comprehension is a call of its own on Python 3.11, and a history is short)
    messages: list[Message] = []
    for index, item in enumerate(sequence):
        messages.append(item if type(item) is Message else as_message(item, f"{where}[{index}]"))
    return messages


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
        if type(item) is not Message:  # a reply joining the history: nothing to do
            item = as_message(item, f"history[{len(self)}]")
        super().append(item)

    def extend(self, items: Iterable[object], /) -> None:
        super().extend(as_messages(items, "history.extend(...)"))

    def insert(self, index: SupportsIndex, item: object, /) -> None:
        super().insert(index, as_message(item, "history.insert(...)"))

    def __iadd__(self, items: Iterable[object]) -> MessageList:
        self.extend(items)
        return self

    def __setitem__(self, index: SupportsIndex | slice, value: Any) -> None:
        if isinstance(index, slice):
            super().__setitem__(index, as_messages(value, "history[...]"))
        else:
            super().__setitem__(index, as_message(value, f"history[{index}]"))
