"""Model names are sent as ``chat`` checks them: without the surrounding whitespace a shell
variable or a paste brings (``--model " m "``). The checks read them stripped (``--fallback " m "``
is the model itself) and a fallback chain routes them stripped, but without ``--fallback`` the
request carried the name padded, which a provider answers with a 404 for a model that does not
exist.

In-process: the command's ``main`` against a fake provider on a thread of its own."""

from __future__ import annotations

import pytest

from rxturn.cli import main

from ._support import ThreadedFake

SCENARIO = {"models": {"m": [{"text": "served"}], "*": [{"status": 404}]}}


@pytest.mark.parametrize("provider", ["anthropic", "openai", "ollama"])
@pytest.mark.parametrize("model", [" m ", "m\n", "\tm"], ids=["spaces", "newline", "tab"])
def test_a_padded_model_name_is_sent_stripped(
    provider: str, model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with ThreadedFake(SCENARIO) as fake:
        url = fake.base_url if provider != "openai" else fake.openai_base_url
        args = ["chat", "--provider", provider, "--base-url", url]
        code = main([*args, "--model", model, "hi"])
        asked = [record.model for record in fake.records]
    assert (code, capsys.readouterr().out, asked) == (0, "served\n", ["m"])


CONTROL = ["m\x1b[31m", "m\nline2", "m\x07", "m\x9b2J"]


@pytest.mark.parametrize("option", ["--model", "--fallback", "--hedge"])
@pytest.mark.parametrize("name", CONTROL, ids=["escape", "newline", "bell", "c1"])
def test_a_model_name_with_a_control_character_is_a_bad_argument(
    option: str, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No provider has such a model; its name reached the error line and the notices raw, an
    escape sequence to the terminal and a newline splitting the one error line in two."""
    with ThreadedFake(SCENARIO) as fake:
        args = ["chat", "--provider", "ollama", "--base-url", fake.base_url, "--model"]
        argv = [*args, name, "hi"] if option == "--model" else [*args, "m", option, name, "hi"]
        code = main(argv)
        sent = len(fake.records)
    err = capsys.readouterr().err
    assert (code, sent) == (2, 0)
    assert err == f"rxturn chat: error: {option} holds a control character; nothing was sent\n"


def test_switching_to_a_model_name_with_a_control_character_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io
    import sys

    stdin = io.TextIOWrapper(io.BytesIO(b"/model m\x1b]0;title\x07\nhi\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    with ThreadedFake(SCENARIO) as fake:
        code = main(["chat", "--provider", "ollama", "--base-url", fake.base_url, "--model", "m"])
        asked = [record.model for record in fake.records]
    out, err = capsys.readouterr()
    assert (code, out, asked) == (0, "served\n", ["m"])
    assert "\x1b" not in err and "\x07" not in err
    assert "model names hold no control characters" in err


def test_the_place_an_error_line_names_is_escaped_too() -> None:
    from rxturn.cli._view import describe_error
    from rxturn.errors import ServerError

    line = describe_error(ServerError("HTTP 500"), "model m\x1b[2J\nx at http://h/v1")
    assert line == "HTTP 500 (model m\\x1b[2J\\nx at http://h/v1)"
