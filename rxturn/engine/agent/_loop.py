"""The agent loop around the turn: turns continue while the model calls tools.

:class:`AgentLoop` is the part of :class:`~rxturn.engine.TurnEngine` that runs a prompt to a
final reply: add the prompt, run turns while the stop reason is ``tool_call``, and run the
reply's tool calls between them (their results become the next user message). A failed or
cancelled run discards the messages it added to the history; its turns stay in the audit trail.

Each tool call is raced against the cancel signal and the tool's ``timeout`` (on the engine's
clock): a cancel ends the run with ``Cancelled`` at once, the tool's task cancelled (a worker
thread's late result is dropped); a timeout becomes a failed tool result for the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from reactivex import abc

from ...errors import ConfigError
from ...messages import Message, StopReason, ToolCallPart, ToolResultPart, content_text
from ...resilience.cancel import CancelToken
from ..observation.observers import ObserverSet
from ..records._results import RunResult, Session, TurnResult, checked_prompt
from ..turn._race import race
from .tools import ToolRegistry, ToolTimeoutError, tool_error_result

__all__ = ["AgentLoop"]


class AgentLoop:
    """``run(prompt)`` and the tool phase, over the engine's one-turn ``_turn``."""

    # provided by the engine
    session: Session
    observers: ObserverSet
    cancel_token: CancelToken
    tools: ToolRegistry
    max_turns: int
    _run_input: str | None
    _in_run: bool
    _busy: str | None

    async def _turn(self, transient: Sequence[Message]) -> TurnResult:
        raise NotImplementedError

    def _now(self) -> Callable[[], float]:
        raise NotImplementedError

    def _resolve_scheduler(self) -> abc.SchedulerBase:
        raise NotImplementedError

    async def run(self, prompt: str | Message) -> RunResult:
        """The agent loop: add ``prompt``, then run turns while the model calls tools.

        A failed or cancelled run discards the messages it added to the history; its served
        turns stay in the audit trail. The cancel signal is re-armed when the run ends.

        Raises:
            ConfigError: ``prompt`` is neither a string nor a :class:`Message`; a ``run()`` or
                ``turn()`` of this engine is in flight (one engine is one conversation).
        """
        checked = checked_prompt(prompt, "run")
        self._claim("run")
        try:
            return await self._run(checked)
        finally:
            self._busy = None

    def _claim(self, call: str) -> None:
        """Mark the engine busy with ``call``; a second call while one is in flight is refused
        at once, before anything is sent or added to the history."""
        busy = self._busy
        if busy is not None:
            raise ConfigError(
                f"TurnEngine.{call}() while a {busy}() is in flight on the same engine: one "
                "engine is one conversation (one history, one audit trail); use a TurnEngine per "
                "concurrent conversation (engines may share a client)"
            )
        self._busy = call

    async def _run(self, prompt: str | Message) -> RunResult:
        message = Message.user(prompt) if isinstance(prompt, str) else prompt
        now = self._now()
        started = now()
        start_len = len(self.session.history)
        run = self.session.audit.start_run()
        self._run_input = content_text(message.content)
        self._in_run = True
        self.observers.emit("on_run_start", session_id=self.session.id)
        results: list[TurnResult] = []
        try:
            self.cancel_token.raise_if_cancelled()
            self.session.history.append(message)
            for _ in range(self.max_turns):
                result = await self._turn(())
                results.append(result)
                if result.stop_reason is not StopReason.TOOL_CALL:
                    break
                await self._tool_phase(result)
            hit_max = bool(results) and results[-1].stop_reason is StopReason.TOOL_CALL
        except BaseException as exc:
            del self.session.history[start_len:]
            self.observers.emit(
                "on_run_end",
                success=False,
                error=str(exc) or type(exc).__name__,
                total_turns=len(run.turns),
                duration_ms=(now() - started) * 1000,
            )
            raise
        finally:
            self._in_run = False
            self._run_input = None
            self.cancel_token.reset()
        self.observers.emit(
            "on_run_end",
            success=True,
            error=None,
            total_turns=len(run.turns),
            duration_ms=(now() - started) * 1000,
        )
        return RunResult(turns=tuple(results), hit_max_turns=hit_max)

    def _emit_turn_end(self, result: TurnResult, started: float) -> None:
        now = self._now()
        self.observers.emit(
            "on_turn_end",
            turn=result.turn,
            success=True,
            error=None,
            duration_ms=(now() - started) * 1000,
            input_tokens=result.usage.input_tokens if result.usage else 0,
            output_tokens=result.usage.output_tokens if result.usage else 0,
        )

    async def _tool_phase(self, result: TurnResult) -> None:
        """Run the reply's tool calls in order; their results become the next user message."""
        started = self._now()()
        outputs: list[ToolResultPart] = []
        for call in result.message.tool_calls:
            self.cancel_token.raise_if_cancelled()
            self.observers.emit("on_tool_call", turn=result.turn, call=call)
            output = await self._run_tool(call)
            self.observers.emit("on_tool_result", turn=result.turn, result=output)
            outputs.append(output)
        self.session.history.append(Message(role="user", content=tuple(outputs)))
        self._emit_turn_end(result, started)

    async def _run_tool(self, call: ToolCallPart) -> ToolResultPart:
        """One call raced against the cancel signal (first) and the tool's timeout."""
        found = self.tools.get(call.name)
        timeout = found.timeout if found is not None else None

        def expired() -> ToolResultPart:
            return tool_error_result(call, ToolTimeoutError(call.name, timeout or 0.0))

        scheduler = self._resolve_scheduler()
        return await race(self.tools.run(call), self.cancel_token, timeout, scheduler, expired)
