"""The media parts, their sources and the cache marker refuse a wrong argument when built: a
ConfigError naming the field, never a part that fails later inside a wire's encoder."""

from __future__ import annotations

from collections.abc import Callable

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

PNG = InlineSource(media_type="image/png", data=b"\x89PNG\r\n\x1a\n")

CASES: list[tuple[str, Callable[[], object]]] = [
    ("InlineSource.media_type", lambda: InlineSource(media_type=3, data=b"x")),  # type: ignore[arg-type]
    ("InlineSource.data", lambda: InlineSource(media_type="image/png", data="x")),  # type: ignore[arg-type]
    ("InlineSource.data", lambda: InlineSource(media_type="image/png", data=b"")),
    ("UrlSource.url", lambda: UrlSource(url=3)),  # type: ignore[arg-type]
    ("UrlSource.url", lambda: UrlSource(url="")),
    ("FileIdSource.file_id", lambda: FileIdSource(file_id=None, provider="openai")),  # type: ignore[arg-type]
    ("FileIdSource.provider", lambda: FileIdSource(file_id="file_1", provider="")),
    ("ImagePart.source", lambda: ImagePart("https://example.invalid/a.png")),  # type: ignore[arg-type]
    ("ImagePart.detail", lambda: ImagePart(PNG, detail="ultra")),  # type: ignore[arg-type]
    ("DocumentPart.source", lambda: DocumentPart(b"%PDF")),  # type: ignore[arg-type]
    ("DocumentPart.title", lambda: DocumentPart(PNG, title=3)),  # type: ignore[arg-type]
    ("DocumentPart.citations", lambda: DocumentPart(PNG, citations="yes")),  # type: ignore[arg-type]
    ("AudioPart.source", lambda: AudioPart(None)),  # type: ignore[arg-type]
    ("CachePoint.ttl", lambda: CachePoint(ttl="2h")),  # type: ignore[arg-type]
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
