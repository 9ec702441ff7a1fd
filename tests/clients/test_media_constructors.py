"""The media parts, their sources and the cache marker refuse a wrong argument when built: a
ConfigError naming the field, never a part that fails later inside a wire's encoder."""

from __future__ import annotations

import base64
from collections.abc import Callable

import msgspec
import pytest

from rxturn import (
    AudioPart,
    CachePoint,
    ConfigError,
    DocumentPart,
    FileIdSource,
    ImagePart,
    InlineSource,
    UrlSource,
)
from rxturn.messages import TextPart, ToolCallPart, ToolResultPart, message_from_json

PNG = InlineSource(media_type="image/png", data=b"\x89PNG\r\n\x1a\n")

CASES: list[tuple[str, Callable[[], object]]] = [
    ("InlineSource.media_type", lambda: InlineSource(media_type=3, data=b"x")),  # pyright: ignore[reportArgumentType]
    ("InlineSource.data", lambda: InlineSource(media_type="image/png", data="x")),  # pyright: ignore[reportArgumentType]
    ("InlineSource.data", lambda: InlineSource(media_type="image/png", data=b"")),
    ("UrlSource.url", lambda: UrlSource(url=3)),  # pyright: ignore[reportArgumentType]
    ("UrlSource.url", lambda: UrlSource(url="")),
    # a URL no provider can fetch: before, sent as it was for the provider to refuse
    ("UrlSource.url", lambda: UrlSource(url="example.com/cat.png")),
    ("UrlSource.url", lambda: UrlSource(url="file:///etc/passwd")),
    ("UrlSource.url", lambda: UrlSource(url="ftp://example.com/cat.png")),
    ("UrlSource.url", lambda: UrlSource(url="https://example.com/a cat.png")),
    ("UrlSource.url", lambda: UrlSource(url="https://example.com/cat.png\n")),
    ("FileIdSource.file_id", lambda: FileIdSource(file_id=None, provider="openai")),  # pyright: ignore[reportArgumentType]
    ("FileIdSource.provider", lambda: FileIdSource(file_id="file_1", provider="")),
    # a provider no wire sends ids of: before, kept and refused only when a request was built
    ("FileIdSource.provider", lambda: FileIdSource(file_id="file_1", provider="google")),
    ("FileIdSource.provider", lambda: FileIdSource(file_id="file_1", provider="ollama")),
    ("ImagePart.source", lambda: ImagePart("https://example.invalid/a.png")),  # pyright: ignore[reportArgumentType]
    ("ImagePart.detail", lambda: ImagePart(PNG, detail="ultra")),  # pyright: ignore[reportArgumentType]
    ("DocumentPart.source", lambda: DocumentPart(b"%PDF")),  # pyright: ignore[reportArgumentType]
    ("DocumentPart.title", lambda: DocumentPart(PNG, title=3)),  # pyright: ignore[reportArgumentType]
    ("DocumentPart.citations", lambda: DocumentPart(PNG, citations="yes")),  # pyright: ignore[reportArgumentType]
    ("AudioPart.source", lambda: AudioPart(None)),  # pyright: ignore[reportArgumentType]
    ("CachePoint.ttl", lambda: CachePoint(ttl="2h")),  # pyright: ignore[reportArgumentType]
    # text and tool calls too: a None text was a TypeError from the request's text join inside
    # the turn, and a numeric tool call id went out as a JSON number
    ("TextPart.text", lambda: TextPart(None)),  # pyright: ignore[reportArgumentType]
    ("TextPart.text", lambda: TextPart(5)),  # pyright: ignore[reportArgumentType]
    ("TextPart.text", lambda: TextPart(b"hi")),  # pyright: ignore[reportArgumentType]
    ("ToolCallPart.id", lambda: ToolCallPart(7, "lookup", {})),  # pyright: ignore[reportArgumentType]
    ("ToolCallPart.name", lambda: ToolCallPart("call_1", None, {})),  # pyright: ignore[reportArgumentType]
]


@pytest.mark.parametrize(("field", "build"), CASES, ids=[field for field, _ in CASES])
def test_a_wrong_argument_is_a_config_error_naming_the_field(
    field: str, build: Callable[[], object]
) -> None:
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        build()


def test_good_arguments_build_and_round_trip_through_json() -> None:
    import msgspec

    from rxturn import Message

    message = Message.user(
        "look",
        ImagePart(PNG, detail="low"),
        DocumentPart(UrlSource("https://example.invalid/a.pdf"), title="A", citations=True),
        AudioPart(FileIdSource("file_1", "openai")),
        CachePoint(ttl="1h"),
    )
    assert msgspec.json.decode(msgspec.json.encode(message), type=Message) == message


# The convenience constructors: (what the message names, the call). Each refused before any file
# is read, with a ConfigError, where a TypeError, ValueError, AttributeError or
# UnicodeEncodeError came from inside pathlib, os or str.
CONVENIENCE: list[tuple[str, Callable[[], object]]] = [
    ("media path", lambda: ImagePart.from_path(None)),  # pyright: ignore[reportArgumentType]
    ("media path", lambda: DocumentPart.from_path(3)),  # pyright: ignore[reportArgumentType]
    ("media path", lambda: AudioPart.from_path(b"/tmp/a.wav")),  # pyright: ignore[reportArgumentType]
    ("media path is empty", lambda: InlineSource.from_path("")),
    ("NUL character", lambda: ImagePart.from_path("/tmp/a\x00.png")),
    # a lone surrogate os.fsencode refuses (before: UnicodeEncodeError from os.open)
    ("the file system can encode", lambda: ImagePart.from_path("/tmp/a\ud800.png")),
    ("media_type", lambda: ImagePart.from_bytes(b"\x89PNG\r\n\x1a\n", 5)),  # pyright: ignore[reportArgumentType]
    ("media_type", lambda: InlineSource.from_path(__file__, ["text/plain"])),  # pyright: ignore[reportArgumentType]
    ("name", lambda: InlineSource.from_bytes(b"hello", name=3)),  # pyright: ignore[reportArgumentType]
    ("DocumentPart.filename", lambda: DocumentPart.from_bytes(b"hello", filename=3)),  # pyright: ignore[reportArgumentType]
    ("DocumentPart.from_text", lambda: DocumentPart.from_text(5)),  # pyright: ignore[reportArgumentType]
    ("DocumentPart.from_text", lambda: DocumentPart.from_text(b"hello")),  # pyright: ignore[reportArgumentType]
    ("the text is empty", lambda: DocumentPart.from_text("")),
    ("lone UTF-16 surrogate at index 2", lambda: DocumentPart.from_text("ab\ud800")),
    # an explicit media type the bytes' own header contradicts, text that is not UTF-8: each
    # was kept, and sent for the provider to refuse (or, for the text, the wire to refuse)
    ("its bytes are application/pdf", lambda: ImagePart.from_bytes(b"%PDF-1.7 x", "image/png")),
    (
        "its bytes are image/png",
        lambda: DocumentPart.from_bytes(b"\x89PNG\r\n\x1a\n", "text/plain"),
    ),
    ("not UTF-8", lambda: DocumentPart.from_bytes(b"caf\xe9", "text/plain")),
]


@pytest.mark.parametrize(("named", "build"), CONVENIENCE, ids=[n for n, _ in CONVENIENCE])
def test_a_wrong_argument_to_a_convenience_constructor_is_a_config_error(
    named: str, build: Callable[[], object]
) -> None:
    with pytest.raises(ConfigError, match=named):
        build()


# A tool result's fields: each a ConfigError when built, where a wrong content reached the
# wires' encoders as a TypeError or an AttributeError, and an int id went out as a JSON number.
RESULT_CASES: list[tuple[str, Callable[[], object]]] = [
    ("ToolResultPart.tool_call_id", lambda: ToolResultPart(5, "ok")),  # pyright: ignore[reportArgumentType]
    ("ToolResultPart.content", lambda: ToolResultPart("c", 5)),  # pyright: ignore[reportArgumentType]
    ("ToolResultPart.content", lambda: ToolResultPart("c", None)),  # pyright: ignore[reportArgumentType]
    (
        r"ToolResultPart.content\[0\] is of type CachePoint",
        lambda: ToolResultPart("c", (CachePoint(),)),  # pyright: ignore[reportArgumentType]
    ),
    (
        r"ToolResultPart.content\[1\] is of type AudioPart",
        lambda: ToolResultPart(
            "c",
            (TextPart("a"), AudioPart(UrlSource("https://example.invalid/a.wav"))),  # pyright: ignore[reportArgumentType]
        ),
    ),
    (r"ToolResultPart.content\[0\] is of type str", lambda: ToolResultPart("c", ("text",))),  # pyright: ignore[reportArgumentType]
    ("ToolResultPart.is_error", lambda: ToolResultPart("c", "ok", "yes")),  # pyright: ignore[reportArgumentType]
]


@pytest.mark.parametrize(("named", "build"), RESULT_CASES, ids=[n for n, _ in RESULT_CASES])
def test_a_tool_result_with_a_wrong_field_is_a_config_error(
    named: str, build: Callable[[], object]
) -> None:
    with pytest.raises(ConfigError, match=named):
        build()


def test_a_tool_results_list_of_parts_is_kept_as_a_tuple() -> None:
    part = ToolResultPart("c", [TextPart("a")])  # pyright: ignore[reportArgumentType]
    assert part.content == (TextPart("a"),)
    hash(part)  # a frozen part whose content is a list could not be hashed


@pytest.mark.parametrize(
    "url", ["data:image/png;base64,iVBORw0KGgo=", "DATA:image/png;base64,iVBORw0KGgo="]
)
def test_a_data_url_is_not_a_url_source(url: str) -> None:
    # before, it was kept: its bytes shown in every placeholder ('[image: data:image/png;…]'
    # in audit records, logs and errors), sent past the inline size limits, and as an
    # Anthropic 'url' source the API refuses
    with pytest.raises(ConfigError, match=r"UrlSource\.url is a data: URL") as caught:
        UrlSource(url)
    assert "iVBOR" not in str(caught.value)


@pytest.mark.parametrize("url", ["https://", "http://", "https:///a.png", "https://:443/a.png"])
def test_a_url_with_no_host_is_not_a_url_source(url: str) -> None:
    # docs/content.md: an http:// or https:// URL the provider fetches; with no host there is
    # nothing to fetch from, and it was kept, for every provider to refuse with a 400
    with pytest.raises(ConfigError, match="names no host"):
        UrlSource(url)
    assert UrlSource("HTTPS://Example.com/a.png").url == "HTTPS://Example.com/a.png"


def test_inline_data_given_as_base64_text_is_refused_without_showing_it() -> None:
    # before, the message quoted the first 70 characters of the str: the image's base64
    text = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200))).decode()
    with pytest.raises(ConfigError, match="got str of length") as caught:
        InlineSource("image/png", text)  # pyright: ignore[reportArgumentType]
    assert text[:12] not in str(caught.value) and "b64decode" in str(caught.value)


def test_inline_data_as_a_bytearray_or_memoryview_is_kept_as_bytes() -> None:
    for data in (bytearray(b"\x89PNG\r\n\x1a\n"), memoryview(b"\x89PNG\r\n\x1a\n")):
        source = InlineSource("image/png", data)  # pyright: ignore[reportArgumentType]
        assert type(source.data) is bytes and source.data == b"\x89PNG\r\n\x1a\n"


def test_a_file_id_providers_name_is_taken_in_any_case() -> None:
    # before, 'OpenAI' was kept, and every wire refused it as another provider's id
    # ('the file id belongs to 'OpenAI', not 'openai' (upload the file to openai ...)')
    assert FileIdSource("file_1", "OpenAI").provider == "openai"
    assert FileIdSource("file_1", "Anthropic") == FileIdSource("file_1", "anthropic")


def test_an_inline_media_type_is_kept_in_the_wires_spelling() -> None:
    # before, InlineSource('IMAGE/PNG', ...) or 'image/jpg' built by hand was kept as written
    # and every wire refused it ('its media type is not a known image type'); from_bytes
    # already took those spellings
    assert InlineSource("IMAGE/PNG", b"\x89PNG\r\n\x1a\n").media_type == "image/png"
    assert InlineSource("image/jpg", b"\xff\xd8\xff").media_type == "image/jpeg"


PNG_BYTES = b"\x89PNG\r\n\x1a\n" + bytes(24)


@pytest.mark.parametrize(
    ("media_type", "data", "found"),
    [
        ("image/jpeg", PNG_BYTES, "its bytes are image/png"),
        ("image/png", b"%PDF-1.7 x", "its bytes are application/pdf"),
        ("audio/wav", PNG_BYTES, "its bytes are image/png"),
        ("image/gif", b"RIFF\x00\x00\x00\x00WAVEfmt ", "its bytes are audio/wav"),
    ],
    ids=["png-as-jpeg", "pdf-as-png", "png-as-wav", "wav-as-gif"],
)
def test_an_inline_label_its_bytes_contradict_is_refused_however_it_is_built(
    media_type: str, data: bytes, found: str
) -> None:
    # before, InlineSource built by hand or decoded from the Message JSON kept the label, and
    # the wire sent a PNG as {"media_type": "image/jpeg"} for the provider to refuse with a
    # 400; only from_bytes compared the label with the bytes
    with pytest.raises(ConfigError, match=found):
        InlineSource(media_type, data)
    with pytest.raises(ConfigError, match=found):
        InlineSource.from_bytes(data, media_type)
    encoded = base64.b64encode(data).decode()
    raw = (
        '{"role": "user", "content": [{"type": "image", "source": {"type": "inline", '
        f'"media_type": "{media_type}", "data": "{encoded}"}}}}]}}'
    )
    with pytest.raises(msgspec.ValidationError, match=found):
        message_from_json(raw)


def test_text_and_headerless_bytes_are_not_judged_by_their_first_bytes() -> None:
    # text is text whatever it spells; PDF and MP3 readers tolerate bytes before a header; bytes
    # of no known header (a newer format, a placeholder in a user's tests) go as labelled
    assert InlineSource("image/png", b"plain words").media_type == "image/png"
    assert InlineSource.from_bytes(b"plain words", "image/webp").media_type == "image/webp"
    assert DocumentPart.from_text("%PDF-1.7 is a version").source == InlineSource(
        "text/plain", b"%PDF-1.7 is a version"
    )
    assert InlineSource("application/pdf", b"\n%PDF-1.4").media_type == "application/pdf"
    assert InlineSource("audio/mpeg", b"\x00\x00\xff\xfb").media_type == "audio/mpeg"
    assert InlineSource("image/png", PNG_BYTES).data == PNG_BYTES
