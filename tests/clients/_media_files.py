"""Real media files built in memory: headers as the formats specify them (no Pillow)."""

from __future__ import annotations

import struct
import zlib


def png(width: int, height: int) -> bytes:
    """A valid PNG (8-bit greyscale, all black) of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    rows = b"".join(b"\x00" + bytes(width) for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def jpeg(width: int, height: int) -> bytes:
    """A JPEG's header up to its baseline start-of-frame (what size readers look at)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp_vp8x(width: int, height: int) -> bytes:
    body = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    body = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits)
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def webp_vp8(width: int, height: int) -> bytes:
    frame = b"\x00\x00\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    body = b"VP8 " + struct.pack("<I", len(frame)) + frame
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def pdf(pages: int) -> bytes:
    """A minimal PDF with ``pages`` page objects."""
    objects = [b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj"]
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages)).encode()
    objects.append(b"2 0 obj << /Type /Pages /Kids [" + kids + b"] /Count %d >> endobj" % pages)
    for index in range(pages):
        objects.append(b"%d 0 obj << /Type /Page /Parent 2 0 R >> endobj" % (3 + index))
    return b"%PDF-1.4\n" + b"\n".join(objects) + b"\n%%EOF\n"


def packed_pdf(pages: int) -> bytes:
    """A PDF 1.5 as most tools write one today: its catalog, page tree and pages packed in a
    Flate-compressed object stream (``/Type /ObjStm``), no page object in plain sight."""
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages)).encode()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    objects.append(b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages)
    objects += [b"<< /Type /Page /Parent 2 0 R >>"] * pages
    packed = zlib.compress(b"\n".join(objects))
    head = b"<< /Type /ObjStm /N %d /First 0 /Length %d /Filter /FlateDecode >>" % (
        len(objects),
        len(packed),
    )
    stream = b"1 0 obj " + head + b"\nstream\r\n" + packed + b"\nendstream\nendobj"
    return b"%PDF-1.5\n" + stream + b"\n%%EOF\n"


def wav(seconds: float, rate: int = 8000) -> bytes:
    """A mono 16-bit PCM WAV of silence."""
    data = bytes(int(seconds * rate) * 2)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data))
    return b"RIFF" + struct.pack("<I", len(body) + len(data)) + body + data


MP3 = b"\xff\xfb\x90\x00" + bytes(400)  # an MPEG-1 layer III frame, 128 kbit/s, 44.1 kHz
