"""The turn engine: one model call, from "call the LLM" to "here is the reply".

This is the seed page's module in Python. :meth:`TurnEngine.turn` follows reference §6.6:

1. breaker housekeeping (maybe start a recovery probe; :class:`FallbackExhausted` before any
   turn event when every backup has failed);
2. transients — context contributors, then at most one memory message, then the caller's
   own — placed *before* the conversation and never persisted;
3. the context estimate, and a deferred turn (no turn events) when compaction is due;
4. the routed model as a per-request override (the shared client is never mutated) and
   ``on_model_switched`` whenever the serving model changes;
5. ``on_turn_start``, then :meth:`_do_turn` on one of two paths:

   - **streaming** (default): one subscription to the handler's batched stream
     (:meth:`StreamHandler.stream_turn_batches`, one item per network chunk). A tap fans each
     event out, in this order — the ``text_streamer`` (text only), the observers (text and
     thinking deltas, attempt resets), ``engine.events`` — and ``scan(fold_batch)`` → ``last``
     builds the message. ``AttemptReset`` wipes the fold, a ``Fallback`` replaces it
     wholesale. This is SPEC §1's ``share`` with one Rx emission per chunk, not per event
     (benchmarks/README.md);
   - **non-streaming**: exactly one ``create`` raced against the cancel signal (checked first)
     and the turn timeout (none configured = an arm that never fires);

6. the outcome is recorded in the seed's strict order (:mod:`rxturn.engine._outcome`);
7. the reply joins the history and the audit trail; ``on_response`` and ``on_turn_end``.

:meth:`TurnEngine.run` is the agent loop around it: turns continue while the stop reason is
``tool_call``, running registered tools between them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence

import msgspec
from reactivex import abc
from reactivex.subject import Subject

from .._validate import positive
from ..clients._base import ModelClient
from ..errors import Cancelled, ConfigError
from ..events import HandlerEvent
from ..messages import (
    Message,
    Request,
    RequestOptions,
    StopReason,
    TextPart,
    ToolResultPart,
)
from ..operators._scheduling import resolve_scheduler
from ..resilience.cancel import CancelToken
from ..resilience.fallback import FallbackManager
from ._fanout import fan_out
from ._outcome import record_turn_failure, record_turn_success
from ._paths import create_path, stream_path
from ._results import (
    AttemptStats,
    RunResult,
    Session,
    TextStreamer,
    TurnMode,
    TurnResult,
    checked_transients,
)
from ._run import AgentLoop
from .audit import Turn
from .context import (
    Calibration,
    Compactor,
    ContextContributor,
    ContextWindow,
    MemoryProvider,
    TruncatingCompactor,
    gather_transients,
    memory_query,
)
from .handler import StreamHandler
from .observers import Observer, ObserverSet
from .tokens import ContextEstimate, OverheadCache, TiktokenCounter, TokenCounter, estimate_context
from .tools import Tool, ToolFunction, ToolRegistry

__all__ = ["RunResult", "Session", "TurnEngine", "TurnMode", "TurnResult"]

log = logging.getLogger("rxturn.engine")


class TurnEngine(AgentLoop):
    """Runs LLM turns against a client with the seed engine's resilience and bookkeeping.

    Args:
        client: the provider client (Anthropic, OpenAI-compatible, Ollama, or your own).
        system: the system prompt, sent alongside (never inside) the messages.
        tools: Python callables or :class:`~rxturn.engine.tools.Tool` objects the model may call.
        handler: the stream handler; ``None`` means passthrough (one attempt, no deadlines).
        fallback: a :class:`~rxturn.resilience.fallback.FallbackManager` routing between models.
        observers: callbacks, called in registration order, each isolated.
        text_streamer: called with each text fragment, before the observers.
        mode: ``"streaming"`` (default) or ``"non_streaming"``.
        request_options: tool constraint, response format, model, max tokens…
        max_turns: bound of the agent loop in :meth:`run`.
        counter: counts tokens for the context estimate (default: tiktoken, offline cl100k).
        context_window: when set, a turn whose estimate passes its threshold is deferred
            and the conversation compacted first.
        compactor: how to compact (default: :class:`~rxturn.engine.context.TruncatingCompactor`).
        contributors: per-turn transient messages, in registration order.
        memory: a memory provider whose top ``memory_top_k`` entries become one message.
        calibration: records estimate vs. reported input tokens per model.
        scheduler: where time comes from (default: asyncio on the running loop).

    Attributes:
        events: every turn's handler events (provider events, ``AttemptReset``, ``Fallback``)
            as a hot Observable, for composing into your own Rx pipelines and live displays.
        last_estimate: the context estimate of the most recent turn.
    """

    def __init__(
        self,
        client: ModelClient,
        *,
        system: str | None = None,
        tools: Iterable[Tool | ToolFunction] = (),
        handler: StreamHandler | None = None,
        fallback: FallbackManager | None = None,
        observers: Iterable[Observer] = (),
        text_streamer: TextStreamer | None = None,
        mode: TurnMode = "streaming",
        request_options: RequestOptions | None = None,
        history: Iterable[Message] = (),
        max_turns: int = 10,
        counter: TokenCounter | None = None,
        context_window: ContextWindow | None = None,
        compactor: Compactor | None = None,
        contributors: Iterable[ContextContributor] = (),
        memory: MemoryProvider | None = None,
        memory_top_k: int = 3,
        calibration: Calibration | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if mode not in ("streaming", "non_streaming"):
            raise ConfigError(f"mode must be 'streaming' or 'non_streaming', got {mode!r}")
        if not positive(max_turns, integer=True):
            raise ConfigError(f"max_turns must be at least 1, got {max_turns}")
        self.client = client
        self.system = system
        self.tools = ToolRegistry(tools)
        self.handler = handler
        self.fallback = fallback
        self.observers = ObserverSet()
        for observer in observers:
            self.observers.add(observer)
        self.text_streamer = text_streamer
        self.mode: TurnMode = mode
        self.request_options = request_options or RequestOptions()
        self.max_turns = max_turns
        self.scheduler = scheduler
        self.counter: TokenCounter = counter if counter is not None else TiktokenCounter()
        self.context_window = context_window
        self.compactor: Compactor = compactor if compactor is not None else TruncatingCompactor()
        self.contributors: list[ContextContributor] = list(contributors)
        self.memory = memory
        if not positive(memory_top_k, integer=True, allow_zero=True):
            raise ConfigError(f"memory_top_k must be >= 0, got {memory_top_k}")
        self.memory_top_k = memory_top_k
        self.calibration = calibration if calibration is not None else Calibration()
        self.last_estimate: ContextEstimate | None = None
        self._overhead = OverheadCache()
        self.events: Subject[HandlerEvent] = Subject()
        self.session = Session(history)
        self.cancel_token = CancelToken()
        self._last_served: str | None = None
        self._run_input: str | None = None
        self._in_run = False

    def __repr__(self) -> str:
        return (
            f"TurnEngine(client={self.client!r}, mode={self.mode!r}, "
            f"tools={len(self.tools)}, observers={len(self.observers)})"
        )

    # ----------------------------------------------------------------------------- public API

    @property
    def history(self) -> list[Message]:
        return self.session.history

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the running turn: it fails with :class:`Cancelled`; the breaker is untouched."""
        self.cancel_token.cancel(reason)

    def add_observer(self, observer: Observer) -> None:
        self.observers.add(observer)

    def switch_model(self, name: str) -> None:
        """Serve ``name`` from now on: it becomes the primary and the breaker starts closed.

        Fires ``on_model_switched`` when the serving model changes. Blank names are rejected.
        """
        # callers may be untyped
        model = name.strip() if isinstance(name, str) else ""  # pyright: ignore[reportUnnecessaryIsInstance]
        if not model:
            raise ConfigError(f"switch_model needs a model name, got {name!r}")
        previous = self.served_model()
        self.request_options = msgspec.structs.replace(self.request_options, model=model)
        if self.fallback is not None:
            self.fallback.set_primary(model)
            self.fallback.reset()
        if previous != model:
            self.observers.emit("on_model_switched", from_model=previous, to_model=model)
        self._last_served = model

    def served_model(self) -> str:
        """The model the next request goes to: routed backup, options override, or client's."""
        routed = self.fallback.routed_model() if self.fallback is not None else None
        return routed or self.request_options.model or self.client.model

    def build_request(self, transient: Sequence[Message] = ()) -> Request:
        """Transients first, then the conversation; system prompt and tools ride alongside."""
        return Request(
            messages=(*transient, *self.session.history),
            system=self.system,
            tools=self.tools.schemas(),
        )

    def routed_options(self) -> RequestOptions:
        """The request options with the breaker's routed model as a per-request override."""
        routed = self.fallback.routed_model() if self.fallback is not None else None
        if routed is None or routed == self.request_options.model:
            return self.request_options
        return msgspec.structs.replace(self.request_options, model=routed)

    async def turn(self, transient: Sequence[Message] = ()) -> TurnResult:
        """Run one LLM turn over the current history (plus ``transient`` extras).

        The reply is appended to the history and the audit trail. Raises the turn's typed
        error on failure (the history is left unchanged).

        Raises:
            ConfigError: ``transient`` is not a sequence of :class:`Message` (a prompt string is
                the usual mistake: :meth:`run` takes one).
        """
        transient = checked_transients(transient)
        try:
            return await self._turn(transient)
        finally:
            if not self._in_run:
                self.cancel_token.reset()

    # ----------------------------------------------------------------------------- one turn

    def _turn_input(self) -> str:
        """What the model is being asked this turn (for ``on_turn_start`` and the audit)."""
        run = self.session.audit.current_run
        if self._run_input is not None and not run.turns:
            return self._run_input
        if not self.session.history:
            return ""
        last = self.session.history[-1]
        text = "".join(p.text for p in last.content if isinstance(p, TextPart))
        if text:
            return text
        return "\n".join(p.content for p in last.content if isinstance(p, ToolResultPart))

    def _note_routed_model(self, served: str) -> None:
        if self._last_served is not None and self._last_served != served:
            self.observers.emit("on_model_switched", from_model=self._last_served, to_model=served)
        self._last_served = served

    async def _transients(self, turn: int, query: str, extra: Sequence[Message]) -> list[Message]:
        gathered = await gather_transients(
            self.contributors,
            self.memory,
            turn=turn,
            history=self.session.history,
            query=memory_query(self.session.history) or query,
            top_k=self.memory_top_k,
        )
        return [*gathered, *extra]

    def _estimate(self, transients: Sequence[Message]) -> ContextEstimate:
        estimate = estimate_context(
            self.counter,
            history=self.session.history,
            transients=transients,
            system=self.system,
            tools=self.tools.schemas(),
            overhead_cache=self._overhead,
        )
        if self.calibration.enabled:
            scaled = self.calibration.scale(self.served_model(), estimate.total)
            estimate = msgspec.structs.replace(estimate, total=scaled)
        self.last_estimate = estimate
        return estimate

    async def _compact(self, estimate: ContextEstimate) -> None:
        """The deferred turn's work: compact, reserving room for this turn's transients."""
        assert self.context_window is not None
        budget = self.context_window.compaction_budget(
            overhead=estimate.overhead, reserved=estimate.transients
        )
        compacted = await self.compactor.compact(
            self.session.history, budget=max(budget, 0), counter=self.counter
        )
        self.session.history[:] = compacted
        after = self.counter.count_messages(compacted) + estimate.overhead + estimate.transients
        self.observers.emit("on_compaction", before_tokens=estimate.total, after_tokens=after)

    async def summarize(self, messages: Sequence[Message]) -> str:
        """Condense ``messages`` with this engine's client (for a summarising compactor).

        One request outside the conversation: no turn events, no history, no audit record.
        """
        transcript = "\n".join(f"{m.role}: {m.text}" for m in messages if m.text)
        request = Request(
            messages=(
                Message.user(
                    "Summarise this conversation so it can replace it; keep every fact, "
                    "decision and open question.\n\n" + transcript
                ),
            ),
        )
        options = self.routed_options()
        if self.mode == "streaming":
            message, _ = await self._stream_path(-1, request, options, quiet=True)
        else:
            message = await self._create_path(request, options)
        return message.text

    async def _turn(self, transient: Sequence[Message]) -> TurnResult:
        if self.fallback is not None:
            self.fallback.begin_turn()
        turn = len(self.session.audit.current_run.turns)
        query = self._turn_input()
        transients = await self._transients(turn, query, transient)
        estimate = self._estimate(transients)
        window = self.context_window
        if window is not None and window.should_compact(estimate.total):
            # Deferred turn (seed gotcha 2): no turn events; compact, then run it once.
            await self._compact(estimate)
            query = self._turn_input()
            transients = await self._transients(turn, query, transient)
            estimate = self._estimate(transients)
            if window.should_compact(estimate.total):
                log.warning(
                    "context still %d tokens after compaction (threshold %d); sending anyway",
                    estimate.total,
                    window.threshold,
                )
        request = self.build_request(transients)
        options = self.routed_options()
        served = options.model or self.client.model
        self._note_routed_model(served)
        self.observers.emit("on_turn_start", turn=turn, query=query)
        started = time.monotonic()
        try:
            message, stats = await self._do_turn(turn, request, options, served)
        except BaseException as exc:
            cancelled = isinstance(exc, (Cancelled, asyncio.CancelledError))
            self.observers.emit(
                "on_turn_end",
                turn=turn,
                success=False,
                error="cancelled" if cancelled else (str(exc) or type(exc).__name__),
                duration_ms=(time.monotonic() - started) * 1000,
                input_tokens=0,
                output_tokens=0,
            )
            raise
        usage = message.usage
        stop_reason = message.stop_reason or StopReason.END_TURN
        if stop_reason is StopReason.END_TURN and message.tool_calls:
            stop_reason = StopReason.TOOL_CALL
        self.calibration.record(served, estimate.total, usage.input_tokens if usage else None)
        self.observers.emit("on_response", turn=turn, text=message.text, usage=usage)
        self.session.history.append(message)
        self.session.audit.append(
            Turn(
                turn=turn,
                input=query,
                output=message.text,
                tool_calls=tuple(message.tool_calls),
                input_tokens=usage.input_tokens if usage else 0,
                output_tokens=usage.output_tokens if usage else 0,
                model=served,
                attempts=stats.attempts,
                rescued=stats.rescued,
                stop_reason=stop_reason,
                discarded_usage=stats.discarded_usage,
            )
        )
        result = TurnResult(
            turn=turn,
            message=message,
            stop_reason=stop_reason,
            usage=usage,
            model=served,
            attempts=stats.attempts,
            rescued=stats.rescued,
            discarded_usage=stats.discarded_usage,
        )
        # With tool calls inside a run, the tool phase fires this turn's on_turn_end.
        if not (self._in_run and stop_reason is StopReason.TOOL_CALL):
            self._emit_turn_end(result, started)
        return result

    async def _do_turn(
        self, turn: int, request: Request, options: RequestOptions, served: str
    ) -> tuple[Message, AttemptStats]:
        """The seed's ``do_turn``: cancel guard, one of two paths, outcome recording."""
        try:
            self.cancel_token.raise_if_cancelled()
            if self.mode == "streaming":
                message, stats = await self._stream_path(turn, request, options)
            else:
                message, stats = await self._create_path(request, options), AttemptStats()
        except BaseException as exc:
            if isinstance(exc, Exception):
                record_turn_failure(
                    self.fallback, self.observers, turn=turn, served=served, error=exc
                )
            raise
        record_turn_success(
            self.fallback, self.observers, turn=turn, served=served, usage=message.usage
        )
        return message, stats

    # ----------------------------------------------------------------------------- the paths

    def _resolve_scheduler(self) -> abc.SchedulerBase:
        return resolve_scheduler(self.scheduler)

    async def _stream_path(
        self, turn: int, request: Request, options: RequestOptions, *, quiet: bool = False
    ) -> tuple[Message, AttemptStats]:
        stats = AttemptStats()
        if quiet:
            tap, stop_tap = fan_out(turn, stats, None, ObserverSet(), None)
        else:
            events = self.events if self.events.observers else None
            tap, stop_tap = fan_out(turn, stats, self.text_streamer, self.observers, events)
        message = await stream_path(
            self.handler or StreamHandler.passthrough(),
            self.client,
            request,
            options,
            self.cancel_token,
            self._resolve_scheduler(),
            tap,
            stop_tap,
            lambda: stats.rescued,
        )
        return message, stats

    async def _create_path(self, request: Request, options: RequestOptions) -> Message:
        handler = self.handler or StreamHandler.passthrough()
        return await create_path(
            self.client,
            request,
            options,
            self.cancel_token,
            handler.timeouts.total,
            self._resolve_scheduler(),
        )
