"""The Message JSON (docs/behaviour.md §6, docs/content.md) as a property: every part type, with
any text, bytes, JSON values and counts, decodes back to the message it was encoded from."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxturn.errors import ConfigError
from rxturn.messages import (
    AudioPart,
    CachePoint,
    DocumentPart,
    FileIdSource,
    ImagePart,
    InlineSource,
    Message,
    RedactedThinkingPart,
    RefusalPart,
    StopReason,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UrlSource,
    Usage,
    message_from_json,
    message_to_json,
)

# a header of each known type, then any bytes: what InlineSource takes for that type
HEADERS = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff\xe0",
    "image/gif": b"GIF89a",
    "image/webp": b"RIFF\x00\x00\x00\x00WEBPVP8 ",
    "application/pdf": b"%PDF-1.7\n",
    "audio/wav": b"RIFF\x00\x00\x00\x00WAVEfmt ",
    "audio/mpeg": b"ID3\x04",
}
KIND = {"image": ImagePart, "application": DocumentPart, "audio": AudioPart}

texts = st.text()  # any code point but a lone surrogate (tested below)
names = st.text(min_size=1)
counts = st.integers(min_value=0, max_value=2**63 - 1)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: past 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=12,
)


@st.composite
def inline_sources(draw: st.DrawFn, media_type: str) -> InlineSource:
    return InlineSource(media_type, HEADERS[media_type] + draw(st.binary(max_size=64)))


@st.composite
def url_sources(draw: st.DrawFn) -> UrlSource:
    host = draw(st.from_regex(r"[a-z0-9]{1,12}(\.[a-z]{2,5}){1,2}", fullmatch=True))
    path = draw(st.from_regex(r"(/[A-Za-z0-9._~%-]{0,10}){0,3}", fullmatch=True))
    return UrlSource(f"{draw(st.sampled_from(['http', 'https', 'HTTPS']))}://{host}{path}")


file_ids = st.builds(FileIdSource, names, st.sampled_from(["anthropic", "openai"]))


@st.composite
def media_parts(draw: st.DrawFn, kinds: tuple[str, ...] = ("image", "application", "audio")) -> Any:
    media_type = draw(st.sampled_from([t for t in HEADERS if t.split("/")[0] in kinds]))
    part = KIND[media_type.split("/")[0]]
    source = draw(st.one_of(inline_sources(media_type), url_sources(), file_ids))
    if part is ImagePart:
        return ImagePart(source, draw(st.sampled_from([None, "auto", "low", "high", "original"])))
    if part is DocumentPart:
        text = st.none() | texts
        return DocumentPart(source, draw(text), draw(text), draw(st.booleans()), draw(text))
    return AudioPart(source)


plain_documents = texts.filter(bool).map(DocumentPart.from_text)
result_items = st.one_of(
    texts.map(TextPart), media_parts(("image", "application")), plain_documents
)

parts = st.one_of(
    texts.map(TextPart),
    st.builds(ToolCallPart, names, names, st.dictionaries(texts, json_values, max_size=4)),
    st.builds(
        ToolResultPart,
        names,
        texts | st.lists(result_items, max_size=3).map(tuple),
        st.booleans(),
    ),
    st.builds(ThinkingPart, texts, st.none() | texts, texts),
    st.builds(RedactedThinkingPart, texts),
    st.builds(RefusalPart, texts),
    media_parts(),
    plain_documents,
    st.builds(CachePoint, st.sampled_from([None, "5m", "1h"])),
)

usages = st.none() | st.builds(
    Usage,
    input_tokens=counts,
    output_tokens=counts,
    cache_read_tokens=st.none() | counts,
    cache_write_tokens=st.none() | counts,
    output_reasoning_tokens=st.none() | counts,
    details=st.none() | st.dictionaries(names, counts, min_size=1, max_size=3),
)

messages = st.builds(
    Message,
    id=texts,
    model=texts,
    role=st.sampled_from(["user", "assistant"]),
    content=st.lists(parts, max_size=5).map(tuple),
    stop_reason=st.none() | st.sampled_from(list(StopReason)),
    usage=usages,
)


@settings(max_examples=150)
@given(messages)
def test_every_message_survives_the_json_round_trip(message: Message) -> None:
    data = message_to_json(message)
    assert message_from_json(data) == message
    assert message_from_json(data.decode()) == message  # (the str form too)
    assert message_to_json(message_from_json(data)) == data


@settings(max_examples=50)
@given(st.sampled_from([TextPart, RefusalPart, RedactedThinkingPart]), texts, st.integers(0, 8))
def test_a_lone_surrogate_is_a_config_error_never_bad_json(
    part: type[TextPart | RefusalPart | RedactedThinkingPart], text: str, at: int
) -> None:
    broken = text[:at] + "\ud800" + text[at:]
    with pytest.raises(ConfigError, match="lone surrogate"):
        message_to_json(Message(role="assistant", content=(part(broken),)))


def test_unknown_part_types_fail_and_unknown_fields_are_ignored() -> None:
    with pytest.raises(msgspec.ValidationError, match="Invalid value 'video'"):
        message_from_json('{"role": "user", "content": [{"type": "video"}]}')
    with_extras = message_from_json(
        '{"role": "user", "version": 2, "content": [{"type": "text", "text": "a", "lang": "en"}]}'
    )
    assert with_extras == Message(role="user", content=(TextPart("a"),))
