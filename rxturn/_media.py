"""Media facts read from bytes, no IO and no dependencies: what a file is, how large an image is.

:func:`sniff` names a media type from a file's first bytes (its magic number), falling back to
the file name's extension; :func:`image_size` reads an image's width and height from its header
(PNG, JPEG, GIF, WebP), which the token estimates need (a provider counts an image by its pixels,
never by its byte length). Both read a few bytes at most: no image is ever decoded.
:func:`pdf_pages` counts a PDF's page objects, inflating its compressed object streams (and
nothing else) to find those packed there.
"""

from __future__ import annotations

import re
import struct
import zlib

__all__ = [
    "AUDIO_TYPES",
    "DOCUMENT_TYPES",
    "IMAGE_TYPES",
    "MEDIA_TYPES",
    "PDF_INFLATE_BOUND",
    "PDF_OBJECT_STREAMS",
    "by_extension",
    "describe_bound",
    "describe_size",
    "image_size",
    "kind_of",
    "mismatch",
    "pdf_pages",
    "sniff",
]

#: The image types every wire that takes images accepts.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
#: The document types: PDF, and plain text (sent as text where a wire has no document block).
DOCUMENT_TYPES = ("application/pdf", "text/plain")
#: The audio types OpenAI Chat takes (``input_audio`` formats ``wav`` and ``mp3``).
AUDIO_TYPES = ("audio/wav", "audio/mpeg")
MEDIA_TYPES = IMAGE_TYPES + DOCUMENT_TYPES + AUDIO_TYPES

_EXTENSIONS = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".pdf": "application/pdf",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/plain",
    ".markdown": "text/plain",
    ".csv": "text/plain",
    ".log": "text/plain",
    ".rst": "text/plain",
    # text a prompt often carries: data and configuration, markup, source code (sent as plain
    # text, the one text type the providers take as a document)
    **dict.fromkeys(
        (
            *(".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".tsv"),
            *(".xml", ".html", ".htm", ".css", ".tex", ".sql", ".diff", ".patch"),
            *(".py", ".pyi", ".js", ".mjs", ".ts", ".tsx", ".jsx", ".java", ".kt", ".scala"),
            *(".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".go", ".rs", ".swift", ".rb"),
            *(".php", ".pl", ".lua", ".r", ".jl", ".sh", ".bash", ".zsh", ".ps1"),
        ),
        "text/plain",
    ),
    ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
}

#: Accepted spellings of the same types (what other tools call them).
_ALIASES = {
    "image/jpg": "image/jpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
}


def kind_of(media_type: str) -> str | None:
    """``"image"``, ``"document"`` or ``"audio"`` for a known media type, else ``None``."""
    if media_type in IMAGE_TYPES:
        return "image"
    if media_type in DOCUMENT_TYPES:
        return "document"
    if media_type in AUDIO_TYPES:
        return "audio"
    return None


def canonical(media_type: str) -> str:
    """The media type in the spelling the wires use (``image/jpg`` → ``image/jpeg``)."""
    lowered = media_type.strip().lower()
    return _ALIASES.get(lowered, lowered)


def _magic(head: bytes) -> str | None:
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if _id3(head) or _mp3_frame(head):
        return "audio/mpeg"
    return None


def _id3(head: bytes) -> bool:
    """An ID3v2 tag header (how most MP3 files start): ``ID3``, a major version 2 to 4, a
    revision that is not ``FF``, flags, and a size of four 7-bit bytes. ``ID3`` alone is
    text as often ('ID3 tags: notes…' was taken for audio)."""
    return (
        len(head) >= 10
        and head.startswith(b"ID3")
        and 2 <= head[3] <= 4
        and head[4] != 0xFF
        and all(byte < 0x80 for byte in head[6:10])
    )


def mismatch(media_type: str, data: bytes) -> str | None:
    """What ``data``'s own header says against a declared image, PDF or audio ``media_type``
    (``"its bytes are application/pdf"``), or ``None`` when nothing does.

    Only a header of another known type contradicts the label: bytes with no header this module
    knows are not judged (a format newer than its table, a placeholder in a user's own tests),
    and neither is ``text/plain``: text is text, whatever its first characters spell.

    Examples:
        >>> mismatch("image/jpeg", b"\\x89PNG\\r\\n\\x1a\\n")
        'its bytes are image/png'
        >>> mismatch("image/png", b"hello") is None
        True
        >>> mismatch("text/plain", b"%PDF-1.7 is a version") is None
        True
    """
    if kind_of(media_type) is None or media_type == "text/plain":
        return None
    found = _magic(data[:16])
    if found is None or found == media_type:
        return None
    return f"its bytes are {found}"


def _mp3_frame(head: bytes) -> bool:
    """An MPEG audio layer III frame header: 11 sync bits, a real version, layer III, a
    bitrate index that is neither free nor bad, a sampling rate that is not reserved."""
    if len(head) < 3 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return False
    version = (head[1] >> 3) & 3
    layer = (head[1] >> 1) & 3
    bitrate = head[2] >> 4
    rate = (head[2] >> 2) & 3
    return version != 1 and layer == 1 and bitrate not in (0, 15) and rate != 3


def by_extension(name: str) -> str | None:
    """The media type ``name``'s extension stands for (``None``: no known extension)."""
    dot = name.rfind(".")
    return _EXTENSIONS.get(name[dot:].lower()) if dot >= 0 else None


def sniff(data: bytes, name: str = "") -> str | None:
    """The media type of ``data``: its magic bytes first, else ``name``'s extension.

    A plain-text extension counts only when the bytes are UTF-8 text. ``None`` when neither
    tells (the caller says what it got).

    Examples:
        >>> sniff(b"%PDF-1.7 ...")
        'application/pdf'
        >>> sniff(b"hello", "notes.txt")
        'text/plain'
        >>> sniff(b"hello", "notes.bin") is None
        True
    """
    found = _magic(data[:16])
    if found is not None:
        return found
    by_name = by_extension(name)
    if by_name == "text/plain":
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        return by_name
    # an image, PDF or audio extension whose bytes carry no such header is not that file
    return None


def describe_bound(limit: int) -> str:
    """A bound in bytes as people read one: ``512 MiB``, ``1 KiB``, ``8 bytes`` (whole binary
    units; a bound that is none is said in bytes)."""
    if limit and limit % (1 << 20) == 0:
        return f"{limit >> 20} MiB"
    if limit and limit % (1 << 10) == 0:
        return f"{limit >> 10} KiB"
    return f"{limit} bytes"


def describe_size(size: int) -> str:
    """``1234`` → ``"1234 bytes"``; larger sizes in KB / MB (for placeholders and errors)."""
    if size < 10_000:
        return f"{size} bytes"
    if size < 10_000_000:
        return f"{size / 1000:.0f} KB"
    return f"{size / 1_000_000:.1f} MB"


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, JPEG, GIF or WebP header; ``None`` when it cannot tell.

    Examples:
        >>> image_size(b"GIF89a" + (640).to_bytes(2, "little") + (480).to_bytes(2, "little"))
        (640, 480)
    """
    try:
        if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR":
            width, height = struct.unpack(">II", data[16:24])
            return _checked(width, height)
        if data.startswith((b"GIF87a", b"GIF89a")):
            width, height = struct.unpack("<HH", data[6:10])
            return _checked(width, height)
        if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
            return _webp(data)
        if data.startswith(b"\xff\xd8"):
            return _jpeg(data)
    except struct.error:
        return None
    return None


def _checked(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _webp(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return _checked(width, height)
    if chunk == b"VP8 ":
        # frame tag (3 bytes), start code 9d 01 2a, then 14-bit width and height
        if data[23:26] != b"\x9d\x01\x2a":
            return None
        width, height = struct.unpack("<HH", data[26:30])
        return _checked(width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L":
        if data[20] != 0x2F:
            return None
        bits = int.from_bytes(data[21:25], "little")
        return _checked((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    return None


# JPEG start-of-frame markers (baseline, progressive, …; not DHT c4, JPG c8, DAC cc)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> tuple[int, int] | None:
    index = 2
    end = len(data)
    while index + 4 <= end:
        if data[index] != 0xFF:
            return None
        marker = data[index + 1]
        if marker == 0xFF:  # fill byte
            index += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            index += 2
            continue
        (length,) = struct.unpack(">H", data[index + 2 : index + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[index + 5 : index + 9])
            return _checked(width, height)
        if length < 2:
            return None
        index += 2 + length
    return None


_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_PDF_OBJECT_STREAM = re.compile(rb"/Type\s*/ObjStm(?![a-zA-Z])")
_PDF_STREAM = re.compile(rb"stream\r?\n")
#: Most bytes one PDF's object streams are inflated to, in all, and most object streams read:
#: bounds against a zip bomb (a 130 KB file inflating to 32 MB of page objects took 0.4 s) and
#: a file of countless tiny streams, so a count takes milliseconds; a PDF of thousands of pages
#: (far past any context window) may be counted short.
PDF_INFLATE_BOUND = 2 * 1024 * 1024
PDF_OBJECT_STREAMS = 1024


def pdf_pages(data: bytes) -> int:
    """How many pages the PDF ``data`` has (at least 1): its ``/Type /Page`` objects, those
    written out and those packed in compressed object streams (``/Type /ObjStm``, PDF 1.5 on),
    where most PDFs written today keep every page object.

    Examples:
        >>> pdf_pages(b"%PDF-1.4 1 0 obj << /Type /Pages /Count 2 >> "
        ...           b"2 0 obj << /Type /Page >> 3 0 obj << /Type /Page >>")
        2
        >>> packed = zlib.compress(b"<< /Type /Page >> << /Type /Page >> << /Type /Page >>")
        >>> pdf_pages(b"%PDF-1.7 << /Type /ObjStm /N 3 >> stream\\n" + packed + b"endstream")
        3
    """
    pages = len(_PDF_PAGE.findall(data))
    budget = PDF_INFLATE_BOUND
    for index, found in enumerate(_PDF_OBJECT_STREAM.finditer(data)):
        if index == PDF_OBJECT_STREAMS:
            break
        start = _PDF_STREAM.search(data, found.end())
        end = data.find(b"endstream", start.end()) if start is not None else -1
        if start is None or end < 0:
            break
        try:
            inner = zlib.decompressobj().decompress(data[start.end() : end], budget)
        except zlib.error:  # another filter, or encrypted: its pages stay uncounted
            continue
        pages += len(_PDF_PAGE.findall(inner))
        budget -= len(inner)
        if budget <= 0:
            break
    return max(1, pages)
