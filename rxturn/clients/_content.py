"""Media and cache markers on the way out: the rules every wire's request builder shares, no IO.

Each provider module turns image, document and audio parts
and :class:`~rxturn.messages.CachePoint` markers into its own JSON;
what they have in common is here: base64 and ``data:`` URLs, the size limits a provider
documents (checked once over the whole request, before anything is sent), the errors for a part
a wire cannot take (which name the part by its placeholder, never its bytes), and the
cache-control values.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from .._arguments import shown, type_named
from .._media import describe_size, kind_of
from ..errors import ConfigError
from ..messages import (
    AudioPart,
    DocumentPart,
    FileIdSource,
    ImagePart,
    InlineSource,
    MediaPart,
    MediaSource,
    Request,
    RequestOptions,
    ToolResultPart,
    UrlSource,
    describe_part,
)

__all__ = [
    "CACHE_TTLS",
    "EXPLICIT_BREAKPOINT",
    "MEDIA_PARTS",
    "Limits",
    "b64",
    "cache_value",
    "check_inline_limits",
    "check_source",
    "data_url",
    "explicit_switches",
    "inline_media_bytes",
    "logger",
    "no_part_to_mark",
    "plain_text",
    "prompt_cache_fields",
    "refuse",
]

#: The logger of the request builders (the trimmed cache-breakpoint notice goes here).
logger = logging.getLogger("rxturn.clients")

CACHE_TTLS = ("5m", "1h")


def b64(data: bytes) -> str:
    """``data`` as base64 text."""
    return base64.b64encode(data).decode("ascii")


def data_url(source: InlineSource) -> str:
    """A ``data:`` URL of inline media (what OpenAI takes for images and files)."""
    return f"data:{source.media_type};base64,{b64(source.data)}"


def plain_text(part: DocumentPart, source: InlineSource, wire: str) -> str:
    """A ``text/plain`` document's text (UTF-8), for wires that send it as text."""
    try:
        return source.data.decode("utf-8")
    except UnicodeDecodeError:
        raise refuse(part, wire, "a text/plain document must be UTF-8") from None


def refuse(part: object, wire: str, why: str) -> ConfigError:
    """The error for a part ``wire`` cannot take: what the part is (never its bytes) and why."""
    name = type(part).__name__
    return ConfigError(f"{wire} cannot take {name} {describe_part(part)}: {why}")


def check_source(part: MediaPart, wire: str, provider: str) -> MediaSource:
    """The part's source, checked: inline bytes of the part's kind, and a file id that belongs
    to ``provider`` (ids do not travel between providers)."""
    source = part.source
    if isinstance(source, InlineSource):
        expected = part.__struct_config__.tag
        if kind_of(source.media_type) != expected:
            raise refuse(part, wire, f"its media type is not a known {expected} type")
    elif isinstance(source, FileIdSource):
        if source.provider != provider:
            raise refuse(
                part,
                wire,
                f"the file id belongs to {source.provider!r}, not {provider!r} (upload the file "
                f"to {provider} or send it inline)",
            )
    elif not isinstance(source, UrlSource):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise refuse(part, wire, f"its source is {type_named(source)}, not a media source")
    return source


class Limits:
    """The inline-size limits a provider documents, in base64 characters (what the API
    measures), each with the figure as the provider writes it (``"5 MB"``). ``None``: not
    documented (the provider's own 400 then speaks)."""

    __slots__ = ("image", "provider", "request", "source")

    def __init__(
        self,
        provider: str,
        *,
        image: tuple[int, str] | None,
        request: tuple[int, str] | None,
        source: str,
    ) -> None:
        self.provider = provider
        self.image = image
        self.request = request
        self.source = source


def _b64_length(size: int) -> int:
    return 4 * ((size + 2) // 3)


#: The media part types, as a tuple made once (``A | B | C`` in an ``isinstance`` would build a
#: union object per part asked).
MEDIA_PARTS = (ImagePart, DocumentPart, AudioPart)


def check_inline_limits(request: Request, limits: Limits) -> None:
    """Refuse inline media over the provider's documented limits, before anything is sent."""
    if limits.image is None and limits.request is None:
        return
    total = 0
    for message in request.messages:
        for part in message.content:
            if isinstance(part, MEDIA_PARTS):
                total += _inline_size(part, limits)
            elif isinstance(part, ToolResultPart):
                for item in part.media:
                    total += _inline_size(item, limits)
    if limits.request is not None and total > limits.request[0]:
        raise ConfigError(
            f"{limits.provider} accepts requests up to {limits.request[1]} "
            f"({limits.source}); this request's inline media alone is {describe_size(total)} "
            "in base64: send fewer or smaller files, or URLs / file ids"
        )


def inline_media_bytes(request: Request) -> int:
    """How many bytes of inline media ``request`` carries (in its messages and tool results):
    what building and encoding its body costs, about 4 ms of base64 and JSON per MB."""
    total = 0
    for message in request.messages:
        for part in message.content:
            if isinstance(part, MEDIA_PARTS):
                source = part.source
                if isinstance(source, InlineSource):
                    total += len(source.data)
            elif isinstance(part, ToolResultPart):
                for item in part.media:
                    source = item.source
                    if isinstance(source, InlineSource):
                        total += len(source.data)
    return total


def _inline_size(part: ImagePart | DocumentPart | AudioPart, limits: Limits) -> int:
    """The base64 size of ``part``'s inline data (0: not inline); an image over the
    provider's per-image limit is refused."""
    source = part.source
    if not isinstance(source, InlineSource):
        return 0
    size = _b64_length(len(source.data))
    if limits.image is not None and isinstance(part, ImagePart) and size > limits.image[0]:
        raise ConfigError(
            f"{limits.provider} accepts images up to {limits.image[1]} each "
            f"(base64, {limits.source}); this {source.media_type} image is "
            f"{describe_size(size)} in base64: resize it, or send a URL or a file id"
        )
    return size


def cache_value(value: object, where: str) -> str | None:
    """A cache switch's ttl: ``True`` → ``""`` (the API's default ttl), ``"5m"`` / ``"1h"`` →
    itself, ``False`` / ``None`` → ``None`` (off). Anything else is a ConfigError."""
    if value is None or value is False:
        return None
    if value is True:
        return ""
    if isinstance(value, str) and value in CACHE_TTLS:
        return value
    raise ConfigError(f"{where} must be True, False, '5m' or '1h', got {shown(value, 100)}")


def prompt_cache_fields(options: RequestOptions, body: dict[str, Any]) -> bool:
    """Write OpenAI's ``prompt_cache_key`` / ``prompt_cache_options`` into ``body`` when set;
    returns whether markers are to be sent as explicit breakpoints."""
    key = options.prompt_cache_key
    if key is not None:
        if not isinstance(key, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(
                f"RequestOptions.prompt_cache_key must be a non-empty string, got {shown(key, 100)}"
            )
        body["prompt_cache_key"] = key
    cache_options = options.prompt_cache_options
    if cache_options is None:
        return False
    if not isinstance(cache_options, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ConfigError(
            "RequestOptions.prompt_cache_options must be a dict (OpenAI's prompt_cache_options, "
            f"e.g. {{'mode': 'explicit'}}), got {type(cache_options).__name__}"
        )
    mode = cache_options.get("mode", "implicit")
    if mode not in ("implicit", "explicit"):
        raise ConfigError(
            f"RequestOptions.prompt_cache_options['mode'] must be 'implicit' or 'explicit', got "
            f"{shown(mode, 100)}"
        )
    body["prompt_cache_options"] = cache_options
    return mode == "explicit"


def explicit_switches(options: RequestOptions) -> tuple[bool, bool]:
    """What the cache switches ask of OpenAI's explicit mode, where only the breakpoints a
    request marks are cached: ``(a breakpoint on the system prompt, one on the request's last
    content part)`` from ``cache_system`` and ``cache_messages`` (the rolling conversation, as
    Anthropic's top-level ``cache_control`` caches it); their ttl is the request's, as a
    marker's is. ``cache_tools`` cannot act: OpenAI takes breakpoints on content parts only,
    and a tool definition is none, so it is refused rather than dropped."""
    if cache_value(options.cache_tools, "RequestOptions.cache_tools") is not None:
        raise ConfigError(
            "RequestOptions.cache_tools cannot act in OpenAI's explicit prompt-cache mode: its "
            "breakpoints go on content parts, and a tool definition is none; leave it unset "
            "and end the cached prefix with cache_system, cache_messages or a CachePoint"
        )
    system = cache_value(options.cache_system, "RequestOptions.cache_system") is not None
    messages = cache_value(options.cache_messages, "RequestOptions.cache_messages") is not None
    return system, messages


def no_part_to_mark(what: str) -> ConfigError:
    """The error for ``cache_messages`` in OpenAI's explicit mode when the request's last
    message (``what``) has no content part that takes a breakpoint."""
    return ConfigError(
        f"RequestOptions.cache_messages: the request ends with {what}, which has no content "
        "part to put OpenAI's explicit breakpoint on; end it with a user message or a tool "
        "result"
    )


#: OpenAI's explicit breakpoint (its ttl is the request's, from ``prompt_cache_options``:
#: OpenAI's lifetimes are not Anthropic's 5m / 1h, so a marker's ttl does not carry over).
EXPLICIT_BREAKPOINT: dict[str, Any] = {"mode": "explicit"}
