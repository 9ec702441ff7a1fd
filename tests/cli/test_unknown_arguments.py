"""What a command does not take is refused by that command: one line naming it, exit 2.

argparse left the words a sub-command did not take to the top parser, whose line named no
command (``rxturn: error: unrecognized arguments: world``) and echoed every word; an unquoted
prompt (``rxturn chat ... hello world``, the first thing a hurried user types) said nothing of
the quotes it needed, and a pasted one filled the screen."""

from __future__ import annotations

import pytest

from rxturn.cli import main

CHAT = ["chat", "--provider", "ollama", "--base-url", "http://127.0.0.1:9", "--model", "m"]


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["demo", "--colour"], "demo"),
        (["replay", "x.sse", "--pretty"], "replay"),
        (["fake-server", "--verbose"], "fake-server"),
        ([*CHAT, "--temperature", "0", "hi"], "chat"),
        (["batch", "status", "out.jsonl", "--all"], "batch status"),
    ],
    ids=["demo", "replay", "fake-server", "chat", "batch-status"],
)
def test_an_unknown_option_is_refused_by_its_command(
    argv: list[str], command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(argv, capsys)
    assert err.startswith(f"rxturn {command}: error: unrecognized arguments: --")
    assert err.count("\n") == 1


def test_an_unquoted_prompt_says_to_quote_it(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused([*CHAT, "hello", "world"], capsys)
    assert err == (
        "rxturn chat: error: unrecognized arguments: world "
        "(a prompt of several words goes in quotes: 'hello world')\n"
    )


def test_a_pasted_prompt_is_not_echoed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    words = [f"word{n}" for n in range(2000)]
    err = _refused([*CHAT, *words], capsys)
    assert err.startswith("rxturn chat: error: unrecognized arguments: word1 word2 ")
    assert err.count("\n") == 1 and len(err) < 300


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "x.sse", "--format", "x" * 5000],
        ["chat", "--provider", "y" * 5000, "--model", "m", "hi"],
        ["z" * 5000],
    ],
    ids=["format", "provider", "command"],
)
def test_a_long_bad_value_is_one_bounded_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused(argv, capsys)
    assert err.count("\n") == 1 and len(err) < 600, err[:200]
    assert "error: argument " in err


@pytest.mark.parametrize(
    ("word", "said"),
    [
        ("-hello", "argument -h/--help: ignored explicit argument 'ello'"),
        ("-x", "unrecognized arguments: -x"),
    ],
)
def test_a_prompt_that_starts_with_a_dash_says_where_it_goes(
    word: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rxturn chat … -hello`` was refused as a misuse of ``-h`` and nothing more: a stranger
    who typed a prompt learnt neither that it read as an option nor how to send it."""
    err = _refused([*CHAT, word], capsys)
    hint = "(a PROMPT that starts with '-' goes after '--': rxturn chat ... -- '-x')"
    assert err == f"rxturn chat: error: {said} {hint}\n"


def test_an_unknown_long_option_is_no_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    # (a mistyped flag, most likely: no word on prompts)
    assert (
        _refused([*CHAT, "--bogus"], capsys)
        == "rxturn chat: error: unrecognized arguments: --bogus\n"
    )
