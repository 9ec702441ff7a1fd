"""docs/content.md runs as written, offline: every Python block, in a directory holding the
``cat.png`` and ``report.pdf`` it reads."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "content.md"
_BLOCKS = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.S | re.M)


def _png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    rows = b"".join(b"\x00" + bytes(width) for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "cat.png").write_bytes(_png(16, 16))
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n")
    return tmp_path


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )


def test_the_document_has_its_three_examples() -> None:
    assert len(_BLOCKS) == 3


@pytest.mark.slow  # runs a block of docs/content.md in a fresh interpreter (2 s)
def test_vision_call(workdir: Path) -> None:
    out = _run(_BLOCKS[0], workdir)
    assert out.returncode == 0, out.stderr
    size = (workdir / "cat.png").stat().st_size
    assert out.stdout.splitlines() == [
        "A small black square.",
        "image image/png",
        f"What is in this picture? [image: image/png, {size} bytes]",
    ]


@pytest.mark.slow  # runs a block of docs/content.md in a fresh interpreter (2 s)
def test_pdf_question(workdir: Path) -> None:
    out = _run(_BLOCKS[1], workdir)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "Revenue grew 12 %.",
        "document Q3 report {'enabled': True}",
    ]


@pytest.mark.slow  # runs a block of docs/content.md in a fresh interpreter (2 s)
def test_cached_agent_loop(workdir: Path) -> None:
    out = _run(_BLOCKS[2], workdir)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:4] == [
        f"request {n}: system, tools, conversation and 1 marker cached" for n in range(1, 5)
    ]
    # the text: the first reply writes the 806-word prefix and reads nothing; every later one
    # reads all that was written before it and writes only the new tool round (4 words)
    read = [0, 806, 806 + 4, 806 + 4 + 4]
    written = [806, 4, 4, 4]
    assert lines[4:8] == [f"reply {n + 1}: {written[n]} written, {read[n]} read" for n in range(4)]
    assert lines[8] == "Read all three pages."
