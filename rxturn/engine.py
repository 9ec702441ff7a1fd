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

6. the outcome is recorded in the seed's strict order (:mod:`rxturn._outcome`);
7. the reply joins the history and the audit trail; ``on_response`` and ``on_turn_end``.

:meth:`TurnEngine.run` is the agent loop around it: turns continue while the stop reason is
``tool_call``, running registered tools between them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import msgspec
from reactivex import abc
from reactivex import operators as ops
from reactivex.disposable import CompositeDisposable
from reactivex.subject import Subject

from ._outcome import record_turn_failure, record_turn_success
from ._scheduling import resolve_scheduler
from .audit import AuditTrail, Run, Turn
from .cancel import CancelToken
from .clients._base import ModelClient
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
from .errors import Cancelled, ConfigError, StreamTimeoutError, TruncatedStreamError
from .events import AttemptReset, Delta, Fallback, HandlerEvent
from .fallback import FallbackManager
from .fold import INITIAL_STATE, TurnState, fold_batch
from .handler import StreamHandler
from .messages import (
    Message,
    Request,
    RequestOptions,
    StopReason,
    TextPart,
    ToolResultPart,
    Usage,
)
from .observers import Observer, ObserverSet, report_observer_error
from .tokens import ContextEstimate, OverheadCache, TiktokenCounter, TokenCounter, estimate_context
from .tools import Tool, ToolFunction, ToolRegistry

__all__ = ["RunResult", "Session", "TurnEngine", "TurnMode", "TurnResult"]

log = logging.getLogger("rxturn.engine")

TurnMode = Literal["streaming", "non_streaming"]
TextStreamer = Callable[[str], object]

_session_ids = itertools.count(1)


class TurnResult(msgspec.Struct, frozen=True, kw_only=True):
    """What one served turn produced.

    ``stop_reason`` is the engine's verdict: ``end_turn`` with tool calls present counts as
    ``tool_call`` (the only reason that continues an agent loop).
    """

    turn: int
    message: Message
    stop_reason: StopReason
    usage: Usage | None
    model: str
    attempts: int = 1
    rescued: bool = False
    discarded_usage: Usage | None = None

    @property
    def text(self) -> str:
        return self.message.text


class RunResult(msgspec.Struct, frozen=True, kw_only=True):
    """The outcome of :meth:`TurnEngine.run`: every turn, and the final reply."""

    turns: tuple[TurnResult, ...]
    hit_max_turns: bool = False

    @property
    def message(self) -> Message:
        return self.turns[-1].message

    @property
    def text(self) -> str:
        return self.turns[-1].message.text

    @property
    def stop_reason(self) -> StopReason:
        return self.turns[-1].stop_reason


class Session:
    """The conversation (``history``) and the audit trail (``runs``) of one engine."""

    def __init__(self, history: Iterable[Message] = ()) -> None:
        self.id = f"session-{next(_session_ids)}"
        self.history: list[Message] = list(history)
        self.audit = AuditTrail()

    @property
    def runs(self) -> list[Run]:
        """The audit trail: one :class:`~rxturn.audit.Run` of :class:`~rxturn.audit.Turn` each."""
        return self.audit.runs

    def __repr__(self) -> str:
        return f"Session({self.id!r}, messages={len(self.history)}, runs={len(self.runs)})"


class _AttemptStats:
    """Facts the handler stream reveals about attempts: resets, rescue, discarded usage."""

    __slots__ = ("attempts", "discarded_in", "discarded_out", "rescued", "saw_discarded")

    def __init__(self) -> None:
        self.attempts = 1
        self.rescued = False
        self.saw_discarded = False
        self.discarded_in = 0
        self.discarded_out = 0

    def note(self, event: HandlerEvent) -> None:
        if isinstance(event, AttemptReset):
            self.attempts += 1
            if event.usage is not None:
                self.saw_discarded = True
                self.discarded_in += event.usage.input_tokens
                self.discarded_out += event.usage.output_tokens
        elif isinstance(event, Fallback):
            self.rescued = True

    @property
    def discarded_usage(self) -> Usage | None:
        if not self.saw_discarded:
            return None
        return Usage(input_tokens=self.discarded_in, output_tokens=self.discarded_out)


def _checked_transients(transient: object) -> tuple[Message, ...]:
    """``transient`` as a tuple of messages, or a ConfigError that says what was passed."""
    hint = "; to send a prompt, use run(prompt) or add it to the history first"
    if isinstance(transient, str | bytes | Message):
        raise ConfigError(
            f"turn(transient=...) takes a sequence of Message, got {type(transient).__name__}"
            + hint
        )
    try:
        items: tuple[object, ...] = tuple(transient)  # type: ignore[call-overload]  # pyright: ignore[reportUnknownArgumentType]
    except TypeError:
        raise ConfigError(
            f"turn(transient=...) takes a sequence of Message, got {type(transient).__name__}"
        ) from None
    messages: list[Message] = []
    for item in items:
        if not isinstance(item, Message):
            raise ConfigError(
                f"turn(transient=...) takes Message objects, got a {type(item).__name__} "
                f"among them{hint}"
            )
        messages.append(item)
    return tuple(messages)


class TurnEngine:
    """Runs LLM turns against a client with the seed engine's resilience and bookkeeping.

    Args:
        client: the provider client (Anthropic, OpenAI-compatible, Ollama, or your own).
        system: the system prompt, sent alongside (never inside) the messages.
        tools: Python callables or :class:`~rxturn.tools.Tool` objects the model may call.
        handler: the stream handler; ``None`` means passthrough (one attempt, no deadlines).
        fallback: a :class:`~rxturn.fallback.FallbackManager` routing between models.
        observers: callbacks, called in registration order, each isolated.
        text_streamer: called with each text fragment, before the observers.
        mode: ``"streaming"`` (default) or ``"non_streaming"``.
        request_options: tool constraint, response format, model, max tokens…
        max_turns: bound of the agent loop in :meth:`run`.
        counter: counts tokens for the context estimate (default: tiktoken, offline cl100k).
        context_window: when set, a turn whose estimate passes its threshold is deferred
            and the conversation compacted first.
        compactor: how to compact (default: :class:`~rxturn.context.TruncatingCompactor`).
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
        if max_turns < 1:
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
        if memory_top_k < 0:
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
        transient = _checked_transients(transient)
        try:
            return await self._turn(transient)
        finally:
            if not self._in_run:
                self.cancel_token.reset()

    async def run(self, prompt: str | Message) -> RunResult:
        """The agent loop: add ``prompt``, then run turns while the model calls tools.

        A failed or cancelled run discards the messages it added to the history; its served
        turns stay in the audit trail. The cancel signal is re-armed when the run ends.

        Raises:
            ConfigError: ``prompt`` is neither a string nor a :class:`Message`.
        """
        if not isinstance(prompt, str | Message):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"run(prompt) takes a str or a Message, got {type(prompt).__name__}")
        message = Message.user(prompt) if isinstance(prompt, str) else prompt
        started = time.monotonic()
        start_len = len(self.session.history)
        run = self.session.audit.start_run()
        self._run_input = message.text
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
                duration_ms=(time.monotonic() - started) * 1000,
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
            duration_ms=(time.monotonic() - started) * 1000,
        )
        return RunResult(turns=tuple(results), hit_max_turns=hit_max)

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

    def _emit_turn_end(self, result: TurnResult, started: float) -> None:
        self.observers.emit(
            "on_turn_end",
            turn=result.turn,
            success=True,
            error=None,
            duration_ms=(time.monotonic() - started) * 1000,
            input_tokens=result.usage.input_tokens if result.usage else 0,
            output_tokens=result.usage.output_tokens if result.usage else 0,
        )

    async def _tool_phase(self, result: TurnResult) -> None:
        """Run the reply's tool calls in order; their results become the next user message."""
        started = time.monotonic()
        outputs: list[ToolResultPart] = []
        for call in result.message.tool_calls:
            self.cancel_token.raise_if_cancelled()
            self.observers.emit("on_tool_call", turn=result.turn, call=call)
            output = await self.tools.run(call)
            self.observers.emit("on_tool_result", turn=result.turn, result=output)
            outputs.append(output)
        self.session.history.append(Message(role="user", content=tuple(outputs)))
        self._emit_turn_end(result, started)

    async def _do_turn(
        self, turn: int, request: Request, options: RequestOptions, served: str
    ) -> tuple[Message, _AttemptStats]:
        """The seed's ``do_turn``: cancel guard, one of two paths, outcome recording."""
        try:
            self.cancel_token.raise_if_cancelled()
            if self.mode == "streaming":
                message, stats = await self._stream_path(turn, request, options)
            else:
                message, stats = await self._create_path(request, options), _AttemptStats()
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
    ) -> tuple[Message, _AttemptStats]:
        handler = self.handler or StreamHandler.passthrough()
        scheduler = self._resolve_scheduler()
        stream = handler.stream_turn_batches(
            self.client, request, options, self.cancel_token, scheduler=scheduler
        )
        stats = _AttemptStats()
        fan_out, stop_fan_out = self._fan_out(turn, stats, quiet)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[TurnState] = loop.create_future()

        def finish(state: TurnState) -> None:
            stop_fan_out()
            if not done.done():
                done.set_result(state)

        def fail(error: Exception) -> None:
            stop_fan_out()
            if not done.done():
                done.set_exception(error)

        # One stream of batches: the tap fans each event out to the streamer, the observers
        # and ``engine.events`` (in the seed's order) before the fold sees its batch.
        subscription = stream.pipe(
            ops.do_action(fan_out),
            ops.scan(fold_batch, INITIAL_STATE),  # type: ignore[arg-type]
            ops.last_or_default(INITIAL_STATE),
        ).subscribe(on_next=finish, on_error=fail, scheduler=scheduler)
        try:
            state = await done
        finally:
            subscription.dispose()
        if not (state.completed or stats.rescued):
            raise TruncatedStreamError(0)
        return state.message(), stats

    def _fan_out(
        self, turn: int, stats: _AttemptStats, quiet: bool
    ) -> tuple[Callable[[list[HandlerEvent]], None], Callable[[], None]]:
        """The branches every handler event reaches before the fold (seed routing table).

        Text deltas go to the ``text_streamer`` first, then to ``on_text_delta``; thinking
        deltas to ``on_thinking_delta`` only; ``AttemptReset`` to ``on_attempt_reset`` (so a UI
        can retract); every event to ``engine.events`` when someone listens. Each branch is
        isolated: a raising callback is logged and the turn goes on. Returns the tap and a
        ``stop`` for when the turn ends: a callback that cancels the turn mid-batch sees no
        more of that batch, exactly as one event at a time.

        This is the ``share`` of SPEC §1 as one tap instead of a ``publish()`` Subject with a
        subscriber per branch: the same branches in the same order, event by event, for one Rx
        emission per batch instead of a Subject hop and a subscriber per branch per event
        (benchmarks/README.md).
        """
        streamer = None if quiet else self.text_streamer
        observers = self.observers if not quiet else ObserverSet()
        events = self.events if not quiet and self.events.observers else None
        thinking_delta = observers.thinking_delta
        delta_cls = Delta
        # Set when the turn has ended (a callback cancelled it): the rest of a batch then
        # reaches nobody, as it would have reached nobody one event at a time.
        stopped = False

        def stop() -> None:
            nonlocal stopped
            stopped = True

        def fan_out(batch: list[HandlerEvent]) -> None:
            for event in batch:
                if stopped:
                    return
                if type(event) is delta_cls:
                    kind = event.kind  # type: ignore[union-attr]
                    if kind == "text":
                        text = event.text  # type: ignore[union-attr]
                        if streamer is not None:
                            try:
                                streamer(text)
                            except Exception:
                                log.exception("text_streamer raised; the turn goes on")
                        # read per delta: a callback may add or remove an observer mid-batch
                        single = observers.text_single
                        if single is not None:  # the common case: no loop (~15 % of this)
                            try:
                                single[1](turn=turn, delta=text)
                            except Exception:
                                report_observer_error(single[0], "on_text_delta")
                        else:
                            for observer, method in observers.targets("on_text_delta"):
                                try:
                                    method(turn=turn, delta=text)
                                except Exception:
                                    report_observer_error(observer, "on_text_delta")
                    elif kind == "thinking":
                        thinking_delta(turn, event.text)  # type: ignore[union-attr]
                elif type(event) is AttemptReset or type(event) is Fallback:
                    stats.note(event)
                    if type(event) is AttemptReset:
                        observers.emit("on_attempt_reset", turn=turn, reset=event)
                if events is not None:
                    try:
                        events.on_next(event)
                    except Exception:
                        log.exception("an engine.events subscriber raised; the turn goes on")

        return fan_out, stop

    async def _create_path(self, request: Request, options: RequestOptions) -> Message:
        """One non-streaming attempt raced against cancel (checked first) and the timeout."""
        handler = self.handler or StreamHandler.passthrough()
        timeout = handler.timeouts.total
        scheduler = self._resolve_scheduler()
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[str] = loop.create_future()

        def settle(kind: str) -> None:
            if not outcome.done():
                outcome.set_result(kind)

        reply = loop.create_task(self.client.create(request, options))
        reply.add_done_callback(lambda _: settle("reply"))
        cleanup = CompositeDisposable(self.cancel_token.on_cancel(lambda: settle("cancel")))
        if timeout is not None:

            def on_timeout(*_: object) -> None:
                settle("timeout")

            cleanup.add(scheduler.schedule_relative(timeout, on_timeout))
        try:
            await outcome
        finally:
            cleanup.dispose()
            if not reply.done():
                reply.cancel()
                await asyncio.gather(reply, return_exceptions=True)
        # Biased order: cancel first, then a finished reply (even at the deadline), then timeout.
        if self.cancel_token.cancelled:
            raise self.cancel_token.error()
        if reply.done() and not reply.cancelled():
            return reply.result()
        raise StreamTimeoutError(
            "total", after=timeout or 0.0, events=0, partial=False, elapsed=timeout or 0.0
        )
