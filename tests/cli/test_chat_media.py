"""``rxturn chat --image/--file``: attached to the prompt on the wire (read back with
``GET /_fake/requests``); a file that cannot be used is one line on stderr, exit 2, nothing
sent."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._support import fake_server, received, run

GIF = b"GIF89a\x02\x00\x02\x00\x00\x00\x00;"
PDF = b"%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n%%EOF\n"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(
        {"models": {"*": [{"text": "a cat"}]}}, tmp_path_factory.mktemp("media")
    ) as base:
        yield base


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "cat.gif").write_bytes(GIF)
    (tmp_path / "report.pdf").write_bytes(PDF)
    (tmp_path / "notes.txt").write_text("remember the milk")
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    return tmp_path


def chat(url: str, provider: str, *extra: str):
    return run("chat", "--provider", provider, "--base-url", url, "--model", "m", *extra)


def test_image_and_files_ride_with_the_prompt(url: str, files: Path) -> None:
    before = len(received(url))
    out = chat(
        url,
        "anthropic",
        "--image",
        str(files / "cat.gif"),
        "--file",
        str(files / "report.pdf"),
        "--file",
        str(files / "notes.txt"),
        "What is this?",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "a cat\n"
    [body] = received(url)[before:]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/gif",
                        "data": base64.b64encode(GIF).decode(),
                    },
                },
                {
                    "type": "document",
                    "source": {
                        "type": "base64",
                        "media_type": "application/pdf",
                        "data": base64.b64encode(PDF).decode(),
                    },
                },
                {
                    "type": "document",
                    "source": {
                        "type": "text",
                        "media_type": "text/plain",
                        "data": "remember the milk",
                    },
                },
            ],
        }
    ]


@pytest.mark.slow  # a subprocess; the first test sends media through the command
def test_json_output_and_audit_show_a_placeholder(url: str, files: Path) -> None:
    out = chat(url, "openai", "--json", "--image", str(files / "cat.gif"), "Describe")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout)
    assert record["turns"][0]["input"] == "Describe [image: image/gif, 14 bytes]"
    assert base64.b64encode(GIF).decode() not in out.stdout


@pytest.mark.slow  # a subprocess each
@pytest.mark.parametrize(
    ("flag", "name", "message"),
    [
        (
            "--image",
            "missing.png",
            "--image: cannot read media file '{}': No such file or directory",
        ),
        ("--image", "empty.png", "--image: media file '{}' is empty"),
        ("--file", "blob.bin", "--file: media file '{}': cannot tell its media type"),
        ("--image", "report.pdf", "ImagePart takes image media, got application/pdf"),
    ],
)
def test_a_bad_file_is_one_line_and_exit_2(
    url: str, files: Path, flag: str, name: str, message: str
) -> None:
    before = len(received(url))
    out = chat(url, "anthropic", flag, str(files / name), "hi")
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rxturn chat: error: ")
    assert message.format(files / name) in lines[0]
    assert len(received(url)) == before


@pytest.mark.slow  # a subprocess each
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this platform")
@pytest.mark.parametrize("flag", ["--image", "--file"])
def test_a_device_that_never_ends_is_one_line_and_exit_2(url: str, flag: str) -> None:
    before = len(received(url))
    out = chat(url, "anthropic", flag, "/dev/zero", "hi")
    assert out.returncode == 2
    lines = out.stderr.splitlines()
    assert lines == [
        f"rxturn chat: error: {flag}: media file '/dev/zero' is not a regular file "
        "(a device, pipe or socket may never end)"
    ]
    assert len(received(url)) == before


@pytest.mark.slow  # a subprocess
def test_a_file_the_provider_cannot_take_is_refused_up_front(url: str, files: Path) -> None:
    before = len(received(url))
    out = chat(url, "ollama", "--file", str(files / "report.pdf"), "hi")
    assert out.returncode == 2
    assert "Ollama's /api/chat cannot take DocumentPart [document: application/pdf" in out.stderr
    assert len(received(url)) == before
