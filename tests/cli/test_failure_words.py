"""A failed turn's error line names what the command's user typed, as the argument errors do
(``test_flag_words``): a web page where the API should be ("a captive portal, a proxy's login
page or a wrong base_url?") said ``base_url``, the Python API's parameter, to a user of
``--base-url``. The line on stderr says the flag; what a program reads (``--json``'s object,
the batch output's line) keeps the library's message. In-process, against a loopback server
that answers every request with an HTML page."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from rxturn.cli import main


class _Portal(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b"<html><title>Sign in</title>captive portal</html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Portal)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


COMMON = ["--provider", "openai", "--model", "m"]


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_chat(extra: list[str], url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", *COMMON, "--base-url", url, *extra, "hi"]) == 1
    out, err = capsys.readouterr()
    (line,) = err.splitlines()
    assert line.startswith("rxturn chat: error: HTTP 200 text/html from ")
    assert "a wrong --base-url?" in line and "base_url" not in line
    if extra:
        assert "a wrong base_url?" in msgspec.json.decode(out)["error"]["message"]


def test_batch_run(url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows, output = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    rows.write_text('{"id": "a", "prompt": "hi"}\n')
    argv = ["batch", "run", str(rows), "-o", str(output), *COMMON, "--base-url", url]
    assert main([*argv, "--progress", "none"]) == 3
    (summary,) = capsys.readouterr().err.splitlines()
    assert "errors: 1 UnexpectedResponseError (first: " in summary
    assert "a wrong --base-url?" in summary and "base_url" not in summary
    (line,) = output.read_text().splitlines()
    assert "a wrong base_url?" in msgspec.json.decode(line)["error"]["message"]
