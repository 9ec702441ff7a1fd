"""The API key from the environment, as ``chat`` reads it: surrounding whitespace (a key file's
trailing newline, a ``.env`` line with a space) is not part of a key; a blank variable is an
unset one; whitespace or a control character inside it is a one-line error naming the variable,
never echoing the value. ``batch run`` reads it the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxturn.cli import main

from ._support import clean_env, fake_server, run

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
