"""The asyncio side of ``rxturn chat``: building the engine, one-shot and interactive loops.

What reaches stdout follows :mod:`rxturn.cli._console`: on a terminal the reply streams live
and a failed attempt's text is erased (:class:`~rxturn.cli._view.TurnView`); on a pipe or a
file stdout gets only the served reply, written once the turn is over (one-shot: exactly the
reply and a newline). Notices and errors go to stderr, one line each.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO

import msgspec

from .._interrupt import give_back, take_signals
from .._media import describe_bound
from .._redact import without_secrets
from ..clients._factory import client_for
from ..cost import Cost, cost_to_json, describe_cost
from ..engine import RunResult, TurnEngine
from ..engine.handler._handler import StreamHandler
from ..errors import Cancelled, ConfigError, RxturnError
from ..messages import Message, RefusalPart, RequestOptions, ToolCallPart
from ..resilience.fallback import FallbackManager
from ..resilience.hedge import HedgePolicy, HedgeTarget
from ..transport._base import display_url
from . import _console
from ._console import (
    CHAT_COMMANDS,
    PIPE_CLOSED,
    STATE,
    Notices,
    for_terminal,
    in_cli_words,
    is_terminal,
    is_utf8,
    json_line,
    one_line,
    paint,
    wants_color,
    write,
)
from ._view import TurnView, describe_error

if TYPE_CHECKING:
    from .._interrupt import Handler

__all__ = ["ChatSession", "check_options"]

_HELP = f"commands: {CHAT_COMMANDS}"

_COLORS = {
    "retry": "33",
    "wait": "33",
    "rescue": "33",
    "breaker": "35",
    "model": "36",
    "hedge": "36",
}


def _notice(kind: str, text: str, color: bool) -> str:
    return paint(f"[{text}]", _COLORS.get(kind, "2"), color)


def _hedge(args: argparse.Namespace) -> HedgePolicy | None:
    """``--hedge MODEL`` (repeatable) and ``--hedge-delay S`` as a policy (default budget)."""
    models: list[str] = getattr(args, "hedge", None) or []
    if not models:
        return None
    targets = tuple(HedgeTarget(model.strip()) for model in models)
    return HedgePolicy(targets, delay=getattr(args, "hedge_delay", None))


def _client(args: argparse.Namespace, api_key: str | None) -> Any:
    settings: dict[str, Any] = {}
    if args.base_url is not None:
        settings["base_url"] = args.base_url
    return client_for(args.provider, args.model, api_key, **settings)


def _options(args: argparse.Namespace) -> RequestOptions:
    """``--thinking`` / ``--reasoning-effort`` as request options (checked by the client)."""
    return RequestOptions(
        thinking=getattr(args, "thinking", None),
        reasoning_effort=getattr(args, "reasoning_effort", None),
    )


def check_options(args: argparse.Namespace) -> None:
    """Build one request body with the chat's options, so that a knob the provider cannot take
    (``--thinking`` for OpenAI, a budget above the max tokens…) is a bad argument up front.

    Raises:
        ConfigError: what the client would raise at the first turn.
    """
    from ..messages import Request

    client = _client(args, None)
    thinking, ceiling = getattr(args, "thinking", None), getattr(client, "max_tokens", None)
    if thinking is not None and isinstance(ceiling, int) and thinking >= ceiling:
        # the client's own words say "raise max_tokens", which chat has no flag for
        shown = str(thinking) if len(str(thinking)) <= 20 else f"{str(thinking)[:17]}..."
        raise ConfigError(
            f"--thinking must be below the reply's max_tokens ({ceiling}, part of which is the "
            f"thinking; chat does not change it), got {shown}"
        )
    request = Request(messages=(Message.user("check", *getattr(args, "attachments", ())),))
    client._body(request, _options(args), model=args.model, stream=True)


def _error_json(exc: BaseException, turns: list[Any]) -> bytes:
    """A failed turn as JSON: the error beside the run's audit (its failed turn included)."""
    error = {"type": type(exc).__name__, "message": str(exc)}
    return msgspec.json.encode({"error": error, "turns": turns})


class _Failures(TurnView):
    """The view, remembering which model the last failed turn was on (for the error line)."""

    failed_model = ""

    def on_stream_failure(self, *, turn: int, model: str, error: BaseException) -> None:
        self.failed_model = model
        super().on_stream_failure(turn=turn, model=model, error=error)


class _LineTooLong(Exception):
    pass


def _read_line(stdin: TextIO) -> str:
    """One line of ``stdin``; bytes that are not UTF-8 kept as lone surrogates (whatever the
    locale's error handler: a strict one would raise and lose the rest of the buffer), for
    the chat to refuse that line and go on.

    Raises:
        _LineTooLong: more than ``MAX_PROMPT_BYTES`` (:mod:`rxturn.cli._console`) without a
            newline (``< /dev/zero`` would otherwise be read until memory runs out).
    """
    limit = _console.MAX_PROMPT_BYTES
    buffer = getattr(stdin, "buffer", None)
    line: str | bytes = stdin.readline(limit + 1) if buffer is None else buffer.readline(limit + 1)
    if len(line) > limit:
        raise _LineTooLong
    return line if isinstance(line, str) else line.decode("utf-8", "surrogateescape")


class ChatSession:
    """One chat: an engine plus the terminal plumbing around it."""

    def __init__(
        self,
        args: argparse.Namespace,
        *,
        api_key: str | None,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.args = args
        self.api_key = api_key
        self.stdin = stdin or sys.stdin
        self.out = stdout or sys.stdout
        self.err = stderr or sys.stderr
        self.engine: TurnEngine | None = None
        self.url = ""
        self._turn_running = False
        self._ending = False  # SIGTERM: the chat ends after the running turn is cancelled
        self._waiting: asyncio.Future[str] | None = None  # the line being read
        #: stdout is a terminal: the reply streams live (never with --json)
        self.live = not args.json and is_terminal(self.out)
        self.notices = Notices(
            self.err, format=_notice, color=wants_color(self.err), before=self._flush_out
        )
        self.view = _Failures(self.out, self.notices, live=self.live, color=wants_color(self.out))

    def _flush_out(self) -> None:
        write(self.out, "")  # flushes; a closed stdout is noted, not raised

    def _build_engine(self, client: Any) -> TurnEngine:
        fallback = (
            FallbackManager(self.args.model, self.args.fallback) if self.args.fallback else None
        )
        engine = TurnEngine(
            client,
            system=self.args.system,
            handler=StreamHandler(on_wait=self.view.on_wait),  # the default policies
            fallback=fallback,
            failover=fallback is not None and not getattr(self.args, "no_failover", False),
            mode="non_streaming" if self.args.no_stream else "streaming",
            text_streamer=self.view.text if self.live else None,
            observers=(self.view,),
            request_options=_options(self.args),
            hedge=_hedge(self.args),
        )
        engine.events.subscribe(self.view.handler_event)  # the rescue's Fallback
        return engine

    async def main(self) -> int:
        client = _client(self.args, self.api_key)
        # the full URL requested (base URL plus path): a wrong base path shows in it (a key,
        # even one pasted into the path, does not)
        self.url = without_secrets(
            display_url(getattr(client, "url", client.base_url)),
            (self.api_key,) if self.api_key else (),
        )
        async with client:
            self.engine = self._build_engine(client)
            if self.args.prompt is not None:
                code = await self._one_shot(self.args.prompt)
            else:
                code = await self._interactive()
        return PIPE_CLOSED if STATE.closed else code

    def _take_signals(self) -> dict[int, Handler]:
        """Ctrl-C and SIGTERM go to :meth:`_on_signal` while the chat runs (those the command
        line may take: :func:`rxturn._interrupt.take_signals`); the handlers they had."""
        return take_signals(asyncio.get_running_loop(), self._on_signal)

    @staticmethod
    def _give_back(taken: dict[int, Handler]) -> None:
        give_back(asyncio.get_running_loop(), taken)

    async def _one_shot(self, prompt: str) -> int:
        taken = self._take_signals()
        try:
            error = await self._one(prompt)
        finally:
            self._give_back(taken)
        if error is None:
            return 0
        return 130 if isinstance(error, Cancelled) else 1

    async def _one(self, prompt: str) -> RxturnError | None:
        """Run one prompt; the error if the turn failed (already reported)."""
        assert self.engine is not None
        self._turn_running = True
        attachments: tuple[Any, ...] = getattr(self.args, "attachments", ())
        self.args.attachments = ()  # --image / --file go with the first prompt only
        try:
            result = await self.engine.run(Message.user(prompt, *attachments))
        except RxturnError as exc:
            if isinstance(exc, Cancelled):
                self.view.turn_cancelled()  # a terminal keeps what was shown, marked
            else:
                self.view.turn_failed()
            self._report_error(exc)
            self.view.flush()
            return exc
        finally:
            self._turn_running = False
        self._report(result)
        return None

    def _report(self, result: RunResult) -> None:
        assert self.engine is not None
        if self.args.json:
            last = result.turns[-1]
            run = self.engine.session.runs[-1]
            record = {
                "message": last.message,
                "model": last.model,
                "attempts": last.attempts,
                "rescued": last.rescued,
                "cost": cost_to_json(result.cost),
                "turns": list(run.turns),
            }
            write(self.out, json_line(msgspec.json.encode(record)).decode())
            return
        # What the reply holds besides its text, one line each, as `rxturn replay` shows it: a
        # tool call, an OpenAI refusal (its text is no text part, and never streams as text:
        # without this line a refusal printed nothing at all)
        extra: list[str] = []
        for part in result.message.content:
            if isinstance(part, ToolCallPart):
                arguments = msgspec.json.encode(part.input).decode()
                extra.append(f"[tool_call {part.name}] {arguments}\n")
            elif isinstance(part, RefusalPart):
                extra.append(f"[refusal] {part.text}\n")
        parts: list[str] = []
        if (not self.live or self.args.no_stream) and (result.text or not extra):
            parts.append(result.text + "\n")  # nothing of the reply is on stdout yet
        parts += extra
        if parts:
            text = "".join(parts)
            # a reply is untrusted: on a terminal, none of its escape sequences (as streamed
            # text is shown; --no-stream wrote them raw, a title change or a cleared screen)
            write(self.out, for_terminal(text) if is_terminal(self.out) else text)

    def _report_error(self, exc: RxturnError) -> None:
        if self.args.json:
            runs = self.engine.session.runs if self.engine is not None else []
            turns = list(runs[-1].turns) if runs else []
            write(self.out, json_line(_error_json(exc, turns)).decode())
        if isinstance(exc, Cancelled):
            if not self.live and not self.args.json:  # a terminal shows "[cancelled]" after
                self.notices.line("cancel", one_line(str(exc)))  # the text it kept
        else:
            # with --json too: the object on stdout is for a program, the line on stderr says
            # what failed and where (the full URL, which the error's own message may not name)
            model = self.view.failed_model
            where = f"model {model} at {self.url}" if model else self.url
            self._flush_out()
            said = in_cli_words(describe_error(exc, where), self.args.provider)
            write(self.err, f"rxturn chat: error: {said}\n")
        self.view.failed_model = ""

    def _on_signal(self, sig: int) -> None:
        """Ctrl-C cancels the running turn (the interactive chat goes on); SIGTERM cancels it
        too and ends the chat, even while it waits for a line."""
        if sig == signal.SIGTERM:
            self._ending = True
            if self._waiting is not None and not self._waiting.done():
                self._waiting.cancel()
        if self._turn_running and self.engine is not None:
            reason = "cancelled by SIGTERM" if sig == signal.SIGTERM else "cancelled by Ctrl-C"
            self.engine.cancel(reason)
        elif sig == signal.SIGINT:
            write(self.err, "\n(/quit, Ctrl-D or EOF ends the chat)\n")
            if self._waiting is not None and not self._waiting.done():
                self._prompt()  # the line is still being read: "> " again, to type after

    def _prompt(self, end: bool = False) -> None:
        """``> `` on stderr, where a person types the lines (stdin a terminal, no ``--json``);
        with ``end``, the chat ends at that prompt (Ctrl-D, SIGTERM): its line is ended, so
        that the shell's prompt does not follow it."""
        if not self.args.json and self.stdin.isatty():
            write(self.err, "\n" if end else "> ")

    async def _readline(self) -> str | None:
        """The next line of stdin (``""`` at EOF), or ``None`` when SIGTERM ended the chat.

        Read on a daemon thread, not the loop's executor: a thread blocked on a terminal or a
        pipe that stays open must not keep the process from exiting once the chat ends."""
        loop = asyncio.get_running_loop()
        waiting: asyncio.Future[str] = loop.create_future()
        self._waiting = waiting

        def settle(line: str | None, error: BaseException | None) -> None:
            if waiting.done():
                return
            if error is not None:
                waiting.set_exception(error)
            else:
                waiting.set_result(line or "")

        def read() -> None:
            line: str | None = None
            error: BaseException | None = None
            try:
                line = _read_line(self.stdin)
            except Exception as exc:  # handed to the loop, raised where the line is awaited
                error = exc
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(settle, line, error)

        threading.Thread(target=read, name="rxturn-chat-stdin", daemon=True).start()
        try:
            return await waiting
        except asyncio.CancelledError:
            if self._ending:
                return None
            raise
        finally:
            self._waiting = None

    async def _interactive(self) -> int:
        taken = self._take_signals()
        number = 0  # of the line read
        try:
            while not STATE.closed:
                if self._ending:
                    return 130
                self._prompt()
                try:
                    line = await self._readline()
                except OSError as exc:  # a terminal hung up (EIO), a stdin that cannot be read
                    self._flush_out()
                    reason = exc.strerror or str(exc) or type(exc).__name__
                    write(self.err, f"rxturn chat: error: cannot read stdin: {reason}\n")
                    return 1
                except _LineTooLong:  # bad input: the chat ends, as there is no next line
                    self._flush_out()
                    limit = describe_bound(_console.MAX_PROMPT_BYTES)
                    write(
                        self.err,
                        f"rxturn chat: error: line {number + 1} of stdin is larger than {limit}; "
                        "nothing was sent\n",
                    )
                    return 2
                if line is None or self._ending:
                    if line is None:  # SIGTERM while the prompt waited for a line
                        self._prompt(end=True)
                    return 130
                if line == "":
                    self._prompt(end=True)
                    return 0
                number += 1
                if not is_utf8(line):  # stdin's undecodable bytes, kept as lone surrogates
                    self._flush_out()
                    write(
                        self.err,
                        f"rxturn chat: error: line {number} of stdin is not valid UTF-8; "
                        "nothing was sent\n",
                    )
                    continue
                prompt = line.strip()
                if not prompt:
                    continue
                if prompt.startswith("/"):
                    if self._command(prompt):
                        return 0
                    continue
                await self._one(prompt)
            return PIPE_CLOSED
        finally:
            self._give_back(taken)

    def _command(self, line: str) -> bool:
        """Run a ``/command``; ``True`` when it ends the chat."""
        assert self.engine is not None
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        if name in ("/quit", "/exit"):
            return True
        if name == "/model":
            if _console.has_control(argument):  # shown raw by the notices: never switched to
                write(self.err, "model: model names hold no control characters; unchanged\n")
            elif argument == self.engine.served_model():
                write(self.err, f"model: {argument} (unchanged)\n")
            elif argument:
                try:
                    self.engine.switch_model(argument)  # the observer tells the switch
                except ConfigError as error:  # a backup of --fallback cannot be the primary
                    write(self.err, f"model: {error}; unchanged\n")
            else:
                write(self.err, f"model: {self.engine.served_model()}\n")
        elif name == "/reset":
            self.engine.history.clear()
            write(self.err, "conversation cleared\n")
        elif name == "/stats":
            write(self.err, self._stats() + "\n")
        elif name == "/help":
            write(self.err, _HELP + "\n")
        else:
            write(self.err, f"unknown command {name}; {_HELP}\n")
        return False

    def _stats(self) -> str:
        assert self.engine is not None
        # The audit records failed turns too (with ``error`` set), with their attempts.
        turns = self.engine.session.audit.all_turns()
        served = sum(1 for t in turns if t.error is None)
        tokens_in = sum(t.input_tokens for t in turns)
        tokens_out = sum(t.output_tokens for t in turns)
        attempts = sum(t.attempts for t in turns)
        rescued = sum(1 for t in turns if t.rescued)
        breaker = self.engine.fallback.state.name.lower() if self.engine.fallback else "off"
        cost: Cost | None = None
        for turn in turns:
            if turn.cost is not None:
                cost = turn.cost if cost is None else cost + turn.cost
        last = describe_cost(turns[-1].cost) if turns else "none yet"
        return (
            f"turns {len(turns)} ({served} served, "
            f"{len(turns) - served} failed) · attempts {attempts} · rescued {rescued} · "
            f"tokens in {tokens_in} out {tokens_out} · cost {describe_cost(cost)} "
            f"(last turn {last}) · model {self.engine.served_model()} · "
            f"breaker {breaker} · messages {len(self.engine.history)}"
        )
