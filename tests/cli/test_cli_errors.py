"""Errors read the same in every command: one line on stderr, ``rxturn[ COMMAND]: error: …``,
naming what failed and where (the URL for HTTP and connection errors); exit 1 for a failure,
2 for bad arguments or input; never a traceback."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from rxturn.errors import ReadError, RescueFailed, RescueTimeoutError, ServerError

from ._support import closed_port, fake_server, run

ERROR_LINE = re.compile(r"^rxturn( [a-z-]+)?: error: \S")

SCENARIO = {"models": {"bad": [{"status": 401}], "*": [{"text": "ok"}]}}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with fake_server(SCENARIO, tmp_path_factory.mktemp("cli-errors")) as base:
        yield base


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ERROR_LINE.match(line)]


@pytest.mark.slow
def test_a_closed_port_is_one_error_line_naming_the_url() -> None:
    port = closed_port()
    out = run("chat", "--provider", "anthropic", "--base-url", f"http://127.0.0.1:{port}",
              "--model", "m", "hi")  # fmt: skip
    assert out.returncode == 1
    assert out.stdout == ""
    (error,) = _error_lines(out.stderr)
    assert error.startswith("rxturn chat: error: cannot connect to ")
    assert f"http://127.0.0.1:{port}" in error
    # the failure went through the non-streaming rescue, said plainly (not "fallback")
    assert "non-streaming rescue request" in error and "fallback" not in error
    notices = [line for line in out.stderr.splitlines() if line != error]
    assert all(line.startswith("[attempt ") for line in notices)  # the retries, one line each
    assert "Traceback" not in out.stderr


@pytest.mark.slow
def test_a_wrong_url_names_the_status_and_the_url(url: str) -> None:
    out = run("chat", "--provider", "anthropic", "--base-url", f"{url}/nope", "--model", "m", "hi")
    assert out.returncode == 1
    (error,) = out.stderr.splitlines()  # a 404 is not retried: no notices either
    assert error.startswith("rxturn chat: error: HTTP 404")
    assert error.endswith(f"(model m at {url}/nope/v1/messages)")  # the full URL requested


@pytest.mark.slow
def test_an_http_error_names_the_model_and_the_url(url: str) -> None:
    out = run("chat", "--provider", "openai", "--base-url", url, "--model", "bad", "hi")
    assert out.returncode == 1
    (error,) = out.stderr.splitlines()
    assert error.startswith("rxturn chat: error: HTTP 401")
    assert error.endswith(f"(model bad at {url}/chat/completions)")


@pytest.mark.slow
def test_a_malformed_base_url_is_a_usage_error_and_nothing_is_sent() -> None:
    out = run("chat", "--provider", "ollama", "--base-url", "localhost:11434", "--model", "m", "hi")
    assert out.returncode == 2
    assert _error_lines(out.stderr) == out.stderr.splitlines()
    assert "rxturn chat: error: --base-url must be an absolute http(s) URL" in out.stderr


@pytest.mark.slow  # a subprocess each
@pytest.mark.parametrize("command", ["chat", "batch"])
def test_a_base_url_with_a_query_is_one_line_without_the_query(
    command: str, tmp_path: Path
) -> None:
    """Some providers take keys in the query: the URL is refused and shown without it."""
    base = f"http://127.0.0.1:{closed_port()}/v1"
    rows = tmp_path / "in.jsonl"
    rows.write_text('{"prompt": "hi"}\n')
    head = ["chat"] if command == "chat" else ["batch", "run", str(rows), "-o", str(tmp_path / "o")]
    out = run(*head, "--provider", "openai", "--model", "m", "--base-url", f"{base}?key=SECRETQ")
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [
        f"rxturn {command}: error: --base-url must not have a query string or fragment, got "
        f"{base!r} followed by one; the client adds the path, and an API key goes in "
        "OPENAI_API_KEY"
    ]
    assert "SECRETQ" not in out.stdout + out.stderr


@pytest.mark.slow
def test_every_command_uses_the_same_error_style(tmp_path: Path) -> None:
    bad_scenario = tmp_path / "bad.json"
    bad_scenario.write_text('{"models": {"*": [{"txet": "typo"}]}}')
    garbage = tmp_path / "garbage.sse"
    garbage.write_text("this is not a stream\n")
    cases = [
        (["chat", "--provider", "nope", "--model", "m", "hi"], 2, "rxturn chat: error: "),
        (["chat", "--provider", "anthropic", "--model", "m", "hi"], 2, "rxturn chat: error: "),
        (["replay", str(garbage)], 2, "rxturn replay: error: "),
        (["replay"], 2, "rxturn replay: error: "),
        (["fake-server", "--scenario", str(bad_scenario)], 2, "rxturn fake-server: error: "),
        (["fake-server", "--port", "99999"], 2, "rxturn fake-server: error: "),
        (["nope"], 2, "rxturn: error: "),
    ]
    for args, code, prefix in cases:
        out = run(*args)
        assert out.returncode == code, (args, out.stderr)
        assert out.stdout == ""
        lines = out.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(prefix), (args, out.stderr)
        assert "Traceback" not in out.stderr


def test_the_rescue_failure_names_the_non_streaming_rescue() -> None:
    stream = ServerError("HTTP 500: boom", status_code=500)
    text = str(RescueFailed(stream, ReadError("connection reset")))
    assert text == (
        "streaming failed (HTTP 500: boom); the non-streaming rescue request failed too: "
        "connection reset"
    )
    assert "non-streaming rescue" in str(RescueTimeoutError(2.0))


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["text", "json"])
def test_a_failed_turn_is_one_error_line_naming_the_url_with_json_too(
    mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--json`` puts the failure's object on stdout for a program; stderr still has the one
    line that names what failed and where, with the full URL, which the error's own message
    (a connection refused here) need not name."""
    from rxturn.cli import main

    base = f"http://127.0.0.1:{closed_port()}/base"
    args = ["chat", "--provider", "ollama", "--base-url", base, "--model", "m", "--no-stream"]
    assert main([*args, *mode, "hi"]) == 1
    out, err = capsys.readouterr()
    (error,) = err.splitlines()
    assert error.startswith("rxturn chat: error: cannot connect to ")
    assert f"{base}/api/chat" in error
    if mode:
        assert set(json.loads(out)) == {"error", "turns"}  # stdout: the object alone
    else:
        assert out == ""
