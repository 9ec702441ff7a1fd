"""The agent loop around the turn: turns continue while the model calls tools.

:class:`AgentLoop` is the collaborator of :class:`~rxturn.engine.TurnEngine` (one per engine)
that runs a prompt to a final reply: add the prompt, run turns while the stop reason is
``tool_call``, and run the reply's tool calls between them (their results become the next user
message). A failed or cancelled run discards the messages it added to the history; its turns
stay in the audit trail.

Each tool call is raced against the cancel signal and the tool's ``timeout`` (on the engine's
clock): a cancel ends the run with ``Cancelled`` at once, the tool's task cancelled (a worker
thread's late result is dropped); a timeout becomes a failed tool result for the model.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from ...errors import ConfigError
from ...messages import Message, StopReason, ToolCallPart, ToolResultPart, content_text
from ...resilience.cancel import CancelToken
from ..observation.observers import ObserverSet
from ..records._results import RunResult, Session, TurnResult, checked_prompt
from ..turn._calls import TurnCalls
from ..turn._outcome import emit_turn_end
from ..turn._race import race
from ..turn._setup import resolve_host
from .tools import ToolRegistry, ToolTimeoutError, tool_error_result

__all__ = ["AgentLoop", "LoopHost"]


class LoopHost(Protocol):
    """What the agent loop reads on its engine."""

    session: Session
    observers: ObserverSet
    cancel_token: CancelToken

    @property
    def tools(self) -> ToolRegistry: ...

    max_turns: int


class AgentLoop:
    """``run(prompt)`` and the tool phase, over the turn's call (:class:`TurnCalls`).

    Attributes:
        run_input: the prompt of the run in progress (the audit's input of its first turn).
        in_run: a run is in progress (its tool phase, not the turn, ends a tool-calling turn).
        busy: ``"run"``, ``"turn"`` or ``"stream"`` while one is in flight, else ``None``.
    """

    __slots__ = ("_live", "busy", "calls", "host", "in_run", "run_input")

    def __init__(
        self,
        host: LoopHost,
        calls: TurnCalls,
        live: Callable[[], LoopHost | None] | None = None,
    ) -> None:
        self.host = host
        self._live = live  # (resolve_host: the engine read directly for the length of a run)
        self.calls = calls
        self.run_input: str | None = None
        self.in_run = False
        self.busy: str | None = None

    def turn(self, transient: Sequence[Message]) -> Coroutine[Any, Any, TurnResult]:
        """One turn over the history, as the loop runs it (no claim: the caller holds it).

        The call's own coroutine, handed back (no coroutine of this method around it: one
        layer less for each turn to create and for each of its resumptions to pass through).
        """
        return self.calls.turn(transient, run_input=self.run_input, in_run=self.in_run)

    def run(self, prompt: str | Message) -> Coroutine[Any, Any, RunResult]:
        """:meth:`TurnEngine.run <rxturn.engine.TurnEngine.run>`: check ``prompt`` and claim
        the engine now; the run's coroutine (:meth:`run_checked`, which frees the engine when
        it ends) is handed back to be awaited at once."""
        checked = checked_prompt(prompt, "run")
        self.claim("run")
        return self.run_checked(checked, release=True)

    def claim(self, call: str) -> None:
        """Mark the engine busy with ``call``; a second call while one is in flight is refused
        at once, before anything is sent or added to the history."""
        busy = self.busy
        if busy is not None:
            raise ConfigError(
                f"TurnEngine.{call}() while a {busy}() is in flight on the same engine: one "
                "engine is one conversation (one history, one audit trail); use a TurnEngine per "
                "concurrent conversation (engines may share a client)"
            )
        self.busy = call

    async def run_checked(self, prompt: str | Message, *, release: bool = False) -> RunResult:
        """The run of an already checked and claimed ``prompt``; ``release``: free the engine
        when the run ends, however it ends (a stream frees it itself)."""
        try:
            message = Message.user(prompt) if isinstance(prompt, str) else prompt
            # the engine itself, not its weak proxy, for the run's dozen reads
            host = resolve_host(self._live, self.host)
            # resolved once a run and handed to its turns (asyncio's asks for the running loop,
            # a system call each on some Pythons; a run stays on one loop)
            scheduler = self.calls.scheduler()
            now = self.calls.clock_of(scheduler)
            started = now()
            start_len = len(host.session.history)
            run = host.session.audit.start_run()
            self.run_input = content_text(message.content)
            self.in_run = True
            observers = host.observers  # read at each emit: it is a public attribute
            if observers.listening and observers.interested("on_run_start"):
                observers.emit("on_run_start", session_id=host.session.id)
            # a tuple grown per turn: a run is a turn or a few, and no list is kept while it waits
            results: tuple[TurnResult, ...] = ()
            try:
                host.cancel_token.raise_if_cancelled()
                host.session.history.append(message)
                for index in range(host.max_turns):
                    result = await self.calls.turn(
                        (),
                        run_input=self.run_input,
                        in_run=self.in_run,
                        scheduler=scheduler,
                        tools_ran=index > 0,  # (the loop goes on only after a tool phase)
                    )
                    results = (*results, result)
                    if result.stop_reason is not StopReason.TOOL_CALL:
                        break
                    await self.tool_phase(result)
                last = results[-1] if results else None
                hit_max = last is not None and last.stop_reason is StopReason.TOOL_CALL
                if last is not None and not hit_max and last.message.tool_calls:
                    # a reply that ended the run with calls it did not run (max_tokens,
                    # stop_sequence, a refusal): each gets its result, or the next request
                    # holds a call without one, which every API but Ollama's refuses (a 400)
                    host.session.history.append(_not_run(last))
            except BaseException as exc:
                del host.session.history[start_len:]
                observers = host.observers
                if observers.listening and observers.interested("on_run_end"):
                    observers.emit(
                        "on_run_end",
                        success=False,
                        error=str(exc) or type(exc).__name__,
                        total_turns=len(run.turns),
                        duration_ms=(now() - started) * 1000,
                    )
                raise
            finally:
                self.in_run = False
                self.run_input = None
                host.cancel_token.reset()
            observers = host.observers
            if observers.listening and observers.interested("on_run_end"):
                observers.emit(
                    "on_run_end",
                    success=True,
                    error=None,
                    total_turns=len(run.turns),
                    duration_ms=(now() - started) * 1000,
                )
            return RunResult(turns=results, hit_max_turns=hit_max)
        finally:
            if release:
                self.busy = None

    async def tool_phase(self, result: TurnResult) -> None:
        """Run the reply's tool calls in order; their results become the next user message."""
        now = self.calls.now()
        started = self.calls.turn_started  # the turn's on_turn_end times the whole turn
        outputs: list[ToolResultPart] = []
        try:
            for call in result.message.tool_calls:
                self.host.cancel_token.raise_if_cancelled()
                self.host.observers.emit("on_tool_call", turn=result.turn, call=call)
                output = await self.run_tool(call)
                self.host.observers.emit("on_tool_result", turn=result.turn, result=output)
                outputs.append(output)
        except BaseException as exc:
            # the turn's on_turn_start was heard: its end is heard too, however the phase ends
            # (a cancel while a tool runs, an interrupt a tool raised)
            emit_turn_end(self.host.observers, now, result, started, exc)
            raise
        self.host.session.history.append(Message(role="user", content=tuple(outputs)))
        emit_turn_end(self.host.observers, now, result, started)

    async def run_tool(self, call: ToolCallPart) -> ToolResultPart:
        """One call raced against the cancel signal (first) and the tool's timeout."""
        found = self.host.tools.get(call.name)
        timeout = found.timeout if found is not None else None

        def expired() -> ToolResultPart:
            return tool_error_result(call, ToolTimeoutError(call.name, timeout or 0.0))

        scheduler = self.calls.scheduler()
        return await race(
            self.host.tools.run(call), self.host.cancel_token, timeout, scheduler, expired
        )


def _not_run(result: TurnResult) -> Message:
    """Error results for the tool calls of a reply that ended the run before they ran."""
    why = f"not run: the reply ended with stop reason {result.stop_reason.value!r}"
    calls = result.message.tool_calls
    return Message(role="user", content=tuple([ToolResultPart(c.id, why, True) for c in calls]))
