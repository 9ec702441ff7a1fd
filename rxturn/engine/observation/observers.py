"""Observers: callbacks that watch a run without being able to break it.

An observer is any object with some of the methods below; subclass :class:`Observer` to get a
no-op default for every one you leave out. All arguments are passed by keyword, so an observer
may name only what it reads and swallow the rest with ``**_`` (a callback that cannot take
its keywords is a :class:`~rxturn.errors.ConfigError` when it is registered; so is an ``async
def`` one: callbacks are called synchronously, and its coroutine would never run). The engine calls
observers through an :class:`ObserverSet`: in registration order, each call isolated (an
observer that raises is logged on the ``rxturn.engine.observers`` logger and the others still
run; a turn is never failed by its audience).

===================  ============================================================================
callback             keyword arguments / when it fires
===================  ============================================================================
on_run_start         session_id: str
                     → a run (``engine.run``) begins
on_run_end           success: bool, error: str | None, total_turns: int, duration_ms: float
                     → the run ends, however it ends
on_turn_start        turn: int, query: str
                     → a served turn begins (never a deferred one)
on_text_delta        turn: int, delta: str
                     → every text fragment, failed attempts' too (a rescued
                     reply is no fragment: ``on_response`` has it)
on_thinking_delta    turn: int, delta: str
                     → every reasoning fragment (``""`` = redacted)
on_attempt_reset     turn: int, reset: AttemptReset
                     → a retry starts: retract the failed attempt's deltas
on_response          turn: int, text: str, usage: Usage | None
                     → the turn's committed reply text
on_stream_success    turn: int, model: str, input_tokens: int, output_tokens: int
                     → the turn was served, by ``model`` (the one that actually served)
on_stream_failure    turn: int, model: str, error: BaseException
                     → the turn failed on ``model`` (and each model a failover left;
                     never for a cancel)
on_fallback          from_model: str, to_model: str
                     → the breaker tripped and a backup exists
on_model_switched    from_model: str, to_model: str
                     → the serving model changed between turns (or within one, on a
                     same-turn failover)
on_turn_end          turn: int, success: bool, error: str | None, duration_ms: float,
                     input_tokens: int, output_tokens: int
                     → a turn's LLM phase (or tool phase) ended; ``duration_ms``
                     is the time since its ``on_turn_start``
on_tool_call         turn: int, call: ToolCallPart
                     → the model asked for a tool
on_tool_result       turn: int, result: ToolResultPart
                     → a tool's result goes back to the model
on_compaction        before_tokens: int, after_tokens: int
                     → the conversation was compacted
on_hedge             turn: int, turn_id: int, model: str, hedge_model: str, reason: str,
                     after: float
                     → a hedged first token sent a hedge to ``hedge_model`` ``after`` seconds
                     into the race (``reason`` ``"delay"``, or ``"error"``: the racers
                     failed before the delay)
on_hedge_skipped     turn: int, turn_id: int, model: str, hedge_model: str | None, reason: str
                     → a hedge was due but not sent: ``reason`` ``"breaker_open"``,
                     ``"rate_limited"`` (the primary's quota) or ``"budget"``
on_hedge_won         turn: int, turn_id: int, model: str, hedge_model: str, after: float
                     → the hedge to ``hedge_model`` won the race ``after`` seconds in: it
                     serves the turn (a primary that wins fires nothing)
on_request           turn: int, turn_id: int, model: str, request: Request,
                     options: RequestOptions, provider: str, base_url: str, stream: bool,
                     estimated_input_tokens: int
                     → the turn's model call begins (after ``on_turn_start``)
on_attempt_start     turn: int, turn_id: int, attempt: int, kind: str, model: str,
                     wait: float, after: str | None, context: contextvars.Context
                     → one request of the turn is about to be sent
on_attempt_end       turn: int, turn_id: int, attempt: int, record: AttemptRecord,
                     error: BaseException | None
                     → that request ended and its outcome is known
on_first_chunk       turn: int, turn_id: int
                     → the turn's first reply content arrived (streaming turns)
on_request_end       turn: int, turn_id: int, record: Turn, message: Message | None,
                     error: BaseException | None
                     → the turn's model call ended, served or failed (before ``on_response``)
===================  ============================================================================

Order for a text-only streaming turn: ``on_turn_start → on_request → on_attempt_start →
on_first_chunk → on_text_delta* → on_attempt_end → on_stream_success → on_request_end →
on_response → on_turn_end``.

The request callbacks (``on_request`` … ``on_request_end``) are what a tracer needs; docs/
observability.md shows the OpenTelemetry observer built on them. ``turn_id`` identifies one turn
across every engine of the process (``turn`` is only its index within its run), so an observer
shared by concurrent engines keys its per-turn state on it. ``attempt`` numbers every request of
the turn from 1 in the order of ``Turn.attempt_log`` (streaming attempts, the rescue, failover
legs); ``kind`` is ``"stream"``, ``"rescue"`` or ``"create"``; ``wait`` is the time, on the
engine's clock, since the previous attempt ended (or since the turn began: a limiter's wait),
and ``after`` the outcome of that previous attempt (``None`` for the first). ``context`` is a
fresh copy of the current :mod:`contextvars` context in which the request is sent: an observer
may set variables in it (``context.run(var.set, value)``) to make them current in the task that
sends the request, which is how a tracer makes its attempt span the parent of the HTTP client's
span. ``on_attempt_end`` fires once the outcome is known: at once for an attempt that ended by
itself, and for one let go from outside (a cancel, the total deadline) when the turn learns why.
Tool calls are bracketed by ``on_tool_call`` and ``on_tool_result``; a cancel during a tool ends
the run (``on_run_end``) without its ``on_tool_result``.

Deltas are the hot path: :meth:`ObserverSet.text_delta` and :meth:`ObserverSet.thinking_delta`
walk a list, computed when observers are added or removed, of only the observers that override
that callback, so a turn nobody watches pays an empty loop per fragment. Every other callback is
looked up on each observer when it is emitted (a turn emits each a few times at most): a
callback assigned on an observer instance, even after it was added, is heard, and an engine
builds no per-callback table when it is made. The rule of who hears a callback is the same
either way: an inherited :class:`Observer` no-op does not count, anything else callable does.
A turn's events reach them through one :class:`TurnRouter` (:meth:`ObserverSet.router`), the
engine's only fan-out.
"""

from __future__ import annotations

from ..fanout._router import ObserverSet, TurnRouter, report_observer_error
from ._callbacks import ALL_CALLBACKS, CALLBACKS, REQUEST_CALLBACKS, Observer
from ._stock_observers import LoggingObserver, RecordingObserver

__all__ = [
    "ALL_CALLBACKS",
    "CALLBACKS",
    "REQUEST_CALLBACKS",
    "LoggingObserver",
    "Observer",
    "ObserverSet",
    "RecordingObserver",
    "TurnRouter",
    "report_observer_error",
]
