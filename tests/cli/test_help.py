"""``--help`` of every command reads on its own: each command says what it does, and each
option and argument says what it is for (``batch run``'s fifteen options said nothing but their
names; ``status`` and ``export`` had no description), every file argument refuses an empty
name, and every ``-`` read from a terminal says how it ends. In-process, from the parser
itself: a command added later is covered too."""

from __future__ import annotations

import argparse
import errno
import io
import sys
from pathlib import Path
from typing import Any

import pytest

from rxturn.cli import build_parser, main
from rxturn.cli._console import STATE


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child, sub in action.choices.items():
                    found.append((f"{name} {child}".strip(), sub))
                    walk(f"{name} {child}", sub)

    walk("", build_parser())
    return found


COMMANDS = _commands()


def test_every_command_is_found() -> None:
    names = {name for name, _ in COMMANDS}
    assert {"demo", "replay", "fake-server", "chat", "batch run", "batch status"} <= names


@pytest.mark.parametrize(("name", "parser"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_option_says_what_it_is_for(name: str, parser: argparse.ArgumentParser) -> None:
    assert parser.description, f"rxturn {name} has no description"
    silent = [
        "/".join(action.option_strings) or action.metavar or action.dest
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert silent == [], f"rxturn {name}: no help for {silent}"


@pytest.mark.parametrize("name", [name for name, _ in COMMANDS])
def test_help_exits_0_on_stdout(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*name.split(), "--help"])
    assert exited.value.code == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"usage: rxturn {name}") and captured.err == ""


URL = "http://127.0.0.1:1"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["replay", ""], "rxturn replay: error: argument FILE: "),
        (["fake-server", "--scenario", ""], "rxturn fake-server: error: argument --scenario: "),
        (
            [
                "chat",
                "--provider",
                "ollama",
                "--model",
                "m",
                "--base-url",
                URL,
                "--image",
                "",
                "hi",
            ],
            "rxturn chat: error: argument --image: ",
        ),
        (
            ["chat", "--provider", "ollama", "--model", "m", "--base-url", URL, "--file", "", "hi"],
            "rxturn chat: error: argument --file: ",
        ),
        (["batch", "status", ""], "rxturn batch status: error: argument OUT.jsonl: "),
    ],
    ids=["replay", "fake-server-scenario", "chat-image", "chat-file", "batch-status"],
)
def test_an_empty_file_name_is_refused_as_such(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty name (an unset shell variable) is no file: it read as the current directory
    (``replay`` said "is a directory, not a stream file ()", ``chat --image`` named '.'), and
    ``fake-server --scenario ""`` served the default scenario without a word."""
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"{said}expected a file name, got ''\n")


def test_a_port_of_many_digits_is_not_echoed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fake-server", "--port", str(10**400)])
    err = capsys.readouterr().err
    assert err.startswith("rxturn fake-server: error: argument --port: invalid port '1000")
    assert err.endswith("...': expected 0..65535\n") and len(err) < 150


class _Keyboard(io.BytesIO):
    """A terminal's stdin, already at its end (the user pressed Ctrl-D)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("args", "hint", "code"),
    [
        (["replay", "-"], "(reading the stream from stdin: end it with Ctrl-D)", 2),
        (
            ["batch", "run", "-", "-o", "{out}", "--provider", "ollama", "--model", "m"],
            "(reading the rows, one JSON object a line, from stdin: end it with Ctrl-D)",
            2,
        ),
        (
            ["batch", "status", "{out}", "--input", "-"],
            "(reading the input's rows from stdin: end it with Ctrl-D)",
            2,  # (no rows: refused, as batch run refuses them)
        ),
        (
            ["chat", "--provider", "ollama", "--model", "m", "--base-url", URL, "-"],
            "(reading the prompt from stdin: end it with Ctrl-D)",
            2,
        ),
    ],
    ids=["replay", "batch-run", "batch-status", "chat"],
)
def test_reading_stdin_on_a_terminal_says_how_it_ends(
    args: list[str],
    hint: str,
    code: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``-`` typed on a terminal (``batch run - -o out.jsonl``, by mistake or not) sat silent,
    as if hung; chat alone said it was reading. On a pipe nothing is said."""
    out = str(tmp_path / "out.jsonl")
    command = [arg.replace("{out}", out) for arg in args]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(_Keyboard(b"")))
    assert main(command) == code
    assert capsys.readouterr().err.splitlines()[0] == hint
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))  # a pipe, say
    assert main(command) == code
    assert "Ctrl-D" not in capsys.readouterr().err


def test_fake_server_help_names_every_wire_the_fake_serves(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the help named Anthropic, OpenAI and Ollama, not the Responses API the fake also serves
    from typing import get_args

    from rxturn.cli._fake_server import SERVED_WIRES
    from rxturn.testing._emit_base import Wire

    assert set(SERVED_WIRES) == set(get_args(Wire))  # a wire added to the fake joins the help
    with pytest.raises(SystemExit):
        main(["fake-server", "--help"])
    described = " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = " ".join(capsys.readouterr().out.split())
    for text in (described, listed):
        assert "OpenAI Responses" in text
        for name in ("Anthropic Messages", "OpenAI Chat Completions", "Ollama"):
            assert name in text


class _Refusing(io.RawIOBase):
    """A stdout whose every write fails with ``error`` (ENOSPC: ``> /dev/full``; EPIPE: a
    reader that went away), through the buffer a real stdout has."""

    def __init__(self, error: OSError) -> None:
        self.error: OSError | None = error

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.error is not None:
            raise self.error
        return len(data)  # (once the test is done: nothing fails when it is collected)


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["chat", "--help"]])
@pytest.mark.parametrize(
    ("error", "code", "said"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), 1, "No space left on device"),
        (BrokenPipeError(errno.EPIPE, "Broken pipe"), 141, None),
    ],
    ids=["full-disk", "closed-pipe"],
)
def test_help_and_version_follow_the_rules_for_stdout(
    args: list[str],
    error: OSError,
    code: int,
    said: str | None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``rxturn --help > /dev/full`` exited 120 after Python's "Exception ignored … OSError"
    (argparse dropped the failed write and left the text buffered for the exit); into a
    closed pipe it was the same. Now they end as every command's output does: one line and
    exit 1 for a full disk, quietly with 141 for a closed pipe."""
    raw = _Refusing(error)
    stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8")
    monkeypatch.setattr(sys, "stdout", stdout)
    for name in ("closed", "failure"):  # (given back as they were after the test)
        monkeypatch.setattr(STATE, name, getattr(STATE, name))
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == code
    prog = " ".join(["rxturn", *args[:-1]])
    err = capsys.readouterr().err
    assert err == ("" if said is None else f"{prog}: error: cannot write to stdout: {said}\n")
    raw.error = None


def test_chat_help_says_how_the_interactive_chat_ends_and_what_json_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``chat --help`` said nothing of the interactive chat's commands (a stranger learnt of
    ``/quit`` only by pressing Ctrl-C), of ``--json``'s objects or of the exit codes."""
    with pytest.raises(SystemExit):
        main(["chat", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for said in ("/quit", "/exit", "EOF", "Ctrl-C cancels the running turn", "'--'"):
        assert said in text, said
    for key in ('"message"', '"model"', '"attempts"', '"rescued"', '"turns"', '"error"'):
        assert key in text, key
    for code in ("0", "1", "2", "130"):
        assert f"; {code} " in text or f"codes: {code} " in text, code
