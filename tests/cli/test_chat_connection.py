"""``rxturn chat`` against an endpoint no retry can fix: one line, exit 1, no retries.

An ``https://`` base URL to a plain-HTTP server (the fake provider here) fails the TLS
handshake the same way every time; it was retried three times and then rescued (four notice
lines and an error, about a second of backoff) before it said ``wrong version number``.
"""

from __future__ import annotations

import pytest

from rxturn.cli import main

from ._support import ThreadedFake

SECRET = "sk-ant-api03-tlsnet-cli-SECRET-0123456789"


def test_https_to_a_plain_http_server_is_one_line_that_says_check_the_scheme(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with ThreadedFake({"models": {"*": [{"text": "never served"}]}}) as fake:
        base = fake.base_url.replace("http://", "https://", 1)
        code = main(["chat", "--provider", "anthropic", "--model", "m", "--base-url", base, "hi"])
        assert fake.requests == []  # no HTTP request ever reached it
    out, err = capsys.readouterr()
    assert (code, out) == (1, "")
    (line,) = err.splitlines()  # no "[attempt N: …]" notices: nothing was retried
    assert line.startswith(f"rxturn chat: error: cannot connect to {base}/v1/messages: ")
    assert "check the URL's scheme" in line
    assert SECRET not in err
