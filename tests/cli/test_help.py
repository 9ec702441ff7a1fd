"""``--help`` of every command reads on its own: each command says what it does, and each
option and argument says what it is for (``batch run``'s fifteen options said nothing but their
names; ``status`` and ``export`` had no description). In-process, from the parser itself: a
command added later is covered too."""

from __future__ import annotations

import argparse

import pytest

from rxturn.cli import build_parser, main


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
