"""The ``rxturn`` command line: one sub-command per module in this package.

Each sub-command module exposes ``add_parser(subparsers)`` and ``run(args) -> int``. Errors
reach the user as one line on stderr and an exit code (2 for bad input or usage, 1 for a
failed turn); never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import NoReturn

__all__ = ["main"]

#: sub-command name -> module (imported only when that command runs, so ``--help`` is fast)
_COMMANDS = {
    "demo": "rxturn.cli._demo",
    "replay": "rxturn.cli._replay",
    "fake-server": "rxturn.cli._fake_server",
    "chat": "rxturn.cli._chat",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"rxturn: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = _Parser(prog="rxturn", description="Run one LLM turn as a ReactiveX pipeline.")
    parser.add_argument("--version", action="version", version=f"rxturn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module_name in _COMMANDS.values():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:  # a command whose module has not landed yet
            if exc.name != module_name:
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    code: int = args.run(args)
    return code
