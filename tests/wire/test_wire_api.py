"""The package façade: decoder_for, sniff_format, parse_error_body, and the sans-IO boundary."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rxturn.wire as wire
from rxturn.errors import ConfigError, StreamProtocolError
from rxturn.wire import (
    FORMATS,
    AnthropicDecoder,
    OllamaDecoder,
    OpenAIDecoder,
    StreamDecoder,
    decoder_for,
    parse_error_body,
    sniff_format,
)

from ._support import ANTHROPIC_FILES, OPENAI_FILES


def test_all_lists_the_public_names() -> None:
    assert len(set(wire.__all__)) == len(wire.__all__)
    for name in wire.__all__:
        assert getattr(wire, name) is not None
    defined_here = {
        name
        for name, value in vars(wire).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith("rxturn.wire")
    }
    assert defined_here <= set(wire.__all__)


def test_sans_io_modules_import_no_io_library() -> None:
    code = (
        "import sys, rxturn.wire; "
        "bad = [m for m in ('asyncio', 'aiohttp', 'reactivex', 'tiktoken') if m in sys.modules]; "
        "sys.exit(repr(bad) if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("fmt", "cls"),
    [("anthropic", AnthropicDecoder), ("openai", OpenAIDecoder), ("ollama", OllamaDecoder)],
)
def test_decoder_for(fmt: str, cls: type) -> None:
    decoder = decoder_for(fmt)
    assert type(decoder) is cls and isinstance(decoder, StreamDecoder)
    assert decoder.saw_terminal is False
    assert decoder_for(fmt) is not decoder  # a fresh decoder every time
    assert fmt in FORMATS


def test_decoder_for_unknown_format() -> None:
    with pytest.raises(ConfigError, match="unknown stream format 'gemini'"):
        decoder_for("gemini")


def test_decoder_for_passes_limits() -> None:
    decoder = decoder_for("openai", max_line_bytes=32)
    with pytest.raises(StreamProtocolError, match="longer than 32 bytes"):
        decoder.feed(b"data: " + b"x" * 40 + b"\n\n")


@pytest.mark.parametrize("path", ANTHROPIC_FILES, ids=[p.stem for p in ANTHROPIC_FILES])
def test_sniff_recorded_anthropic(path: object) -> None:
    assert sniff_format(path.read_bytes()[:512]) == "anthropic"  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize("path", OPENAI_FILES, ids=[p.stem for p in OPENAI_FILES])
def test_sniff_recorded_openai(path: object) -> None:
    assert sniff_format(path.read_bytes()[:512]) == "openai"  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize(
    ("head", "fmt"),
    [
        (
            b'{"model":"llama3","created_at":"x","message":{"role":"assistant","content":"Hi"},"done":false}\n',
            "ollama",
        ),
        (b'\xef\xbb\xbf\r\n  {"error": "model not found"}', "ollama"),
        (
            b': keep-alive\n\ndata: {"id":"c","object":"chat.completion.chunk","choices":[]}',
            "openai",
        ),
        (b"data: [DONE]\n\n", "openai"),
        (
            b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n',
            "anthropic",
        ),
        (b'data: {"type":"message_start","message":{}}\n\n', "anthropic"),
    ],
    ids=[
        "ollama",
        "ollama-error-bom",
        "openai-comment",
        "openai-done",
        "anthropic-error",
        "anthropic-no-event-line",
    ],
)
def test_sniff_format(head: bytes, fmt: str) -> None:
    assert sniff_format(head) == fmt


@pytest.mark.parametrize(
    "head", [b"", b"<html><body>502 Bad Gateway</body></html>", b"hello\n", b"data: {}\n\n"]
)
def test_sniff_unknown(head: bytes) -> None:
    with pytest.raises(StreamProtocolError, match="cannot tell the stream format"):
        sniff_format(head)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
            ("overloaded_error", "Overloaded"),
        ),
        (
            b'{"error":{"message":"Rate limit reached","type":"requests","param":null,'
            b'"code":"rate_limit_exceeded"}}',
            ("requests", "Rate limit reached"),
        ),
        (
            b'{"error":{"message":"Quota","type":null,"code":"insufficient_quota"}}',
            ("insufficient_quota", "Quota"),
        ),
        (b'{"error":{"message":"x","code":429}}', ("429", "x")),
        (
            b'{"error":"model \\"llama9\\" not found, try pulling it first"}',
            (None, 'model "llama9" not found, try pulling it first'),
        ),
        (b'{"detail":"Not Found"}', (None, "Not Found")),
        (b"<html><h1>502 Bad Gateway</h1></html>", (None, None)),
        (b"", (None, None)),
        (b"[1, 2]", (None, None)),
        (b'{"error": {"type": 5}}', (None, None)),
        (b'{"foo": 1}', (None, None)),
        (b'\xef\xbb\xbf{"error":"behind a BOM"}', (None, "behind a BOM")),
    ],
    ids=[
        "anthropic",
        "openai",
        "openai-null-type",
        "numeric-code",
        "ollama",
        "detail",
        "html",
        "empty",
        "array",
        "odd",
        "other-object",
        "byte-order-mark",
    ],
)
def test_parse_error_body(body: bytes, expected: tuple[str | None, str | None]) -> None:
    assert parse_error_body(body) == expected
