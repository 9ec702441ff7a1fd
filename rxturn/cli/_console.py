"""What the commands write where: stdout, stderr, terminals, pipes, colour, closed pipes.

The rules every command follows (the README's command-line section says the same for users):

* **Reply text on stdout.** On a terminal it streams as it arrives, and when an attempt fails
  its text is erased in place (:class:`LiveText`). Anywhere else (a pipe, a file) a command
  writes only text that was served: a failed attempt never reaches stdout.
* **Notices on stderr**, one line each, in the order things happened (:class:`Notices`). On a
  terminal a long wait counts down in place; elsewhere it is one line that says how long.
* **Colour** only on a terminal, never when ``NO_COLOR`` is set, whatever its value (an empty
  one included), never with ``TERM=dumb`` (which also means no cursor movement).
* **A closed pipe** (``rxturn demo | head -1``) ends the command quietly:
  :func:`write` notices the ``BrokenPipeError``, points the stream at ``/dev/null`` so nothing
  fails at exit, and sets :data:`STATE`'s ``closed``; the command stops and exits
  :data:`PIPE_CLOSED` (141, what a shell reports for a process killed by ``SIGPIPE``).
  Any other failure to write stdout (a full disk) stops it the same way, then fails it: one
  line, ``cannot write to stdout: <why>``, exit 1 (``STATE.failure``).
* **A closed stderr** changes nothing else: while a command runs, ``sys.stderr`` is a
  :class:`QuietStream`, which drops what its reader (gone, or a full disk) cannot take, so a
  notice or an error line never stops a command or changes its exit status.

Only the standard library (and :mod:`rxturn._validate` and :mod:`rxturn._streams`, standard
library only themselves) is imported: the dispatcher imports every command module to build
``--help``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, TextIO

from .._jsonl import as_line as json_line  # one JSON line for any line splitter
from .._streams import to_devnull
from .._validate import has_control, is_utf8

__all__ = [
    "CHAT_COMMANDS",
    "LONG_WAIT",
    "MAX_PROMPT_BYTES",
    "PIPE_CLOSED",
    "PROVIDERS",
    "STATE",
    "LiveText",
    "Notices",
    "QuietStream",
    "argument_shown",
    "failed",
    "file_argument",
    "for_terminal",
    "has_control",
    "hint_stdin",
    "is_terminal",
    "is_utf8",
    "json_line",
    "model_names_problem",
    "not_utf8_problem",
    "number_argument",
    "one_line",
    "paint",
    "provider_argument",
    "seconds",
    "silence",
    "wants_color",
    "write",
    "write_bytes",
]

#: Exit status after the reader of stdout went away (128 + SIGPIPE, as a shell reports it).
PIPE_CLOSED = 141

#: The most a prompt on stdin may be (bytes), ``chat -`` or a line of the interactive chat: far
#: above any context window (a million tokens is a few MiB of text), and a bound for stdin
#: with no end (``< /dev/zero``).
MAX_PROMPT_BYTES = 64 * 1024 * 1024


def file_argument(text: str) -> str:
    """An argparse ``type`` for a file name: an empty one (an unset shell variable) names no
    file. As a path it is the current directory (an error then named ``'.'``), and where an
    option is skipped when empty (``fake-server --scenario ""``) it was silently no option."""
    if not text:
        import argparse

        raise argparse.ArgumentTypeError("expected a file name, got ''")
    return text


#: What the interactive chat takes besides prompts: its ``/help``, and ``chat --help``'s epilog.
CHAT_COMMANDS = (
    "/model [NAME] show or switch the model · /reset forget the conversation · "
    "/stats · /help · /quit (or /exit, or EOF)"
)

#: The APIs ``chat`` and ``batch run`` speak (``--provider``).
PROVIDERS = ["anthropic", "openai", "openai-responses", "ollama"]


def provider_argument(parser: Any) -> None:
    """``--provider``, as every command that talks to a provider takes it."""
    parser.add_argument(
        "--provider",
        required=True,
        choices=PROVIDERS,
        help="the API to talk to; its key comes from ANTHROPIC_API_KEY or OPENAI_API_KEY "
        "(optional with --base-url; ollama needs none)",
    )


def hint_stdin(what: str) -> None:
    """Before reading ``what`` from stdin (an argument ``-``): on a terminal, say how the
    input ends, where the command would otherwise sit silent (``batch run - -o out.jsonl`` typed
    by mistake looked like a hang). Nothing when stdin is a pipe or a file."""
    import sys

    stdin = sys.stdin
    try:
        terminal = stdin is not None and stdin.isatty()
    except (OSError, ValueError):  # closed
        terminal = False
    if terminal:
        from .._streams import write_quietly

        write_quietly(sys.stderr, f"(reading {what} from stdin: end it with Ctrl-D)\n")


def argument_shown(text: str) -> str:
    """A command-line argument as an error line quotes it: cut short (a number pasted with
    hundreds of digits is not echoed whole)."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def number_argument(text: str) -> float:
    """An argparse ``type`` for every float flag (``chat --hedge-delay``, ``batch run
    --temperature``): a finite number >= 0. The error quotes the text as typed: ``1e400``
    parses as ``inf`` and ``-1`` as ``-1.0``, which the user never wrote."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {argument_shown(text)}")
    return value + 0.0  # -0 is 0 (no "-0.0" sent or shown)


#: Waits at least this long (seconds) get their own notice: a user should never stare at a
#: silent prompt.
LONG_WAIT = 1.0


class _State:
    __slots__ = ("closed", "failure")

    def __init__(self) -> None:
        self.closed = False
        self.failure: str | None = None


#: ``STATE.closed`` is set once stdout cannot take more (the command should stop);
#: ``STATE.failure`` says why when it was not a reader going away (a full disk): the command
#: then fails with ``cannot write to stdout: <failure>`` (exit 1).
STATE = _State()


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that understands cursor movement (not ``TERM=dumb``)."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False
    return tty and os.environ.get("TERM") != "dumb"


def wants_color(stream: TextIO, forced: bool | None = None) -> bool:
    """Colour for ``stream``: ``forced`` if given (``--color`` / ``--no-color``), else only on
    a terminal and only when ``NO_COLOR`` is unset (set to any value, an empty one included,
    it turns colour off)."""
    if forced is not None:
        return forced
    return is_terminal(stream) and "NO_COLOR" not in os.environ


def paint(text: str, code: str, color: bool) -> str:
    """``text`` in SGR ``code`` (e.g. ``"31"`` red) when ``color``, else as it is."""
    return f"\033[{code}m{text}\033[0m" if color and code else text


def silence(stream: TextIO) -> None:
    """The reader of ``stream`` (stdout) is gone: point its descriptor at ``/dev/null`` and say
    so (``STATE.closed``: the command should stop)."""
    STATE.closed = True
    to_devnull(stream)


class QuietStream:
    """``sys.stderr`` while a command runs: what its reader cannot take (a closed pipe, a full
    disk, a closed file) is dropped and the descriptor pointed at ``/dev/null``, never raised.
    Notices and error lines are for a person; their reader going away must not end a command
    that is doing its work, nor turn its exit status into 141. Everything else is the wrapped
    stream's, but for its byte buffer: bytes go through :meth:`write` too (``buffer`` is
    ``None``, which :func:`write` and :func:`write_bytes` read as text only)."""

    __slots__ = ("stream",)

    buffer = None  # (the wrapped stream's would take bytes past the quiet write)

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError):
            to_devnull(self.stream)
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            to_devnull(self.stream)
            with contextlib.suppress(OSError, ValueError):
                self.stream.flush()  # what stayed buffered goes to /dev/null, not to exit

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def write(stream: TextIO, text: str) -> bool:
    """Write and flush ``text``; ``False`` (and the stream silenced) if it cannot take it: its
    reader has gone, or the write failed (:func:`failed`)."""
    try:
        if getattr(stream, "buffer", None) is None:
            stream.write(text)
            stream.flush()
        else:  # (in the stream's own encoding, through the loop that sees a short write)
            write_bytes(stream, text.encode(stream.encoding or "utf-8", stream.errors or "strict"))
    except BrokenPipeError:
        silence(stream)
        return False
    except OSError as exc:
        failed(stream, exc)
        return False
    return True


def write_bytes(stream: TextIO, data: bytes) -> None:
    """Write ``data`` to ``stream``'s byte buffer (UTF-8 to a stream without one) and flush.

    A large write can come back short without an error (CPython's buffered writer keeps quiet
    about a pipe whose reader went away mid-way): the rest is written again, so a closed pipe
    raises ``BrokenPipeError`` instead of the output being lost and the command ending 0.
    """
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(data.decode("utf-8"))
        stream.flush()
        return
    stream.flush()
    view = memoryview(data)
    while view:
        written = buffer.write(view)
        if not written:  # nothing taken: flush (blocks, or raises for a closed pipe)
            buffer.flush()
        view = view[written or 0 :]
    buffer.flush()


def failed(stream: TextIO, exc: OSError) -> None:
    """Writing to ``stream`` (stdout) failed for another reason than a closed pipe (a full
    disk, an I/O error): the command stops, and fails saying so (``STATE.failure``)."""
    if STATE.failure is None:
        STATE.failure = exc.strerror or str(exc) or type(exc).__name__
    silence(stream)
    with contextlib.suppress(OSError, ValueError):
        stream.flush()  # what stayed buffered goes to /dev/null, not to the exit


def seconds(value: float) -> str:
    """A duration as people read it: ``0.25 s``, ``4.0 s``, ``12 s``."""
    if value < 1:
        return f"{value:.2g} s"
    if value < 10:
        return f"{value:.1f} s"
    return f"{value:.0f} s"


#: Control characters shown escaped in one-line messages: C0 but tab, DEL, C1. An error
#: message is a server's text; an ESC in it must not reach a terminal as a command.
_ESCAPES = {
    c: ("\\r" if c == 0x0D else "\\n" if c == 0x0A else f"\\x{c:02x}")
    for c in (*range(0x00, 0x09), *range(0x0A, 0x20), *range(0x7F, 0xA0))
}


#: The environment variable each provider's key is read from (chat and batch run alike).
KEY_VARIABLES = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openai-responses": "OPENAI_API_KEY",
}

# The library's errors name its parameters (base_url=, RequestOptions.thinking, api_key=); a
# command's user typed a flag or set a variable instead. Its error line says what they typed:
# the rule stays the library's, only the words change here, at the CLI layer.
_PARAMETERS = re.compile(
    r"(?<![\w'/.-])base_url\b|RequestOptions\.reasoning_effort|RequestOptions\.thinking"
)
_FLAGS = {
    "base_url": "--base-url",
    "RequestOptions.reasoning_effort": "--reasoning-effort",
    "RequestOptions.thinking": "--thinking",
}
#: The flags of ``chat`` (every library parameter :func:`in_cli_words` names as a flag) and of
#: ``batch run`` (whose rows set their own request options)
CHAT_FLAGS = frozenset(_FLAGS.values())
BATCH_FLAGS = frozenset({"--base-url"})


def in_cli_words(message: str, provider: str, *, flags: Collection[str] = CHAT_FLAGS) -> str:
    """A library error ``message`` as a command says it to its user: each parameter named as
    the flag that set it (of the command's ``flags``: a batch run has ``--base-url`` alone, its
    rows' options are the input's own), and where the API key goes as the variable it is read
    from (``provider``'s, :data:`KEY_VARIABLES`)."""
    variable = KEY_VARIABLES.get(provider)
    key = f"set {variable}" if variable else f"the {provider} provider sends no API key"
    for said, meant in (
        ("; pass api_key instead", f"; {key} instead" if variable else f"; {key}"),
        (
            "an API key goes in api_key or extra_headers",
            f"an API key goes in {variable}" if variable else key,
        ),
        ("pass api_key= or set ", "set "),
        ("; pass media_type=", "; give the file its type's extension (.pdf, .txt, .png…)"),
    ):
        message = message.replace(said, meant)
    if "--thinking" in flags:
        message = message.replace("(use thinking=<budget>)", "(use --thinking N)")
    if "--reasoning-effort" in flags:
        for said in (
            "(use reasoning_effort, or extra_body for a server's own field)",
            "(use reasoning_effort)",
        ):
            message = message.replace(said, "(use --reasoning-effort)")

    def flag(found: re.Match[str]) -> str:
        name = found.group()
        return _FLAGS[name] if _FLAGS[name] in flags else name

    return _PARAMETERS.sub(flag, message)


def model_names_problem(named: Iterable[tuple[str, Sequence[str]]]) -> str | None:
    """What is wrong with the model names given to each option (``("--model", [name])``…), as
    the one error line a command prints, or ``None``. The names are read stripped (a pasted
    ``'$MODEL '``): an empty one is refused, and so is one holding a control character, which
    the error lines and notices would show as it is (an escape sequence reaching the terminal, a
    newline splitting the line)."""
    for option, names in named:
        stripped = [name.strip() for name in names]
        if any(has_control(name) for name in stripped):
            return f"{option} holds a control character; nothing was sent"
        if not all(stripped):
            return f"{option} must not be empty"
    return None


def not_utf8_problem(named: Iterable[tuple[str, Sequence[str | None]]]) -> str | None:
    """The error line for the first option given text that is not UTF-8 (``("--system",
    [value])``…; ``None`` values are options not given), or ``None``. Python hands an
    argument's undecodable bytes over as lone surrogates, which no request can carry."""
    for option, values in named:
        if not all(is_utf8(value) for value in values if value is not None):
            return f"{option} is not valid UTF-8; nothing was sent"
    return None


def one_line(text: str, limit: int = 300) -> str:
    """``text`` on one line, cut to ``limit`` characters: newlines and every other control
    character but tab shown escaped (``\\n``, ``\\x1b``)."""
    flat = text.translate(_ESCAPES)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# C0 controls but tab and newline, DEL and C1 controls: a reply must not move the cursor, change
# colours or retitle the terminal (a model's text is untrusted). Only for terminal output.
_CONTROLS = {c: None for c in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0))}


def for_terminal(text: str) -> str:
    """``text`` (a reply, untrusted) as a terminal may show it: its control characters but tab
    and newline removed, so that it cannot move the cursor, clear the screen, change colours
    or retitle the window. What :class:`LiveText` writes is cleaned the same way."""
    return text.translate(_CONTROLS)


def _cells(line: str) -> int:
    """Terminal columns ``line`` takes (tabs to 8, wide East Asian characters 2, marks 0)."""
    width = 0
    for char in line:
        if char == "\t":
            width += 8 - width % 8
        elif unicodedata.combining(char):
            continue
        elif unicodedata.east_asian_width(char) in ("W", "F"):
            width += 2
        else:
            width += 1
    return width


def _rows(text: str, columns: int) -> int:
    """Rows ``text`` covers when written from column 0 of a ``columns``-wide terminal."""
    return sum(max(1, math.ceil(_cells(line) / columns)) for line in text.split("\n"))


class LiveText:
    """The reply text of the current attempt, shown live on a terminal, erasable in place.

    Used only when stdout is a terminal. :meth:`write` is the engine's ``text_streamer``;
    :meth:`erase` removes everything written since the last :meth:`end` (the rows it covers
    are counted from the terminal's width), :meth:`end` keeps it and finishes its line.
    ``prefix`` is written before the first fragment (the demo indents replies).

    :meth:`thinking` shows the model's thinking before the reply, dimmed when ``color`` (else
    after a ``[thinking]`` mark); the reply then starts on a line of its own. Thinking is part
    of the attempt: erased with it, kept with it.
    """

    __slots__ = ("_chunks", "_in_thinking", "color", "out", "prefix")

    def __init__(self, out: TextIO, *, prefix: str = "", color: bool = False) -> None:
        self.out = out
        self.prefix = prefix
        self.color = color
        self._chunks: list[str] = []
        self._in_thinking = False

    @property
    def shown(self) -> bool:
        """Whether text of the current attempt is on the screen."""
        return bool(self._chunks)

    def write(self, chunk: str) -> None:
        clean = chunk.translate(_CONTROLS)
        if not clean:
            return
        if self._in_thinking:
            self._in_thinking = False
            clean = "\n" + clean  # the reply on a line of its own
        elif not self._chunks:
            clean = self.prefix + clean
        self._chunks.append(clean)
        write(self.out, clean)

    def thinking(self, chunk: str) -> None:
        """Show a fragment of thinking (dimmed); only before the reply's own text."""
        clean = chunk.translate(_CONTROLS)
        if not clean or (self._chunks and not self._in_thinking):
            return
        if not self._in_thinking:
            self._in_thinking = True
            clean = self.prefix + (clean if self.color else "[thinking] " + clean)
        self._chunks.append(clean)  # counted without the escape codes: they take no cells
        write(self.out, paint(clean, "2", self.color))

    def erase(self) -> None:
        """Remove the current attempt's text from the screen (nothing if none is shown)."""
        self._in_thinking = False
        if not self._chunks:
            return
        text = "".join(self._chunks)
        self._chunks.clear()
        try:
            columns = os.get_terminal_size(self.out.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80
        up = _rows(text, columns) - 1
        write(self.out, "\r" + ("\033[A" * up) + "\033[J")

    def end(self, mark: str = "") -> None:
        """Keep the shown text and end its line, after ``mark`` (dimmed) if one is given."""
        self._in_thinking = False
        if not self._chunks:
            if mark:
                write(self.out, paint(mark, "2", self.color) + "\n")
            return
        text = self._chunks[-1]
        self._chunks.clear()
        if mark:
            space = "" if text.endswith(("\n", " ")) else " "
            write(self.out, space + paint(mark, "2", self.color) + "\n")
        elif not text.endswith("\n"):
            write(self.out, "\n")


class Notices:
    """One-line notices on stderr, in order; a countdown in place for a long wait on a terminal.

    ``format`` turns ``(kind, text)`` into the line (each command has its style); ``before``
    runs first (flush stdout, so that a terminal shows things in the order they happened).
    """

    __slots__ = ("_countdown", "_timer", "before", "color", "err", "format", "live")

    def __init__(
        self,
        err: TextIO,
        *,
        format: Callable[[str, str, bool], str],
        color: bool,
        before: Callable[[], object] | None = None,
    ) -> None:
        self.err = err
        self.format = format
        self.color = color
        self.live = is_terminal(err)
        self.before = before
        self._countdown: tuple[str, Callable[[str], str], float] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def line(self, kind: str, text: str) -> None:
        """Write one notice line (any countdown in progress is finished first)."""
        self.settle()
        if self.before is not None:
            self.before()
        write(self.err, self.format(kind, text, self.color) + "\n")

    def wait(self, kind: str, render: Callable[[str], str], total: float) -> None:
        """A wait of ``total`` seconds: ``render(duration)`` is its text. On a terminal the
        duration counts down in place until :meth:`settle`; elsewhere one line, at once."""
        self.settle()
        if self.before is not None:
            self.before()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if not self.live or loop is None:
            write(self.err, self.format(kind, render(seconds(total)), self.color) + "\n")
            return
        try:
            columns = os.get_terminal_size(self.err.fileno()).columns or 80
        except (AttributeError, ValueError, OSError):
            columns = 80

        def fitted(duration: str) -> str:  # a line that wraps cannot be rewritten in place
            text = render(duration)
            room = max(columns - 4, 20)  # the command's brackets or indent and glyph
            return text if _cells(text) <= room else text[: room - 1] + "…"

        self._countdown = (kind, fitted, total)
        deadline = loop.time() + total

        def tick() -> None:
            left = deadline - loop.time()
            if self._countdown is None or left <= 0:
                return
            shown = math.ceil(left)
            text = self.format(kind, fitted(f"{shown} s"), self.color)
            write(self.err, "\r\033[K" + text)
            self._timer = loop.call_later(left - (shown - 1) if shown > 1 else left, tick)

        tick()

    def settle(self) -> None:
        """End a countdown: its line is rewritten with the whole wait, and ended."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._countdown is None:
            return
        kind, render, total = self._countdown
        self._countdown = None
        write(self.err, "\r\033[K" + self.format(kind, render(seconds(total)), self.color) + "\n")
