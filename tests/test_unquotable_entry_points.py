"""Entry points outside the constructors' table (engine setters, the transport, the stream
readers, the fold, the tokenizer, the OpenTelemetry observer) given a value no message can
quote whole (an int Python will not print, an object whose repr raises, a million-character
string): a one-line error of the documented type, never the error raised while that message
was written, nor a megabyte of message."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from unquotable import UNQUOTABLE, UNQUOTABLE_IDS, assert_refused_in_one_line

from rxturn import AnthropicClient, TiktokenCounter, TurnEngine, replay
from rxturn.errors import ConfigError
from rxturn.fold import TurnState, fold
from rxturn.otel import OTelObserver
from rxturn.transport import AiohttpTransport
from rxturn.wire import decoder_for

COUNT: tuple[type, ...] = (int,)  # a huge int is still a count
TEXT: tuple[type, ...] = (str,)  # a name, loaded when first used


def _engine() -> TurnEngine:
    return TurnEngine(AnthropicClient("m", api_key="k", base_url="http://127.0.0.1:9"))


def _set(name: str) -> Callable[[Any], object]:
    return lambda bad: setattr(_engine(), name, bad)


#: (what, the call, the error, the types of a value it takes)
CASES: list[tuple[str, Callable[[Any], object], type[Exception], tuple[type, ...]]] = [
    ("engine.mode", _set("mode"), ConfigError, ()),
    ("engine.max_turns", _set("max_turns"), ConfigError, COUNT),
    ("engine.hedge", _set("hedge"), ConfigError, ()),
    ("AiohttpTransport limit", lambda bad: AiohttpTransport(limit=bad), ConfigError, COUNT),
    (
        "AiohttpTransport limit_per_host",
        lambda bad: AiohttpTransport(limit_per_host=bad),
        ConfigError,
        COUNT,
    ),
    ("AiohttpTransport ssl", lambda bad: AiohttpTransport(ssl=bad), ConfigError, ()),
    ("AiohttpTransport trust_env", lambda bad: AiohttpTransport(trust_env=bad), ConfigError, ()),
    (
        "AiohttpTransport max_decompressed_bytes",
        lambda bad: AiohttpTransport(max_decompressed_bytes=bad),
        ConfigError,
        COUNT,
    ),
    (
        "AiohttpTransport max_expansion_ratio",
        lambda bad: AiohttpTransport(max_expansion_ratio=bad),
        ConfigError,
        COUNT,
    ),
    ("decoder_for format", lambda bad: decoder_for(bad), ConfigError, ()),
    *[
        (
            f"decoder_for {fmt} {limit}",
            lambda bad, fmt=fmt, limit=limit: decoder_for(fmt, **{limit: bad}),
            ConfigError,
            COUNT,
        )
        for fmt, limit in (
            ("openai", "max_line_bytes"),
            ("openai", "max_event_bytes"),
            ("ollama", "max_line_bytes"),  # (NDJSON has no events to bound)
        )
    ],
    ("replay format", lambda bad: replay(b"", format=bad), ConfigError, ()),
    ("fold event", lambda bad: fold(TurnState(), bad), TypeError, ()),
    ("TiktokenCounter encoding", lambda bad: TiktokenCounter(bad), ConfigError, TEXT),
    (
        "OTelObserver capture_content",
        lambda bad: OTelObserver(capture_content=bad),
        ConfigError,
        (),
    ),
]


@pytest.mark.parametrize("bad", UNQUOTABLE, ids=UNQUOTABLE_IDS)
@pytest.mark.parametrize(
    ("call", "error", "takes"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_an_unquotable_argument_is_a_one_line_error(
    call: Callable[[Any], object], error: type[Exception], takes: tuple[type, ...], bad: object
) -> None:
    # before: ValueError ("Exceeds the limit (4300 digits) for integer string conversion"),
    # the object's own RuntimeError, or a message of a million characters
    assert_refused_in_one_line(call, bad, error, takes=takes)
