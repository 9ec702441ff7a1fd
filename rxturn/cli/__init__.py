"""The ``rxturn`` command line: one sub-command per module in this package.

Each sub-command module exposes ``add_parser(subparsers)`` and ``run(args) -> int``. Errors
reach the user as one line on stderr, ``rxturn COMMAND: error: …`` (usage errors too, an
unknown option included; ``rxturn: error: …`` for no or an unknown command), and an exit
code (2 for bad input or usage, 1 for a failed turn); never a traceback, not even for a bug
(``internal error (a bug in rxturn): …``, exit 1). A closed stdout (``rxturn demo | head -1``)
ends a command quietly with exit 141; a closed stderr only drops the notices and error lines
(:mod:`rxturn.cli._console` has the rules for stdout, stderr, terminals and colour).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

if TYPE_CHECKING:
    from typing import TextIO

    from .._interrupt import Handler

__all__ = ["main"]

#: sub-command name -> module (imported only when that command runs, so ``--help`` is fast)
_COMMANDS = {
    "demo": "rxturn.cli._demo",
    "replay": "rxturn.cli._replay",
    "fake-server": "rxturn.cli._fake_server",
    "chat": "rxturn.cli._chat",
    "batch": "rxturn.cli._batch",
}


class _Parser(argparse.ArgumentParser):
    #: said after the words a command did not take (``chat``: an unquoted prompt)
    unrecognized_hint = ""
    #: said after an option it does not know (``chat``: a prompt that starts with '-' reads as
    #: one: ``rxturn chat … -hello`` was "argument -h/--help: ignored explicit argument 'ello'")
    dash_hint = ""

    def error(self, message: str) -> NoReturn:
        from ._console import one_line

        if "ignored explicit argument" in message:
            message += self.dash_hint
        # one line, "rxturn chat: error: …", however long the value it quotes (a prompt pasted
        # after --format, a file's content after --provider)
        self.exit(2, f"{self.prog}: error: {one_line(message, 500)}\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        """``--help``, ``--version`` and usage lines go out as every command's output does
        (:func:`rxturn.cli._console.write`): argparse dropped a failed write and left the rest
        buffered for the interpreter's exit, so ``rxturn --help > /dev/full`` printed Python's
        "Exception ignored … OSError" and exited 120."""
        from ._console import write

        if message:
            write(file or sys.stderr, message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        """After ``--help`` or ``--version``, the dispatcher's rules for stdout: closed by its
        reader, exit 141 quietly; failed otherwise (a full disk), one line and exit 1."""
        from ._console import PIPE_CLOSED, STATE

        if STATE.failure is not None:
            status, message = 1, f"{self.prog}: error: cannot write to stdout: {STATE.failure}\n"
        elif STATE.closed:
            status = PIPE_CLOSED
        super().exit(status, message)

    def parse_known_args(  # pyright: ignore[reportIncompatibleMethodOverride]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        """A command's parser refuses what it did not take itself, naming the command
        (``rxturn chat: error: unrecognized arguments: world``); argparse left that to the
        top parser, whose line named no command and echoed every word, however many."""
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            from ._console import one_line

            words = one_line(" ".join(extra), 120)
            hint = self.unrecognized_hint
            if any(w.startswith("-") for w in extra):  # an option, or a word that reads as one
                single = any(w.startswith("-") and not w.startswith("--") for w in extra)
                hint = self.dash_hint if single else ""
            self.error(f"unrecognized arguments: {words}{hint}")
        return parsed, extra


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


def _open_missing_streams() -> None:
    """A standard stream the process was started without (closed: ``<&-``, ``>&-``, ``2>&-``,
    as a supervisor or a cron job may start it) is ``/dev/null``: stdin reads as empty, and what
    is written to stdout or stderr is dropped. Python leaves such a stream ``None``, and every
    command failed on it with a traceback. Opened in descriptor order, each takes its own
    descriptor back, so no file the command opens later lands on 0, 1 or 2."""
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - the process's stdin
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115


def _tolerate_encoding() -> None:
    """On a terminal or pipe whose encoding is not UTF-8, show ``?`` rather than crash on
    characters it cannot encode (replies and the demo's symbols are rarely ASCII)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        reconfigure = getattr(stream, "reconfigure", None)
        if encoding != "utf8" and reconfigure is not None:
            reconfigure(errors="replace")


#: Exit status after Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``rxturn`` command line (``argv``: the arguments, else ``sys.argv[1:]``).

    SIGTERM is Ctrl-C from the first line on: whatever a command is doing (importing, reading
    its input, a turn, a server), a supervisor's SIGTERM ends it as Ctrl-C would, with its
    clean-up, instead of killing it mid-way. Commands that take the signals over (a chat turn,
    the fake server, a batch run) say what each does; the rest exit 130. Until then both are
    :func:`rxturn._interrupt.interrupt`, which never raises inside an import."""
    import signal

    from .._interrupt import EARLY, interrupt

    taken: dict[int, Handler] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            current = signal.getsignal(signum)
            # SIGINT only where it is Python's own or the console script's: a caller's handler
            # stays, and so does an ignored SIGINT (a background job)
            if signum == signal.SIGTERM or current in (signal.default_int_handler, EARLY):
                taken[signum] = signal.signal(signum, interrupt)
        except ValueError:  # not the main thread: the signals stay the caller's
            break
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM before a command took the signal
        return INTERRUPTED
    finally:
        for signum, previous in taken.items():
            # The console script exits with the status just decided: a signal arriving on
            # the way out must not turn a finished command into a killed (-15) or interrupted
            # one. A caller that embeds the command line gets its own handler back.
            exiting = argv is None and previous in (signal.SIG_DFL, EARLY)
            signal.signal(signum, signal.SIG_IGN if exiting else previous)


def _main(argv: Sequence[str] | None) -> int:
    from ._console import QuietStream

    _open_missing_streams()
    _tolerate_encoding()
    stderr = sys.stderr
    sys.stderr = cast("TextIO", QuietStream(stderr))
    try:
        return _command(argv)
    finally:
        sys.stderr = stderr


def _command(argv: Sequence[str] | None) -> int:
    from ._console import PIPE_CLOSED, STATE, failed, silence

    STATE.closed = False
    STATE.failure = None
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.run(args)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:  # a full disk, met by the last flush
            failed(sys.stdout, exc)
    except BrokenPipeError:  # the reader of stdout went away (``| head``): end quietly
        silence(sys.stdout)
        return PIPE_CLOSED
    except Exception as exc:  # a bug: still one line, never a traceback
        from ._console import one_line

        what = one_line(f"{type(exc).__name__}: {exc}", 500)
        sys.stderr.write(
            f"rxturn {args.command}: error: internal error (a bug in rxturn): {what}\n"
        )
        return 1
    if STATE.failure is not None:  # a full disk, an I/O error: the output is not all there
        sys.stderr.write(f"rxturn {args.command}: error: cannot write to stdout: {STATE.failure}\n")
        return 1
    return PIPE_CLOSED if STATE.closed else code
