"""The API key from the environment, as ``chat`` reads it: surrounding whitespace (a key file's
trailing newline, a ``.env`` line with a space) is not part of a key; a blank variable is an
unset one; whitespace or a control character inside it is a one-line error naming the variable,
never echoing the value; bytes that are not UTF-8 are sent as they are. ``batch run`` reads it
the same way."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from rxturn._redact import without_secrets
from rxturn.cli import main

from ._support import ThreadedFake, clean_env, fake_server, run

SECRET = "sk-ant-secret-0123456789"


@pytest.mark.parametrize("value", ["", "   ", "\n"], ids=["empty", "spaces", "newline"])
def test_a_blank_key_is_an_unset_one(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", value)
    assert main(["chat", "--provider", "anthropic", "--model", "m", "hi"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "rxturn chat: error: ANTHROPIC_API_KEY is not set (needed for the anthropic API)\n"
    )


@pytest.mark.parametrize(
    "value",
    [f"sk-ant-{'x' * 4} {SECRET}", f"{SECRET}\x01", f"{SECRET[:8]}\n{SECRET[8:]}"],
    ids=["space", "control", "newline-inside"],
)
def test_a_key_with_whitespace_inside_names_the_variable(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", value)
    code = main(["chat", "--provider", "openai-responses", "--model", "m", "hi"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == ("rxturn chat: error: OPENAI_API_KEY holds whitespace or control characters\n")
    assert SECRET[8:] not in err


@pytest.mark.slow  # the console script against rxturn fake-server
def test_a_key_with_a_trailing_newline_is_used_without_it(tmp_path: Path) -> None:
    with fake_server({"models": {"*": [{"text": "served"}]}}, tmp_path) as url:
        env = clean_env(ANTHROPIC_API_KEY=f"{SECRET}\n")
        out = run(
            "chat", "--provider", "anthropic", "--model", "m", "--base-url", url, "hi", env=env
        )
    assert (out.returncode, out.stdout, out.stderr) == (0, "served\n", "")


#: A key whose bytes are not UTF-8 (a key file saved in Latin-1): os.environ holds each such
#: byte as a lone surrogate, and the client sends those bytes back as they were.
NOT_UTF8 = "sk-\udce9\udcff-0123456789"


def test_a_key_that_is_not_utf8_is_no_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # it was `internal error (a bug in rxturn): UnicodeEncodeError`, exit 1, before any request:
    # the URL shown in errors is scrubbed of the key, percent-encoded too, and quoting the key
    # raised on its surrogates
    monkeypatch.setenv("ANTHROPIC_API_KEY", NOT_UTF8)
    with ThreadedFake({"models": {"*": [{"text": "served"}]}}) as fake:
        args = ["chat", "--provider", "anthropic", "--model", "m", "--base-url", fake.base_url]
        assert main([*args, "hi"]) == 0
    assert capsys.readouterr() == ("served\n", "")


def test_a_key_that_is_not_utf8_is_redacted_percent_encoded() -> None:
    url = f"http://127.0.0.1:9/{quote(NOT_UTF8, errors='surrogateescape')}/v1/messages"
    assert "%E9%FF" in url
    assert without_secrets(url, (NOT_UTF8,)) == "http://127.0.0.1:9/[redacted]/v1/messages"


@pytest.mark.parametrize(
    "url", [f"127.0.0.1:9/?key={SECRET}", f"ftp://user:{SECRET}@127.0.0.1/"], ids=["query", "user"]
)
def test_a_base_url_chat_refuses_is_said_without_the_key_it_holds(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # chat's own scheme check echoed the whole URL, the key in its query or userinfo included
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    assert main(["chat", "--provider", "anthropic", "--model", "m", "--base-url", url, "hi"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("rxturn chat: error: --base-url must be an absolute http(s)")
    assert err.count("\n") == 1
    assert SECRET not in err
    assert SECRET[8:] not in err


def test_a_base_url_scheme_in_capitals_is_the_clients_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the client takes HTTP:// (schemes are case-insensitive); chat's own check refused it
    with ThreadedFake({"models": {"*": [{"text": "served"}]}}) as fake:
        url = fake.base_url.replace("http://", "HTTP://")
        assert main(["chat", "--provider", "ollama", "--model", "m", "--base-url", url, "hi"]) == 0
    assert capsys.readouterr() == ("served\n", "")
