"""The asyncio side of ``rxturn chat``: building the engine, one-shot and interactive loops."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from typing import Any, TextIO

import msgspec

from ..engine import RunResult, TurnEngine
from ..engine.handler import StreamHandler
from ..engine.observers import Observer
from ..errors import RxturnError
from ..events import AttemptReset
from ..messages import RequestOptions
from ..resilience.fallback import FallbackManager

__all__ = ["ChatSession", "check_options"]

_HELP = "commands: /model NAME  switch model · /reset  forget the conversation · /stats · /help"


class _LiveView(Observer):
    """Shows progress on stderr while text streams to stdout."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err

    def on_attempt_reset(self, *, turn: int, reset: AttemptReset) -> None:
        self.out.write("\n")
        self.out.flush()
        self.err.write(f"[attempt {reset.attempt}: {reset.reason} — earlier text discarded]\n")
        self.err.flush()

    def on_fallback(self, *, from_model: str, to_model: str) -> None:
        self.err.write(f"[breaker tripped: {from_model} → {to_model}]\n")

    def on_model_switched(self, *, from_model: str, to_model: str) -> None:
        self.err.write(f"[serving model: {from_model} → {to_model}]\n")


def _client(args: argparse.Namespace, api_key: str | None) -> Any:
    kwargs: dict[str, Any] = {}
    if args.base_url is not None:
        kwargs["base_url"] = args.base_url
    if args.provider == "anthropic":
        from ..clients import AnthropicClient

        return AnthropicClient(args.model, api_key=api_key, **kwargs)
    if args.provider == "openai":
        from ..clients import OpenAIClient

        return OpenAIClient(args.model, api_key=api_key, **kwargs)
    if args.provider == "openai-responses":
        from ..clients import OpenAIResponsesClient

        return OpenAIResponsesClient(args.model, api_key=api_key, **kwargs)
    from ..clients import OllamaClient

    return OllamaClient(args.model, **kwargs)


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
    from ..messages import Message, Request

    client = _client(args, None)
    request = Request(messages=(Message.user("check"),))
    client._body(request, _options(args), model=args.model, stream=True)


def _error_json(exc: BaseException) -> bytes:
    return msgspec.json.encode({"error": {"type": type(exc).__name__, "message": str(exc)}})


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
        self._turn_running = False

    def _build_engine(self, client: Any) -> TurnEngine:
        fallback = (
            FallbackManager(self.args.model, self.args.fallback) if self.args.fallback else None
        )
        streamer = None if self.args.json else self._show_text
        return TurnEngine(
            client,
            system=self.args.system,
            handler=StreamHandler.default(),
            fallback=fallback,
            mode="non_streaming" if self.args.no_stream else "streaming",
            text_streamer=streamer,
            observers=() if self.args.json else (_LiveView(self.out, self.err),),
            request_options=_options(self.args),
        )

    def _show_text(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    async def main(self) -> int:
        client = _client(self.args, self.api_key)
        async with client:
            self.engine = self._build_engine(client)
            if self.args.prompt is not None:
                ok = await self._one(self.args.prompt)
                return 0 if ok else 1
            return await self._interactive()

    async def _one(self, prompt: str) -> bool:
        assert self.engine is not None
        self._turn_running = True
        try:
            result = await self.engine.run(prompt)
        except RxturnError as exc:
            self._report_error(exc)
            return False
        finally:
            self._turn_running = False
        self._report(result)
        return True

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
                "turns": list(run.turns),
            }
            self.out.write(msgspec.json.encode(record).decode() + "\n")
        else:
            last = result.turns[-1]
            if self.args.no_stream or last.rescued:  # nothing of this reply was streamed
                if last.rescued:
                    self.out.write("\n")
                    self.err.write("[rescued by the non-streaming request]\n")
                self.out.write(result.text)
            if not result.text.endswith("\n"):
                self.out.write("\n")
            for call in result.message.tool_calls:
                arguments = msgspec.json.encode(call.input).decode()
                self.out.write(f"[tool_call {call.name}] {arguments}\n")
        self.out.flush()

    def _report_error(self, exc: BaseException) -> None:
        if self.args.json:
            self.out.write(_error_json(exc).decode() + "\n")
            self.out.flush()
        else:
            self.out.write("\n")
            self.out.flush()
            self.err.write(f"rxturn chat: {type(exc).__name__}: {exc}\n")
            self.err.flush()

    def _on_sigint(self) -> None:
        if self._turn_running and self.engine is not None:
            self.engine.cancel("cancelled by Ctrl-C")
        else:
            self.err.write("\n(Ctrl-D or EOF ends the chat)\n")
            self.err.flush()

    async def _interactive(self) -> int:
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
            handles_sigint = True
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / Windows
            handles_sigint = False
        try:
            while True:
                if not self.args.json and self.stdin.isatty():
                    self.err.write("> ")
                    self.err.flush()
                line = await loop.run_in_executor(None, self.stdin.readline)
                if line == "":
                    return 0
                prompt = line.strip()
                if not prompt:
                    continue
                if prompt.startswith("/"):
                    self._command(prompt)
                    continue
                await self._one(prompt)
        finally:
            if handles_sigint:
                loop.remove_signal_handler(signal.SIGINT)

    def _command(self, line: str) -> None:
        assert self.engine is not None
        name, _, argument = line.partition(" ")
        argument = argument.strip()
        if name == "/model" and argument:
            self.engine.switch_model(argument)
            self.err.write(f"model: {argument}\n")
        elif name == "/reset":
            self.engine.history.clear()
            self.err.write("conversation cleared\n")
        elif name == "/stats":
            self.err.write(self._stats() + "\n")
        else:
            self.err.write(_HELP + "\n")
        self.err.flush()

    def _stats(self) -> str:
        assert self.engine is not None
        turns = self.engine.session.audit.all_turns()
        tokens_in = sum(t.input_tokens for t in turns)
        tokens_out = sum(t.output_tokens for t in turns)
        attempts = sum(t.attempts for t in turns)
        rescued = sum(1 for t in turns if t.rescued)
        breaker = self.engine.fallback.state.name.lower() if self.engine.fallback else "off"
        return (
            f"turns {len(turns)} · attempts {attempts} · rescued {rescued} · "
            f"tokens in {tokens_in} out {tokens_out} · model {self.engine.served_model()} · "
            f"breaker {breaker} · messages {len(self.engine.history)}"
        )
