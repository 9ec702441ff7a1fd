"""Media parts: media types inferred from real file headers, bad files refused with the path
named, the Message JSON of the new parts, reprs without bytes, image sizes and token counts
by the providers' documented rules."""

from __future__ import annotations

import base64
import os
import re
import zlib
from pathlib import Path

import msgspec
import pytest
from _media_files import MP3, gif, jpeg, packed_pdf, pdf, png, wav, webp_vp8, webp_vp8l, webp_vp8x

from rxturn import (
    AudioPart,
    CachePoint,
    DocumentPart,
    FileIdSource,
    ImagePart,
    InlineSource,
    Message,
    UrlSource,
    messages,
)
from rxturn._media import PDF_OBJECT_STREAMS, image_size, pdf_pages, sniff
from rxturn.engine.context.tokens import TiktokenCounter, image_tokens
from rxturn.errors import ConfigError
from rxturn.messages import (
    MAX_MEDIA_FILE_BYTES,
    TextPart,
    ToolResultPart,
    content_text,
    media_from_path,
    message_from_json,
    message_to_json,
)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (png(3, 2), "image/png"),
        (jpeg(3, 2), "image/jpeg"),
        (gif(3, 2), "image/gif"),
        (webp_vp8x(3, 2), "image/webp"),
        (pdf(1), "application/pdf"),
        (wav(0.1), "audio/wav"),
        (MP3, "audio/mpeg"),
    ],
)
def test_media_type_from_magic_bytes_whatever_the_name(data: bytes, expected: str) -> None:
    assert sniff(data) == expected
    assert sniff(data, "misnamed.txt") == expected  # the bytes win over the extension
    assert InlineSource.from_bytes(data).media_type == expected


def test_text_starting_with_id3_is_text_and_an_id3_tag_is_audio(tmp_path: Path) -> None:
    # before, any file starting 'ID3' was audio/mpeg: notes.md opening with 'ID3 tags' became
    # an AudioPart (which the Anthropic wire refuses); an ID3v2 header has a version byte 2-4
    notes = b"ID3 tags: notes on the format\n"
    (tmp_path / "notes.md").write_bytes(notes)
    part = media_from_path(tmp_path / "notes.md")
    assert isinstance(part, DocumentPart)
    assert part.source == InlineSource("text/plain", notes)
    tagged = b"ID3\x04\x00\x00\x00\x00\x02\x01" + bytes(300)
    assert sniff(tagged, "song.mp3") == "audio/mpeg"
    assert sniff(b"ID3\x04\x00\x00\x00\x00\x02\xff" + bytes(30)) is None  # not 7-bit size


def test_plain_text_by_extension_only_when_utf8() -> None:
    assert InlineSource.from_bytes(b"# notes\n", name="a.md").media_type == "text/plain"
    with pytest.raises(ConfigError, match="cannot tell its media type"):
        InlineSource.from_bytes(b"\xff\xfe\x00bad", name="a.txt")
    # an image extension on bytes that are no image is not an image
    with pytest.raises(ConfigError, match="cannot tell its media type"):
        InlineSource.from_bytes(b"hello", name="cat.png")


@pytest.mark.parametrize(
    ("data", "name", "why"),
    [
        (b"\xff\xfe\x00bad", "notes.txt", "its name says text/plain, but its bytes are not UTF-8"),
        (b"hello", "cat.png", "its name says image/png, but its bytes have no image/png header"),
        (
            b"hello",
            "q3.pdf",
            "its name says application/pdf, but its bytes have no application/pdf header",
        ),
    ],
)
def test_a_known_extension_on_other_bytes_says_what_is_wrong(
    data: bytes, name: str, why: str
) -> None:
    # before: "cannot tell its media type (...); pass media_type=" and, from the CLI, "give
    # the file its type's extension (.pdf, .txt, .png…)" for a file that had that extension
    with pytest.raises(ConfigError, match=re.escape(why)) as caught:
        InlineSource.from_bytes(data, name=name)
    assert "media_type=" not in str(caught.value)


@pytest.mark.parametrize("name", ["main.py", "data.json", "config.YAML", "page.html", "lib.rs"])
def test_source_code_and_data_files_are_plain_text(name: str) -> None:
    """What a prompt often attaches (``rxturn chat --file main.py``) is text the providers take
    as a plain-text document; its bytes still have to be UTF-8."""
    assert InlineSource.from_bytes(b"x = {'a': 1}\n", name=name).media_type == "text/plain"
    with pytest.raises(ConfigError, match="cannot tell its media type"):
        InlineSource.from_bytes(b"\xff\xfe\x00bad", name=name)


def test_explicit_media_type_is_checked_and_normalised() -> None:
    assert InlineSource.from_bytes(b"\xff\xd8\xff\xe0", "image/JPG").media_type == "image/jpeg"
    with pytest.raises(ConfigError, match="unknown media type 'image/bmp'"):
        InlineSource.from_bytes(b"BM...", "image/bmp")


def test_from_path_reads_and_infers(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(png(4, 4))
    (tmp_path / "report.pdf").write_bytes(pdf(2))
    (tmp_path / "notes.txt").write_text("hello")
    image = ImagePart.from_path(tmp_path / "cat.png", detail="low")
    assert image.source == InlineSource("image/png", png(4, 4)) and image.detail == "low"
    doc = DocumentPart.from_path(tmp_path / "report.pdf", title="Q3", citations=True)
    assert (doc.filename, doc.title, doc.citations) == ("report.pdf", "Q3", True)
    assert isinstance(media_from_path(tmp_path / "notes.txt"), DocumentPart)
    assert isinstance(media_from_path(tmp_path / "cat.png"), ImagePart)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: None, "cannot read media file '{}': No such file or directory"),
        (lambda p: p.write_bytes(b""), "media file '{}' is empty"),
        (lambda p: p.mkdir(), "cannot read media file '{}': Is a directory"),
        (lambda p: p.write_bytes(b"\x00\x01\x02"), "media file '{}': cannot tell its media type"),
    ],
    ids=["missing", "empty", "directory", "unknown"],
)
def test_bad_files_are_config_errors_naming_the_path(tmp_path: Path, setup, message: str) -> None:
    path = tmp_path / "input.png"
    setup(path)
    with pytest.raises(ConfigError) as caught:
        ImagePart.from_path(path)
    assert message.format(path) in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """A named pipe with no writer would block the open, and with one may never end."""
    path = tmp_path / "pipe.png"
    os.mkfifo(path)
    with pytest.raises(ConfigError) as caught:
        media_from_path(path)
    assert f"media file '{path}' is not a regular file" in str(caught.value)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this platform")
def test_a_device_that_never_ends_is_refused() -> None:
    with pytest.raises(ConfigError, match="media file '/dev/zero' is not a regular file"):
        ImagePart.from_path("/dev/zero")


def test_a_file_over_the_bound_is_refused_unread(tmp_path: Path) -> None:
    """64 MiB, above every provider's cap on inline media; the file is sparse (no disk)."""
    assert MAX_MEDIA_FILE_BYTES == 64 * 1024 * 1024
    path = tmp_path / "huge.png"
    with path.open("wb") as file:
        file.write(png(1, 1))
        file.truncate(MAX_MEDIA_FILE_BYTES + 1)
    with pytest.raises(ConfigError) as caught:
        ImagePart.from_path(path)
    assert f"media file '{path}' is larger than 64 MiB" in str(caught.value)
    path.write_bytes(png(1, 1))  # the same file within the bound is read
    assert ImagePart.from_path(path).source == InlineSource("image/png", png(1, 1))


def test_a_file_growing_past_the_bound_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size is checked before reading, and the read itself stops one byte past the bound
    (a file that grows, or a regular file whose size says 0, as in /proc)."""
    path = tmp_path / "cat.png"
    path.write_bytes(png(4, 4))
    monkeypatch.setattr(messages, "MAX_MEDIA_FILE_BYTES", 8)
    real_fstat = os.fstat
    monkeypatch.setattr(
        messages.os,
        "fstat",
        lambda fd: os.stat_result((*real_fstat(fd)[:6], 0, *real_fstat(fd)[7:])),
    )
    with pytest.raises(ConfigError, match="is larger than 8 bytes"):
        ImagePart.from_path(path)


def test_a_part_refuses_media_of_another_kind(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="ImagePart takes image media, got application/pdf"):
        ImagePart.from_bytes(pdf(1))
    with pytest.raises(ConfigError, match="AudioPart takes audio media"):
        AudioPart.from_bytes(png(1, 1))
    source = DocumentPart.from_bytes(b"plain", "text/plain").source
    assert isinstance(source, InlineSource)
    assert source.media_type == "text/plain"


def test_reprs_and_placeholders_never_show_the_bytes() -> None:
    secret = b"\x89PNG\r\n\x1a\n" + b"TOPSECRETPIXELS" * 100
    part = ImagePart(InlineSource("image/png", secret))
    for text in (repr(part), str(part), repr(Message.user("look", part)), content_text((part,))):
        assert "TOPSECRET" not in text
        assert base64.b64encode(secret).decode()[:40] not in text
    assert "data=<1508 bytes>" in repr(part)
    assert content_text((TextPart("look"), part)) == "look [image: image/png, 1508 bytes]"


def test_message_json_of_the_new_parts_round_trips() -> None:
    message = Message.user(
        "compare",
        ImagePart(InlineSource("image/gif", gif(1, 1)), detail="high"),
        DocumentPart(UrlSource("https://example.com/a.pdf"), title="A"),
        AudioPart(FileIdSource("file-1", "openai")),
        CachePoint("1h"),
    )
    raw = msgspec.json.decode(message_to_json(message))
    assert raw["content"][1:] == [
        {
            "type": "image",
            "source": {
                "type": "inline",
                "media_type": "image/gif",
                "data": base64.b64encode(gif(1, 1)).decode(),
            },
            "detail": "high",
        },
        {
            "type": "document",
            "source": {"type": "url", "url": "https://example.com/a.pdf"},
            "title": "A",
        },
        {"type": "audio", "source": {"type": "file_id", "file_id": "file-1", "provider": "openai"}},
        {"type": "cache_point", "ttl": "1h"},
    ]
    assert message_from_json(message_to_json(message)) == message


def test_tool_result_content_string_or_parts() -> None:
    old = b'{"role":"user","content":[{"type":"tool_result","tool_call_id":"c","content":"42"}]}'
    result = message_from_json(old).content[0]
    assert isinstance(result, ToolResultPart) and result.content == "42" and result.text == "42"
    shot = ImagePart(InlineSource("image/png", png(2, 2)))
    rich = ToolResultPart("c", (TextPart("screen:"), shot))
    back = message_from_json(message_to_json(Message(role="user", content=(rich,))))
    assert back.content[0] == rich
    assert rich.text == "screen:" and rich.media == (shot,)
    audio = {"type": "audio", "source": {"type": "url", "url": "u"}}
    bad = msgspec.json.encode(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_call_id": "c", "content": [audio]}],
        }
    )
    with pytest.raises(msgspec.ValidationError):
        message_from_json(bad)  # audio is not a tool result's content


@pytest.mark.parametrize(
    "build", [png, jpeg, gif, webp_vp8x, webp_vp8l, webp_vp8], ids=lambda f: f.__name__
)
def test_image_size_from_headers(build) -> None:
    assert image_size(build(1234, 567)) == (1234, 567)


def test_image_size_of_garbage_is_none() -> None:
    assert image_size(b"\xff\xd8\xff\xe0") is None
    assert image_size(b"\x89PNG\r\n\x1a\n") is None
    assert image_size(b"nothing") is None


# The providers' own worked examples: Anthropic's vision guide table (200x200 ≈ 54 tokens,
# 1000x1000 ≈ 1334, 1092x1092 ≈ 1590) and OpenAI's vision guide (1024x1024 high: 765;
# 2048x4096 high: 1105; any size low: 85).
@pytest.mark.parametrize(
    ("size", "rule", "detail", "tokens"),
    [
        ((200, 200), "anthropic", None, 54),
        ((1000, 1000), "anthropic", None, 1334),
        ((1092, 1092), "anthropic", None, 1590),
        ((1024, 1024), "openai", None, 765),
        ((2048, 4096), "openai", "high", 1105),
        ((4096, 8192), "openai", "low", 85),
    ],
)
def test_image_tokens_match_the_documented_examples(
    size: tuple[int, int], rule: str, detail: str | None, tokens: int
) -> None:
    assert image_tokens(*size, rule, detail) == tokens  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("size", [(4000, 3000), (3000, 4000), (1568, 1568), (5000, 5000)])
def test_a_scaled_down_anthropic_image_counts_at_most_the_rules_largest(
    size: tuple[int, int],
) -> None:
    # scaled to about 1,600 tokens (docs/content.md: 1,600 is the rule's largest, what an
    # image of unknown size counts); the float product of a scaled size made 1,601 of these
    assert image_tokens(*size, "anthropic") <= 1600


def test_token_counter_counts_images_by_pixels_not_bytes() -> None:
    anthropic = TiktokenCounter(media_rule="anthropic")
    openai = TiktokenCounter(media_rule="openai")
    text_only = anthropic.count_message(Message.user("look"))
    big = ImagePart(InlineSource("image/png", png(1000, 1000)))
    assert anthropic.count_message(Message.user("look", big)) == text_only + 1334
    assert openai.count_message(Message.user("look", big)) == text_only + 765
    # a URL image (size unknown) counts as the rule's largest image
    url = ImagePart(UrlSource("https://example.com/x.png"))
    assert anthropic.count_message(Message.user("look", url)) == text_only + 1600
    # a marker costs nothing; media inside a tool result counts too
    assert anthropic.count_message(Message.user("look", CachePoint())) == text_only
    result = Message(role="user", content=(ToolResultPart("c", (big,)),))
    assert (
        anthropic.count_message(result)
        == anthropic.count_message(Message(role="user", content=())) + 1334
    )


def test_token_counter_pdf_pages_and_audio_seconds() -> None:
    counter = TiktokenCounter()
    empty = counter.count_message(Message(role="user", content=()))
    three = DocumentPart(InlineSource("application/pdf", pdf(3)))
    assert counter.count_message(Message(role="user", content=(three,))) == empty + 3 * 3000
    clip = AudioPart(InlineSource("audio/wav", wav(2.5)))
    assert counter.count_message(Message(role="user", content=(clip,))) == empty + 25
    with pytest.raises(ConfigError, match="media_rule"):
        TiktokenCounter(media_rule="gemini")  # pyright: ignore[reportArgumentType]


def test_a_pdf_that_inflates_without_end_is_read_only_up_to_the_bound() -> None:
    # a 120 KB file whose object stream inflates to 48 MB of page objects: it was inflated to
    # 32 MB and searched whole, about 0.4 s of the event loop, for 1.8 million "pages"
    entry = b"<< /Type /Page >> "
    bomb = zlib.compress(entry * (3 * 1024 * 1024), 9)
    data = b"%PDF-1.7 1 0 obj << /Type /ObjStm >> stream\n" + bomb + b"\nendstream"
    pages = pdf_pages(data)
    assert 1000 < pages <= 2 * 1024 * 1024 // len(entry) + 1  # inflated: 2 MiB at most
    many = b"%PDF-1.7 " + b"<< /Type /ObjStm >> stream\n" + zlib.compress(entry) + b"endstream "
    assert pdf_pages(many * (PDF_OBJECT_STREAMS + 50)) == PDF_OBJECT_STREAMS


@pytest.mark.parametrize("rule", ["anthropic", "openai"])
def test_a_pdf_whose_pages_are_packed_in_object_streams_counts_each_page(rule: str) -> None:
    # before, only page objects in plain sight were counted: a PDF 1.5 with its pages in a
    # compressed object stream (most PDFs written today; a 36-page manual) was one page,
    # 3,000 tokens, and the context estimate missed the rest of the document
    counter = TiktokenCounter(media_rule=rule)  # pyright: ignore[reportArgumentType]
    empty = counter.count_message(Message(role="user", content=()))
    report = DocumentPart.from_bytes(packed_pdf(12))
    assert counter.count_message(Message(role="user", content=(report,))) == empty + 12 * 3000
    # a stream that does not inflate (encrypted, another filter) leaves the count as it was
    broken = packed_pdf(12).replace(b"stream\r\nx", b"stream\r\n?")
    assert (
        counter.count_message(Message(role="user", content=(DocumentPart.from_bytes(broken),)))
        == empty + 3000
    )


def test_a_file_name_that_is_not_utf8_is_sent_with_a_replacement_character(
    tmp_path: Path,
) -> None:
    # a readable PDF named b'r\xff.pdf': its filename went out as a lone surrogate and the
    # OpenAI wires refused the request body ('not valid Unicode at ...file.filename')
    from rxturn.clients.openai import build_openai_body
    from rxturn.messages import Request, RequestOptions

    path = tmp_path / os.fsdecode(b"r\xff.pdf")
    path.write_bytes(pdf(1))
    for part in (DocumentPart.from_path(path), media_from_path(path)):
        assert isinstance(part, DocumentPart) and part.filename == "r\ufffd.pdf"
        request = Request(messages=(Message.user("read", part),))
        body = build_openai_body(
            request, RequestOptions(), model="m", max_tokens=None, stream=False
        )
        sent = msgspec.json.decode(msgspec.json.encode(body))
        assert sent["messages"][0]["content"][1]["file"]["filename"] == "r\ufffd.pdf"
